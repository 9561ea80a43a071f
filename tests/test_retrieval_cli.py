"""``ragmeter retrieval``: its summary.json contract, its rankings, what it reports about the
queries and documents the qrels do not judge, and exit status 2 on a bad file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli.main import app

runner = CliRunner()

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq3 0 d4 1\n"
# a: q1 d1 first (RR 1), q2 d3 second (RR 1/2), q3 not returned (0), q9 not judged.
RUN_A = "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d8 1 2.0 a\nq2 Q0 d3 2 1.0 a\nq9 Q0 d1 1 1 a\n"
# b: q1 d2 first, d1 second (RR 1/2), q2 d3 first (RR 1), q3 d4 first (RR 1).
RUN_B = "q1 Q0 d2 1 2.0 b\nq1 Q0 d1 2 1.0 b\nq2 Q0 d3 1 1.0 b\nq3 Q0 d4 1 1.0 b\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_summary_contract_and_the_rankings(tmp_path):
    qrels = write(tmp_path, "qrels.txt", QRELS)
    runs = [write(tmp_path, "a.trec", RUN_A), write(tmp_path, "b.trec", RUN_B)]
    out = tmp_path / "out"
    args = ["retrieval", str(qrels), *map(str, runs), "--out", str(out), "--metrics", "RR,P@1"]
    result = runner.invoke(app, [*args, "--rounds", "200"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["qrels"]) == {"human"}
    assert set(summary["qrels"]["human"]) == {"a", "b"}
    rr = summary["qrels"]["human"]["a"]["RR"]
    assert set(rr) == {"mean", "ci_low", "ci_high", "queries"}
    # a: RR 1, 1/2 and 0 over the three queries of the qrels; b: 1/2, 1, 1.
    assert rr["mean"] == 0.5 and rr["queries"] == 3
    assert summary["qrels"]["human"]["b"]["RR"]["mean"] == 2.5 / 3
    # P@1: a's q2 opens with d8, which the qrels do not judge: counted as not relevant, and
    # counted as unjudged (1 of a's 2 top-1 documents over the judged queries).
    assert summary["qrels"]["human"]["a"]["P@1"]["mean"] == 1 / 3
    assert summary["judged"]["human"]["a"]["1"] == {
        "judged": 1,
        "retrieved": 2,
        "unjudged": 1,
        "fraction": 0.5,
    }
    assert summary["queries"]["missing"] == {"a": ["q3"], "b": []}
    assert summary["queries"]["unjudged"] == {"a": ["q9"], "b": []}
    assert summary["measures"] == ["RR", "P@1"]
    rankings = json.loads((out / "rankings.json").read_text())
    assert [r["metric"] for r in rankings] == ["RR", "P@1"]
    (pair,) = rankings[0]["pairs"]
    assert (pair["a"], pair["b"]) == ("a", "b") and pair["verdict"] == "cannot tell"
    assert rankings[0]["systems"][0]["system"] == "b"
    lines = (out / "per_query.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"run": "a", "query": "q1", "RR": 1.0, "P@1": 1.0}
    assert len(lines) == 6
    said = " ".join(result.output.split())
    assert "a: 1 query (q3) of the qrels not returned, scored 0" in said
    assert "a: 1 query (q9) not in the qrels, not scored" in said
    assert "RR: 0 of 1 pairs told apart" in said


def test_samples_files_are_a_run_and_qrels(tmp_path):
    rows = [
        {"id": "q1", "context_ids": ["d2", "d1"], "reference_context_ids": {"d1": 2}},
        {"id": "q2", "context_ids": ["d3"], "reference_context_ids": ["d3"]},
        {"id": "q3", "question": "not retrieved yet"},
    ]
    samples = write(tmp_path, "dense.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    result = runner.invoke(app, ["retrieval", str(samples), str(samples), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # q1: d1 (grade 2) at rank 2: RR 1/2; q2: RR 1. q3 carries no reference ids: not judged.
    assert summary["qrels"]["human"]["dense"]["RR"]["mean"] == 0.75
    assert summary["qrels"]["human"]["dense"]["RR"]["queries"] == 2
    assert json.loads((out / "rankings.json").read_text()) == []
    assert "dense: 1 samples without context_ids, so not returned (q3)" in summary["notes"]


def test_a_bad_file_exits_2_naming_the_file_and_line(tmp_path):
    qrels = write(tmp_path, "qrels.txt", QRELS)
    run = write(tmp_path, "a.trec", "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 1 2.0\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["retrieval", str(qrels), str(run), "--out", str(out)])
    assert result.exit_code == 2
    assert "a.trec, line 2: expected 6 columns" in " ".join(result.output.split())
    assert not out.exists()
    unknown = runner.invoke(
        app, ["retrieval", str(qrels), "absent.trec", "--out", str(out), "--metrics", "nDCG@x"]
    )
    assert unknown.exit_code == 2 and "the measure 'nDCG@x'" in unknown.output
