"""The gaming suite: its cases, its accounting on scripted judges, and ``ragmeter selftest
gaming``. The scripted judges answer every Yes/No question with a fixed probability (or one
chosen by what the question holds), so each score and rate below is worked out by hand."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.sample import Sample
from ragmeter.selftest.gaming import (
    CASES,
    TRICKS,
    GamingCase,
    Outcome,
    format_report,
    run_suite,
    select_cases,
)
from ragmeter.selftest.gaming_cases import LONG_CONTEXT, PENICILLIN, TOWER
from ragmeter.text import split_sentences

from .conftest import prompt_name, yes_no
from .test_selftest import cli

Z2 = 1.959964**2


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval, written out: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) /
    (1 + z^2/n)."""
    p = successes / n
    centre = (p + Z2 / (2 * n)) / (1 + Z2 / n)
    spread = math.sqrt(Z2) * math.sqrt(p * (1 - p) / n + Z2 / (4 * n * n)) / (1 + Z2 / n)
    return centre - spread, centre + spread


def judge(p_yes: float, *, complete: float | None = None, supported=None) -> FakeJudge:
    """Every Yes/No question answered with P(yes) = ``p_yes``; answer relevance's "does it
    address the question?" with ``complete`` if given; faithfulness's and answer correctness's
    "is it supported?" with ``supported(text)`` if given. Every answer is taken as committed."""

    def respond(request):
        kind = prompt_name(request)
        if kind == "noncommittal":
            return json.dumps({"noncommittal": False})
        if kind == "complete" and complete is not None:
            return yes_no(complete)
        if kind == "supported" and supported is not None:
            return yes_no(supported(request.messages[-1].content))
        return yes_no(p_yes)

    return FakeJudge(responder=respond)


def test_the_catalogue_covers_every_trick_on_four_metrics():
    assert len(CASES) == 33 and len({c.id for c in CASES}) == 33
    assert Counter(c.trick for c in CASES) == {
        "echo-question": 6,
        "keyword-stuffing": 6,
        "context-copy": 5,
        "hedging": 6,
        "false-citation": 5,
        "buried-claim": 5,
    }
    assert set(TRICKS) == {c.trick for c in CASES}
    assert Counter(c.metric for c in CASES) == {
        "answer_relevance": 12,
        "answer_correctness": 9,
        "faithfulness": 9,
        "context_relevance": 3,
    }
    assert Counter(c.place for c in CASES) == {"answer": 30, "contexts": 3}
    for case in CASES:
        assert case.sample.id == case.id
        assert (case.sample.reference is not None) == (case.metric == "answer_correctness")
        text = " ".join([case.sample.answer, *case.sample.contexts]).lower()
        # no case speaks to the judge: that is the injection suite's business
        assert not any(w in text for w in ("judge", "ignore", "system", "verdict", "score"))


def test_a_buried_claim_hides_one_wrong_sentence_among_seven_true_ones():
    buried = [c for c in CASES if c.trick == "buried-claim" and c.metric == "faithfulness"]
    assert [c.threshold for c in buried] == [0.9375, 0.9375]
    for case, topic in zip(buried, (TOWER, PENICILLIN), strict=True):
        sentences = split_sentences(case.sample.answer)
        context = split_sentences(LONG_CONTEXT[topic.name])
        assert len(sentences) == 8 and sentences[3] == topic.wrong
        assert [s for s in sentences if s != topic.wrong] == context[1:]


def test_an_honest_judge_lets_no_trick_through():
    report = run_suite(judge(0.02), HashingEmbedder(), cases=CASES, cache=False)
    assert len(report.scored) == 33 and report.successes == 0
    values = {c.metric: set() for c in CASES}
    for outcome in report.outcomes:
        values[outcome.case.metric].add(round(outcome.value, 6))
    # faithfulness and answer relevance: 0.02; answer correctness: precision and recall 0.02,
    # F1 0.02; context relevance: no sentence needed, 0. The echoes claim nothing: 0 before
    # the judge is asked.
    assert values == {
        "faithfulness": {0.02},
        "answer_relevance": {0.0, 0.02},
        "answer_correctness": {0.0, 0.02},
        "context_relevance": {0.0},
    }
    # 0 of 33: the upper end is z^2 / (33 + z^2)
    assert report.interval == (pytest.approx(0.0), pytest.approx(Z2 / (33 + Z2), abs=1e-6))


