"""G-Eval text quality: probability-weighted scores, the JSON fallback, and no default score."""

from __future__ import annotations

import json
import math

import pytest

from ragmeter.attribution.probe import NextTokenProbe
from ragmeter.attribution.quality import CRITERIA, text_quality, weighted_score
from ragmeter.judges.base import ChatRequest, ChatResponse, TokenLogprobs
from ragmeter.judges.fake import FakeJudge

INPUTS = {
    "question": "Who was Ada Quill?",
    "knowledge": "{qid: Q101, name: Ada Quill, occupation: glassblower}",
    "answer": "Ada Quill was a glassblower.",
}


def digits(probabilities: dict[str, float]) -> ChatResponse:
    top = {token: math.log(p) for token, p in probabilities.items()}
    best = max(top, key=lambda k: top[k])
    return ChatResponse(text=best, logprobs=[TokenLogprobs(token=best, logprob=top[best], top=top)])


def test_weighted_score_by_hand():
    assert weighted_score({"3": 0.5, "4": 0.5}) == 3.5
    # 1*.1 + 2*.2 + 3*.3 + 4*.2 + 5*.2 = 3.2
    assert weighted_score({"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.2, "5": 0.2}) == pytest.approx(3.2)
    # Renormalised over the digits: mass elsewhere does not drag the score down.
    assert weighted_score({"3": 0.25, "4": 0.25}) == 3.5
    assert weighted_score({}) is None


def test_probability_weighted_score_from_the_judge():
    def respond(request: ChatRequest) -> ChatResponse:
        assert request.max_tokens == 1 and request.top_logprobs == 10
        return digits({"3": 0.25, "4": 0.25, "The": 0.5})

    judge = FakeJudge(responder=respond)
    scores = text_quality("s1", INPUTS, judge, NextTokenProbe(10))
    assert list(scores) == ["coherence", "consistency", "fluency", "relevance"]
    for name, score in scores.items():
        assert score.value == 3.5 and score.metric == f"quality.{name}"
        assert score.explanation["method"] == "logprobs"
        assert score.explanation["mass"] == pytest.approx(0.5)
        assert score.usage.model_calls == 1
    # All four share the system message and the data, so a local judge evaluates them once;
    # only the criterion after the data differs.
    systems = {r.messages[0].content for r in judge.history}
    assert len(systems) == 1
    users = [r.messages[-1].content for r in judge.history]
    data = users[0].split("Criterion:")[0]
    assert all(u.startswith(data) for u in users)
    assert "Criterion: Consistency (1-5)" in users[1]


def test_without_logprobs_the_integer_from_json_is_the_score():
    judge = FakeJudge(
        [
            "4",
            json.dumps({"score": 4}),
            json.dumps({"score": 2}),
            json.dumps({"score": 5}),
            json.dumps({"score": 1}),
        ]
    )
    scores = text_quality("s1", INPUTS, judge, NextTokenProbe(10))
    assert {n: s.value for n, s in scores.items()} == {
        "coherence": 4.0,
        "consistency": 2.0,
        "fluency": 5.0,
        "relevance": 1.0,
    }
    assert scores["coherence"].explanation == {"method": "json"}
    assert len(judge.history) == 5  # one probe learns there are no log-probabilities


def test_no_digit_in_the_distribution_falls_back_to_json():
    judge = FakeJudge([digits({"The": 0.7, "Score": 0.3}), json.dumps({"score": 3})])
    scores = text_quality(
        "s1", INPUTS, judge, NextTokenProbe(10), criteria={"fluency": CRITERIA["fluency"]}
    )
    assert scores["fluency"].value == 3.0
    assert scores["fluency"].explanation == {"method": "json"}


def test_a_failed_parse_is_unscored_never_a_default():
    judge = FakeJudge(["-", "three", json.dumps({"score": 7}), "{}"])
    scores = text_quality(
        "s1", INPUTS, judge, NextTokenProbe(10), criteria={"relevance": CRITERIA["relevance"]}
    )
    score = scores["relevance"]
    assert score.value is None and not score.scored
    assert score.unscored_reason is not None
    assert score.unscored_reason.startswith("kalma.quality.relevance: unreadable reply")
    assert "after 3 attempts" in score.unscored_reason
    assert [e.reply for e in score.exchanges] == ["-", "three", json.dumps({"score": 7}), "{}"]
