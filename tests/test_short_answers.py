"""Short references: exact match and token F1, the accepted answers, hedged answers, and the
reading each sample gets, on a scripted judge, against values worked out by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from ragmeter import evaluate
from ragmeter.answers import (
    accepted_answers,
    exact_match,
    hedged,
    polarity,
    short_answers,
    squad_normalised,
    token_f1,
)
from ragmeter.data import DatasetError, load_samples
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.metrics import metric_by_name
from ragmeter.sample import Sample

from .conftest import yes_no

NQ301 = Path(__file__).parents[2] / "shared" / "data" / "openqa" / "nq301_dev.jsonl"
APOLLO = ["14 December 1972 UTC", "December 1972"]


def test_squad_normalisation_drops_case_punctuation_articles_and_spaces():
    assert squad_normalised("The  Washington, D.C. area!") == "washington dc area"
    assert squad_normalised("An apple a day") == "apple day"


def test_exact_match_is_the_best_over_the_alternatives():
    gold = ["FedExField in Landover, Maryland", "the Washington metropolitan area"]
    assert exact_match("Washington metropolitan area", gold) == 1.0
    assert exact_match("Washington, D.C.", gold) == 0.0


def test_token_f1_by_hand():
    # "washington dc" against "washington metropolitan area": one word shared,
    # precision 1/2, recall 1/3, F1 = 2 * (1/6) / (5/6) = 0.4
    assert token_f1("Washington, D.C.", ["the Washington metropolitan area"]) == pytest.approx(0.4)
    # "it opened in 1995": against "1995" precision 1/4, recall 1 -> 0.4; against
    # "september 1995" precision 1/4, recall 1/2 -> 1/3; the best is 0.4
    assert token_f1("It opened in 1995.", ["1995", "September 1995"]) == pytest.approx(0.4)
    assert token_f1("Paris", ["Lyon"]) == 0.0


@pytest.mark.skipif(not NQ301.exists(), reason="NQ301 is not on this machine")
def test_exact_match_and_f1_reproduce_nq301s_own_on_every_row():
    from ragmeter.meta.openqa import lexical_check, load_openqa

    assert lexical_check(load_openqa(NQ301)) == {
        "rows": 1800,
        "exact_match": 1800,
        "token_f1": 1800,
    }


@pytest.mark.parametrize(
    ("reference", "accepted"),
    [
        ("3 euros.", ["3 euros."]),
        ("No.", ["No."]),
        (
            "14 December 1972 UTC or December 1972",
            ["14 December 1972 UTC or December 1972", *APOLLO],
        ),
        (APOLLO, APOLLO),
        ("Paris is the capital of France. It has 2.1 million inhabitants.", None),
        ("Water boils at 100 degrees.", None),  # five words: stands alone, a claim
    ],
)
def test_which_references_are_short_and_what_they_accept(reference, accepted):
    sample = Sample(question="q", answer="a", reference=reference)
    assert short_answers(sample) == accepted
    assert accepted_answers(sample) == (accepted or [reference])


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("It fell either in 1989 or in 1990.", "either in 1989 or"),
        ("Paris or Lyon", "Paris or Lyon"),
        ("Paris", None),
        ("Hair is taken from the back or sides of the scalp, where it resists balding.", None),
    ],
)
def test_an_answer_that_leaves_the_question_open_hedges(answer, found):
    assert hedged(answer, ["Paris"]) == found


def test_or_in_an_accepted_answer_is_no_hedge():
    assert hedged("heads or tails", ["heads or tails"]) is None


def test_polarity_is_the_opening_yes_or_no():
    assert polarity("No, cars must be booked.") == "no"
    assert polarity("Yes.") == "yes"
    assert polarity("No one knows.") is None
    assert polarity("Norway") is None


_TAG = re.compile(r"<(text|reference answer)>\n(.*?)\n</\1>", re.DOTALL)


def judge_of(p_given: dict[tuple[str, str], float]) -> FakeJudge:
    """A judge that gives P(yes) per (text, reference answer) of a short reading."""

    def respond(request: ChatRequest) -> ChatResponse:
        found = dict(_TAG.findall(request.messages[-1].content))
        return yes_no(p_given[found["text"], found["reference answer"]])

    return FakeJudge(responder=respond)


def scored(metric: str, sample: Sample, judge: FakeJudge, **options):
    result = evaluate([sample], [metric_by_name(metric, **options)], judge=judge, cache=False)
    (score,) = result.scores
    return score.value, score.explanation


LANDED = "It landed in December 1972, on the 11th."


def test_a_short_reference_is_read_as_the_answer_and_the_best_alternative_decides():
    judge = judge_of({(LANDED, APOLLO[0]): 0.3, (LANDED, APOLLO[1]): 0.9})
    sample = Sample(question="when did apollo 17 land", answer=LANDED, reference=APOLLO)
    value, explanation = scored("answer_correctness", sample, judge)
    assert value == pytest.approx(0.9)
    assert explanation["reading"] == "answer"
    assert explanation["matched"] == "December 1972"
    assert [a["p_given"] for a in explanation["alternatives"]] == [0.3, 0.9]
    assert len(judge.history) == 2


def test_an_exact_match_and_a_hedge_need_no_judge():
    judge = judge_of({})
    exact = Sample(question="when did apollo 17 land", answer="december 1972", reference=APOLLO)
    assert scored("answer_correctness", exact, judge)[0] == 1.0
    hedging = exact.model_copy(update={"answer": "either December 1972 or January 1973"})
    value, explanation = scored("answer_correctness", hedging, judge)
    assert (value, explanation["hedged"], explanation["matched"]) == (
        0.0,
        "either December 1972 or",
        None,
    )
    assert judge.history == []


def test_a_bare_yes_or_no_is_read_by_the_answers_opening_word():
    judge = judge_of({})
    asked = "Can I take my car without booking?"
    right = Sample(question=asked, answer="No. Cars need a booking a day ahead.", reference="No.")
    wrong = right.model_copy(update={"answer": "Yes, any time."})
    assert scored("answer_correctness", right, judge)[0] == 1.0
    assert scored("answer_correctness", wrong, judge)[0] == 0.0
    assert judge.history == []


def test_context_recall_reads_a_short_reference_against_each_chunk():
    chunks = ["Adults pay 6 euros.", "Children under twelve pay 3 euros."]
    judge = judge_of({(chunks[0], "3 euros."): 0.2, (chunks[1], "3 euros."): 0.85})
    sample = Sample(
        question="What does a child's ticket cost?",
        contexts=chunks,
        answer="3 euros.",
        reference="3 euros.",
    )
    value, explanation = scored("context_recall", sample, judge)
    assert value == pytest.approx(0.85)
    assert explanation["matched"] == "3 euros."
    assert explanation["p_in_chunks"] == [[0.2, 0.85]]


def test_a_long_reference_is_read_as_claims_and_the_reading_can_be_forced():
    long = Sample(
        question="Tell me about Paris.",
        answer="Paris is the capital of France.",
        reference="Paris is the capital of France. It has 2.1 million inhabitants.",
    )
    every_check = FakeJudge(responder=lambda request: yes_no(0.8))
    value, explanation = scored("answer_correctness", long, every_check)
    # precision 0.8 (one claim), recall 0.8 (two claims at 0.8): F1 0.8
    assert (round(value, 4), explanation["reading"]) == (0.8, "claims")
    short = Sample(question="What does it cost?", answer="It costs 3 euros.", reference="3 euros.")
    value, explanation = scored("answer_correctness", short, every_check, reading="claims")
    assert explanation["reading"] == "claims"


def test_the_reading_is_part_of_the_metrics_version():
    auto, claims = (
        metric_by_name("answer_correctness"),
        metric_by_name("answer_correctness", reading="claims"),
    )
    assert auto.version != claims.version


def test_exact_match_and_token_f1_as_metrics():
    sample = Sample(
        question="when was it built",
        answer="It opened in 1995.",
        reference=["1995", "September 1995"],
    )
    result = evaluate([sample], ["exact_match", "token_f1"], judge=FakeJudge(), cache=False)
    found = {s.metric: s for s in result.scores}
    assert found["exact_match"].value == 0.0
    assert found["token_f1"].value == pytest.approx(0.4)
    assert found["token_f1"].explanation["matched"] == "1995"


def test_a_reference_given_as_a_list_is_kept_as_its_alternatives():
    sample = Sample(question="q", answer="a", reference=["Guwahati", "Gauhati"])
    assert (sample.reference, sample.alternatives) == (
        "Guwahati or Gauhati",
        ["Guwahati", "Gauhati"],
    )
    assert sample.model_dump()["reference"] == ["Guwahati", "Gauhati"]
    assert Sample(**sample.model_dump()) == sample
    joined = Sample(question="q", answer="a", reference="Guwahati or Gauhati")
    assert joined.key != sample.key  # the list is what was given, and what is hashed


def _expected(samples):
    return [(s.reference, s.alternatives) for s in samples]


def test_a_reference_list_is_read_from_jsonl_csv_and_a_dataframe(tmp_path):
    rows = [
        {"question": "q1", "answer": "a", "reference": ["Guwahati", "Gauhati"]},
        {"question": "q2", "answer": "a", "reference": "[1] Smith et al."},
    ]
    want = [("Guwahati or Gauhati", ["Guwahati", "Gauhati"]), ("[1] Smith et al.", None)]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    assert _expected(load_samples(jsonl)) == want
    csv = tmp_path / "rows.csv"
    pd.DataFrame(
        [
            {
                **r,
                "reference": json.dumps(r["reference"])
                if isinstance(r["reference"], list)
                else r["reference"],
            }
            for r in rows
        ]
    ).to_csv(csv, index=False)
    assert _expected(load_samples(csv)) == want
    assert _expected(load_samples(pd.DataFrame(rows))) == want


def test_a_bad_answer_in_a_reference_list_names_its_row_and_field(tmp_path):
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(json.dumps({"question": "q", "answer": "a", "reference": ["Guwahati", 3]}))
    with pytest.raises(DatasetError) as error:
        load_samples(jsonl)
    assert (error.value.row, error.value.field) == (1, "reference")
    assert "answer 2: expected a string" in str(error.value)
