"""``ragmeter compare RUN_A RUN_B [RUN ...]``: did the scores change from run A to run B, and by
more than noise? With more runs, which is best, every pair decided. Exit status: 0 compared,
2 bad input, 4 the runs' scores are not comparable (another judge, embedder or metric version;
``--force`` compares them anyway)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.cli.calibrate import evaluation, print_differences
from ragmeter.cli.common import (
    AnchorSystem,
    CacheFlag,
    CriteriaFile,
    JudgeOptions,
    JudgeSpec,
    LabelScales,
    LabelsFiles,
    SideBySideDesign,
    print_warning,
    say,
    user_errors,
    wide_console,
)
from ragmeter.cli.pairs import pair_sentences, pairs_table
from ragmeter.cli.side_by_side import Reading, run_side_by_side
from ragmeter.config import defined_criteria
from ragmeter.heads.ppi import DifferenceCalibration, calibrate_difference
from ragmeter.heads.ratings import parse_scales, ratings_for_runs
from ragmeter.stats import P_VALUE_METHOD
from ragmeter.viewer import Comparison, compare_runs, open_run
from ragmeter.viewer.compare import MetricComparison, RankedMetric, RunsRanking, rank_runs
from ragmeter.viewer.folders import OpenedRun
from ragmeter.viewer.views import fmt, interval

EXIT_NOT_COMPARABLE = 4


RunsArgument = Annotated[
    list[Path],
    typer.Argument(help="Run folders: the baseline first, then those compared with it."),
]
ForceOption = Annotated[
    bool, typer.Option(help="Compare even when judges or metric versions differ.")
]
MetricOption = Annotated[
    list[str] | None,
    typer.Option(help="A metric to compare (repeat for more); default: every shared one."),
]
DifferenceOption = Annotated[
    float | None,
    typer.Option(help="Say how many samples would tell a difference this large apart."),
]
ToleranceOption = Annotated[
    float, typer.Option(help="A change this small or smaller counts as unchanged.")
]
SideBySideOption = Annotated[
    bool,
    typer.Option(
        "--side-by-side",
        help="Read each input's answers together with the judge, in both orders, and decide "
        "on its preferences; RUNS may be run folders or samples files, paired by id.",
    ),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Side by side: say the reads, judge nothing.")
]
OutOption = Annotated[
    Path | None,
    typer.Option(help="Side by side: write side_by_side.json (every preference) here."),
]


def compare_command(
    runs: RunsArgument,
    force: ForceOption = False,
    metric: MetricOption = None,
    difference: DifferenceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    rounds: Annotated[int, typer.Option(help="Bootstrap and permutation rounds.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutations.")] = 0,
    top: Annotated[int, typer.Option(help="Changed samples shown per metric.")] = 5,
    tolerance: ToleranceOption = 0.0,
    labels: LabelsFiles = None,
    scale: LabelScales = None,
    side_by_side: SideBySideOption = False,
    criteria: CriteriaFile = None,
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    design: SideBySideDesign = "auto",
    anchor: AnchorSystem = None,
    dry_run: DryRunOption = False,
    out: OutOption = None,
    cache: CacheFlag = True,
) -> None:
    """Per metric: each run's mean with its 95% CI, every pair's paired difference with a
    permutation p-value adjusted for the number of pairs (Holm), a verdict (better, worse,
    cannot tell), the smallest difference the samples tell apart, and how often decisions of
    that size were the people's on public rated sets. Two runs: also how many samples got
    better or worse, and those that changed most with both explanations. Arena runs: each
    system's rating difference."""
    console = wide_console()
    if side_by_side:
        with user_errors(console):
            reading = Reading(judge, judge_option, cache, design, anchor, rounds, seed, difference)
            run_side_by_side(
                console,
                runs,
                reading,
                metrics=metric,
                defined=defined_criteria(None, criteria),
                dry=dry_run,
                as_json=as_json,
                out=out,
            )
        return
    with user_errors(console):
        opened = [open_run(run) for run in runs]
        comparison, ranked = _compared(opened, metric, difference, rounds, seed, top, tolerance)
        differences = None
        if labels and comparison is not None and comparison.kind == "evaluate":
            differences = _on_people_scale(*opened, labels, scale, seed)
    problems = comparison.problems if comparison is not None else ranked.problems  # type: ignore[union-attr]
    if as_json:
        found = {
            "comparison": None if comparison is None else comparison.model_dump(),
            "ranking": None if ranked is None else ranked.model_dump(),
        }
        console.print_json(json.dumps(found))
        if problems and not force:
            raise typer.Exit(EXIT_NOT_COMPARABLE)
        return
    notes = comparison.notes if comparison is not None else ranked.notes  # type: ignore[union-attr]
    for note in notes:
        print_warning(console, note)
    if problems:
        _refuse(console, problems, force)
    _print_comparison(console, comparison, ranked, rounds, seed, difference)
    if differences is not None:
        print_differences(console, differences)


