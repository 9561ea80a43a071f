"""The command line, run in-process on the scripted judge."""

from __future__ import annotations

import io
import json

from rich.console import Console
from typer.testing import CliRunner

from ragmeter.cli.common import advance, progress
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


def test_an_input_error_is_the_last_thing_a_command_says(tmp_path, no_user_cache):
    # Row 6 repeats row 2's id: refused before the progress bar, which never shows.
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "contexts": ["x"], "answer": "a"} for i in range(12)
    ]
    rows[5]["id"] = "q1"
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    command = ["evaluate", str(data), "--judge", "fake", "--out", str(tmp_path / "run")]
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    said = "error: row 6, field 'id': 'q1' was already used by row 2"
    assert result.output.splitlines() == [said]
    assert not (tmp_path / "run").exists()
    # The same where the input is read under the bar: the questions to evolve.
    missing = tmp_path / "nowhere.jsonl"
    command = ["attribution", "evolve", str(missing), "--judge", "fake", "--no-cache"]
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "evolved")])
    assert result.exit_code == 2
    assert result.output.splitlines() == [f"error: no benchmark file at {missing}"]


def test_a_bar_that_never_moved_is_not_left_behind_by_an_error():
    def shown(steps: int, failing: bool) -> list[str]:
        console = Console(file=io.StringIO(), width=60)
        try:
            with progress(console, "judging", 3) as bar:
                for _ in range(steps):
                    advance(bar)
                if failing:
                    raise ValueError("refused")
        except ValueError:
            pass
        return [
            [line.split()[0], line.split()[-2]] for line in console.file.getvalue().splitlines()
        ]

    assert shown(0, failing=True) == []
    assert shown(0, failing=False) == [["judging", "0/3"]]
    assert shown(2, failing=True) == [["judging", "2/3"]]  # how far it got, before the error
