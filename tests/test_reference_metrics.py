"""The metrics read off the claim table, on a scripted judge, against values worked out by hand."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import evaluate, plugins
from ragmeter.claims import answering, claim_sentences
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.metrics import metric_by_name, metric_names
from ragmeter.metrics.diagnosis import DIAGNOSIS
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession
from ragmeter.viewer import compare_runs, open_run
from ragmeter.viewer.views import run_sections

from .conftest import yes_no

REFERENCE = "Paris is the capital of France [1]. It has 2.1 million inhabitants [2][3]."
ANSWER = "Paris is France's capital. It has 9 million inhabitants. It is in Europe."
CHUNKS = ["Paris is the capital of France.", "Berlin has 3.6 million inhabitants."]
SAMPLE = Sample(
    id="p", question="Tell me about Paris.", contexts=CHUNKS, answer=ANSWER, reference=REFERENCE
)

R1, R2 = "Paris is the capital of France.", "It has 2.1 million inhabitants."
A1, A2, A3 = "Paris is France's capital.", "It has 9 million inhabitants.", "It is in Europe."
C1, C2 = CHUNKS
A3_ASKED = answering(SAMPLE.question, A3)
"""A3 is too short to stand alone: it is checked as the answer to the question."""

SUPPORT = {
    # the answer's claims against the reference: correct?
    (A1, REFERENCE): 0.9, (A2, REFERENCE): 0.2, (A3_ASKED, REFERENCE): 0.4,
    # the reference's claims against the answer: given?
    (R1, ANSWER): 0.9, (R2, ANSWER): 0.1,
    # against each chunk
    (R1, C1): 0.8, (R1, C2): 0.1, (R2, C1): 0.3, (R2, C2): 0.2,
    (A1, C1): 0.9, (A1, C2): 0.1, (A2, C1): 0.2, (A2, C2): 0.6,
    (A3_ASKED, C1): 0.3, (A3_ASKED, C2): 0.1,
}  # fmt: skip
"""P(supported) of each (claim, text) the table checks; every value is used below."""

_TAGGED = re.compile(r"<(context|statement)>\n(.*?)\n</\1>", re.DOTALL)


def _checked(request: ChatRequest) -> tuple[str, str]:
    """The (claim, text) a check asks about."""
    data = dict(_TAGGED.findall(request.messages[-1].content))
    return data["statement"], data["context"]


def support(request: ChatRequest) -> ChatResponse:
    """The scripted verdict of the check ``request`` asks; a check not in the script fails."""
    return yes_no(SUPPORT[_checked(request)])


def scored(name: str, sample: Sample = SAMPLE, **options) -> tuple[float | None, dict, FakeJudge]:
    judge = FakeJudge(responder=support)
    score = metric_by_name(name, **options).score(sample, JudgeSession(judge))
    return (
        score.value,
        score.explanation if score.value is not None else {"reason": score.unscored_reason},
        judge,
    )


# Worked by hand from SUPPORT. Soft: each check counts by its probability. Chunk relevance
# (best reference claim) is [0.8, 0.2]; answer claims grounded (best chunk) [0.9, 0.6, 0.3];
# correct [0.9, 0.2, 0.4].
SOFT = {
    "answer_correctness": 0.5,  # precision (0.9+0.2+0.4)/3 = 0.5, recall (0.9+0.1)/2 = 0.5
    "context_recall": 0.55,  # (0.8 + 0.3) / 2
    "context_precision": 0.74,  # (0.8 x 0.8 + 0.5 x 0.2) / (0.8 + 0.2)
    "context_utilization": 0.75 / 1.1,  # (0.8 x 0.9 + 0.3 x 0.1) / (0.8 + 0.3)
    # grounded in a relevant chunk [0.72, 0.16, 0.24] x wrong [0.1, 0.8, 0.6]
    "noise_sensitivity_relevant": 0.344 / 3,
    # only in irrelevant ones [0.18 x 0.28, 0.48 x 0.84, 0.08 x 0.76] x wrong
    "noise_sensitivity_irrelevant": 0.36408 / 3,
    "hallucination": 0.25,  # ungrounded [0.1, 0.4, 0.7] x wrong = (0.01 + 0.32 + 0.42) / 3
    "self_knowledge": 0.15,  # ungrounded x correct = (0.09 + 0.08 + 0.28) / 3
}
# Hard verdicts at 0.5 (RAGChecker's): correct [1, 0, 0], given [1, 0], recalled [1, 0],
# relevant chunks [1, 0], grounded [1, 1, 0] (A2 only in the irrelevant chunk C2).
HARD = {
    "answer_correctness": 0.4,  # precision 1/3, recall 1/2
    "context_recall": 0.5,
    "context_precision": 1.0,  # the one relevant chunk is ranked first
    "context_utilization": 1.0,
    "noise_sensitivity_relevant": 0.0,
    "noise_sensitivity_irrelevant": 1 / 3,  # A2: wrong, grounded only in C2
    "hallucination": 1 / 3,  # A3: wrong, grounded nowhere
    "self_knowledge": 0.0,
}


@pytest.mark.parametrize("name", DIAGNOSIS)
def test_each_metric_reads_the_table_as_worked_by_hand(name):
    assert scored(name)[0] == pytest.approx(SOFT[name])
    assert scored(name, soft=False)[0] == pytest.approx(HARD[name])


def test_answer_correctness_explains_precision_recall_and_each_claim():
    value, explanation, judge = scored("answer_correctness", score="precision")
    assert value == pytest.approx(0.5)
    assert (explanation["precision"], explanation["recall"], explanation["f1"]) == (0.5, 0.5, 0.5)
    assert explanation["answer_claims"] == [
        {"claim": A1, "p_in_reference": 0.9},
        {"claim": A2, "p_in_reference": 0.2},
        {"claim": A3, "p_in_reference": 0.4},
    ]
    assert explanation["reference_claims"][1] == {"claim": R2, "p_in_answer": 0.1}
    assert explanation["checks"] == 5 == len(judge.history)
    assert scored("answer_correctness", score="recall", soft=False)[0] == pytest.approx(0.5)


def test_context_precision_plain_share_and_explanation():
    value, explanation, _ = scored("context_precision", ranked=False)
    assert value == pytest.approx(0.5)
    assert explanation["relevant_chunks"] == [0.8, 0.2]
    assert explanation["average_precision"] == 0.74
    # a relevant chunk ranked second scores lower than the same chunk ranked first
    swapped = SAMPLE.model_copy(update={"contexts": [C2, C1]})
    assert scored("context_precision", swapped, soft=False)[0] == pytest.approx(0.5)


def test_unscorable_samples_say_why():
    no_reference = SAMPLE.model_copy(update={"reference": None})
    for name in DIAGNOSIS:
        assert scored(name, no_reference)[1] == {"reason": "the sample has no reference answer"}
    nothing_retrieved = SAMPLE.model_copy(update={"contexts": []})
    assert scored("context_recall", nothing_retrieved)[0] == 0.0
    assert "nothing was retrieved" in scored("context_precision", nothing_retrieved)[1]["reason"]
    assert "nothing was retrieved" in scored("hallucination", nothing_retrieved)[1]["reason"]
    unrelated = SAMPLE.model_copy(update={"contexts": [C2]})
    assert (
        "no reference claim is in the retrieved chunks"
        in (scored("context_utilization", unrelated)[1]["reason"])
    )
    empty_answer = SAMPLE.model_copy(update={"answer": " "})
    assert scored("answer_correctness", empty_answer)[1] == {"reason": "the answer is empty"}
    # the retriever's metrics do not read the answer
    assert scored("context_recall", empty_answer)[0] == pytest.approx(0.55)


def test_claims_are_one_checkable_statement_each():
    text = (
        "# Overview\n"
        "The **Berlin Wall** fell in 1989 [4]. It divided the city [1, 2].\n\n"
        "It had three parts:\n"
        "1. The inner wall.\n"
        "- The *death strip*, with towers.\n\n"
        "| Year | Event |\n|---|---|\n| 1961 | Built |\n| 1989 | Opened [3] |\n"
        "---\n"
        "Visitors can still see parts of it."
    )
    assert claim_sentences(text) == [
        "The Berlin Wall fell in 1989.",
        "It divided the city.",
        "It had three parts: The inner wall.",
        "It had three parts: The death strip, with towers.",
        "Year: 1961; Event: Built.",
        "Year: 1989; Event: Opened.",
        "Visitors can still see parts of it.",
    ]


def test_diagnosis_names_the_group_and_no_check_is_asked_twice(tmp_path):
    assert metric_names(["faithfulness", "diagnosis", "context_recall"]) == [
        "faithfulness",
        *DIAGNOSIS,
    ]
    judge = FakeJudge(responder=support)
    result = evaluate([SAMPLE], metrics=["diagnosis"], judge=judge, cache=tmp_path / "calls.sqlite")
    assert {s.metric: s.value for s in result.scores} == pytest.approx(SOFT)
    # Every (claim, text) pair of the table went to the judge once: 3 + 2 + 2 x 2 + 3 x 2.
    asked = [request.messages for request in judge.history]
    assert len(asked) == len(SUPPORT) == 15
    assert len(set(asked)) == len(asked)


def test_the_report_shows_the_diagnosis_for_the_run_and_each_sample(tmp_path):
    out = tmp_path / "run"
    evaluate(
        [SAMPLE],
        metrics=["diagnosis"],
        judge=FakeJudge(responder=support),
        cache=False,
        out_dir=out,
    )
    sections = {s["heading"]: s for s in run_sections(open_run(out))}
    rows = [row["cells"] for row in sections["Diagnosis"]["table"]["rows"]]
    assert [r[:2] for r in rows] == [
        ["answer", "answer_correctness"],
        ["retriever", "context_recall"],
        ["retriever", "context_precision"],
        *[["generator", name] for name in DIAGNOSIS[3:]],
    ]
    assert rows[1][2] == pytest.approx(0.55)
    (sample,) = sections["Samples"]["table"]["rows"]
    (block,) = [d for d in sample["detail"] if d["heading"] == "claim table"]
    # At P >= 0.5: R1 is in C1 and in the answer; R2 is in no chunk and not in the answer; A1
    # is correct and in C1; A2 is wrong and in C2; A3 is wrong and in no chunk.
    assert block["value"] == (
        "claims (Yes at P >= 0.5): 1 correct; 1 wrong, taken from a chunk; 1 hallucinated "
        "(wrong, in no chunk); 1 in the answer; 1 lost by the retriever (in no chunk)"
    )
    table = block["claims"]
    assert table["columns"] == ["reference", "answer", "chunk 1", "chunk 2"]
    answers, references = table["groups"]
    # Each claim's probability against each text it was checked against (SUPPORT); an answer
    # claim is not checked against the answer, nor a reference claim against the reference.
    assert [(r["claim"], r["cells"], r["fate"], r["tone"]) for r in answers["rows"]] == [
        (A1, [0.9, None, 0.9, 0.1], "correct", "good"),
        (A2, [0.2, None, 0.2, 0.6], "wrong, taken from a chunk", "warn"),
        (A3, [0.4, None, 0.3, 0.1], "hallucinated (wrong, in no chunk)", "bad"),
    ]
    assert [(r["claim"], r["cells"], r["fate"]) for r in references["rows"]] == [
        (R1, [None, 0.9, 0.8, 0.1], "in the answer"),
        (R2, [None, 0.1, 0.3, 0.2], "lost by the retriever (in no chunk)"),
    ]
    # The claims are in the table, not repeated as each metric's lines.
    (correctness,) = [d for d in sample["detail"] if d["heading"] == "answer_correctness"]
    assert correctness["lines"][:3] == ["precision: 0.5", "recall: 0.5", "f1: 0.5"]
    assert not any(A1 in line for d in sample["detail"] for line in d["lines"])


def scripted_support(model: str = "", **_: object) -> FakeJudge:
    return FakeJudge(responder=support, model="support-script")


def test_evaluate_command_takes_the_group_and_its_options(tmp_path, monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "support", f"{__name__}:scripted_support")
    data = tmp_path / "s.jsonl"
    data.write_text(SAMPLE.model_dump_json() + "\n")
    out = tmp_path / "out"
    command = ["evaluate", str(data), "--judge", "support", "--metrics", "diagnosis"]
    options = ["--option", "diagnosis.soft=false", "--option", "context_precision.ranked=false"]
    result = CliRunner().invoke(app, [*command, *options, "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "summary.json").read_text())
    summary = {row["metric"]: row["mean"] for row in written["metrics"]}
    # Hard verdicts, and the plain share of relevant chunks (1 of 2) for context precision.
    assert summary == pytest.approx({**HARD, "context_precision": 0.5})
    refused = CliRunner().invoke(
        app, [*command[:-1], "diagnosis", "--option", "diagnosis.ranked=false"]
    )
    assert refused.exit_code == 2 and "ranked" in refused.output


def test_compare_counts_a_fall_in_hallucination_as_better(tmp_path):
    # B's answer claims A3 and A2 are found in C1 (grounded): fewer hallucinated claims.
    grounded = {**SUPPORT, (A3_ASKED, C1): 0.9, (A2, C1): 0.9}
    for run, table in (("a", SUPPORT), ("b", grounded)):
        judge = FakeJudge(responder=lambda r, t=table: yes_no(t[_checked(r)]), model="s")
        evaluate([SAMPLE], ["hallucination"], judge=judge, cache=False, out_dir=tmp_path / run)
    (row,) = compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b")).metrics
    # Hallucination (1 - grounded) x wrong: A 0.25; B (0.01 + 0.1 x 0.8 + 0.1 x 0.6) / 3 = 0.05.
    assert row.difference == pytest.approx(0.05 - 0.25)
    assert (row.better, row.worse) == (1, 0)


@given(st.text(alphabet=st.sampled_from("ab :|-*#[]1.\n"), max_size=80))
def test_any_text_gives_claims_with_words_each_once(text):
    claims = claim_sentences(text)
    assert len(claims) == len(set(claims))
    assert all(re.search(r"\w", claim) for claim in claims)


@pytest.mark.parametrize("name", DIAGNOSIS)
def test_the_cost_estimate_plans_the_calls_the_metric_makes(name):
    planned = metric_by_name(name).planned_calls(SAMPLE)
    assert len(planned) == len(scored(name)[2].history)
    assert all(completion == 1 for _, completion in planned)  # one Yes/No token each


def test_an_answer_without_claims_is_unscored_before_any_check():
    headings_only = SAMPLE.model_copy(update={"answer": "# Paris\n---"})
    value, explanation, judge = scored("answer_correctness", headings_only)
    assert value is None and explanation == {"reason": "the answer yields no claims to check"}
    assert judge.history == []


def test_a_claim_stands_alone_from_five_words_unless_it_opens_with_yes_or_no():
    from ragmeter.claims import stands_alone

    assert not stands_alone("Only for adults, weekdays.")  # four words
    assert stands_alone("Tickets are for adults only.")  # five
    assert not stands_alone("Yes, the ferry runs on Sundays too.")
    assert not stands_alone("- No, it closed in the winter of 1990.")
    assert stands_alone("Nobody lived in the lighthouse after 1990.")  # "No" is not a word here
    assert stands_alone("Yesterday the ferry ran on time.")


def test_the_short_claim_rule_is_part_of_every_claim_checking_metrics_version(monkeypatch):
    from ragmeter.claims import SHORT_CLAIM_RULE
    from ragmeter.metrics.faithfulness import Faithfulness

    correctness = type(metric_by_name("answer_correctness"))
    assert SHORT_CLAIM_RULE in correctness.rules and SHORT_CLAIM_RULE in Faithfulness.rules
    before = metric_by_name("answer_correctness").version, Faithfulness().version
    changed = tuple(
        "short claims changed" if r == SHORT_CLAIM_RULE else r for r in correctness.rules
    )
    monkeypatch.setattr(correctness, "rules", changed)
    monkeypatch.setattr(Faithfulness, "rules", ("short claims changed",))
    after = metric_by_name("answer_correctness").version, Faithfulness().version
    assert before[0] != after[0] and before[1] != after[1]


def test_a_claim_too_short_to_stand_alone_is_checked_as_the_answer_to_the_question():
    _, explanation, judge = scored("answer_correctness")
    asked = {_checked(r)[0] for r in judge.history}
    assert A3_ASKED in asked and A3 not in asked
    assert A1 in asked  # a full statement is checked as it stands
    # The claim table shows the claim as the answer said it.
    assert [c["claim"] for c in explanation["answer_claims"]] == [A1, A2, A3]
    # As they stand, on request: the bare claim is asked.
    judge = FakeJudge(responder=lambda r: yes_no(SUPPORT.get(_checked(r), 0.5)))
    metric = metric_by_name("answer_correctness", short_claims="as_they_stand")
    metric.score(SAMPLE, JudgeSession(judge))
    asked = {_checked(r)[0] for r in judge.history}
    assert A3 in asked and A3_ASKED not in asked
