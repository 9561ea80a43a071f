"""Files and tables made from a ``Result`` (or a dry run's ``Estimate``); pure functions of it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
from rich.table import Table

from ragmeter.budget import Estimate, is_pending
from ragmeter.manifest import atomic_write_text, scrub
from ragmeter.result import Result


def summary_table(result: Result, title: str = "ragmeter") -> Table:
    """Mean, CI and counts per metric. Items a budget stopped get a column of their own: they
    were never judged, which is not the same as failing."""
    pending = Counter(s.metric for s in result.briefs() if is_pending(s))
    table = Table(title=title)
    columns = ["metric", "mean", "95% CI", "scored", "unscored"] + (["not judged"] * bool(pending))
    for column in columns:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in result.summary():
        mean = "—" if row.mean is None else f"{row.mean:.3f}"
        ci = "—" if row.ci_low is None else f"[{row.ci_low:.3f}, {row.ci_high:.3f}]"
        counts = [str(row.scored), str(row.unscored - pending[row.metric])]
        if pending:
            counts.append(str(pending[row.metric]))
        table.add_row(row.metric, mean, ci, *counts)
    return table


def throughput(result: Result) -> str | None:
    """How fast the run judged, in samples a minute, as a sentence: "12 samples in 3 min 4 s:
    10 judged, 3.3 samples a minute; 2 from the store".

    The time is the run record's: from the first item to the last, the judge's loading not
    counted. The rate counts only what this run judged: items served from the store cost no
    judging, and counted in they would promise a rate the next thousand samples will not
    reach. It is in samples (judged items over the metrics a sample has), and what was judged
    or served is said in samples where it came in whole samples' worth, else in items. None
    without the counts or the time (a record written before they were kept)."""
    run, per_sample = result.run, len(result.metrics)
    counts, seconds = run.counts, run.seconds
    if counts is None or seconds is None or not run.samples or not per_sample:
        return None
    took = f"{run.samples:,} sample{'s' * (run.samples != 1)} in {_duration(seconds)}"
    if not counts.judged:
        return f"{took}: all from the store, none judged" if counts.resumed else None
    rate = _rate(60 * counts.judged / per_sample / seconds) if seconds > 0 else "—"
    if not counts.resumed and not counts.pending:
        return f"{took}: {rate} samples a minute"
    parts = {
        "judged": counts.judged,
        "from the store": counts.resumed,
        "not judged": counts.pending,
    }
    if all(n % per_sample == 0 for n in parts.values()):
        said = [f"{n // per_sample} {what}" for what, n in parts.items() if n]
    else:
        said = [f"{counts.judged} of {counts.items} items judged"]
        said += [f"{n} items {what}" for what, n in list(parts.items())[1:] if n]
    return f"{took}: {said[0]}, {rate} samples a minute" + "".join(f"; {s}" for s in said[1:])


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def _rate(per_minute: float) -> str:
    if per_minute >= 100:
        return f"{per_minute:,.0f}"
    return f"{per_minute:.1f}" if per_minute >= 1 else f"{per_minute:.2f}"


def samples_table(result: Result) -> Table:
    """A row per sample: its id and scores (the questions and answers are in samples.csv)."""
    table = Table(title="per sample")
    table.add_column("id", no_wrap=True, max_width=28, overflow="ellipsis")
    for metric in result.metrics:
        table.add_column(metric.replace("_", " "), justify="right", min_width=9)
    frame = result.to_pandas()
    for _, row in frame.iterrows():
        cells = ["unscored" if row[m] is pd.NA else f"{row[m]:.2f}" for m in result.metrics]
        table.add_row(str(row["id"]), *cells)
    return table


def write_outputs(result: Result, out_dir: Path) -> list[Path]:
    """Write the per-sample scores with explanations, a wide CSV, the summary and the run
    record. The scores database beside them is what resumes a run; these are its exports.

    The scores are streamed from the database row by row (``Result.json_lines``), so a long
    run's export never holds every score in memory. Each file is written to a temporary file
    and then renamed into place, so a run killed while writing leaves the previous version,
    never half a file.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    scores_path = out_dir / "scores.jsonl"
    atomic_write_text(scores_path, (line + "\n" for line in result.json_lines()))

    csv_path = out_dir / "samples.csv"
    atomic_write_text(csv_path, result.to_pandas().to_csv(index=False))

    summary_path = out_dir / "summary.json"
    summary = {
        "metrics": [row.model_dump() for row in result.summary()],
        "usage": result.usage().model_dump(),
        "invalid_rows": [vars(row) for row in result.invalid_rows],
    }
    atomic_write_text(summary_path, json.dumps(summary, indent=2))

    run_path = out_dir / "run.json"
    atomic_write_text(run_path, scrub(result.run.to_json()) + "\n")
    return [scores_path, csv_path, summary_path, run_path]


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def estimate_table(estimate: Estimate, title: str = "dry run: expected judge calls") -> Table:
    """Calls, tokens and cost per metric, with a total row."""
    table = Table(title=title)
    for column in ("metric", "items", "calls", "tokens in", "tokens out", "embeddings", "cost"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in estimate.metrics:
        name = row.metric if row.pattern == "known" else f"{row.metric} (guessed)"
        table.add_row(
            name,
            f"{row.items:,}",
            f"{row.calls:,}",
            f"{row.prompt_tokens:,}",
            f"{row.completion_tokens:,}",
            f"{row.embedding_calls:,}",
            _money(estimate.cost(row)),
        )
    table.add_row(
        "total",
        "",
        f"{estimate.calls:,}",
        f"{estimate.prompt_tokens:,}",
        f"{estimate.completion_tokens:,}",
        f"{sum(r.embedding_calls for r in estimate.metrics):,}",
        _money(estimate.cost()),
        style="bold",
    )
    return table
