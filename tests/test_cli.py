"""The command line, run in-process on the scripted judge."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragmeter.cli.main import app

runner = CliRunner()


def write_script(path, replies):
    lines = [json.dumps(r if isinstance(r, str) else json.dumps(r)) for r in replies]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_evaluate_writes_scores_and_prints_a_summary(tmp_path, no_user_cache):
    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps({"id": "q1", "question": "Q?", "contexts": ["A b. C d."], "answer": "A b."})
        + "\n"
    )
    script = write_script(
        tmp_path / "replies.jsonl",
        [
            {"statements": ["A b."]},
            "Yes",  # a judge without log-probabilities: the word is read
            "Yes",
            "No",
        ],
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(data),
            "--metrics",
            "faithfulness,context_relevance",
            "--judge",
            f"fake:{script}",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "faithfulness" in result.output and "1.000" in result.output
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [(s["metric"], s["value"]) for s in scores] == [
        ("faithfulness", 1.0),
        ("context_relevance", 0.5),
    ]
    assert scores[0]["explanation"]["statements"][0]["p_supported"] == 1.0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"][1]["mean"] == 0.5
    assert (out / "samples.csv").exists() and (out / "run.json").exists()
    # The exports were streamed from scores.sqlite, which the reading left as the run did.
    assert not list(out.glob("scores.sqlite-*"))

    # The same command again resumes from the folder: the script is used up, yet all is scored.
    again = runner.invoke(
        app,
        [
            "evaluate",
            str(data),
            "--metrics",
            "faithfulness,context_relevance",
            "--judge",
            "fake",
            "--out",
            str(out),
        ],
    )
    assert again.exit_code == 0, again.output
    assert "model calls 0" in again.output


def test_bad_row_is_reported_with_row_and_field(tmp_path, no_user_cache):
    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps({"question": "Q?", "contexts": ["x"], "answer": "a"})
        + "\n"
        + json.dumps({"question": "Q?", "contexts": 5, "answer": "a"})
        + "\n"
    )
    result = runner.invoke(app, ["evaluate", str(data), "--judge", "fake"])
    assert result.exit_code == 2
    assert "row 2, field 'contexts'" in result.output


def test_unknown_metric_is_a_clear_error(tmp_path, no_user_cache):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"question": "Q?", "contexts": ["x"], "answer": "a"}) + "\n")
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(data),
            "--metrics",
            "nonsense",
            "--judge",
            "fake",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2
    assert "unknown metric 'nonsense'" in result.output