def _compared(
    opened: list[OpenedRun],
    metrics: list[str] | None,
    difference: float | None,
    rounds: int,
    seed: int,
    top: int,
    tolerance: float,
) -> tuple[Comparison | None, RunsRanking | None]:
    """Two arena runs' rating differences; else every evaluate run ranked, and two of them
    also compared sample by sample."""
    if len(opened) == 2 and opened[0].kind == opened[1].kind == "arena":
        return compare_runs(*opened, rounds=rounds, seed=seed), None
    ranked = rank_runs(opened, metrics=metrics, difference=difference, rounds=rounds, seed=seed)
    if len(opened) != 2:
        return None, ranked
    comparison = compare_runs(*opened, rounds=rounds, seed=seed, top=top, tolerance=tolerance)
    return comparison, ranked


def _print_comparison(
    console: Console,
    comparison: Comparison | None,
    ranked: RunsRanking | None,
    rounds: int,
    seed: int,
    difference: float | None,
) -> None:
    if comparison is not None and comparison.kind == "arena":
        console.print(_ratings_table(comparison))
        return
    assert ranked is not None
    if comparison is not None:
        console.print(_metrics_table(comparison))
        console.print(
            f"{comparison.shared_samples} samples in both runs ({comparison.only_a} only in A, "
            f"{comparison.only_b} only in B); CI: paired bootstrap, {rounds} rounds, seed {seed}; "
            f"p: {comparison.p_value_method}",
            highlight=False,
        )
    else:
        for found in ranked.metrics:
            console.print(_ranking_table(found))
        console.print(
            f"{ranked.samples} samples in every run ({len(ranked.not_in_every_run)} in some "
            f"only); CI: paired bootstrap, {rounds} rounds, seed {seed}; p: {P_VALUE_METHOD}, "
            "adjusted for the number of pairs (Holm)",
            highlight=False,
        )
    for found in ranked.metrics:
        console.print(pairs_table(found.ranking, found))
        for line in pair_sentences(found, difference=difference):
            say(console, Text(line))
    if comparison is not None:
        for m in comparison.metrics:
            if m.changed:
                console.print(_changed_table(m))


def _refuse(console: Console, problems: list[str], force: bool) -> None:
    console.rule("[bold red]NOT COMPARABLE[/bold red]", style="red")
    for problem in problems:
        console.print(f"[bold red]{escape(problem)}[/bold red]", highlight=False)
    console.print(
        "[red]Their scores differ for reasons other than the system under test.[/red]"
        + ("" if force else " Pass --force to compare them anyway.")
    )
    console.rule(style="red")
    if not force:
        raise typer.Exit(EXIT_NOT_COMPARABLE)


def _ranking_table(found: RankedMetric) -> Table:
    ranking = found.ranking
    direction = "higher" if ranking.higher_is_better else "lower"
    table = Table(title=escape(f"{ranking.metric}: runs ranked, {direction} is better"))
    for column in ("rank", "run", "mean", "95% CI", "left out"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for rank, system in enumerate(ranking.systems, 1):
        table.add_row(
            str(rank),
            Text(system.system),
            fmt(system.mean),
            interval(system.ci_low, system.ci_high),
            str(len(ranking.left_out.get(system.system, []))),
        )
    return table


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
