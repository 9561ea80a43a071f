"""``ragmeter report RUN [RUN ...] --html FILE``: one self-contained HTML report of run folders
(with two runs, their comparison first). Exit status: 0 written, 2 bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.calibration import CalibrationReport, calibrate, labels_for_runs, parse_scales
from ragmeter.cli.calibrate import evaluation, print_calibration
from ragmeter.cli.common import LabelScales, LabelsFiles, print_warning, user_errors, wide_console
from ragmeter.viewer import open_run, write_report


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (any command's --out).")],
    html: Annotated[Path, typer.Option(help="The HTML file to write.")],
    rounds: Annotated[int, typer.Option(help="Bootstrap rounds of a comparison.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of a comparison's bootstrap.")] = 0,
    labels: LabelsFiles = None,
    scale: LabelScales = None,
) -> None:
    """Write an HTML report of RUN (summary, charts, every sample with its explanation); with
    two runs, their comparison first. It opens from disk, with no server and no network."""
    console = wide_console()
    with user_errors(console):
        opened = [open_run(run) for run in runs]
        for run in opened:
            for note in run.notes:
                print_warning(console, f"{run.path}: {note}")
        calibrations: dict[Path, CalibrationReport] = {}
        for run, path in zip(opened, labels_for_runs(labels, len(opened)), strict=True):
            if path is not None:
                calibrations[run.path] = calibrate(
                    evaluation(run), path, scales=parse_scales(scale), run=str(run.path)
                )
        written = write_report(opened, html, rounds=rounds, seed=seed)
    for calibration in calibrations.values():
        print_calibration(console, calibration)
    console.print(f"report written to {written}", soft_wrap=True, highlight=False)
