"""The local judge's llama.cpp engine: drafts, prefix groups, and (on the real model) batched
probes and drafted replies against the one-at-a-time ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.judges import llama_engine
from ragmeter.judges.base import ChatRequest, Message
from ragmeter.judges.llama_engine import LlamaEngine, _by_prefix, log_softmax
from ragmeter.metrics.faithfulness import STATEMENTS, SUPPORTED
from ragmeter.session import yes_probability

# --- no model needed ---------------------------------------------------------------------------


def test_a_draft_is_what_followed_the_longest_repeated_tail():
    # The tail (9, 2, 3) never came before; (2, 3) did, at positions 1-2, followed by 4 5 9 2 3.
    assert LlamaEngine._draft([1, 2, 3, 4, 5, 9, 2, 3]) == [4, 5, 9, 2, 3]
    # The latest earlier occurrence wins: (7,) came twice, last followed by 8.
    assert LlamaEngine._draft([7, 1, 7, 8, 7]) == [8, 7]


def test_no_draft_without_a_repeat():
    assert LlamaEngine._draft([1, 2, 3]) == []
    assert LlamaEngine._draft([5]) == []


def test_a_draft_is_at_most_draft_tokens_long():
    tokens = [*list(range(40)), 0]
    assert LlamaEngine._draft(tokens) == list(range(1, 1 + llama_engine.DRAFT_TOKENS))


def test_prompts_are_grouped_by_a_prefix_worth_reading_once():
    shared = list(range(100, 140))  # 40 tokens
    prompts = [[*shared, 1, 2], [7, 8, 9], [*shared, 3], [*shared[:20], 5, 5]]
    # In token order: 7 8 9; then the one that shares 20 tokens (its 21st, 5, sorts first);
    # then the two that share all 40. Twenty is below the 32 worth sharing: a group of its own.
    assert _by_prefix(prompts) == [[1], [3], [0, 2]]
    assert _by_prefix(prompts, least=16) == [[1], [0, 2, 3]]


def test_log_softmax_is_a_distribution():
    logprobs = log_softmax(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    assert math.isclose(np.exp(logprobs).sum(), 1.0)
    assert logprobs[2] == pytest.approx(3.0 - math.log(math.e + math.e**2 + math.e**3))


# --- the real model ----------------------------------------------------------------------------

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was "
    "designed and built by the company of engineer Gustave Eiffel. Construction began in 1887 "
    "and the tower was completed in March 1889, in time for the World's Fair."
)
STATEMENTS_TO_CHECK = [
    "The tower was completed in 1889.",
    "The tower was completed in 1950.",
    "The tower stands in Paris.",
    "The tower was designed by Le Corbusier.",
    "Construction of the tower began in 1887.",
]


def _probes() -> list[ChatRequest]:
    return [
        ChatRequest(
            messages=SUPPORTED.render({"context": CONTEXT, "statement": s}),
            max_tokens=1,
            top_logprobs=10,
        )
        for s in STATEMENTS_TO_CHECK
    ]


@pytest.fixture(scope="module")
def judge():
    from ragmeter.judges.local import LocalJudge

    return LocalJudge()


@pytest.mark.local_model
def test_batched_probes_give_the_one_at_a_time_probabilities_and_read_the_prefix_once(judge):
    from ragmeter.judges.local import LocalJudge

    alone = [judge.complete(request) for request in _probes()]
    together = LocalJudge().complete_batch(_probes())
    p_alone = [yes_probability(r) for r in alone]
    p_together = [yes_probability(r) for r in together]
    assert all(p is not None for p in p_alone + p_together)
    assert max(abs(a - b) for a, b in zip(p_alone, p_together, strict=True)) <= 0.05
    assert p_together[0] > 0.5 > p_together[1]  # 1889 is supported, 1950 is not
    # The context is read once, with the first probe; each other probe reads its own tokens.
    own = [r.prompt_tokens for r in together[1:]]
    assert together[0].prompt_tokens > 100 > max(own)
    # The same batch on a fresh judge: the same probabilities, to the last digit.
    again = [yes_probability(r) for r in LocalJudge().complete_batch(_probes())]
    assert again == p_together


@pytest.mark.local_model
def test_a_drafted_reply_is_the_plain_greedy_one(judge, monkeypatch):
    request = ChatRequest(
        messages=STATEMENTS.render(
            {
                "question": "When was the Eiffel Tower completed and who built it?",
                "answer": "The Eiffel Tower was completed in March 1889. It was built by the "
                "company of Gustave Eiffel.",
            }
        ),
        json_schema=STATEMENTS.schema,
        max_tokens=200,
    )
    drafted = judge.complete(request)
    monkeypatch.setattr(llama_engine, "DRAFT_TOKENS", 0)
    plain = judge.complete(request.model_copy(update={"max_tokens": 199}))  # not from a slot
    assert drafted.text == plain.text
    assert drafted.finish_reason == plain.finish_reason == "stop"
    assert "1889" in drafted.text


@pytest.mark.local_model
def test_a_reply_cut_at_the_token_limit_says_so(judge):
    request = ChatRequest(
        messages=(Message(role="user", content="Count from 1 to 50, one number a line."),),
        max_tokens=5,
    )
    reply = judge.complete(request)
    assert reply.finish_reason == "length"
    assert reply.completion_tokens == 5
