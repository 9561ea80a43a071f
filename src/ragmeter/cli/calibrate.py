"""``ragmeter calibrate RUN [LABELS]``: a person's ratings of some samples turn the judge's means
into estimates of the people's means, with intervals narrower than the ratings alone give.
Without a ratings file, the ratings given in the run with ``ragmeter label`` are read.
Exit status: 0 written, 2 bad input (a ratings row is named with its field)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.cli.common import LabelScales, print_warning, say, user_errors, wide_console
from ragmeter.heads.ppi import (
    DEFAULT_FOLDS,
    CalibrationReport,
    DifferenceCalibration,
    HumanMean,
    Interval,
    MetricCalibration,
    calibrate,
    calibrate_result,
)
from ragmeter.heads.ratings import parse_scales
from ragmeter.labels import run_ratings
from ragmeter.result import Result
from ragmeter.viewer import open_run
from ragmeter.viewer.folders import OpenedRun
from ragmeter.viewer.views import fmt


def calibrate_command(
    run: Annotated[Path, typer.Argument(help="An evaluate run's results folder.")],
    labels: Annotated[
        Path | None,
        typer.Argument(
            help="Ratings: JSONL or CSV, an 'id' and a column per metric. \\[default: the "
            "ratings given in the run with 'ragmeter label']"
        ),
    ] = None,
    scale: LabelScales = None,
    folds: Annotated[
        int, typer.Option(min=2, help="Folds of the cross-fitted line to the ratings' scale.")
    ] = DEFAULT_FOLDS,
    seed: Annotated[int, typer.Option(help="Seed of the folds.")] = 0,
) -> None:
    """Per rated metric: the judge's mean, the ratings-only mean and the PPI++ estimate of the
    people's mean over the scored samples (95 % intervals), the judge's bias and correlation on
    the rated samples, and how many ratings would halve the interval. Written to
    RUN/calibration.json."""
    console = wide_console()
    with user_errors(console):
        result = evaluation(open_run(run))
        if labels is None:
            given, notes = run_ratings(run, result, parse_scales(scale))
            if given is None:
                raise ValueError(
                    f"{run}: no ratings file given, and nobody has rated the run's samples "
                    f"(rate them with: ragmeter label {run})"
                )
            for note in notes:
                print_warning(console, note)
            report = calibrate_result(
                result, given, run=str(run), folds=folds, seed=seed, source="run"
            )
        else:
            report = calibrate(
                result, labels, scales=parse_scales(scale), run=str(run), folds=folds, seed=seed
            )
        written = report.write(run)
    print_calibration(console, report)
    say(console, f"written to {written}")


def evaluation(opened: OpenedRun) -> Result:
    """The scores of an ``evaluate`` run folder: ratings correct nothing else."""
    if opened.kind != "evaluate" or opened.result is None:
        raise ValueError(f"{opened.path}: ratings calibrate evaluate runs, not {opened.kind} runs")
    return opened.result


def _interval(found: Interval, digits: int = 2) -> str:
    return f"{found.estimate:.{digits}f} [{found.low:.{digits}f}, {found.high:.{digits}f}]"


def _halve(found: HumanMean) -> str:
    return "more than all" if found.labels_to_halve is None else str(found.labels_to_halve)


def _rated(found: HumanMean) -> str:
    return f"{found.rated}/{found.rated + found.unrated}"


Columns = dict[str, Callable[[HumanMean], str]]
"""A people's-mean table's columns after the metric and its scale: each name, and how a
metric's estimate fills its cell."""

_ESTIMATES: Columns = {
    "ratings only": lambda found: _interval(found.labels_only),
    "PPI++": lambda found: _interval(found.ppi),
    "width": lambda found: fmt(found.width_ratio, 2),
    "lambda": lambda found: f"{found.weight:.2f}",
}
"""What ``calibrate`` and ``compare --labels`` both show: the ratings-only and the PPI++
intervals, how wide the second is beside the first, and the judge's weight."""


def _people_table(
    title: str, rows: Sequence[MetricCalibration | DifferenceCalibration], columns: Columns
) -> Table:
    """A row per rated metric: its scale, then its estimate in ``columns`` (dashes where there
    is none)."""
    table = Table(title=escape(title))
    for column in ["metric", "scale", *columns]:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in rows:
        found = row.result
        cells = ["—"] * len(columns)
        if found is not None:
            cells = [cell(found) for cell in columns.values()]
        table.add_row(Text(row.metric), row.scale.text, *cells)
    return table


def print_calibration(console: Console, report: CalibrationReport) -> None:
    """The people's mean per rated metric, with what was left out and how each scale was set."""
    columns: Columns = {
        "rated": _rated,
        "judge (on scale)": lambda found: (
            f"{found.judge_mean:.3f} ({found.judge_mean_on_scale:.2f})"
        ),
        **_ESTIMATES,
        "judge bias": lambda found: f"{found.judge_bias:+.2f}",
        "r": lambda found: fmt(found.correlation, 2),
        "ratings to halve": _halve,
    }
    title = f"people's mean from the ratings in {report.labels} (95 % CI)"
    console.print(_people_table(title, report.metrics, columns))
    for row in report.metrics:
        if row.reason:
            print_warning(console, f"{row.metric}: no estimate: {row.reason}")
        if row.unscored:
            console.print(
                f"{row.metric}: {row.unscored} sample(s) the judge left unscored are left out; "
                f"the estimate is of the people's mean over the {row.scored} scored",
                highlight=False,
            )
        if row.rated_unscored:
            console.print(
                f"{row.metric}: {row.rated_unscored} rating(s) of unscored samples not used",
                highlight=False,
            )
        if not row.scale.stated:
            console.print(
                f"{row.metric}: scale {row.scale.text} inferred from the ratings; give --scale "
                f"{row.metric}=LOW-HIGH if it is wider",
                highlight=False,
            )
    console.print(
        "width: PPI++ over ratings-only; lambda: the judge's weight (0: ratings alone); judge "
        f"bias: judge on the scale minus rating, over rated samples; {report.folds} folds, "
        f"seed {report.seed}",
        highlight=False,
    )


def print_differences(console: Console, rows: list[DifferenceCalibration]) -> None:
    """B minus A on the people's scale, per metric rated in both runs."""
    columns: Columns = {
        "rated pairs": _rated,
        "judge B - A": lambda found: f"{found.judge_mean:+.3f}",
        **_ESTIMATES,
    }
    console.print(_people_table("people's mean, B - A (95 % CI, paired)", rows, columns))
    for row in rows:
        if row.reason:
            print_warning(
                console, f"{row.metric}: no difference on the people's scale: {row.reason}"
            )
