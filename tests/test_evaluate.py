"""evaluate() end to end on the scripted judge: values, unscored accounting, resume and cache."""

from __future__ import annotations

import json
import threading

import pandas as pd
import pytest

from ragmeter import AnswerRelevance, evaluate
from ragmeter.judges.base import JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.sample import Sample

from .conftest import routed
from .fault_server import AnsweringJudge

# Each answer shares a word ("fact") with its context, so answer relevance's off-topic gate
# hands it to the judge.
SAMPLES = [
    Sample(id="a", question="alpha beta", contexts=["One fact. Two fact."], answer="x fact."),
    Sample(id="b", question="alpha beta", contexts=["Three fact. Four fact."], answer="z fact."),
]

REPLIES = {
    "statements": {"statements": ["x is one.", "y is two."]},
    "verdicts": {
        "verdicts": [
            {"statement": "x is one.", "reason": "r", "verdict": "yes"},
            {"statement": "y is two.", "reason": "r", "verdict": "no"},
        ]
    },
    "questions": {"questions": ["alpha beta", "alpha gamma", "alpha beta"], "noncommittal": False},
    "extract": {"sentences": [1]},
    "supported": 0.75,
    "needed": 0.25,
    "complete": 1.0,
    "noncommittal": {"noncommittal": False},
}


def run(judge, tmp_path, **kwargs):
    kwargs.setdefault("cache", tmp_path / "cache.sqlite")
    return evaluate(SAMPLES, judge=judge, embedder=HashingEmbedder(), **kwargs)


def test_evaluate_scores_every_sample_and_summarises(tmp_path):
    result = run(FakeJudge(responder=routed(REPLIES)), tmp_path)
    frame = result.to_pandas()
    assert list(frame["id"]) == ["a", "b"]
    # each answer sentence is supported with probability 0.75
    assert list(frame["faithfulness"]) == [0.75, 0.75]
    # completeness: the judge's probability that the answer addresses the question
    assert frame["answer_relevance"].tolist() == pytest.approx([1.0, 1.0])
    # each of the 2 sentences is needed with probability 0.25: neither reaches 0.5
    assert frame["context_relevance"].tolist() == [0.0, 0.0]
    summary = {row.metric: row for row in result.summary()}
    assert summary["faithfulness"].mean == 0.75
    assert (summary["faithfulness"].ci_low, summary["faithfulness"].ci_high) == (0.75, 0.75)
    assert summary["context_relevance"].mean == 0.0
    assert summary["context_relevance"].scored == 2 and summary["context_relevance"].unscored == 0
    # per sample: faithfulness 1 (one answer sentence), answer relevance 1 + 1, context
    # relevance 2
    assert result.usage().model_calls == 10


def test_unscored_items_are_counted_not_averaged(tmp_path):
    def responder(request):
        if "x y." in request.messages[-1].content or "One fact" in request.messages[-1].content:
            return routed(REPLIES)(request)
        raise JudgeError("connection reset")

    result = run(FakeJudge(responder=responder), tmp_path, metrics=["faithfulness"], retries=0)
    summary = result.summary()[0]
    assert (summary.scored, summary.unscored, summary.mean) == (1, 1, 0.75)
    assert summary.unscored_reasons == {
        "faithfulness.supported: judge call failed: connection reset (after 1 attempts)": 1
    }
    frame = result.to_pandas()
    assert frame.loc[1, "faithfulness"] is pd.NA
    assert "connection reset" in frame.loc[1, "faithfulness_unscored_reason"]


def test_rerun_with_the_same_out_dir_resumes_without_calls(tmp_path):
    first = run(
        FakeJudge(responder=routed(REPLIES)), tmp_path, out_dir=tmp_path / "out", cache=False
    )
    silent = FakeJudge()  # any call would raise: nothing should reach it
    second = evaluate(
        SAMPLES, judge=silent, embedder=HashingEmbedder(), cache=False, out_dir=tmp_path / "out"
    )
    assert silent.history == []
    assert second.to_pandas().equals(first.to_pandas())


def test_rerun_after_a_crash_judges_only_what_is_missing(tmp_path):
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] > 2:
            raise JudgeError("process died")
        return routed(REPLIES)(request)

    partial = evaluate(
        SAMPLES,
        ["faithfulness", "context_relevance"],
        judge=FakeJudge(responder=flaky),
        cache=False,
        out_dir=tmp_path / "out",
        retries=0,
    )
    # faithfulness(a) takes call 1, context_relevance(a) call 2; its second sentence (call 3)
    # and every later call fail
    assert [s.scored for s in partial.scores] == [True, False, False, False]
    resumed_judge = FakeJudge(responder=routed(REPLIES))
    resumed = evaluate(
        SAMPLES,
        ["faithfulness", "context_relevance"],
        judge=resumed_judge,
        cache=False,
        out_dir=tmp_path / "out",
    )
    # context_relevance(a): 2 calls, faithfulness(b): 1, context_relevance(b): 2
    assert len(resumed_judge.history) == 5
    assert [s.value for s in resumed.scores] == [0.75, 0.0, 0.75, 0.0]


