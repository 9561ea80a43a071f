"""What ragmeter's decisions between systems are worth: measured on rated sets where several
systems answered the same inputs.

    python bench/bench_decisions.py topicalchat ../shared/data/criteria/topicalchat_dev.jsonl
    python bench/bench_decisions.py mtrag ../shared/data/mtrag/mtrag_dev.jsonl \\
        --metrics appropriate_refusal,naturalness,completeness       # these only
    python bench/bench_decisions.py summeval ../shared/data/criteria/summeval_dev.jsonl \\
        --groups 12 --anchors summeval_data.pkl                      # the first 12 articles
    python bench/bench_decisions.py ... --no-judge            # measure what is judged so far
    python bench/bench_decisions.py ... --sizes 5,10,20 --draws 100 \\
        --curve src/ragmeter/judges/decision_curve.json --chart docs/images/decision-curve.svg
    python bench/bench_decisions.py topicalchat ../shared/data/criteria/topicalchat_dev.jsonl \\
        --side-by-side --metrics groundedness              # two systems' answers read together
    python bench/bench_decisions.py nq301 ../shared/data/openqa/nq301_dev.jsonl \\
        --side-by-side --design anchor                     # 12 systems, each against the first
    python bench/bench_decisions.py wikieval ../shared/data/wikieval/wikieval_dev_pairs.jsonl

Every answer is scored by the ready criteria (each in its default reading) and, on MTRAG, the
built-in metrics that answer the people's ratings, in one ``evaluate`` run, ``--out/SOURCE``: a
killed bench resumes where it stopped, an unchanged rerun judges nothing, and ``--no-judge``
measures on the inputs whose every answer is scored so far (a set judged in part is usable in
part). Inputs are judged in sorted order, so the part is a fixed one.

``--side-by-side`` reads every pair of systems' answers to each input together instead
(``ragmeter.side_by_side``, all pairs, both orders), through the call cache: a killed bench
resumes where it stopped and a rerun judges nothing. The same measures follow, with the pairs
decided on the preferences and the systems ranked by their Bradley-Terry ratings; also the
anchor design (each system against the first only) and the length-controlled preferences, from
the same reads, and the reads' order bias.

For each (rating, metric): the system-level Kendall tau and Spearman between ragmeter's system
means and the people's, with bootstrap intervals over inputs; every pair of systems decided on
both sides by the same paired test (``ragmeter.ranking``), and how often ragmeter's decision is
the people's, on the full set and as curves over N inputs (``meta.decisions``). ``--curve``
merges the curves into the decision curve that ``ragmeter compare`` reads.

``--anchors FILE`` (SummEval only; ``pip install rouge-score``): BARTScore's
``SUM/SummEval/data.pkl`` (github.com/neulab/BARTScore), whose reference summaries give each
summary's ROUGE, put through the same code on the same rows.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from bench_criteria import CRITERIA, criteria_rows, first_groups, mtrag_rows

from ragmeter import evaluate
from ragmeter.criteria import LIBRARY, CriterionMetric
from ragmeter.decision_curve import FORMAT
from ragmeter.meta.decisions import (
    SHARES,
    Decisions,
    Table,
    complete_inputs,
    curve,
    decide,
    on_inputs,
    system_correlation,
)
from ragmeter.metrics import metric_by_name
from ragmeter.metrics.base import Metric
from ragmeter.result import Result
from ragmeter.stats import Interval
from ragmeter.viewer import open_run

BUILT_IN = {
    "mtrag": {"faithfulness": "faithfulness", "appropriateness": "answer_relevance"},
    "nq301": {"correct": "answer_correctness"},
}
"""Per source: the people's rating -> the built-in metric that answers it."""


def load(source: str, path: Path, groups: int | None) -> list[Any]:
    """The set's rows (``bench_criteria``'s), each with its ``system``, sorted by input."""
    if source == "nq301":
        return sorted(first_groups(nq301_rows(path), groups), key=lambda r: (r.group, r.system))
    if source == "mtrag":
        rows = mtrag_rows(path)
        systems = {r.sample.key: r.responder for r in _mtrag_responders(path)}
    else:
        rows = criteria_rows(path)
        records = (json.loads(line) for line in path.read_text().splitlines())
        systems = {r["id"]: r["system"] for r in records}
    for row in rows:
        row.system = systems[row.sample.key]
    return sorted(first_groups(rows, groups), key=lambda r: (r.group, r.system))


