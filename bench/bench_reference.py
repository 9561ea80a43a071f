"""Benchmark the reference metrics: seconds, model calls per claim, and no check asked twice.

    python bench/bench_reference.py --ragchecker ../shared/data/ragchecker/ragchecker_dev.jsonl \
        --mtrag ../shared/data/mtrag/mtrag_dev.jsonl --limit 5

``--ragchecker``: answer correctness on both answers of the first N instances (long-form
answers against a long ground truth, no contexts), as ``meta ragchecker`` asks it.
``--mtrag``: every metric ``diagnosis`` stands for on the first N non-writer MTRAG answers, with
their passages as the chunks and the writer's answer as the reference: eight metrics read off one
claim table per sample.

Each part runs with an empty call cache, so every check a metric asks either reaches the model or
is answered by the cache because another metric of the run asked it first. The requests that
reach the model are counted one by one: **asked twice** is how many of them repeat an earlier
one (it must be 0), beside the (claim, text) checks the metrics' tables hold.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ragmeter import evaluate
from ragmeter.judges.base import ChatRequest, ChatResponse, Judge, Reply, Wrapper, complete_each
from ragmeter.judges.registry import get_judge
from ragmeter.meta.mtrag import WRITER, load_mtrag
from ragmeter.meta.ragchecker import load_ragchecker
from ragmeter.metrics.diagnosis import DIAGNOSIS
from ragmeter.sample import Sample


class Counted(Wrapper):
    """The model, with every request that reaches it counted (the cache sits in front)."""

    def __init__(self, inner: Judge) -> None:
        super().__init__(inner)
        self.asked: Counter[str] = Counter()

    def _count(self, request: ChatRequest) -> None:
        self.asked[request.model_dump_json()] += 1

    def complete(self, request: ChatRequest) -> ChatResponse:
        self._count(request)
        response: ChatResponse = self.inner.complete(request)
        return response

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        for request in requests:
            self._count(request)
        return complete_each(self.inner, requests, concurrency)


def measure(label: str, samples: list[Sample], metrics: list[str], judge: Counted, per: str):
    judge.asked.clear()
    with tempfile.TemporaryDirectory() as scratch:
        clock = time.perf_counter()
        result = evaluate(
            samples, metrics, judge=judge, cache=Path(scratch) / "calls.sqlite", out_dir=scratch
        )
        wall = time.perf_counter() - clock
        scores = list(result.scores)  # read from the run's store, so while its folder exists
    seconds: dict[str, float] = {}
    claims = checks = cached = calls = 0
    for score in scores:
        unit = score.sample_id.rsplit("/", 1)[0] if per == "instance" else score.sample_id
        seconds[unit] = seconds.get(unit, 0.0) + score.seconds
        calls += score.usage.model_calls
        cached += score.usage.cached_calls
        if score.scored:
            checks += score.explanation["checks"]
    # Claims made once per text and sample: count each sample's distinct claims.
    for sample in samples:
        found = {
            row["claim"]
            for score in scores
            if score.sample_id == sample.key and score.scored
            for side in ("answer_claims", "reference_claims")
            for row in score.explanation[side]
        }
        claims += len(found)
    unscored = sum(not s.scored for s in scores)
    twice = sum(n - 1 for n in judge.asked.values())
    print(f"\n{label}: {len(seconds)} {per}s, metrics {', '.join(metrics)}")
    print(f"  seconds per {per}: median {statistics.median(seconds.values()):.1f}", end="")
    print(f" (min {min(seconds.values()):.1f}, max {max(seconds.values()):.1f}); wall {wall:.0f} s")
    print(f"  claims {claims}; checks in the tables {checks}; model calls {calls}", end="")
    print(f" ({calls / claims:.2f} per claim); answered by the cache {cached}")
    print(f"  requests that reached the model {sum(judge.asked.values())}; asked twice {twice}")
    print(f"  unscored {unscored}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--ragchecker", type=Path)
    parser.add_argument("--mtrag", type=Path)
    parser.add_argument("--limit", type=int, default=5, help="Instances / answers per part.")
    args = parser.parse_args()
    judge = Counted(get_judge(args.judge))
    if args.ragchecker:
        instances = load_ragchecker(args.ragchecker)[: args.limit]
        samples = [s for i in instances for s in i.samples]
        measure("RAGChecker", samples, ["answer_correctness"], judge, "instance")
    if args.mtrag:
        rows = [r for r in load_mtrag(args.mtrag) if r.responder != WRITER][: args.limit]
        measure("MTRAG", [r.sample for r in rows], list(DIAGNOSIS), judge, "answer")


if __name__ == "__main__":
    main()
