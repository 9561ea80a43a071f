"""Benchmark the RAGAS metrics: time, calls, tokens and memory per sample, against a floor.

    python bench/bench_core.py [--judge local] [--data examples/basic.jsonl]
    python bench/bench_core.py --wikieval ../shared/data/wikieval/wikieval_dev.jsonl --limit 5
    python bench/bench_core.py --wikieval ... --option faithfulness.statements=generate

``--wikieval`` times WikiEval samples instead (question, the focused context, the grounded
answer): long contexts, the case the per-sample time target is set for.

For each sample and metric it prints seconds, judge calls, prompt tokens actually read (after a
local judge's prefix reuse; what a remote judge bills) and generated tokens. The **floor** is one
forward pass over the sample's question, contexts and answer with the same judge, measured in the
same run: what reading the sample once costs. The ratio says how far the three metrics are from
it.

Runs once with an empty call cache (every call reaches the model), then again with the same cache
and a new results folder: the second run must make zero model calls. The last line gives the
samples scored per minute. (``--layouts`` timed the one-read layout beside the separate one in
the same process until commit e3a29d4: docs/agreement.md, "Reading a sample once".)
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
from ragmeter.config import DEFAULT_METRICS, configured_metrics
from ragmeter.data import load_samples
from ragmeter.judges.base import ChatRequest, Embedder, Judge, Message
from ragmeter.judges.registry import get_embedder, get_judge
from ragmeter.meta.wikieval import load_wikieval
from ragmeter.metrics import Metric
from ragmeter.prompts import render_inputs
from ragmeter.sample import Sample


def floor_seconds(judge: Judge, sample: Sample, nonce: int) -> tuple[float, int]:
    """Seconds and prompt tokens of one forward pass over the sample's text, nothing reused (the
    nonce opens the prompt, so no cached prefix matches beyond the chat template)."""
    text = render_inputs({**sample.asked(), "contexts": sample.contexts, "answer": sample.answer})
    request = ChatRequest(
        messages=(Message(role="user", content=f"Sample {nonce}.\n{text}"),),
        max_tokens=1,
        top_logprobs=1,
    )
    clock = time.perf_counter()
    response = judge.complete(request)
    return time.perf_counter() - clock, response.prompt_tokens


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
    parser.add_argument(
        "--option", action="append", help="metric option METRIC.PARAM=VALUE (repeat)"
    )
    args = parser.parse_args()

    if args.wikieval:
        pairs = load_wikieval(args.wikieval)
        samples = [p.preferred for p in pairs if p.dimension == "faithfulness"]
    else:
        samples = load_samples(args.data).samples
    samples = samples[: args.limit]
    clock = time.perf_counter()
    judge = get_judge(args.judge)
    embedder = get_embedder(args.embedder)
    print(f"model load {time.perf_counter() - clock:.1f} s")
    floors = {s.key: floor_seconds(judge, s, n) for n, s in enumerate(samples)}
    metrics = configured_metrics(args.metrics, args.option)
    time_metrics(samples, metrics, judge, embedder, floors)


def time_metrics(
    samples: list[Sample],
    metrics: list[Metric],
    judge: Judge,
    embedder: Embedder | None,
    floors: dict[str, tuple[float, int]],
) -> float:
    """Time ``metrics`` on ``samples`` from an empty call cache, print the tables, check that a
    cached rerun makes no model call, and return the samples scored per minute."""
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "calls.sqlite"
        clock = time.perf_counter()
        first = evaluate(
            samples, metrics, judge=judge, embedder=embedder, cache=cache,
            out_dir=Path(scratch) / "run1",
        )  # fmt: skip
        first_seconds = time.perf_counter() - clock
        clock = time.perf_counter()
        rerun = evaluate(
            samples, metrics, judge=judge, embedder=embedder, cache=cache,
            out_dir=Path(scratch) / "run2",
        )  # fmt: skip
        rerun_seconds = time.perf_counter() - clock
        # Read from the runs' stores, so while their folders exist.
        first_scores = list(first.scores)
        identical = [s.value for s in rerun.scores] == [s.value for s in first_scores]

    n = len(samples)
    print(f"judge {first.run.judge}, embedder {first.run.embedder}, {n} samples")
    print("options: " + "; ".join(f"{m.name} {m.config()}" for m in metrics))
    print(f"first run {first_seconds:.1f} s")
    by_sample: dict[str, dict[str, object]] = defaultdict(dict)
    for score in first_scores:
        by_sample[score.sample_id][score.metric] = score
    print(
        f"{'sample':<20}{'metric':<19}{'s':>7}{'calls':>7}{'read tok':>10}{'gen tok':>9}"
        f"{'floor s':>9}{'floor tok':>10}{'x floor':>9}"
    )
    totals, ratios = [], []
    per_metric: dict[str, list] = defaultdict(list)
    for sample in samples:
        scores = by_sample[sample.key]
        floor, floor_tokens = floors[sample.key]
        total = 0.0
        for metric, score in scores.items():
            per_metric[metric].append(score)
            total += score.seconds
            print(
                f"{sample.key[:19]:<20}{metric:<19}{score.seconds:>7.1f}"
                f"{score.usage.model_calls:>7}{score.usage.prompt_tokens:>10}"
                f"{score.usage.completion_tokens:>9}"
            )
        totals.append(total)
        ratios.append(total / floor)
        print(
            f"{sample.key[:19]:<20}{'all':<19}{total:>7.1f}{'':>26}"
            f"{floor:>9.2f}{floor_tokens:>10}{total / floor:>9.1f}"
        )
    print()
    print(f"{'metric':<20}{'s/sample med':>14}{'calls':>8}{'read tok':>10}{'gen tok':>9}")
    for metric, scores in per_metric.items():
        print(
            f"{metric:<20}{statistics.median(s.seconds for s in scores):>14.2f}"
            f"{sum(s.usage.model_calls for s in scores) / n:>8.1f}"
            f"{sum(s.usage.prompt_tokens for s in scores) / n:>10.0f}"
            f"{sum(s.usage.completion_tokens for s in scores) / n:>9.0f}"
        )
    unscored = sum(not s.scored for s in first_scores)
    print(
        f"all metrics: median {statistics.median(totals):.1f} s per sample "
        f"(min {min(totals):.1f}, max {max(totals):.1f}); floor median "
        f"{statistics.median(f for f, _ in floors.values()):.2f} s; median ratio to the floor "
        f"{statistics.median(ratios):.2f}x; {unscored} unscored"
    )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS) {peak_mib:.0f} MiB")
    usage = rerun.usage()
    print(
        f"cached rerun: {usage.model_calls} model calls, {usage.cached_calls} cached, "
        f"{rerun_seconds:.2f} s; identical scores: {identical}"
    )
    rate = 60 * n / first_seconds
    print(f"samples per minute (first run, every call to the model): {rate:.2f}")
    return rate


if __name__ == "__main__":
    main()
