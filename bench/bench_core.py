"""Benchmark the RAGAS metrics on the example set: time, calls, tokens, memory, cached rerun.

    python bench/bench_core.py [--judge local] [--data examples/basic.jsonl]
    python bench/bench_core.py --wikieval ../shared/data/wikieval/wikieval_dev.jsonl --limit 5

``--wikieval`` times WikiEval samples instead (question, the focused context, the grounded
answer): long contexts, the case the per-sample time target is set for.

Runs once with an empty call cache (every call reaches the model), then again with the same cache
and a new results folder: the second run must make zero model calls.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from ragmeter import evaluate
from ragmeter.data import load_samples
from ragmeter.evaluate import DEFAULT_METRICS
from ragmeter.judges.registry import get_embedder, get_judge
from ragmeter.meta.wikieval import load_wikieval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument(
        "--data", default=str(Path(__file__).parent.parent / "examples/basic.jsonl")
    )
    parser.add_argument("--wikieval", type=Path, help="time WikiEval samples from this file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--metrics", default=",".join(DEFAULT_METRICS))
    args = parser.parse_args()

    if args.wikieval:
        pairs = load_wikieval(args.wikieval)
        samples = [p.preferred for p in pairs if p.dimension == "faithfulness"]
    else:
        samples = load_samples(args.data).samples
    samples = samples[: args.limit]
    metrics = args.metrics.split(",")
    clock = time.perf_counter()
    judge = get_judge(args.judge)
    embedder = get_embedder(args.embedder)
    load_seconds = time.perf_counter() - clock

    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "calls.sqlite"
        clock = time.perf_counter()
        first = evaluate(
            samples,
            metrics,
            judge=judge,
            embedder=embedder,
            cache=cache,
            out_dir=Path(scratch) / "run1",
        )
        first_seconds = time.perf_counter() - clock
        clock = time.perf_counter()
        rerun = evaluate(
            samples,
            metrics,
            judge=judge,
            embedder=embedder,
            cache=cache,
            out_dir=Path(scratch) / "run2",
        )
        rerun_seconds = time.perf_counter() - clock

    per_metric: dict[str, list] = defaultdict(list)
    for score in first.scores:
        per_metric[score.metric].append(score)
    n = len(samples)
    print(f"judge {first.run.judge}, embedder {first.run.embedder}, {n} samples")
    print(
        f"model load {load_seconds:.1f} s; first run {first_seconds:.1f} s "
        f"({first_seconds / n:.1f} s per sample, all metrics)"
    )
    header = (
        f"{'metric':<20}{'s/sample med':>14}{'s/sample mean':>15}{'calls/sample':>14}"
        f"{'prompt tok':>12}{'gen tok':>10}{'unscored':>10}"
    )
    print(header)
    for metric, scores in per_metric.items():
        seconds = [s.seconds for s in scores]
        calls = sum(s.usage.model_calls for s in scores) / n
        prompt = sum(s.usage.prompt_tokens for s in scores) / n
        generated = sum(s.usage.completion_tokens for s in scores) / n
        unscored = sum(not s.scored for s in scores)
        print(
            f"{metric:<20}{statistics.median(seconds):>14.2f}{statistics.mean(seconds):>15.2f}"
            f"{calls:>14.2f}{prompt:>12.0f}{generated:>10.0f}{unscored:>10}"
        )
    totals = defaultdict(float)
    for score in first.scores:
        totals[score.sample_id] += score.seconds
    print(
        f"all metrics together: median {statistics.median(totals.values()):.1f} s per sample "
        f"(min {min(totals.values()):.1f}, max {max(totals.values()):.1f})"
    )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS) {peak_mib:.0f} MiB")
    usage = rerun.usage()
    print(
        f"cached rerun: {usage.model_calls} model calls, {usage.cached_calls} cached, "
        f"{rerun_seconds:.2f} s; identical scores: "
        f"{[s.value for s in rerun.scores] == [s.value for s in first.scores]}"
    )


if __name__ == "__main__":
    main()
