"""G-Eval text quality: the four ready criteria read directly on 1-5, and no default score."""

from __future__ import annotations

import math

from ragmeter.attribution.quality import CRITERIA, text_quality
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


def test_probability_weighted_score_from_the_judge():
    def respond(request: ChatRequest) -> ChatResponse:
        assert request.max_tokens == 1 and request.top_logprobs == 20
        return digits({"3": 0.25, "4": 0.25, "The": 0.5})

    judge = FakeJudge(responder=respond)
    scores = text_quality("s1", INPUTS, judge)
    assert list(scores) == ["coherence", "consistency", "fluency", "relevance"]
    for name, score in scores.items():
        # renormalised over the digits: 3 x 0.5 + 4 x 0.5 = 3.5 on the paper's 1-5
        assert score.value == 3.5 and score.metric == f"quality.{name}"
        assert score.explanation["method"] == "logprobs"
        assert score.explanation["distribution"] == {"1": 0, "2": 0, "3": 0.5, "4": 0.5, "5": 0}
        assert score.usage.model_calls == 1
    # All four share the system message and the data, so a local judge evaluates them once;
    # only the criterion after the data differs.
    systems = {r.messages[0].content for r in judge.history}
    assert len(systems) == 1
    users = [r.messages[-1].content for r in judge.history]
    data = users[0].split("Criterion:")[0]
    assert all(u.startswith(data) for u in users)
    assert "<context>\n{qid: Q101, name: Ada Quill" in data
    assert CRITERIA["consistency"].question in users[1]


def test_without_logprobs_the_digits_written_are_the_score():
    written = {"coherence": "4", "consistency": "2", "fluency": "5", "relevance": "1"}

    def reply(request: ChatRequest) -> str:
        # each criterion's replies, greedy and drawn, name the same digit
        asked = request.messages[-1].content
        return next(d for name, d in written.items() if CRITERIA[name].question in asked)

    judge = FakeJudge(responder=reply)
    scores = text_quality("s1", INPUTS, judge)
    assert {n: s.value for n, s in scores.items()} == {
        "coherence": 4.0,
        "consistency": 2.0,
        "fluency": 5.0,
        "relevance": 1.0,
    }
    assert scores["coherence"].explanation["method"] == "sampled 5 replies"


def test_a_reply_without_a_level_is_unscored_never_a_default():
    judge = FakeJudge(responder=lambda request: digits({"The": 0.7, "Score": 0.3}))
    scores = text_quality("s1", INPUTS, judge, criteria={"relevance": CRITERIA["relevance"]})
    score = scores["relevance"]
    assert score.value is None and not score.scored
    assert score.unscored_reason is not None
    assert score.unscored_reason.startswith("criterion.relevance: none of 1, 2, 3, 4, 5")
    assert "after 3 attempts" in score.unscored_reason
    assert len(score.exchanges) == 3
