"""``ragmeter meta decisions RUN LABELS``: on a rated set where several systems answered the same
inputs, do ragmeter's decisions between the systems agree with the people's? Exit status: 0
measured, 2 bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ragmeter.cli.common import LabelScales, user_errors, wide_console
from ragmeter.heads.ratings import ID_FIELD, parse_scales, read_labels, read_rows
from ragmeter.meta.decisions import Table as Scores
from ragmeter.meta.decisions import (
    complete_inputs,
    curve,
    decide,
    on_inputs,
    system_correlation,
)
from ragmeter.result import Result
from ragmeter.stats import Interval
from ragmeter.viewer import open_run


class DecisionsError(ValueError):
    """Samples that do not say which system answered which input."""


def decisions_command(
    run: Annotated[Path, typer.Argument(help="An evaluate run of every system's answers.")],
    labels: Annotated[
        Path,
        typer.Argument(
            help="People's ratings: an 'id', the system that answered, and a column per metric."
        ),
    ],
    system_field: Annotated[
        str, typer.Option(help="The ratings' column naming the system that answered.")
    ] = "system",
    input_field: Annotated[
        str,
        typer.Option(help="The ratings' column naming the input answered (else the question)."),
    ] = "input",
    sizes: Annotated[
        str, typer.Option(help="Inputs drawn for the curves, comma-separated.")
    ] = "5,10,20,40",
    draws: Annotated[int, typer.Option(help="Draws of inputs at each size.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the draws.")] = 0,
    scale: LabelScales = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Per metric rated: the system-level Kendall tau and Spearman between ragmeter's system
    means and the people's, with bootstrap intervals over inputs; every pair of systems decided
    on both sides by the same paired test; and as curves over N inputs drawn, how often
    ragmeter decides as the people do, cannot tell, or calls a pair the wrong way round."""
    console = wide_console()
    with user_errors(console):
        result = open_run(run).result
        if result is None:
            raise DecisionsError(f"{run}: not an evaluate run")
        found = read_labels(
            labels,
            [s.key for s in result.samples],
            result.metrics,
            parse_scales(scale),
            described_by=(system_field, input_field),
        )
        places = _places(labels, result, system_field, input_field)
        wanted = [int(n) for n in sizes.split(",") if n.strip()]
    measured = {}
    for metric, ratings in found.ratings.items():
        values = {s.sample_id: s.value for s in result.scores_for(metric)}
        judge = _table(places, values)
        people = _table(places, ratings)
        inputs = complete_inputs(judge, people)
        if len(inputs) < 3:
            measured[metric] = {"inputs": len(inputs), "note": "fewer than 3 complete inputs"}
            continue
        judge, people = on_inputs(judge, inputs), on_inputs(people, inputs)
        correlation = system_correlation(judge, people, seed=seed)
        decided = decide(judge, people, seed=seed)
        measured[metric] = {
            "systems": len(judge),
            "inputs": len(inputs),
            **{k: v.model_dump() if v else None for k, v in correlation.items()},
            "full": decided.model_dump(),
            "sizes": curve(judge, people, wanted, draws=draws, seed=seed),
        }
    if as_json:
        console.print_json(json.dumps(measured))
        return
    for metric, entry in measured.items():
        console.print(_metric_table(metric, entry))


def _places(
    labels: Path, result: Result, system_field: str, input_field: str
) -> dict[str, tuple[str, str]]:
    """Each rated sample's (system, input), from the ratings file; the input is the sample's
    question where the file does not name it. An error names the row and the field."""
    questions = {s.key: s.question for s in result.samples}
    places: dict[str, tuple[str, str]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, row in read_rows(labels):
        key = str(row.get(ID_FIELD, "")).strip()
        system = str(row.get(system_field) or "").strip()
        if not system:
            raise DecisionsError(
                f"{labels}: row {number}, field {system_field!r}: missing; each row names the "
                "system that answered (--system-field)"
            )
        place = (system, str(row.get(input_field) or questions[key]).strip())
        if place in seen:
            raise DecisionsError(
                f"{labels}: row {number}: system {place[0]!r} answered input {place[1]!r} "
                f"already in row {seen[place]}"
            )
        seen[place] = number
        places[key] = place
    return places


def _table(places: dict[str, tuple[str, str]], values: dict[str, float | None]) -> Scores:
    table: dict[str, dict[str, float | None]] = {}
    for key, (system, answered) in places.items():
        table.setdefault(system, {})[answered] = values.get(key)
    return table


def _interval(found: dict | None) -> str:
    if not found:
        return "undefined"
    value = Interval.model_validate(found)
    return f"{value.value:.2f} [{value.low:.2f}, {value.high:.2f}]"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _metric_table(metric: str, entry: dict) -> Table | Text:
    if "note" in entry:
        return Text(f"{metric}: {entry['note']} ({entry['inputs']})")
    full = entry["full"]
    table = Table(
        title=(
            f"{metric}: {entry['systems']} systems, {entry['inputs']} inputs; Kendall tau "
            f"{_interval(entry['kendall'])}, Spearman {_interval(entry['spearman'])}; people "
            f"tell {full['separated']} of {full['pairs']} pairs apart"
        )
    )
    columns = ["inputs", "decided alike", "cannot tell", "confident wrong", "two alone: alike"]
    for column in [*columns, "two alone: wrong"]:
        table.add_column(column, justify="right")
    for n, found in [*entry["sizes"].items(), (f"{entry['inputs']} (all)", full)]:
        table.add_row(
            n,
            _share(found["same"]),
            _share(found["cannot_tell"]),
            _share(found["wrong"]),
            _share(found["same_pairwise"]),
            _share(found["wrong_pairwise"]),
        )
    return table
