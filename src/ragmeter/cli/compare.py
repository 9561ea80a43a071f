"""``ragmeter compare RUN_A RUN_B``: did the scores change from run A to run B, and by more than
noise? Exit status: 0 compared, 2 bad input, 4 the runs' scores are not comparable (another
judge, embedder or metric version; ``--force`` compares them anyway)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.cli.calibrate import evaluation, print_differences
from ragmeter.cli.common import LabelScales, LabelsFiles, print_warning, user_errors, wide_console
from ragmeter.heads.ppi import DifferenceCalibration, calibrate_difference
from ragmeter.heads.ratings import parse_scales, ratings_for_runs
from ragmeter.viewer import Comparison, compare_runs, open_run
from ragmeter.viewer.compare import MetricComparison
from ragmeter.viewer.folders import OpenedRun
from ragmeter.viewer.views import fmt, interval

EXIT_NOT_COMPARABLE = 4


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="The baseline run's folder.")],
    run_b: Annotated[Path, typer.Argument(help="The run compared with it.")],
    force: Annotated[
        bool, typer.Option(help="Compare even when judges or metric versions differ.")
    ] = False,
    rounds: Annotated[int, typer.Option(help="Bootstrap and permutation rounds.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutations.")] = 0,
    top: Annotated[int, typer.Option(help="Changed samples shown per metric.")] = 5,
    tolerance: Annotated[
        float, typer.Option(help="A change this small or smaller counts as unchanged.")
    ] = 0.0,
    labels: LabelsFiles = None,
    scale: LabelScales = None,
) -> None:
    """Per metric: the paired difference of means (B - A) with a bootstrap 95% CI and a
    permutation p-value, how many samples got better, worse or stayed, and the samples that
    changed most with both explanations. Arena runs: each system's rating difference."""
    console = wide_console()
    with user_errors(console):
        a, b = open_run(run_a), open_run(run_b)
        comparison = compare_runs(a, b, rounds=rounds, seed=seed, top=top, tolerance=tolerance)
        differences = _on_people_scale(a, b, labels, scale, seed) if labels else None
    for note in comparison.notes:
        print_warning(console, note)
    if comparison.problems:
        console.rule("[bold red]NOT COMPARABLE[/bold red]", style="red")
        for problem in comparison.problems:
            console.print(f"[bold red]{escape(problem)}[/bold red]", highlight=False)
        console.print(
            "[red]Their scores differ for reasons other than the system under test.[/red]"
            + ("" if force else " Pass --force to compare them anyway.")
        )
        console.rule(style="red")
        if not force:
            raise typer.Exit(EXIT_NOT_COMPARABLE)
    if comparison.kind == "arena":
        console.print(_ratings_table(comparison))
        return
    console.print(_metrics_table(comparison))
    console.print(
        f"{comparison.shared_samples} samples in both runs ({comparison.only_a} only in A, "
        f"{comparison.only_b} only in B); CI: paired bootstrap, {rounds} rounds, seed {seed}; "
        f"p: {comparison.p_value_method}",
        highlight=False,
    )
    for metric in comparison.metrics:
        if metric.changed:
            console.print(_changed_table(metric))
    if differences is not None:
        print_differences(console, differences)


def _on_people_scale(
    a: OpenedRun, b: OpenedRun, files: list[Path], scale: list[str] | None, seed: int
) -> list[DifferenceCalibration]:
    """PPI++ of B - A from ratings of both runs' answers: one file per run, or one file when
    the runs gave the same answers to the rated samples."""
    result_a, result_b = evaluation(a), evaluation(b)
    ratings_a, ratings_b = ratings_for_runs([result_a, result_b], files, parse_scales(scale))
    return calibrate_difference(result_a, ratings_a, result_b, ratings_b, seed=seed)


def _metrics_table(comparison: Comparison) -> Table:
    table = Table(title=escape(f"B ({comparison.run_b}) - A ({comparison.run_a})"))
    columns = ["metric", "pairs", "mean A", "mean B", "B - A", "95% CI", "p", "better", "worse"]
    for column in [*columns, "unchanged", "unscored A/B"]:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for m in comparison.metrics:
        table.add_row(
            Text(m.metric),
            str(m.pairs),
            fmt(m.mean_a),
            fmt(m.mean_b),
            "—" if m.difference is None else f"{m.difference:+.3f}",
            interval(m.ci_low, m.ci_high),
            fmt(m.p_value, 4),
            str(m.better),
            str(m.worse),
            str(m.unchanged),
            f"{m.unscored_a}/{m.unscored_b}",
        )
    return table


def _changed_table(metric: MetricComparison) -> Table:
    table = Table(title=escape(f"{metric.metric}: samples that changed most"), show_lines=True)
    table.add_column("sample", max_width=24)
    table.add_column("A", ratio=1)
    table.add_column("B", ratio=1)
    for c in metric.changed:
        side_a = fmt(c.value_a) if c.unscored_a is None else f"unscored: {c.unscored_a}"
        side_b = fmt(c.value_b) if c.unscored_b is None else f"unscored: {c.unscored_b}"
        # Text, not markup: judge replies and sample ids may hold [brackets].
        table.add_row(
            Text(c.sample_id),
            Text("\n".join([side_a, *c.explanation_a])),
            Text("\n".join([side_b, *c.explanation_b])),
        )
    return table


def _ratings_table(comparison: Comparison) -> Table:
    table = Table(title=escape(f"rating B ({comparison.run_b}) - A ({comparison.run_a})"))
    for column in ("system", "rating A", "rating B", "B - A", "95% CI (approx.)"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for r in comparison.ratings:
        table.add_row(
            Text(r.system),
            fmt(r.rating_a, 1),
            fmt(r.rating_b, 1),
            "—" if r.difference is None else f"{r.difference:+.1f}",
            interval(r.ci_low, r.ci_high, 1),
        )
    return table
