"""Answer correctness against people: RAGChecker's protocol and MTRAG's completeness ratings,
on scripted judges, against values worked out by hand."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragmeter import plugins
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge
from ragmeter.meta.ragchecker import agreement, load_ragchecker
from ragmeter.score import Score

from .conftest import yes_no
from .test_conversations import mtrag_row

GROUND_TRUTH = "The Elbe is 1,094 km long. It flows into the North Sea."


def instance(number: int, first: str, second: str, labels: tuple[int, int]) -> dict:
    """One RAGChecker instance; every dimension gets the same two labels, and RAGChecker's own
    figures prefer the second answer by 0.5 (its first answer has no F1, as some rows do)."""
    return {
        "instance_id": number,
        "dataset": "rivers" if number < 2 else "seas",
        "query_id": str(number),
        "query": "How long is the Elbe?",
        "gt_answer": GROUND_TRUTH,
        "model1": {
            "model_name": "a",
            "response": first,
            "ragchecker": {"correctness_label": 0.5, "completeness_label": 0.5},
        },
        "model2": {
            "model_name": "b",
            "response": second,
            "ragchecker": {
                "correctness_label": 1.0,
                "completeness_label": 1.0,
                "overall_label": 1.0,
            },
        },
        "correctness_label": list(labels),
        "completeness_label": list(labels),
        "overall_label": list(labels),
    }


def write_instances(tmp_path, rows: list[dict]):
    path = tmp_path / "rc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def correctness(sample_id: str, precision: float, recall: float, f1: float) -> Score:
    return Score(
        sample_id=sample_id,
        metric="answer_correctness",
        value=f1,
        explanation={"precision": precision, "recall": recall, "f1": f1},
    )


def test_protocol_pairs_each_difference_with_each_annotator(tmp_path):
    path = write_instances(
        tmp_path,
        [
            instance(0, "x", "y", (2, 1)),
            instance(1, "x", "y", (0, 0)),
            instance(2, "x", "y", (-2, -1)),
        ],
    )
    instances = load_ragchecker(path)
    # Precision differences (second minus first) 1, 0, -1 against labels (2, 1), (0, 0),
    # (-2, -1): x = [1, 1, 0, 0, -1, -1], y = [2, 1, 0, 0, -2, -1]: Pearson 6 / sqrt(4 x 10).
    # Ranks, centred: x [2, 2, 0, 0, -2, -2], y [2.5, 1.5, 0, 0, -2.5, -1.5]: 16 / sqrt(16 x 17).
    scores = {
        "0/model1": correctness("0/model1", 0.0, 0.5, 0.5),
        "0/model2": correctness("0/model2", 1.0, 0.5, 0.5),
        "1/model1": correctness("1/model1", 0.5, 0.5, 0.5),
        "1/model2": correctness("1/model2", 0.5, 0.5, 0.5),
        "2/model1": correctness("2/model1", 1.0, 0.5, 0.5),
        "2/model2": correctness("2/model2", 0.0, 0.5, 0.5),
    }
    found = {(a.who, a.dimension, a.group): a for a in agreement(instances, scores)}
    ours = found["ragmeter", "correctness", "all"]
    assert ours.pearson.value == pytest.approx(6 / 40**0.5)
    assert ours.spearman.value == pytest.approx(16 / 272**0.5)
    assert ours.pearson.low <= ours.pearson.value <= ours.pearson.high
    # Recall and F1 are equal for both answers: no difference, no coefficient.
    assert found["ragmeter", "completeness", "all"].pearson is None
    # The annotators: (2, 0, -2) against (1, 0, -1).
    assert found["annotators", "overall", "all"].pearson.value == pytest.approx(1.0)
    # RAGChecker's own run: +0.5 everywhere, a constant, so no coefficient; its missing F1 is
    # filled with the median of its F1s (1.0) and counted.
    theirs = found["ragchecker", "overall", "all"]
    assert (theirs.pearson, theirs.filled) == (None, 3)
    assert found["ragmeter", "correctness", "rivers"].instances == 2


def test_median_fill_for_an_unscored_answer(tmp_path):
    path = write_instances(
        tmp_path,
        [instance(n, "x", "y", labels) for n, labels in enumerate([(1, 1), (0, 1), (-1, -1)])],
    )
    scores = {
        "0/model1": correctness("0/model1", 0.2, 0.5, 0.5),
        "0/model2": correctness("0/model2", 0.8, 0.5, 0.5),
        "1/model1": correctness("1/model1", 0.4, 0.5, 0.5),
        "1/model2": correctness("1/model2", 0.6, 0.5, 0.5),
        "2/model1": correctness("2/model1", 0.9, 0.5, 0.5),
        "2/model2": Score(
            sample_id="2/model2", metric="answer_correctness", value=None, unscored_reason="x"
        ),
    }
    # Present: 0.2, 0.8, 0.4, 0.6, 0.9: median 0.6; differences 0.6, 0.2, 0.6 - 0.9 = -0.3.
    found = {(a.who, a.dimension, a.group): a for a in agreement(load_ragchecker(path), scores)}
    ours = found["ragmeter", "correctness", "all"]
    assert ours.filled == 1
    x = [0.6, 0.6, 0.2, 0.2, -0.3, -0.3]
    y = [1, 1, 0, 1, -1, -1]
    mx, my = sum(x) / 6, sum(y) / 6
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    assert ours.pearson.value == pytest.approx(sxy / (sxx * syy) ** 0.5)


def test_bad_labels_name_the_row_and_field(tmp_path):
    bad = instance(0, "x", "y", (3, 1))
    with pytest.raises(ValueError, match=r"row 1, field 'correctness_label'.*-2 to 2"):
        load_ragchecker(write_instances(tmp_path, [bad]))
    missing = instance(0, "x", "y", (1, 1))
    del missing["model2"]["response"]
    with pytest.raises(ValueError, match=r"row 1, field 'model2'"):
        load_ragchecker(write_instances(tmp_path, [missing]))


def shared_fact(request: ChatRequest):
    """A claim with "1,094" or "North Sea" in it is supported by a text that has it too."""
    text = request.messages[-1].content
    context = text.split("<context>\n")[1].split("\n</context>")[0]
    claim = text.split("<statement>\n")[1].split("\n</statement>")[0]
    shared = [fact for fact in ("1,094", "North Sea") if fact in claim and fact in context]
    return yes_no(0.9 if shared else 0.1)


def scripted_checker(model: str = "", **_: object) -> FakeJudge:
    return FakeJudge(responder=shared_fact, model="checker-script")


def first_answer_checker(model: str = "", **_: object) -> FakeJudge:
    """``shared_fact`` on claims; asked which of two answers is better, always the first shown."""

    def respond(request: ChatRequest):
        if "pair of answers" in request.messages[0].content:
            return json.dumps({"reasoning": "The first.", "rating": 1})
        return shared_fact(request)

    return FakeJudge(responder=respond, model="first-answer-checker")


def three_answers_each(tmp_path):
    """Three instances: the second answer is right and the first wrong (the annotators prefer
    the second), both are the same (a tie), the first is the ground truth and the second wrong."""
    return write_instances(
        tmp_path,
        [
            instance(0, "It is 2,000 km long.", "It is 1,094 km long.", (2, 1)),
            instance(1, "It is 1,094 km long.", "It is 1,094 km long.", (0, 0)),
            instance(2, GROUND_TRUTH, "It is 5 km long.", (-2, -1)),
        ],
    )


def test_meta_ragchecker_command(tmp_path, monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "checker", f"{__name__}:scripted_checker")
    path = three_answers_each(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["meta", "ragchecker", str(path), "--judge", "checker", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    ours = next(
        a
        for a in report["correlations"]
        if (a["who"], a["dimension"], a["group"]) == ("ragmeter", "correctness", "all")
    )
    # Precision: 2,000 -> 0.1, 1,094 -> 0.9, the ground truth -> 0.9 (both its claims), 5 km ->
    # 0.1. Differences 0.8, 0, -0.8: the same shape as the labels' first test, Pearson 0.949.
    assert ours["pearson"]["value"] == pytest.approx(6 / 40**0.5)
    assert "ragmeter" in result.output and "annotators" in result.output


def test_meta_ragchecker_decides_the_instances_as_pairs(tmp_path, monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "checker", f"{__name__}:first_answer_checker")
    path = three_answers_each(tmp_path)
    out = tmp_path / "out"
    args = ["meta", "ragchecker", str(path), "--judge", "checker", "--out", str(out), "--pairwise"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "agreement.json").read_text())["pairwise"]
    # Every instance twice (once per annotator): the people prefer B, neither, A.
    assert {row["pairs"] for row in rows.values()} == {6}
    # From claims: F1 0.1 against 0.643 (B by 0.543, outside its margin of 0.265), equal
    # answers tie, the ground truth's 0.9 against 0.1 (A by 0.8, outside 0.237): all as people.
    assert (rows["claims"]["kappa"], rows["claims"]["accuracy"]) == (1.0, 1.0)
    assert rows["f1 difference"]["accuracy"] == 1.0
    # The generative judge always picks the answer shown first: the two orders cancel to ties.
    assert rows["generative"]["judge_tie_rate"] == 1.0 and rows["generative"]["kappa"] == 0.0
    # The first pair's answers are 5 words each (a tie), the third's ground truth is longer.
    assert rows["longer answer"]["accuracy"] == 0.5
    assert "claims" in result.output and "baseline" in result.output
    assert (out / "pairwise-claims" / "battles.jsonl").is_file()


def test_mtrag_answer_correctness_leaves_out_the_writers_answers(
    tmp_path, monkeypatch, no_user_cache
):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "checker", f"{__name__}:scripted_checker")
    rows = []
    for task, answer, complete, rb_llm in (
        ("t1", "The Elbe is 1,094 km long.", 4.0, 0.1),
        ("t2", "The Elbe is 2,000 km long.", 1.0, 0.8),
        ("t3", "The Elbe is 1,094 km long. It flows into the North Sea.", 3.0, 0.9),
    ):
        for responder, said in (("reference", GROUND_TRUTH), ("gpt-4o", answer)):
            row = mtrag_row(task, responder, said, 3.0, complete, 0.5)
            row["reference_response"] = GROUND_TRUTH
            row["auto"]["rb_llm"] = rb_llm
            rows.append(row)
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            *("meta", "mtrag", str(path), "--judge", "checker"),
            *("--metrics", "answer_correctness", "--out", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    whole = next(
        c
        for c in report["correlations"]
        if (c["group"], c["metric"]) == ("all", "answer_correctness")
    )
    # Only GPT-4o's three answers. F1 against the ground truth's two claims: t1 precision 0.9,
    # recall (0.9 + 0.1) / 2 = 0.5 -> 0.643; t2 0.1 and 0.1 -> 0.1; t3 0.9 and 0.9 -> 0.9.
    # Ranks (2, 1, 3) against completeness (3, 1, 2): rho 0.5; rb_llm (1, 2, 3): rho -0.5.
    assert (whole["rows"], whole["unscored"]) == (3, 0)
    assert whole["spearman"]["value"] == pytest.approx(0.5)
    assert whole["reference_judge_spearman"]["value"] == pytest.approx(-0.5)
    assert report["unscored_reasons"] == {}
