"""Whole evaluations through the fault server: however the transport fails, nothing is lost, the
scores equal a clean run's, and exactly the permanently failing items end unscored, with the
reason. Malformed replies get one repair, then the item is unscored with the raw replies kept."""

from __future__ import annotations

import json
import math
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragmeter import evaluate
from ragmeter.judges.base import ChatResponse, JudgeError, TokenLogprobs
from ragmeter.judges.fake import FakeJudge
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge
from ragmeter.metrics import Faithfulness
from ragmeter.metrics.faithfulness import STATEMENTS as STATEMENTS_PROMPT
from ragmeter.score import Score
from ragmeter.session import JudgeSession, yes_probability
from ragmeter.store import ScoreStore
from ragmeter.text import split_sentences

from .fault_server import (
    FAULT_KINDS,
    Faults,
    FaultServer,
    marked_samples,
    statement_writing_metrics,
)

FAST = {"backoff": 0.001, "max_backoff": 0.005, "timeout": 0.15, "deadline": 10.0, "max_retries": 3}


def models(server: FaultServer) -> tuple[OpenAIJudge, OpenAIEmbedder]:
    return (
        OpenAIJudge("fault-judge", base_url=server.url, **FAST),
        OpenAIEmbedder("fault-embed", base_url=server.url, **FAST),
    )


def run(faults, samples, out_dir, metrics=None, workers=1, **options):
    with FaultServer(faults) as server:
        judge, embedder = models(server)
        result = evaluate(
            samples,
            metrics,
            judge=judge,
            embedder=embedder,
            cache=False,
            out_dir=out_dir,
            max_workers=workers,
            **options,
        )
    return result, server


def comparable(score: Score) -> tuple:
    return score.sample_id, score.metric, score.value, score.explanation


def test_faults_of_every_kind_change_no_score_and_lose_no_item(tmp_path):
    samples = marked_samples(12)
    clean, _ = run(Faults(), samples, tmp_path / "clean")
    poisoned = frozenset({"item-0003", "item-0008"})
    faults = Faults(rate=0.35, max_per_prompt=1, seed=7, permanent=poisoned, stall=2.0)
    faulty, server = run(faults, samples, tmp_path / "faulty")

    injected = server.faults_injected()
    assert set(injected) == {*FAULT_KINDS, "permanent"}  # every kind really happened
    # Zero lost: every item is in the result and committed to the store.
    assert len(faulty.scores) == 36
    store = ScoreStore(tmp_path / "faulty" / "scores.sqlite")
    assert store.count() == 36
    store.close()
    # Unscored: exactly the 2 poisoned samples x 3 metrics, each saying why.
    unscored = [s for s in faulty.scores if not s.scored]
    assert sorted({s.sample_id for s in unscored}) == sorted(poisoned)
    assert len(unscored) == 6
    assert all("HTTP 500" in (s.unscored_reason or "") for s in unscored)
    assert faulty.run.counts.unscored == 6
    # Everything else is exactly the clean run's.
    assert [comparable(s) for s in faulty.scores if s.scored] == [
        comparable(s) for s in clean.scores if s.sample_id not in poisoned
    ]


def test_concurrent_workers_through_faults_give_the_clean_scores(tmp_path):
    samples = marked_samples(16)
    metrics = ["faithfulness", "answer_relevance", "context_relevance"]
    clean, _ = run(Faults(), samples, tmp_path / "clean", metrics)
    faulty, server = run(
        # A little latency on every reply, so that four workers' requests surely overlap.
        Faults(
            rate=0.3,
            max_per_prompt=1,
            seed=11,
            kinds=("429", "500", "drop", "garbage"),
            latency=0.02,
        ),
        samples,
        tmp_path / "faulty",
        metrics,
        workers=4,
    )
    assert server.max_in_flight >= 2
    assert sum(server.faults_injected().values()) > 5
    assert [comparable(s) for s in faulty.scores] == [comparable(s) for s in clean.scores]


def test_sentence_splitting_is_thread_safe():
    texts = [s.contexts[0] for s in marked_samples(200)]
    alone = [split_sentences(t) for t in texts]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that a race shows every time
    try:
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(split_sentences, texts))
    finally:
        sys.setswitchinterval(interval)
    assert together == alone


def test_malformed_replies_get_one_repair_then_the_item_is_unscored(tmp_path):
    faults = Faults(rate=1.0, kinds=("malformed",))  # every reply misses the point
    result, server = run(faults, marked_samples(2), tmp_path / "out", statement_writing_metrics())
    assert [s.scored for s in result.scores] == [False] * 4
    statements = [s for s in server.seen if s.kind == "statements"]
    needed = [s for s in server.seen if s.kind == "sentence"]
    # faithfulness: the question, then one repair -> 2 requests per sample
    assert len(statements) == 4
    # context relevance, first sentence: the question, a request to finish the word, then the
    # repeat and its finishing request -> 4 per sample
    assert len(needed) == 8
    faithfulness = result.scores[0]
    assert faithfulness.unscored_reason.startswith(
        "faithfulness.statements: unreadable reply: no JSON object in the reply"
    )
    assert faithfulness.unscored_reason.endswith("(after 2 attempts)")
    assert [e.reply for e in faithfulness.exchanges] == [
        'Sure! Here is the JSON you asked for: {"statem'
    ] * 2
    assert result.scores[1].unscored_reason == (
        "context_relevance.sentence: neither yes nor no in the reply 'Perhaps.' (after 2 attempts)"
    )


STATEMENTS = json.dumps({"statements": ["Paris is in France."]})
SAMPLE = marked_samples(1)[0]


def test_repairs_and_retries_are_counted_separately():
    # Two unreadable replies use up one repair; the spare retries do not buy another.
    judge = FakeJudge(["no json", "still none", STATEMENTS])
    score = Faithfulness(statements="generate").score(
        SAMPLE, JudgeSession(judge, retries=5, repairs=1)
    )
    assert score.unscored_reason.endswith("(after 2 attempts)")
    # Failed calls use retries, not repairs.
    judge = FakeJudge([JudgeError("reset"), JudgeError("reset"), "no json", STATEMENTS])
    session = JudgeSession(judge, retries=2, repairs=1)
    assert session.ask(STATEMENTS_PROMPT, {"question": "q", "answer": "a"}).statements == [
        "Paris is in France."
    ]
    assert len(judge.history) == 4


def test_evaluate_makes_one_repair_by_default(tmp_path):
    judge = FakeJudge(responder=lambda request: "not json")
    result = evaluate([SAMPLE], [Faithfulness(statements="generate")], judge=judge, cache=False)
    assert len(judge.history) == 2
    assert result.scores[0].unscored_reason.endswith("(after 2 attempts)")


def logprob_reply(**top: float) -> ChatResponse:
    first = next(iter(top))
    return ChatResponse(
        text=first, logprobs=[TokenLogprobs(token=first, logprob=top[first], top=top)]
    )


def test_impossible_logprobs_are_ignored_not_turned_into_nan():
    # +inf and positive log-probabilities cannot come from a model; they are skipped.
    assert yes_probability(logprob_reply(Yes=math.inf, No=math.log(0.5))) == 0.0
    assert yes_probability(logprob_reply(Yes=1000.0, No=-0.1)) == 0.0
    assert yes_probability(logprob_reply(Yes=math.nan)) is None
    assert yes_probability(logprob_reply(Yes=math.log(0.2), No=math.log(0.6))) == pytest.approx(
        0.25
    )
