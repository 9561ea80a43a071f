"""An evaluation through a faulty provider: 1,000 samples x 3 metrics at a 20% fault rate.

    python bench/bench_faults.py [--samples 1000] [--rate 0.2] [--workers 8]

The fault server (tests/fault_server.py) answers on 127.0.0.1 and makes 20% of all attempts
fail, evenly across: 429 with Retry-After, 500, a stalled reply, a reply trickled a byte at a
time, a reset connection, a cut-off body, and a reply that ignores the prompt's format. Faults
are not capped per request, as in life, so a call can fail several times running. The client
has a 0.2 s per-attempt timeout, a 30 s per-call deadline, 6 retries with millisecond backoff.

Prints the time, the faults injected, and the items: lost (expected but missing from the
result store), scored, unscored with their reasons, and, against a clean run of the same data,
how many scores are identical.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import Faults, FaultServer, marked_samples

from ragmeter import evaluate
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge
from ragmeter.store import ScoreStore

CLIENT = {
    "backoff": 0.002,
    "max_backoff": 0.05,
    "timeout": 0.2,
    "deadline": 30.0,
    "max_retries": 6,
    "max_concurrency": 16,
}


def run(samples, faults: Faults, workers: int, out: Path):  # type: ignore[no-untyped-def]
    with FaultServer(faults) as server:
        judge = OpenAIJudge("fault-judge", base_url=server.url, **CLIENT)
        embedder = OpenAIEmbedder("fault-embed", base_url=server.url, **CLIENT)
        started = time.perf_counter()
        result = evaluate(
            samples, judge=judge, embedder=embedder, cache=False, out_dir=out, max_workers=workers
        )
        seconds = time.perf_counter() - started
    store = ScoreStore(out / "scores.sqlite")
    stored = store.count()
    store.close()
    return result, seconds, server, stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compare", action="store_true", help="skip the clean reference run")
    args = parser.parse_args()
    samples = marked_samples(args.samples)
    items = 3 * len(samples)

    with tempfile.TemporaryDirectory() as folder:
        faulty, seconds, server, stored = run(
            samples, Faults(rate=args.rate, seed=args.seed), args.workers, Path(folder) / "faulty"
        )
        injected = server.faults_injected()
        requests = len(server.seen)
        clean = None
        if not args.no_compare:
            clean, clean_seconds, _, _ = run(samples, Faults(), 1, Path(folder) / "clean")
        # Read from the runs' stores, so while their folders exist.
        faulty_scores = list(faulty.scores)
        clean_scores = list(clean.scores) if clean is not None else []

    counts = faulty.run.counts.model_dump()
    print(
        f"{len(samples)} samples x 3 metrics = {items} items, {args.workers} workers, "
        f"fault rate {args.rate:.0%}"
    )
    print(
        f"time: {seconds:.1f} s ({requests} requests, {sum(injected.values())} faults: "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(injected.items()))
        + ")"
    )
    print(
        f"lost: {items - stored} (stored {stored} of {items}); scored {counts['scored']}, "
        f"unscored {counts['unscored']}"
    )
    reasons = Counter(
        (s.unscored_reason or "").split(" (after")[0][:110] for s in faulty_scores if not s.scored
    )
    for reason, n in reasons.most_common():
        print(f"  unscored x{n}: {reason}")
    if clean is not None:
        print(f"clean run (1 worker, no faults): {clean_seconds:.1f} s")
        for metric in faulty.metrics:
            pairs = [
                (a, b)
                for a, b in zip(faulty_scores, clean_scores, strict=True)
                if a.metric == metric and a.scored
            ]
            same = sum(1 for a, b in pairs if (a.value, a.explanation) == (b.value, b.explanation))
            print(f"  {metric}: {same} of {len(pairs)} scored items identical to the clean run")


if __name__ == "__main__":
    main()