def _mtrag_responders(path: Path) -> list[Any]:
    from ragmeter.meta.mtrag import load_mtrag

    return load_mtrag(path)


def nq301_rows(path: Path) -> list[Any]:
    """NQ301's answers (``../shared/data/openqa``, read by ``meta.openqa``): the question, the
    gold answers joined with " or " as the reference, and the people's verdict (1 correct, 0
    not) as the rating."""
    from bench_criteria import Row

    from ragmeter.meta.openqa import load_openqa
    from ragmeter.sample import Sample

    rows = []
    for record in load_openqa(path):
        sample = Sample(
            id=record.id, question=record.question, answer=record.answer, reference=record.reference
        )
        row = Row(sample, record.group, {"correct": float(record.human)}, {"correct": (0, 1)})
        row.system = record.system
        row.anchors = record.anchors
        rows.append(row)
    return rows


def metrics_of(source: str) -> dict[str, list[Metric]]:
    """The people's rating -> the metrics that answer it: ready criteria in their default
    reading, and the built-in metrics."""
    wanted: dict[str, list[Metric]] = {}
    for rating, name in CRITERIA.get(source, {}).items():
        wanted.setdefault(rating, []).append(CriterionMetric(LIBRARY[name]))
    for rating, name in BUILT_IN.get(source, {}).items():
        wanted.setdefault(rating, []).append(metric_by_name(name))
    return wanted


def judge(rows: list[Any], metrics: list[Metric], out: Path, judge_spec: str) -> Any:
    started = time.perf_counter()
    result = evaluate([r.sample for r in rows], metrics, judge=judge_spec, out_dir=out)
    print(f"judged {len(rows)} answers in {time.perf_counter() - started:.0f} s", flush=True)
    return result


def tables(rows: list[Any], values: dict[str, float | None], rating: str) -> tuple[Table, Table]:
    """system -> input -> ragmeter's value, and the people's rating."""
    judge: dict[str, dict[str, float | None]] = {}
    people: dict[str, dict[str, float | None]] = {}
    for row in rows:
        judge.setdefault(row.system, {})[row.group] = values.get(row.sample.key)
        people.setdefault(row.system, {})[row.group] = row.ratings.get(rating)
    return judge, people


def shown(found: Interval | None) -> str:
    return (
        "undefined" if found is None else f"{found.value:.2f} [{found.low:.2f}, {found.high:.2f}]"
    )


COLUMNS = (
    "Kendall tau | Spearman | pairs people tell apart | decided alike | cannot tell | "
    "confident wrong (of all pairs) | as two alone: alike | cannot tell | wrong"
)


def cells(correlation: dict[str, Interval | None], decided: Decisions) -> str:
    """A table row's figures, in ``COLUMNS``' order."""
    return (
        f"{shown(correlation['kendall'])} | {shown(correlation['spearman'])} | "
        f"{decided.separated} of {decided.pairs} | {share(decided.same)} | "
        f"{share(decided.cannot_tell)} | {decided.wrong:.0%} | "
        f"{share(decided.same_pairwise)} | {share(decided.cannot_tell_pairwise)} | "
        f"{decided.wrong_pairwise:.0%} |"
    )


