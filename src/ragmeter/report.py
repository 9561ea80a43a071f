"""Files and tables made from a ``Result``; pure functions of it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from rich.table import Table

from ragmeter.result import Result


def summary_table(result: Result, title: str = "ragmeter") -> Table:
    table = Table(title=title)
    for column in ("metric", "mean", "95% CI", "scored", "unscored"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in result.summary():
        mean = "—" if row.mean is None else f"{row.mean:.3f}"
        ci = "—" if row.ci_low is None else f"[{row.ci_low:.3f}, {row.ci_high:.3f}]"
        table.add_row(row.metric, mean, ci, str(row.scored), str(row.unscored))
    return table


def samples_table(result: Result, width: int = 40) -> Table:
    table = Table(title="per sample")
    table.add_column("id", no_wrap=True, max_width=24, overflow="ellipsis")
    table.add_column("question", no_wrap=True, max_width=width, overflow="ellipsis")
    for metric in result.metrics:
        table.add_column(metric, justify="right")
    frame = result.to_pandas()
    for _, row in frame.iterrows():
        cells = ["unscored" if row[m] is pd.NA else f"{row[m]:.2f}" for m in result.metrics]
        table.add_row(str(row["id"]), str(row["question"]), *cells)
    return table


def write_outputs(result: Result, out_dir: Path) -> list[Path]:
    """Write the per-sample scores with explanations, a wide CSV, the summary and the run
    record. The scores database beside them is what resumes a run; these are its exports."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    scores_path = out_dir / "scores.jsonl"
    with scores_path.open("w") as handle:
        for score in result.scores:
            handle.write(score.model_dump_json() + "\n")
    written.append(scores_path)

    csv_path = out_dir / "samples.csv"
    result.to_pandas().to_csv(csv_path, index=False)
    written.append(csv_path)

    summary_path = out_dir / "summary.json"
    summary = {
        "metrics": [row.model_dump() for row in result.summary()],
        "usage": result.usage().model_dump(),
        "invalid_rows": [vars(row) for row in result.invalid_rows],
    }
    summary_path.write_text(json.dumps(summary, indent=2))
    written.append(summary_path)

    run_path = out_dir / "run.json"
    run_path.write_text(json.dumps(result.run, indent=2))
    written.append(run_path)
    return written