def test_call_cache_makes_a_repeat_run_free(tmp_path):
    run(FakeJudge(responder=routed(REPLIES)), tmp_path)
    silent = FakeJudge()
    again = run(silent, tmp_path)
    assert silent.history == []
    assert again.usage().model_calls == 0
    assert again.usage().cached_calls == 10


def test_a_changed_prompt_or_model_is_not_served_from_the_store(tmp_path):
    run(FakeJudge(responder=routed(REPLIES)), tmp_path, out_dir=tmp_path / "out", cache=False)
    other = FakeJudge(responder=routed(REPLIES), model="other")
    run(other, tmp_path, out_dir=tmp_path / "out", cache=False)
    assert len(other.history) == 10


def test_duplicate_ids_are_rejected_with_the_row():
    twice = [SAMPLES[0], SAMPLES[0]]
    with pytest.raises(ValueError, match=r"row 2, field 'id': 'a' was already used by row 1"):
        evaluate(twice, judge=FakeJudge(), embedder=HashingEmbedder(), cache=False)


def test_evaluate_reads_ragas_style_records(tmp_path):
    rows = [
        {
            "user_input": "alpha beta",
            "retrieved_contexts": ["One fact. Two fact."],
            "response": "x y.",
            "reference": "x",
        }
    ]
    result = evaluate(
        rows, ["context_relevance"], judge=FakeJudge(responder=routed(REPLIES)), cache=False
    )
    assert result.samples[0].reference == "x"
    assert result.to_pandas()["context_relevance"].tolist() == [0.0]


def test_run_record_names_models_and_metric_versions(tmp_path):
    result = run(FakeJudge(responder=routed(REPLIES)), tmp_path)
    assert result.run.judge == "fake:scripted"
    # Answer relevance's off-topic gate embeds by default: the embedder is recorded.
    assert result.run.embedder == "fake:hashing-4096"
    assert result.run.metrics["answer_relevance"].config == {
        "n": 3,
        "score": "completeness",
        "against": "question",
        "off_topic_below": 0.05,
    }
    json.loads(result.run.to_json())  # serialisable as is
    # Without it, no metric of the defaults embeds: the embedder is neither loaded nor recorded.
    judged_only = AnswerRelevance(off_topic_below=None)
    metrics = ["faithfulness", judged_only, "context_relevance"]
    plain = run(FakeJudge(responder=routed(REPLIES)), tmp_path, metrics=metrics)
    assert plain.run.embedder is None


class CountingJudge(AnsweringJudge):
    """Answers after 30 ms and keeps the most calls it had in flight at once."""

    def __init__(self) -> None:
        super().__init__(latency=0.03)
        self.peak = self._now = 0
        self._lock = threading.Lock()

    def complete(self, request):
        with self._lock:
            self._now += 1
            self.peak = max(self.peak, self._now)
        try:
            return super().complete(request)
        finally:
            with self._lock:
                self._now -= 1


@pytest.mark.parametrize(("workers", "peak"), [(1, 1), (2, 2), (4, 3)])
def test_one_items_questions_are_asked_at_once_up_to_the_workers(workers, peak):
    """One item whose answer has three sentences: with several workers its three Yes/No
    questions are in flight together, never more than ``workers``, and the score, its
    explanation and its exchanges are those of asking them one by one."""
    sample = Sample(
        id="s",
        question="What does city 1 have?",
        contexts=["City 1 has an old bridge. The bridge draws visitors."],
        answer="City 1 has an old bridge. It draws visitors. It also has a castle.",
    )
    judge = CountingJudge()
    result = evaluate([sample], ["faithfulness"], judge=judge, cache=False, max_workers=workers)
    alone = evaluate([sample], ["faithfulness"], judge=AnsweringJudge(), cache=False)
    assert judge.peak == peak
    got, expected = result.scores[0], alone.scores[0]
    assert (got.value, got.explanation) == (expected.value, expected.explanation)
    assert [e.messages for e in got.exchanges] == [e.messages for e in expected.exchanges]
    assert got.usage == expected.usage and got.usage.model_calls == 3