def share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def measure(
    source: str,
    rows: list[Any],
    result: Result,
    by_rating: dict[str, list[Metric]],
    sizes: list[int],
    draws: int = 100,
) -> dict[str, Any]:
    """Print each (rating, metric)'s system-level agreement and decisions; return the curve's
    entries of this set (by metric), each N drawn ``draws`` times."""
    print(f"| rating | metric | systems | inputs | {COLUMNS} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    entries: dict[str, Any] = {}
    for rating, metrics in by_rating.items():
        for metric in metrics:
            values = {s.sample_id: s.value for s in result.scores_for(metric.name)}
            judge, people = tables(rows, values, rating)
            inputs = complete_inputs(judge, people)
            if len(inputs) < 3:
                print(
                    f"| {rating} | {metric.name} | {len(judge)} | {len(inputs)} | too few inputs |"
                )
                continue
            complete, rated = on_inputs(judge, inputs), on_inputs(people, inputs)
            correlation = system_correlation(complete, rated)
            decided = decide(complete, rated)
            print(
                f"| {rating} | {metric.name} | {len(judge)} | {len(inputs)} | "
                + cells(correlation, decided),
                flush=True,
            )
            missed = [
                f"{o.b} vs {o.a}: people {o.people} ({o.people_difference:+.2f}, effect "
                f"{_effect(o.people_effect)}), ragmeter {o.judge} ({o.judge_difference:+.3f}, "
                f"effect {_effect(o.judge_effect)})"
                for o in decided.outcomes
                if o.people != "cannot tell" and o.judge != o.people
            ]
            if missed:
                print("  missed: " + "; ".join(missed))
            entries[metric.name] = {
                "rating": rating,
                "systems": len(judge),
                "inputs": len(inputs),
                "kendall": _dumped(correlation["kendall"]),
                "spearman": _dumped(correlation["spearman"]),
                "full": decided.model_dump(exclude={"outcomes", "inputs"}),
                "sizes": curve(complete, rated, sizes, draws=draws),
            }
    return entries


def _effect(value: float | None) -> str:
    return "no spread" if value is None else f"{value:+.2f}"


def _dumped(found: Interval | None) -> dict[str, float] | None:
    return None if found is None else {k: round(v, 4) for k, v in found.model_dump().items()}


def write_curve(
    path: Path, source: str, entries: dict[str, Any], section: str | None = None
) -> None:
    """Merge this set's entries into the decision curve at ``path``, keeping the other sets';
    under ``section`` (``side_by_side``: what ``compare --side-by-side`` reads) where given."""
    found = json.loads(path.read_text()) if path.exists() else {"format": FORMAT}
    part = found.setdefault(section, {}) if section else found
    part.setdefault("sets", {})[source] = entries
    path.write_text(json.dumps(found, indent=1) + "\n")


def curve_lines(entries: dict[str, Any]) -> list[str]:
    lines = [
        "| metric | N | decided alike | cannot tell | confident wrong | as two alone: alike | "
        "cannot tell | wrong | Kendall tau |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for metric, entry in entries.items():
        for n, found in entry["sizes"].items():
            cells = [share(found[name]) for name in SHARES]
            lines.append(f"| {metric} | {n} | {' | '.join(cells)} | {found['kendall']} |")
    return lines


CHARTED = {"same_pairwise": "two systems alone", "same": "all systems at once (Holm)"}
"""The shares the chart draws, by the name its legend gives them."""


def chart(curve_file: Path) -> str:
    """The decision curve as an SVG (needs ``ragmeter[report]``): per set, the share of the
    pairs people tell apart that ragmeter decides as they do, over N inputs, a line per metric;
    solid as two systems compared alone, dashed as all the set's systems at once."""
    from ragmeter.viewer.charts import altair, vl_convert

    alt = altair()
    points = [
        {"set": name, "metric": metric, "inputs": int(n), "share": found[figure], "figure": named}
        for name, metrics in json.loads(curve_file.read_text())["sets"].items()
        for metric, entry in metrics.items()
        for n, found in [*entry["sizes"].items(), (str(entry["inputs"]), entry["full"])]
        for figure, named in CHARTED.items()
        if found.get(figure) is not None
    ]
    base = alt.Chart(alt.Data(values=points)).encode(
        alt.X("inputs:Q", title="inputs every system answered"),
        alt.Y("share:Q", title="decided as people decide", scale=alt.Scale(domain=[0, 1])),
        alt.Color("metric:N", legend=alt.Legend(orient="bottom", columns=4)),
        alt.StrokeDash(
            "figure:N",
            title=None,
            scale=alt.Scale(domain=list(CHARTED.values()), range=[[1, 0], [4, 3]]),
            legend=alt.Legend(orient="bottom"),
        ),
    )
    faceted = (
        base.mark_line(point=True)
        .properties(width=220, height=180)
        .facet(alt.Facet("set:N", title=None), columns=3)
        .properties(title="Pairs people tell apart that ragmeter decides as they do")
    )
    return str(vl_convert().vegalite_to_svg(faceted.to_dict()))


class _PlainData(pickle.Unpickler):
    """Reads a pickle of plain dicts, lists, strings and numbers; any class or function it
    names is refused, so nothing in the file is run."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused: the pickle names {module}.{name}")


def anchor_scores(path: Path, rows: list[Any]) -> dict[str, dict[str, float | None]]:
    """ROUGE of each row's summary (rouge-score, stemmed F1), by anchor, then by row key:
    against the article's original highlights (``ref_summ`` in BARTScore's SummEval
    ``data.pkl``), and ROUGE-L's best over its eleven references (``ref_summs``). The snapshot
    keeps no automatic metric's stored scores (its ``final_p.pkl`` is too large to be kept),
    so ROUGE is computed here, on the same rows."""
    from rouge_score import rouge_scorer  # pip install rouge-score: measuring only

    with path.open("rb") as file:
        stored = _PlainData(file).load()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    found: dict[str, dict[str, float | None]] = {}
    for row in rows:
        article = stored[row.group]
        scores = scorer.score(article["ref_summ"], row.sample.answer)
        for name, score in scores.items():
            found.setdefault(name, {})[row.sample.key] = score.fmeasure
        best = max(
            scorer.score(r, row.sample.answer)["rougeL"].fmeasure for r in article["ref_summs"]
        )
        found.setdefault("rougeL (best of 11 references)", {})[row.sample.key] = best
    return found


def anchors(rows: list[Any], path: Path) -> None:
    """Each anchor's system-level agreement and decisions, on the rows ragmeter's criteria
    were measured on, by the same code."""
    inputs = {r.group for r in rows}
    print(f"\nROUGE on the same {len(inputs)} articles:")
    print(f"| rating | metric | {COLUMNS} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for metric, values in sorted(anchor_scores(path, rows).items()):
        for rating in CRITERIA["summeval"]:
            judge, people = tables(rows, values, rating)
            correlation = system_correlation(judge, people)
            print(f"| {rating} | {metric} | " + cells(correlation, decide(judge, people)))


def side_by_side(
    source: str,
    rows: list[Any],
    by_rating: dict[str, list[Metric]],
    out: Path,
    judge_spec: str | None,
    design: str = "all",
    sizes: list[int] | None = None,
    draws: int = 100,
) -> dict[str, Any]:
    """Read each metric side by side (``design``'s pairs, both orders) and measure it as
    ``measure`` does the scores read alone; return the curve's entries of this set. The reads
    are kept in ``out/side_by_side/METRIC.json``; with no ``judge_spec`` they are measured from
    there, where present."""
    from ragmeter.judges.registry import resolve_models
    from ragmeter.side_by_side import SideBySide, compare_side_by_side, criterion_named

    judge_model = resolve_models(judge_spec, needs_embedder=False)[0] if judge_spec else None
    systems: dict[str, list[Any]] = {}
    for row in rows:  # paired by input: each answer filed under its input's id
        systems.setdefault(row.system, []).append(row.sample.model_copy(update={"id": row.group}))
    folder = out / "side_by_side"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"| rating | metric | systems | inputs | {COLUMNS} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    entries: dict[str, Any] = {}
    for rating, metrics in by_rating.items():
        for metric in metrics:
            path = folder / f"{metric.name}.json"
            if judge_model is not None:
                found = compare_side_by_side(
                    systems,
                    [criterion_named(metric.name)],
                    judge_model,
                    design=design,  # type: ignore[arg-type]
                    on_input=_progress(metric.name),
                )
                path.write_text(found.model_dump_json(indent=1))
            elif path.is_file():
                found = SideBySide.model_validate_json(path.read_text())
            else:
                print(f"| {rating} | {metric.name} | not read yet |")
                continue
            read = found.metrics[0]
            _, people = tables(rows, {}, rating)
            for figure in side_by_side_figures(read, people, found.systems):
                print(f"| {rating} | {metric.name} {figure}", flush=True)
            print(
                f"  {found.reads} reads ({found.judge_calls} made now) in {found.seconds:.0f} s; "
                f"first position preferred in {read.order_bias.first_preferred} of "
                f"{read.order_bias.reads} reads; longer answer preferred on "
                f"{share(read.length_bias.longer_preferred)} of {read.length_bias.inputs} inputs",
                flush=True,
            )
            entries[metric.name] = curve_entry(read, people, found.systems, rating, sizes, draws)
    if source == "nq301":
        nq301_anchors(rows)
    return entries


def _progress(name: str) -> Any:
    done = [0]

    def progress(reads: int) -> None:
        done[0] += 1
        if done[0] % 5 == 0:
            print(f"  {name}: {done[0]} inputs read", file=sys.stderr, flush=True)

    return progress


def curve_entry(
    read: Any, people: Table, systems: list[str], rating: str, sizes: list[int] | None, draws: int
) -> dict[str, Any]:
    """The decision curve's entry of one metric read side by side, as ``measure`` makes one of
    scores read alone."""
    from ragmeter.meta.decisions import decide_preferences, preference_curve
    from ragmeter.side_by_side import table_of

    table = table_of(read.preferences)
    correlation, decided = decide_preferences(table, people, systems)
    return {
        "rating": rating,
        "systems": len(systems),
        "inputs": decided.inputs,
        "kendall": _dumped(correlation["kendall"]),
        "spearman": _dumped(correlation["spearman"]),
        "full": decided.model_dump(exclude={"outcomes", "inputs"}),
        "sizes": preference_curve(table, people, systems, sizes, draws=draws) if sizes else {},
    }


def nq301_anchors(rows: list[Any]) -> None:
    """The set's own judges (EM, F1, BEM, InstructGPT-eval, GPT-4-eval) decided by the same
    code on the same rows: each system's answers scored alone, on the questions every system
    has a verdict for."""
    print("\nNQ301's anchors on the same rows, each answer scored alone:")
    for anchor in ("em", "f1", "bem", "instructgpt", "gpt4"):
        values = {r.sample.key: r.anchors.get(anchor) for r in rows}
        judge, people = tables(rows, values, "correct")
        inputs = complete_inputs(judge, people)
        complete, rated = on_inputs(judge, inputs), on_inputs(people, inputs)
        correlation = system_correlation(complete, rated)
        print(
            f"| correct | {anchor} | {len(judge)} | {len(inputs)} | "
            + cells(correlation, decide(complete, rated)),
            flush=True,
        )


WIKIEVAL = {"faithfulness": "faithfulness", "answer_relevance": "answer_relevance"}
"""WikiEval's answer pairs (``wikieval_dev_pairs.jsonl``) by dimension -> the metric read."""


def wikieval_side_by_side(path: Path, judge_spec: str) -> None:
    """Each WikiEval answer pair read side by side: the share of questions whose preferred
    answer (people's, by construction) the judge prefers, a tie counting half, as ``ragmeter
    meta wikieval`` counts the scores read alone."""
    from ragmeter.judges.registry import resolve_models
    from ragmeter.sample import Sample
    from ragmeter.side_by_side import compare_side_by_side, criterion_named

    judge_model, _ = resolve_models(judge_spec, needs_embedder=False)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for dimension, metric in WIKIEVAL.items():
        chosen = [r for r in records if r["dimension"] == dimension]
        systems = {
            side: [
                Sample(
                    id=str(r["id"]), question=r["question"], contexts=r["context"], answer=r[side]
                )
                for r in chosen
            ]
            for side in ("preferred", "rejected")
        }
        found = compare_side_by_side(systems, [criterion_named(metric)], judge_model)
        read = found.metrics[0]
        said = [p.preference for p in read.preferences if p.preference is not None]
        right = sum(1.0 if v < 0 else 0.5 if v == 0 else 0.0 for v in said)
        pair = read.ranking.pairs[0]
        print(
            f"| {dimension} | {right / len(said):.2f} ({len(said)} pairs) | "
            f"{pair.test.difference:+.3f} [{pair.test.ci_low:+.3f}, {pair.test.ci_high:+.3f}] | "
            f"{read.order_bias.first_preferred} of {read.order_bias.reads} | "
            f"{found.seconds:.0f} s, {found.judge_calls} reads made |",
            flush=True,
        )


def side_by_side_figures(read: Any, people: Table, systems: list[str]) -> list[str]:
    """Table rows: all pairs read, the anchor design (each system against the first) and the
    length-controlled preferences, each decided against the people on the same inputs."""
    from ragmeter.meta.decisions import decide_preferences
    from ragmeter.side_by_side import length_controlled, table_of

    controlled, _ = length_controlled(read.preferences)
    anchor = systems[0]
    variants = {
        "(side by side) |": table_of(read.preferences),
        f"(side by side, anchor {anchor}) |": {
            pair: values for pair, values in table_of(read.preferences).items() if anchor in pair
        },
        "(side by side, length controlled) |": table_of(controlled),
    }
    lines = []
    for name, table in variants.items():
        correlation, decided = decide_preferences(table, people, systems)
        lines.append(f"{name} {len(systems)} | {decided.inputs} | " + cells(correlation, decided))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", choices=sorted({*CRITERIA, *BUILT_IN, "wikieval"}))
    parser.add_argument("file", type=Path)
    parser.add_argument("--groups", type=int, default=None, help="The first N inputs only.")
    parser.add_argument("--judge", default="local")
    parser.add_argument("--out", type=Path, default=Path("runs/decisions"))
    parser.add_argument("--no-judge", action="store_true", help="Measure what is scored so far.")
    parser.add_argument("--metrics", default=None, help="Judge and measure these only (a,b).")
    parser.add_argument("--draws", type=int, default=100, help="Draws of N inputs for a curve.")
    parser.add_argument(
        "--sizes", default="5,10,20,30,40,50", help="Inputs drawn, comma-separated."
    )
    parser.add_argument("--curve", type=Path, default=None, help="Merge the curves into this file.")
    parser.add_argument("--chart", type=Path, default=None, help="Draw --curve's sets as an SVG.")
    parser.add_argument("--anchors", type=Path, default=None, help="BARTScore's SummEval data.pkl.")
    parser.add_argument(
        "--side-by-side", action="store_true", help="Read every pair's answers together."
    )
    parser.add_argument(
        "--design", default="all", help="Side by side: 'all' pairs, or 'anchor' (the first)."
    )
    args = parser.parse_args()

    if args.source == "wikieval":
        print(
            "| dimension | preferred answer preferred | rejected - preferred | first position "
            "preferred | cost |\n|---|---|---|---|---|"
        )
        wikieval_side_by_side(args.file, args.judge)
        return
    rows = load(args.source, args.file, args.groups)
    by_rating = metrics_of(args.source)
    if args.metrics:
        wanted = args.metrics.split(",")
        by_rating = {
            rating: kept
            for rating, found in by_rating.items()
            if (kept := [m for m in found if m.name in wanted])
        }
    metrics = list({m.name: m for found in by_rating.values() for m in found}.values())
    out = args.out / args.source
    print(f"{args.source}: {len(rows)} answers, {len({r.group for r in rows})} inputs", flush=True)
    sizes = [int(n) for n in args.sizes.split(",") if n]
    if args.side_by_side:
        judge_spec = None if args.no_judge else args.judge
        entries = side_by_side(
            args.source, rows, by_rating, out, judge_spec, args.design, sizes, args.draws
        )
        print(f"\nDecisions on N inputs drawn ({args.draws} draws each), side by side:")
        print("\n".join(curve_lines(entries)))
        if args.curve:
            write_curve(args.curve, args.source, entries, section="side_by_side")
        return
    if not args.no_judge:
        judge(rows, metrics, out, args.judge)
    result = open_run(out).result
    if result is None:
        sys.exit(f"{out}: nothing scored yet")
    entries = measure(args.source, rows, result, by_rating, sizes, args.draws)
    print(f"\nDecisions on N inputs drawn ({args.draws} draws each), against the people's on all:")
    print("\n".join(curve_lines(entries)))
    if args.anchors:
        unscored = {s.sample_id for s in result.scores if s.value is None}
        scored = {s.sample_id for s in result.scores} - unscored
        complete = {r.group for r in rows} - {r.group for r in rows if r.sample.key not in scored}
        anchors([r for r in rows if r.group in complete], args.anchors)
    if args.curve:
        write_curve(args.curve, args.source, entries)
        if args.chart:
            args.chart.write_text(chart(args.curve))


if __name__ == "__main__":
    main()
