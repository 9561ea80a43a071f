"""``ragmeter compare A B [C ...] --side-by-side``: each input's answers read together by the
judge, in both orders, and the systems decided and ranked on the preferences
(``ragmeter.side_by_side``). A system is a run folder or a samples file; inputs are paired by
sample id."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.cli.common import advance, open_models, progress, say
from ragmeter.cli.pairs import pair_sentences, pairs_table
from ragmeter.criteria.asking import missing_field
from ragmeter.criteria.definition import Criterion
from ragmeter.data import load_samples
from ragmeter.decision_curve import load_decision_curve
from ragmeter.labels.passages import judged_passages
from ragmeter.sample import Sample
from ragmeter.side_by_side import (
    Design,
    MetricSideBySide,
    SideBySide,
    compare_side_by_side,
    criterion_named,
    paired_inputs,
    planned_reads,
)
from ragmeter.viewer import open_run
from ragmeter.viewer.compare import RankedMetric, RunsRanking, with_rates
from ragmeter.viewer.folders import SIDE_BY_SIDE_FILE
from ragmeter.viewer.views import fmt, interval


def counted(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def systems_of(paths: Sequence[Path]) -> dict[str, list[Sample]]:
    """Each system's answers, named by its folder or file: a run folder's samples (their
    passages read back from the judge's prompts), or a samples file."""
    names = [p.name if p.is_dir() else p.stem for p in paths]
    if len(set(names)) != len(names):
        names = [str(p) for p in paths]
    found: dict[str, list[Sample]] = {}
    for name, path in zip(names, paths, strict=True):
        if path.is_dir():
            result = open_run(path).result
            if result is None:
                raise ValueError(f"{path}: not an evaluate run folder, nor a samples file")
            passages, _ = judged_passages(result, ())
            found[name] = [
                s.model_copy(update={"contexts": passages.get(s.key, s.contexts)})
                for s in result.samples
            ]
        else:
            found[name] = load_samples(path).samples
    return found


def chosen_criteria(metrics: Sequence[str] | None, defined: Sequence[Criterion]) -> list[Criterion]:
    """The criteria named (ready ones, RAGAS metrics, or defined in a file), else those of the
    file. There is no default: which metrics decide better side by side than scored alone was
    measured, and differs (docs/decisions.md)."""
    own = {c.name: c for c in defined}
    if not metrics and not defined:
        raise ValueError(
            "name what to compare on side by side: --metric groundedness, completeness, ... or "
            "--criteria FILE (faithfulness and answer relevance decide better scored alone: "
            "docs/decisions.md, Side by side)"
        )
    return [own[m] if m in own else criterion_named(m) for m in metrics or own]


def check_fields(systems: dict[str, list[Sample]], criteria: Sequence[Criterion]) -> None:
    """Every answer compared holds what its criteria read; else an error naming the system,
    the sample and the field."""
    shared, _ = paired_inputs(systems)
    wanted = set(shared)
    for name, samples in systems.items():
        for sample in samples:
            for criterion in criteria:
                field = missing_field(criterion, sample) if sample.key in wanted else None
                if field:
                    raise ValueError(
                        f"{name}, sample {sample.key!r}: {criterion.name} reads {field!r}, "
                        "which it lacks (give the samples file that holds it)"
                    )


def as_ranking(found: SideBySide) -> RunsRanking:
    """The comparison in ``compare --json``'s ``ranking`` shape, with the decision rates of the
    side-by-side decision curve."""
    loaded = load_decision_curve()
    curve = None if loaded is None else loaded[0].get("side_by_side")
    missing = sorted({k for ids in found.missing.values() for k in ids})
    return RunsRanking(
        runs=found.systems,
        problems=[],
        notes=[
            f"{name}: no answer to {counted(len(ids), 'input')}, left out"
            for name, ids in found.missing.items()
        ],
        samples=found.inputs,
        not_in_every_run=missing,
        metrics=[with_rates(m.ranking, curve) for m in found.metrics],
        curve=None if curve is None else loaded[1],  # type: ignore[index]
    )


def summary(found: SideBySide) -> dict[str, Any]:
    """What the JSON and the results file add to the ranking: the reading, its cost, and per
    metric the order and length biases and the length-controlled pairs."""
    return {
        "design": found.design,
        "pairs_read": found.pairs_read,
        "reads": found.reads,
        "judge_calls": found.judge_calls,
        "seconds": found.seconds,
        "missing": found.missing,
        "planted": found.planted,
        "metrics": [
            {
                "metric": m.metric,
                "comparative": m.comparative,
                "unscored": m.unscored,
                "order_bias": {**m.order_bias.model_dump(), "share": m.order_bias.share},
                "length_bias": m.length_bias.model_dump(),
                "length_controlled": None
                if m.length_controlled is None
                else m.length_controlled.model_dump(),
            }
            for m in found.metrics
        ],
    }


def dry_run(
    console: Console,
    systems: dict[str, list[Sample]],
    criteria: Sequence[Criterion],
    design: Design,
    anchor: str | None,
    unit: str = "input",
) -> None:
    shared, missing = paired_inputs(systems)
    reads = planned_reads(list(systems), len(shared), len(criteria), design, anchor)
    console.print(
        f"dry run: up to {reads} reads ({len(systems)} systems, {counted(len(shared), unit)} "
        f"every system answered, {counted(len(criteria), 'metric')}, both orders; two sides "
        "shown alike are not read); nothing was judged",
        highlight=False,
    )
    for name, ids in missing.items():
        console.print(
            Text(f"{name}: no answer to {counted(len(ids), 'input')} (e.g. {ids[0]}), left out")
        )


def write_results(
    out: Path, found: SideBySide, ranked: RunsRanking, first: dict[str, Any] | None = None
) -> Path:
    """The ranking, the summary and every input's preferences in ``out/side_by_side.json``,
    after ``first`` where a command leads with its own fields."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / SIDE_BY_SIDE_FILE
    record = {
        **(first or {}),
        "ranking": ranked.model_dump(),
        "side_by_side": summary(found),
        "preferences": {m.metric: [p.model_dump() for p in m.preferences] for m in found.metrics},
    }
    path.write_text(json.dumps(record, indent=1))
    return path


def print_side_by_side(
    console: Console, found: SideBySide, ranked: RunsRanking, unit: str = "inputs"
) -> None:
    for metric, rated in zip(found.metrics, ranked.metrics, strict=True):
        console.print(ratings_table(metric))
        console.print(pairs_table(rated.ranking, rated, unit=unit))
        for line in notes(metric, rated, unit):
            say(console, Text(line))
    for note in ranked.notes:
        console.print(Text(note), style="yellow")
    if found.planted:
        samples = len({(u["system"], u["sample"]) for u in found.planted})
        console.print(
            Text(
                f"text addressed to the judge was taken out of {counted(samples, 'answer')} "
                f"before reading ({len(found.planted)} units; listed in --out and --json)"
            ),
            style="yellow",
        )
    made = f"{found.judge_calls} made now, the rest from the cache"
    pace = (
        f"{found.seconds / found.judge_calls:.2f} s a read" if found.judge_calls else "no read made"
    )
    console.print(
        f"{found.inputs} {unit} every system answered; {found.reads} reads ({made}) in "
        f"{found.seconds:.0f} s, {pace}; both orders of each pair, P(A) from the judge's "
        "probabilities; p: sign-flip permutation, adjusted for the number of pairs (Holm)",
        highlight=False,
    )


def ratings_table(metric: MetricSideBySide) -> Table:
    ranking = metric.ranking
    table = Table(
        title=escape(f"{ranking.metric}, side by side: {metric.comparative}"),
        caption="Bradley-Terry rating (Elo scale, mean 1000) from the preferences",
    )
    for column in ("rank", "system", "rating", "95% CI"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for rank, system in enumerate(ranking.systems, 1):
        table.add_row(
            str(rank),
            Text(system.system),
            fmt(system.mean, 0),
            interval(system.ci_low, system.ci_high, 0),
        )
    return table


def notes(metric: MetricSideBySide, rated: RankedMetric, unit: str = "inputs") -> list[str]:
    """The pairs' verdicts in words, then the position and length biases measured."""
    lines = pair_sentences(rated, unit=unit)
    bias = metric.order_bias
    if bias.share is not None:
        lines.append(
            f"order bias: the side shown first was preferred in {bias.first_preferred} of "
            f"{bias.reads} reads ({bias.share:.0%}); only both orders averaged are used"
        )
    length = metric.length_bias
    if length.longer_preferred is not None:
        lines.append(
            f"length: the longer side was preferred on {length.longer_preferred:.0%} of the "
            f"{length.inputs} {unit} whose two sides differ in length (slope {length.slope:+.3f})"
        )
    if metric.length_controlled is not None:
        verdicts = ", ".join(f"{p.b} vs {p.a}: {p.verdict}" for p in metric.length_controlled.pairs)
        lines.append(f"length controlled: {verdicts}")
    if metric.unscored:
        lines.append(f"{metric.unscored} input preferences unscored (their reasons are in --out)")
    return lines


@dataclass(frozen=True)
class Reading:
    """How a command reads side by side: the judge, the design, and the paired test's draws."""

    judge: str
    judge_options: list[str] | None
    cache: bool
    design: str
    anchor: str | None
    rounds: int
    seed: int
    difference: float | None = None

    def __post_init__(self) -> None:
        if self.design not in get_args(Design):
            raise ValueError(f"--design is 'auto', 'all' or 'anchor', not {self.design!r}")


def read_side_by_side(
    console: Console,
    systems: dict[str, list[Sample]],
    criteria: Sequence[Criterion],
    reading: Reading,
    quiet: bool = False,
    unit_of: Callable[[str], str] | None = None,
) -> SideBySide:
    """The judge opened and every input read, with a progress bar unless ``quiet``;
    ``unit_of`` as ``compare_side_by_side`` takes it."""
    model, _ = open_models(console, reading.judge, reading.judge_options, cache=reading.cache)
    shared, _ = paired_inputs(systems)
    design = cast(Design, reading.design)
    total = planned_reads(list(systems), len(shared), len(criteria), design, reading.anchor)
    # No bar where JSON is printed, or where nobody watches (the bar would be part of the output).
    quiet = quiet or not console.is_terminal
    with progress(console, "reading side by side", total, transient=True, disable=quiet) as bar:
        return compare_side_by_side(
            systems,
            criteria,
            model,
            design=design,
            anchor=reading.anchor,
            rounds=reading.rounds,
            seed=reading.seed,
            difference=reading.difference,
            unit_of=unit_of,
            on_input=lambda reads: advance(bar, reads),
        )


def run_side_by_side(
    console: Console,
    paths: Sequence[Path],
    reading: Reading,
    *,
    metrics: Sequence[str] | None,
    defined: Sequence[Criterion],
    dry: bool,
    as_json: bool,
    out: Path | None,
) -> None:
    """The command: read the systems, say the reads (``dry``) or make them, and print."""
    systems = systems_of(paths)
    criteria = chosen_criteria(metrics, defined)
    check_fields(systems, criteria)
    if dry:
        dry_run(console, systems, criteria, cast(Design, reading.design), reading.anchor)
        return
    found = read_side_by_side(console, systems, criteria, reading, quiet=as_json)
    ranked = as_ranking(found)
    if out is not None:
        write_results(out, found, ranked)
    if as_json:
        found_json = {
            "comparison": None,
            "ranking": ranked.model_dump(),
            "side_by_side": summary(found),
        }
        console.print_json(json.dumps(found_json))
        return
    print_side_by_side(console, found, ranked)
