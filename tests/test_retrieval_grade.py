"""``ragmeter retrieval --grade``: the pool of the runs' top k graded by the judge on a 0-3
scale, read as a distribution; the runs scored on the judge's grades and on both merged; the
grades written as qrels; and their agreement with people, each checked by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragmeter.cli.retrieval as command
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, JudgeError
from ragmeter.judges.fake import FakeJudge
from ragmeter.retrieval import Qrels, read_run
from ragmeter.retrieval.grading import Grade, agreement, merged_qrels, pool

from .test_criteria import digits

runner = CliRunner()

PASSAGES = {
    "d1": "Paris is the capital of France.",
    "d2": "Lyon has a large old town.",
    "d3": "France's government sits in its capital city.",
}
GRADED = {
    "d1": {"3": 0.6, "2": 0.4},  # expected 2.6, likeliest 3
    "d2": {"0": 0.9, "1": 0.1},  # expected 0.1, likeliest 0
    "d3": {"2": 0.7, "1": 0.3},  # expected 1.7, likeliest 2
}


def reply(request: ChatRequest):
    text = request.messages[-1].content
    (docid,) = [d for d, passage in PASSAGES.items() if passage in text]
    if docid == "d3" and FAIL_D3:
        raise JudgeError("connection reset")
    return digits(GRADED[docid])


FAIL_D3 = False


@pytest.fixture
def files(tmp_path, no_user_cache):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 3\nq1 0 d2 0\n")
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 0.5 a\n")
    (tmp_path / "b.trec").write_text("q1 Q0 d3 1 2.0 b\nq1 Q0 d2 2 1.0 b\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"qid": "q1", "query": "capital of France"}))
    (tmp_path / "passages.jsonl").write_text(
        "".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in PASSAGES.items())
    )
    return tmp_path


def grade(files, monkeypatch, judge: FakeJudge):
    """The command, its judge the fake one (the command's own evaluate call, judge swapped)."""
    real = command.evaluate
    monkeypatch.setattr(command, "evaluate", lambda *a, **k: real(*a, **{**k, "judge": judge}))
    args = [str(files / n) for n in ("qrels.txt", "a.trec", "b.trec")]
    texts = ["--queries", str(files / "queries.jsonl"), "--passages", str(files / "passages.jsonl")]
    options = ["--out", str(files / "out"), "--metrics", "nDCG@2", "--pool", "2", "--rounds", "50"]
    return runner.invoke(app, ["retrieval", *args, "--grade", *texts, *options])


def test_the_pool_is_every_runs_top_k_once(tmp_path):
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 0.5 a\n")
    # A tie: d3 before d2 (document ids descending), as trec_eval orders them.
    (tmp_path / "b.trec").write_text("q1 Q0 d2 1 2.0 b\nq1 Q0 d3 2 2.0 b\n")
    runs = [read_run(tmp_path / "a.trec"), read_run(tmp_path / "b.trec")]
    assert pool(runs, 1) == [("q1", "d1"), ("q1", "d3")]
    assert pool(runs, 2) == [("q1", "d1"), ("q1", "d2"), ("q1", "d3")]


def test_grades_qrels_and_the_runs_on_each_source(files, monkeypatch):
    global FAIL_D3
    FAIL_D3 = False
    judge = FakeJudge(responder=reply)
    result = grade(files, monkeypatch, judge)
    assert result.exit_code == 0, result.output
    out = files / "out"
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\n"
    lines = {
        g["docid"]: g for g in map(json.loads, (out / "grades.jsonl").read_text().splitlines())
    }
    assert lines["d1"]["expected"] == pytest.approx(2.6)
    assert lines["d1"]["distribution"] == {"0": 0.0, "1": 0.0, "2": 0.4, "3": 0.6}
    assert (lines["d1"]["human"], lines["d3"]["human"]) == (3, None)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["qrels"]) == {"human", "judge", "merged"}
    # b's top 2 on the judge's grades: d3 (2), d2 (0): DCG 2 / log2(2) = 2; the best: d1 (3),
    # d3 (2): 3 + 2 / log2(3).
    best = 3 + 2 / math.log2(3)
    assert summary["qrels"]["judge"]["b"]["nDCG@2"]["mean"] == pytest.approx(2 / best)
    assert summary["qrels"]["merged"]["b"]["nDCG@2"]["mean"] == pytest.approx(2 / best)
    assert summary["qrels"]["human"]["b"]["nDCG@2"]["mean"] == 0.0  # d3 unjudged by people
    rankings = json.loads((out / "rankings.json").read_text())
    assert set(rankings) == {"human", "judge", "merged"}
    # People and the judge agree on both pairs they share (d1: 3, d2: 0): kappa 1.
    assert "Cohen's kappa 1.000" in " ".join(result.output.split())
    # The bench that holds the judge's decisions against the people's reads the folder.
    bench = Path(__file__).parent.parent / "bench" / "bench_retrieval_grades.py"
    told = subprocess.run(
        [sys.executable, str(bench), str(out), "--measure", "nDCG@2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| b vs a | cannot tell | cannot tell | -1.000 / " in told
    assert "Kendall tau of the 2 runs' means 1.000" in told
    # A rerun judges nothing: the grades are in the run's store.
    again = grade(files, monkeypatch, FakeJudge())  # this judge fails every call
    assert again.exit_code == 0, again.output
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\n"


def test_a_pair_the_judge_cannot_grade_is_unscored_not_irrelevant(files, monkeypatch):
    global FAIL_D3
    FAIL_D3 = True
    try:
        result = grade(files, monkeypatch, FakeJudge(responder=reply))
    finally:
        FAIL_D3 = False
    assert result.exit_code == 0, result.output
    out = files / "out"
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\n"  # no d3 at all
    d3 = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()][-1]
    assert d3["grade"] is None and "connection reset" in d3["unscored"]
    assert "(1 unscored" in result.output


def test_kappa_on_grades_and_on_relevant_by_hand():
    grades = [
        Grade(qid="q1", docid="a", distribution=None, expected=None, grade=3, human=2),
        Grade(qid="q1", docid="b", distribution=None, expected=None, grade=0, human=0),
        Grade(qid="q2", docid="c", distribution=None, expected=None, grade=1, human=1),
        Grade(qid="q2", docid="d", distribution=None, expected=None, grade=2, human=0),
    ]
    found = agreement(grades, rounds=20)
    # 0-3: agree on 2 of 4; chance: people 0,0,1,2 and judge 0,1,2,3 -> (2x1 + 1x1 + 1x1) / 16
    # = 0.25; kappa (0.5 - 0.25) / 0.75 = 1/3.
    assert found.kappa.value == pytest.approx(1 / 3)
    # Relevant (>= 2): people F,F,F,T and judge T,F,F,T: agree on 3 of 4; chance
    # (1/4 x 2/4) + (3/4 x 2/4) = 0.5; kappa (0.75 - 0.5) / 0.5 = 0.5.
    assert found.kappa_relevant.value == pytest.approx(0.5)
    assert found.confusion == {"2": {"3": 1}, "0": {"0": 1, "2": 1}, "1": {"1": 1}}


def test_merged_qrels_take_the_peoples_grade_first():
    human = Qrels(name="human", grades={"q1": {"d1": 1}})
    judge = Qrels(name="judge", grades={"q1": {"d1": 3, "d2": 2}, "q2": {"d9": 0}})
    assert merged_qrels(human, judge).grades == {"q1": {"d1": 1, "d2": 2}, "q2": {"d9": 0}}
