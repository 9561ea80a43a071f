"""``ragmeter tune RUN [LABELS]``: verdict heads fitted on a team's labels (a file, or those
given in the run with ``ragmeter label``), written only where they beat the zero-shot read out
of fold clearly: the 95 % interval of the gain lies above zero. A head that does not is not
written, and the command says what it measured and about how many labels a gain of that size
would need. Exit status: 0 heads written, 1 no head clearly beat the zero-shot read (nothing
written), 2 bad input (a labels row is named with its field) or labels from which no head could
be fitted."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ragmeter.claims import SUPPORTED
from ragmeter.cli.calibrate import evaluation
from ragmeter.cli.common import LabelScales, fail, print_warning, say, user_errors, wide_console
from ragmeter.heads.curve import RATINGS_FORMAT, bought, load_curve, ratings_bought
from ragmeter.heads.ratings import Scale, parse_scales
from ragmeter.heads.tuning import (
    DEFAULT_STATES,
    MIN_UNITS,
    GainInterval,
    TunedHead,
    TuneReport,
    VerifierTuning,
    is_attribution_file,
    tune,
    tune_labelled,
    tune_verifier,
)
from ragmeter.heads.verifier import shipped_training_set
from ragmeter.judges.heads import HEADS_OPTION, Heads, bundled_heads
from ragmeter.labels import has_ratings, run_claims, run_ratings
from ragmeter.result import Result
from ragmeter.viewer import open_run
from ragmeter.viewer.views import fmt

HEADS_FILE = "heads.json"


DEFAULT_STATES_TEXT = ",".join(DEFAULT_STATES)
"""The default, as the option is written."""


RunArgument = Annotated[
    Path,
    typer.Argument(help="An evaluate run's results folder (a meta attribution run's for claims)."),
]
LabelsArgument = Annotated[
    Path | None,
    typer.Argument(
        help="Ratings of samples (an 'id' and a column per metric, as calibrate reads), "
        "labels of claims (an 'id', the 'claim' as the run checked it, 'supported' 1/0), "
        "or labelled claims in AttributionBench's format over a 'meta attribution' run "
        "(refits the verifier on the shipped training claims and these). \\[default: the "
        "labels given in the run with 'ragmeter label': its claim labels if any, else its "
        "ratings]"
    ),
]
StatesOption = Annotated[
    str,
    typer.Option(
        help="The hidden states a head reads (comma-separated; empty: a calibration of "
        "P(Yes) alone, for a judge that shows no states)."
    ),
]
OutOption = Annotated[
    Path | None, typer.Option(help=f"Where to write the heads [default: RUN/{HEADS_FILE}].")
]
CurveOption = Annotated[
    Path | None,
    typer.Option(
        help="A learning curve: with claims in AttributionBench's format, "
        "bench/bench_learning_curve.py's curve.json; with ratings, bench/bench_criteria.py's "
        "--curve file. Say what as many labels bought on what it measured. \\[default: the "
        "curves shipped beside the verifier's head, if any]"
    ),
]
ByOption = Annotated[
    str | None,
    typer.Option(
        help="With claims in AttributionBench's format: a column whose values are sources "
        "of their own (src_dataset, source, ...), each measured apart; where every part has "
        f"fewer than {MIN_UNITS} groups of claims, they are read as one all the same. "
        "\\[default: your claims are one source]"
    ),
]


def tune_command(
    run: RunArgument,
    labels: LabelsArgument = None,
    scale: LabelScales = None,
    states: StatesOption = DEFAULT_STATES_TEXT,
    folds: Annotated[int, typer.Option(min=2, help="Folds of the cross-validation.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the folds.")] = 0,
    out: OutOption = None,
    curve: CurveOption = None,
    by: ByOption = None,
) -> None:
    """Fit a verdict head per rated metric (through the metric's own aggregation) or on labelled
    claims, over the hidden states the run's judge kept with its verdicts; print each head's
    out-of-fold agreement beside the zero-shot read's; write the heads that beat it."""
    console = wide_console()
    with user_errors(console):
        claims = labels is not None and is_attribution_file(labels)
    if claims:
        assert labels is not None
        _tune_verifier(console, run, labels, folds, seed, out, curve, by)
        return
    if by is not None:
        raise fail(
            console,
            "--by splits claims labelled in AttributionBench's format; ratings and claim "
            "labels are measured by sample",
        )
    read = [name.strip() for name in states.split(",") if name.strip()]
    with user_errors(console):
        opened = open_run(run)
        result = evaluation(opened)
        if labels is None:
            report = _tune_run_labels(console, run, result, parse_scales(scale), read, folds, seed)
        else:
            report = tune(
                result, labels, scales=parse_scales(scale), states=read, folds=folds, seed=seed
            )
    print_tuning(console, report)
    _say_ratings_bought(console, report, curve)
    if not report.heads:
        console.print("no head could be fitted from these labels (see above)", highlight=False)
        raise typer.Exit(2)
    target = out or run / HEADS_FILE
    judge = result.run.models.get("judge")
    fitted_on = {"name": result.run.judge}
    if judge is not None and judge.weights_sha256 and states.strip():
        fitted_on["weights_sha256"] = judge.weights_sha256
    heads = report.written(fitted_on, str(target))
    if heads is None:
        console.print("no head clearly beat the zero-shot read out of fold: nothing written")
        raise typer.Exit(1)
    heads.save(target)
    say(
        console,
        f"written to {target}; judge with it: --judge-option {HEADS_OPTION}={target} (a head "
        "reads every verdict of its prompt, in every metric that asks it: "
        f"{', '.join(sorted(heads.heads))})",
    )


def _say_ratings_bought(console: Console, report: TuneReport, curve: Path | None) -> None:
    """For each head fitted on ratings, what as many ratings bought on the rated sets the
    ratings curve measured."""
    rated = [h for h in report.heads if h.labels == "ratings"]
    if not rated:
        return
    with user_errors(console):
        measured = load_curve(curve, RATINGS_FORMAT)
    for head in rated:
        said = None if measured is None else ratings_bought(measured[0], head.rows, measured[1])
        if said:
            say(console, f"{head.metric}: {said}")


def _tune_run_labels(
    console: Console,
    run: Path,
    result: Result,
    scales: dict[str | None, Scale],
    states: list[str],
    folds: int,
    seed: int,
) -> TuneReport:
    """Heads fitted on the labels given in the run (``ragmeter label``): its claim labels where
    there are any (the verdicts' own labels), else its ratings."""
    claims, notes = run_claims(run, result)
    ratings = None
    if claims:
        source = f"claims labelled in {run.name}"
        if has_ratings(run, result):  # counted, not read: a problem of theirs is not this tune's
            notes.append("the run's ratings are not used: heads are fitted on its claim labels")
    else:
        ratings, notes = run_ratings(run, result, scales)
        source = f"ratings given in {run.name}"
    if not claims and ratings is None:
        raise ValueError(
            f"{run}: no labels file given, and nobody has labelled the run (label its claims "
            f"with: ragmeter label {run} --claims --order least-sure)"
        )
    for note in notes:
        print_warning(console, note)
    return tune_labelled(
        result,
        claims=claims or None,
        ratings=ratings,
        states=states,
        folds=folds,
        seed=seed,
        source=source,
    )


def _tune_verifier(
    console: Console,
    run: Path,
    labels: Path,
    folds: int,
    seed: int,
    out: Path | None,
    curve: Path | None = None,
    by: str | None = None,
) -> None:
    """Labelled claims in AttributionBench's format, over a ``meta attribution`` run on them:
    the verifier's head refitted on the shipped training claims and these."""
    training = shipped_training_set()
    if training is None:
        print_warning(console, "this installation ships no training claims for the verifier")
        raise typer.Exit(2)
    with user_errors(console):
        measured = load_curve(curve)
        tuned = tune_verifier(run, labels, training, folds=folds, seed=seed, by=by)
    print_verifier_tuning(console, tuned)
    if measured is not None:
        count = sum(f.claims for f in tuned.left_out.figures if f.source in tuned.yours)
        said = bought(measured[0], count, measured[1])
        if said:
            say(console, said)
    if not any(tuned.clear(source) for source in tuned.yours):
        console.print(
            "your labels do not clearly raise the verifier's ROC AUC on your claims out of "
            "fold (the gain's 95 % interval does not lie above zero): nothing written"
        )
        raise typer.Exit(1)
    target = out or run / HEADS_FILE
    heads = Heads(heads={SUPPORTED.name: tuned.head}, judge=bundled_heads().judge)
    heads.save(target)
    say(console, f"written to {target}; judge with it: --judge-option {HEADS_OPTION}={target}")


def print_verifier_tuning(console: Console, tuned: VerifierTuning) -> None:
    if tuned.read_as:
        say(console, tuned.read_as)
    table = Table(title="the verifier, each source left out in turn (ROC AUC)")
    columns = ["source", "claims", "zero-shot", "head without it", "with its own labels"]
    for column in [*columns, "gain (95 % CI)"]:
        table.add_column(column, justify="left" if column == "source" else "right")
    for figures in tuned.left_out.figures:
        yours = figures.source in tuned.yours
        table.add_row(
            Text(figures.source + (" (yours)" if yours else "")),
            str(figures.claims),
            fmt(figures.zero_shot_auc, 3),
            fmt(figures.head_auc, 3),
            fmt(tuned.with_yours.get(figures.source), 3) if yours else "",
            _gain(tuned.gain(figures.source), tuned.intervals.get(figures.source)) if yours else "",
        )
    console.print(table)
    console.print(
        f"'with its own labels': heads fitted on the shipped claims and the rest of yours, "
        f"which weigh as much as the shipped ones together, {tuned.folds} folds with a group's "
        "claims in one fold; the gain's interval from resampling your groups",
        highlight=False,
    )
    for note in tuned.notes:
        print_warning(console, note)
    for source in tuned.yours:
        found = tuned.intervals.get(source)
        if not tuned.clear(source) and found is not None:
            say(console, _short_of(source, tuned.gain(source), found, "labelled claims"))


def print_tuning(console: Console, report: TuneReport) -> None:
    table = Table(title=f"verdict heads, out of fold ({report.folds} folds, seed {report.seed})")
    columns = ["metric", "prompt", "taught by", "rows", "verdicts", "figure", "zero-shot"]
    for column in [*columns, "head", "gain (95 % CI)", "penalty", "written"]:
        table.add_column(column, justify="left" if column in columns[:3] else "right")
    for head in report.heads:
        table.add_row(
            Text(head.metric),
            Text(head.prompt),
            head.labels,
            str(head.rows),
            str(head.verdicts),
            head.figure,
            fmt(head.zero_shot, 3),
            fmt(head.head, 3),
            _gain(head.gain, head.interval),
            "—" if head.penalty is None else f"{head.penalty:g}",
            "yes" if head.kept else "no",
        )
    console.print(table)
    for note in report.notes:
        print_warning(console, note)
    for head in report.heads:
        if not head.kept and head.interval is not None:
            what = "ratings" if head.labels == "ratings" else "labelled claims"
            say(console, _short_of(head.metric, head.gain, head.interval, what, head))
    console.print(
        "gain: the head's figure minus the zero-shot read's, out of fold; its 95 % interval "
        "from resampling the samples (a sample's claims together); a head is written only "
        "where the whole interval lies above zero",
        highlight=False,
    )


def _gain(gain: float | None, interval: GainInterval | None) -> str:
    if gain is None:
        return "—"
    if interval is None or math.isnan(interval.low):  # no resample defined it
        return f"{gain:+.3f}"
    return f"{gain:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"


def _short_of(
    name: str,
    gain: float | None,
    interval: GainInterval,
    what: str,
    head: TunedHead | None = None,
) -> str:
    """Why a head is not written: what was measured, and about how many labels a gain of that
    size would need, said as the estimate it is."""
    measured = ""
    if head is not None and head.head is not None and head.zero_shot is not None:
        measured = f" ({head.figure} {head.head:.3f} against the zero-shot read's " + (
            f"{head.zero_shot:.3f})"
        )
    if gain is None:
        return f"{name}: no gain could be measured{measured}; not written"
    rows = f"{interval.rows} {what}" + (
        f" of {interval.units} samples" if interval.rows != interval.units else ""
    )
    if interval.units < MIN_UNITS:
        return (
            f"{name}: gain {gain:+.3f} over the zero-shot read out of fold{measured}, from "
            f"{rows}: fewer than {MIN_UNITS} samples, too few to tell whether it holds; not "
            "written."
        )
    if math.isnan(interval.low):  # every resample left the figure undefined (one class)
        return (
            f"{name}: gain {gain:+.3f} over the zero-shot read out of fold{measured}; no "
            f"resample of the {rows} defined its interval, so it is not clearly above zero; "
            "not written."
        )
    said = (
        f"{name}: gain {gain:+.3f} over the zero-shot read out of fold{measured}, 95 % "
        f"interval [{interval.low:+.3f}, {interval.high:+.3f}] over {rows}: not clearly above "
        "zero; not written."
    )
    needed = interval.labels_needed(gain)
    if needed is None:
        return said + (
            " The measured gain is not above zero, so no number of labels can be estimated to "
            "make it clear."
        )
    sizes = ", ".join(str(m) for m in sorted(interval.half_widths))
    return said + (
        f" An estimate from this run's own figures: the interval's half-width, measured with "
        f"{sizes} samples resampled, goes as {interval.spread:.2f}/sqrt(samples); if the gain "
        f"stayed at {gain:+.3f}, its interval would clear zero at about {needed} {what} "
        f"({needed - interval.rows} more)."
    )
