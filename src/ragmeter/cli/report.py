"""``ragmeter report RUN [RUN ...] --html FILE``: one self-contained HTML report of run folders
(with two runs, their comparison first). Exit status: 0 written, 2 bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from ragmeter.cli.calibrate import evaluation, print_calibration
from ragmeter.cli.common import LabelScales, LabelsFiles, print_warning, user_errors, wide_console
from ragmeter.heads.ppi import CALIBRATION_FILE, DEFAULT_FOLDS, CalibrationReport, calibrate_result
from ragmeter.heads.ratings import parse_scales, ratings_for_runs
from ragmeter.labels import has_ratings, run_ratings
from ragmeter.viewer import OpenedRun, open_run, write_report


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (any command's --out).")],
    html: Annotated[Path, typer.Option(help="The HTML file to write.")],
    rounds: Annotated[int, typer.Option(help="Bootstrap rounds of a comparison.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of a comparison's bootstrap.")] = 0,
    labels: LabelsFiles = None,
    scale: LabelScales = None,
) -> None:
    """Write an HTML report of RUN (summary, charts, every sample with its explanation); with
    two runs, their comparison first; the people's means of a run whose samples were rated
    (--labels, or 'ragmeter label'). It opens from disk, with no server and no network."""
    console = wide_console()
    with user_errors(console):
        opened = [open_run(run) for run in runs]
        for run in opened:
            for note in run.notes:
                print_warning(console, f"{run.path}: {note}")
        calibrations = _calibrate(console, opened, labels, scale)
        if calibrations:  # read again: the report shows what the folders hold
            opened = [open_run(run) for run in runs]
        written = write_report(opened, html, rounds=rounds, seed=seed)
    for calibration in calibrations:
        print_calibration(console, calibration)
    console.print(f"report written to {written}", soft_wrap=True, highlight=False)


def _calibrate(
    console: Console, opened: list[OpenedRun], files: list[Path] | None, scale: list[str] | None
) -> list[CalibrationReport]:
    """Each run's people's means from its ratings (the files given, else the ratings given in
    each run with ``ragmeter label``), written into its folder."""
    if not files:
        return _calibrate_from_runs(console, opened, scale)
    results = [evaluation(run) for run in opened]
    found = []
    for run, result, ratings in zip(
        opened, results, ratings_for_runs(results, files, parse_scales(scale)), strict=True
    ):
        calibration = calibrate_result(result, ratings, run=str(run.path))
        calibration.write(run.path)
        found.append(calibration)
    return found


def _calibrate_from_runs(
    console: Console, opened: list[OpenedRun], scale: list[str] | None
) -> list[CalibrationReport]:
    """The people's means of each evaluate run in which people rated samples (``ragmeter
    label``), written into its folder; a ``calibration.json`` made otherwise (from a file, or
    with other folds or seed) is kept, and shown, as it is."""
    found = []
    for run in opened:
        if run.kind != "evaluate" or run.result is None:
            continue
        kept = _made_otherwise(run)
        if kept is not None:
            if has_ratings(run.path, run.result):
                print_warning(console, f"{run.path}: {kept}")
            continue
        ratings, notes = run_ratings(run.path, run.result, parse_scales(scale))
        if ratings is None:
            continue
        for note in notes:
            print_warning(console, f"{run.path}: {note}")
        calibration = calibrate_result(run.result, ratings, run=str(run.path), source="run")
        calibration.write(run.path)
        found.append(calibration)
    return found


def _made_otherwise(run: OpenedRun) -> str | None:
    """Why the run's ``calibration.json`` is kept rather than made again from its labels: it
    was made from another source, folds or seed than ``report`` uses, or cannot be read; None
    when there is none, or it is the one ``report`` would make."""
    path = run.path / CALIBRATION_FILE
    if not path.is_file():
        return None
    remake = f"make it from the run's labels with: ragmeter calibrate {run.path}"
    try:
        written = CalibrationReport.model_validate(run.calibration)
    except ValidationError:
        return f"{CALIBRATION_FILE} cannot be read as a calibration: left as it is ({remake})"
    if written.made_as("run", DEFAULT_FOLDS, 0):
        return None
    return (
        f"{CALIBRATION_FILE} was made from {written.labels} with {written.folds} folds, seed "
        f"{written.seed}: kept and shown, not made again from the run's labels ({remake})"
    )
