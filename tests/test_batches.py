"""Questions asked together: a judge that reads batches gets them as one call through the cache,
the budget and the in-flight limit, and the session records them as if asked one by one."""

from __future__ import annotations

import math

import pytest

from ragmeter.budget import Budget, BudgetExhausted, Meter, guard
from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    JudgeError,
    Message,
    TokenLogprobs,
    complete_each,
)
from ragmeter.judges.cache import CachedJudge, CallCache
from ragmeter.judges.fake import FakeJudge
from ragmeter.metrics.faithfulness import SUPPORTED
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


def yes_with(p: float) -> ChatResponse:
    """A one-token reply whose alternatives give P(yes) = p."""
    return ChatResponse(
        text="Yes",
        logprobs=[
            TokenLogprobs(
                token="Yes", logprob=math.log(p), top={"Yes": math.log(p), "No": math.log(1 - p)}
            )
        ],
        prompt_tokens=3,
        completion_tokens=1,
    )


class BatchJudge(FakeJudge):
    """A fake that reads batches: each call of ``complete_batch`` is kept in ``batches``, and
    a request is answered from ``answers`` by its last message (an exception is its reply)."""

    answers_batches = True

    def __init__(self, answers: dict[str, ChatResponse | Exception]) -> None:
        super().__init__(model="batches")
        self.answers = answers
        self.batches: list[int] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        reply = self.complete_batch([request])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def complete_batch(self, requests, concurrency=1):
        self.batches.append(len(requests))
        self.history += requests
        return [self.answers[_statement(r)] for r in requests]


def _statement(request: ChatRequest) -> str:
    return request.messages[-1].content.split("<statement>\n")[1].split("\n</statement>")[0]


def question(statement: str):
    return (SUPPORTED, {"context": "Paris is in France.", "statement": statement}, {})


def test_questions_go_to_a_batch_judge_as_one_call_and_are_recorded_in_order():
    judge = BatchJudge({"a": yes_with(0.8), "b": yes_with(0.25), "c": yes_with(0.5)})
    session = JudgeSession(judge)
    answers = session.ask_yes_no_all([question("a"), question("b"), question("c")])
    assert answers == pytest.approx([0.8, 0.25, 0.5])
    assert judge.batches == [3]
    assert [e.probability for e in session.exchanges] == pytest.approx([0.8, 0.25, 0.5])
    assert session.usage.model_calls == 3 and session.usage.prompt_tokens == 9


def test_a_failed_first_reply_is_asked_again_alone_and_recorded_with_its_question():
    judge = BatchJudge({"a": yes_with(0.8), "b": JudgeError("timeout"), "c": yes_with(0.5)})
    session = JudgeSession(judge, retries=1)
    with pytest.raises(Unscorable, match="timeout"):
        session.ask_yes_no_all([question("a"), question("b"), question("c")])
    # One batch of three, then "b" once more on its own; its two attempts sit together.
    assert judge.batches == [3, 1]
    assert [e.error is not None for e in session.exchanges] == [False, True, True, False]


def test_the_cache_serves_hits_and_asks_the_misses_as_one_batch(tmp_path):
    judge = BatchJudge({"a": yes_with(0.8), "b": yes_with(0.25), "c": JudgeError("down")})
    with CallCache(tmp_path / "calls.sqlite") as calls:
        cached = CachedJudge(judge, calls)
        first = complete_each(cached, [_request("a"), _request("c")])
        assert isinstance(first[1], JudgeError)
        replies = complete_each(cached, [_request("a"), _request("b"), _request("c")])
    assert judge.batches == [2, 2]  # a and c, then b and c: a was a hit, a failure is not kept
    assert [getattr(r, "cached", None) for r in replies] == [True, False, None]


def test_the_budget_lets_through_what_it_allows_and_refuses_the_rest():
    judge = BatchJudge({"a": yes_with(0.8), "b": yes_with(0.25), "c": yes_with(0.5)})
    meter = Meter(Budget(max_calls=2), None)
    replies = complete_each(guard(judge, meter, 1), [_request(s) for s in "abc"])
    assert judge.batches == [2]
    assert isinstance(replies[2], BudgetExhausted)
    session = JudgeSession(guard(judge, Meter(Budget(max_calls=2), None), 1))
    with pytest.raises(BudgetExhausted):
        session.ask_yes_no_all([question("a"), question("b"), question("c")])


def test_a_judge_without_batches_is_asked_one_by_one_and_stops_at_the_first_failure():
    judge = FakeJudge([yes_with(0.9), JudgeError("down"), JudgeError("down again")])
    session = JudgeSession(judge, retries=1)
    with pytest.raises(Unscorable, match="down again"):
        session.ask_yes_no_all([question("a"), question("b"), question("c")])
    assert len(judge.history) == 3  # "c" was never asked


def _request(statement: str) -> ChatRequest:
    return ChatRequest(
        messages=(Message(role="user", content=f"<statement>\n{statement}\n</statement>"),),
        max_tokens=1,
        top_logprobs=10,
    )
