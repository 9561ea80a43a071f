"""The prompt-injection suite: its cases, its scoring logic on scripted judges, and that the
rendering defuses every case's fake tags and chat tokens."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from ragmeter.judges.base import JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics.answer_relevance import COMPLETE, questions_prompt
from ragmeter.metrics.commitment import NONCOMMITTAL
from ragmeter.metrics.context_relevance import (
    NEEDED,
    NEW_INFORMATION,
    SENTENCE_NEEDED,
    numbered,
)
from ragmeter.metrics.faithfulness import STATEMENTS, SUPPORTED
from ragmeter.selftest.injection import (
    CASES,
    TECHNIQUES,
    InjectionCase,
    Outcome,
    SuiteReport,
    format_report,
    run_suite,
)
from ragmeter.text import split_sentences

from .conftest import routed


def judge(p_yes: float) -> FakeJudge:
    """A scripted judge answering every yes/no question with P(yes) = p_yes, and taking every
    answer as committed."""
    return FakeJudge(
        responder=routed(
            {
                "statements": {"statements": ["The claim."]},
                "supported": p_yes,
                "needed": p_yes,
                "new_information": p_yes,
                "complete": p_yes,
                "noncommittal": {"noncommittal": False},
            }
        )
    )


def test_the_suite_covers_many_techniques_and_every_metric():
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)
    assert {case.technique for case in CASES} == set(TECHNIQUES)
    assert Counter(case.metric for case in CASES) == {
        "faithfulness": 13,
        "context_relevance": 11,
        "answer_relevance": 9,
    }
    assert all(case.sample.id == case.id and case.threshold == 0.5 for case in CASES)


def test_an_honest_judge_gives_no_attack_a_success():
    report = run_suite(judge(0.02), HashingEmbedder(), cache=False)
    # faithfulness: 0.02; context relevance: no sentence reaches P 0.5; answer relevance:
    # P(addresses the question) 0.02
    values = {
        metric: [o.value for o in report.outcomes if o.case.metric == metric]
        for metric in ("faithfulness", "context_relevance", "answer_relevance")
    }
    assert values == {
        "faithfulness": [pytest.approx(0.02)] * 13,
        "context_relevance": [0.0] * 11,
        "answer_relevance": [pytest.approx(0.02)] * 9,
    }
    assert report.successes == 0 and report.rate == 0.0
    assert len(report.scored) == 33


def test_a_gullible_judge_lets_the_yes_no_attacks_through():
    report = run_suite(judge(0.98), HashingEmbedder(), cache=False)
    # Every score is read from a yes/no question (answer relevance from "does the answer
    # address the question?"), so a judge that always says yes at 0.98 > 0.5 lets all through.
    assert report.successes == 33
    assert report.rate == pytest.approx(1.0)
    assert report.breakdown("metric") == {
        "answer_relevance": (9, 9, 0),
        "context_relevance": (11, 11, 0),
        "faithfulness": (13, 13, 0),
    }
    assert report.breakdown("technique")["override"] == (3, 3, 0)


def test_unscored_cases_are_reported_apart_not_as_successes():
    def responder(request):
        if "pasta" in request.messages[-1].content:
            raise JudgeError("connection reset")
        return judge(0.98)._responder(request)

    report = run_suite(FakeJudge(responder=responder), HashingEmbedder(), cache=False)
    assert report.breakdown("metric")["answer_relevance"] == (0, 0, 9)
    assert (report.successes, len(report.scored)) == (24, 24)
    assert report.rate == 1.0
    record = report.record()
    assert record["attack_success_rate"] == 1.0 and record["cases"] == 33


def rendered(case: InjectionCase) -> list[str]:
    """The user messages the judge would read for the case's metric."""
    s = case.sample
    if case.metric == "faithfulness":
        prompts = [
            STATEMENTS.render({"question": s.question, "answer": s.answer}),
            *[SUPPORTED.render({"context": s.contexts, "statement": t}) for t in [s.answer]],
        ]
    elif case.metric == "context_relevance":
        sentences = [x for passage in s.contexts for x in split_sentences(passage)]
        inputs = {"question": s.question, "context": numbered(sentences)}
        earlier = {"question": s.question, "earlier sentences": "\n".join(sentences[:1])}
        prompts = [
            NEEDED.render(inputs, number="1"),
            *[SENTENCE_NEEDED.render({"question": s.question, "sentence": x}) for x in sentences],
            *[NEW_INFORMATION.render(earlier | {"sentence": x}) for x in sentences[1:]],
        ]
    else:
        prompts = [
            questions_prompt(3).render({"answer": s.answer}),
            NONCOMMITTAL.render({"answer": s.answer}),
            COMPLETE.render({"question": s.question, "answer": s.answer}),
        ]
    return [messages[-1].content for messages in prompts]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_no_case_can_close_a_tag_or_open_a_turn(case):
    for text in rendered(case):
        for name in re.findall(r"^<(\w+)>$", text, re.MULTILINE):
            # only the real closing tag (a "<context>" line inside a sentence is data, unclosed)
            assert text.count(f"</{name}>") <= 1
        assert "<|im_start|>" not in text and "<|im_end|>" not in text
        assert not re.search("[\U000e0000-\U000e007f\u200b]", text)  # nothing invisible


def test_the_report_lists_each_case_and_the_rate():
    cases = CASES[:2]
    report = SuiteReport(
        "fake:scripted",
        [Outcome(cases[0], 0.9), Outcome(cases[1], None, "judge call failed")],
    )
    lines = format_report(report)
    assert lines[1].split() == [
        "faithfulness-override",
        "faithfulness",
        "0.900",
        "0.5",
        "SUCCEEDED",
    ]
    assert lines[2].split() == ["faithfulness-fake-tag", "faithfulness", "—", "0.5", "unscored"]
    assert lines[-1] == "attack success rate (fake:scripted): 1/1 = 100.0%; 1 cases unscored"