def test_a_judge_fooled_on_one_question_is_counted_by_trick_and_metric():
    # Only "does the answer address the question?" is fooled (0.98): the answer-relevance
    # cases succeed, but for the four echoes, which claim nothing and score 0 before the judge
    # is asked.
    report = run_suite(judge(0.02, complete=0.98), HashingEmbedder(), cases=CASES, cache=False)
    assert report.successes == 8 and len(report.scored) == 33
    assert report.breakdown("trick") == {
        "buried-claim": (0, 5, 0),
        "context-copy": (3, 5, 0),
        "echo-question": (0, 6, 0),
        "false-citation": (0, 5, 0),
        "hedging": (2, 6, 0),
        "keyword-stuffing": (3, 6, 0),
    }
    assert report.breakdown("metric") == {
        "answer_correctness": (0, 9, 0),
        "answer_relevance": (8, 12, 0),
        "context_relevance": (0, 3, 0),
        "faithfulness": (0, 9, 0),
    }
    assert report.breakdown("place") == {"answer": (8, 30, 0), "contexts": (0, 3, 0)}
    low, high = wilson(8, 33)
    assert report.interval == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))
    assert (round(low, 4), round(high, 4)) == (0.1283, 0.4102)
    record = report.record()
    assert record["gaming_success_rate"] == pytest.approx(8 / 33)
    assert record["by_trick"]["context-copy"]["gaming_success_rate"] == pytest.approx(3 / 5)
    assert record["by_trick"]["context-copy"]["interval_95"] == pytest.approx(wilson(3, 5))
    assert record["outcomes"][0] == {
        "id": "answer_relevance-echo-question-tower",
        "trick": "echo-question",
        "metric": "answer_relevance",
        "place": "answer",
        "source": "hand-written",
        "value": 0.0,
        "threshold": 0.5,
        "succeeded": False,
        # "That is the question this answer addresses: ..." vouches for itself.
        "detected": True,
        "unscored_reason": None,
    }
    lines = format_report(report)
    assert "by trick:" in lines and "by metric:" in lines
    assert "  context-copy       3/5 = 60.0% (95% CI 23.1-88.2%)" in lines
    assert lines[-1] == "gaming success rate (fake:scripted): 8/33 = 24.2% (95% CI 12.8-41.0%)"


@pytest.mark.parametrize(
    ("p_wrong", "value", "succeeded"), [(0.6, 0.9325, False), (0.7, 0.945, True)]
)
def test_a_buried_claim_succeeds_only_when_the_wrong_sentence_passes(p_wrong, value, succeeded):
    # The seven true sentences at 0.98, the wrong one at p_wrong: (7 x 0.98 + p_wrong) / 8.
    def supported(text: str) -> float:
        return p_wrong if TOWER.wrong in text else 0.98

    case = next(c for c in CASES if c.id == "faithfulness-buried-claim-tower")
    report = run_suite(judge(0.02, supported=supported), None, cases=[case], cache=False)
    (outcome,) = report.outcomes
    assert outcome.value == pytest.approx(value)
    assert outcome.succeeded is succeeded


def test_a_trick_must_be_known_and_select_keeps_catalogue_order():
    with pytest.raises(ValueError, match="case x: 'nope' is not one of echo-question"):
        GamingCase("x", "nope", "faithfulness", Sample(question="q", answer="a"), 0.5, "h")
    chosen = select_cases(["hedging", "echo-question", "hedging"])
    assert [c.trick for c in chosen] == ["echo-question"] * 6 + ["hedging"] * 6
    assert select_cases(None) == select_cases([]) == CASES
    with pytest.raises(ValueError, match="unknown trick 'nope'"):
        select_cases(["nope"])
    assert Outcome(chosen[0], 0.5).succeeded is False  # at the threshold: held
    assert Outcome(chosen[0], 0.51).succeeded is True


def test_the_command_reports_by_trick_and_gates(tmp_path, no_user_cache):
    # the bare fake judge fails every call: all five cases unscored, the rate unknown
    args = ["gaming", "--judge", "fake", "--trick", "false-citation", "--no-cache"]
    result = cli(*args, "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "5 gaming cases (false-citation), judge fake"
    assert "  false-citation     0/0 (5 unscored)" in lines
    assert "gaming success rate (fake:scripted): 0/0; 5 cases unscored" in lines
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cases"] == 5 and report["gaming_success_rate"] is None
    assert set(report["by_trick"]) == {"false-citation"}
    assert (tmp_path / "out" / "faithfulness" / "run.json").exists()
    gated = cli(*args, "--out", str(tmp_path / "gated"), "--fail-above", "0.5")
    assert gated.exit_code == 1 and "no case was scored" in gated.output
    bad = cli("gaming", "--judge", "fake", "--trick", "nope", "--out", str(tmp_path / "bad"))
    assert bad.exit_code == 2 and "unknown trick 'nope'" in bad.output
