"""Does ``--workers N`` keep a remote judge busy? Items per second against a server that takes a
fixed time per request (no faults), for 1 to 16 workers.

    python bench/bench_concurrency.py [--latency 0.2] [--samples 32] [--workers 1,2,4,8,16]

The test server (tests/fault_server.py) answers every request after ``latency`` seconds, like a
model server with spare capacity; the judge and the embedder both go through it, with the
provider's default options. A worker judges one item at a time, its calls one after another, so
N workers should keep N requests in flight: items per second should grow in proportion to N.
Prints items per second, the speed-up over one worker, its share of the linear speed-up, and the
most judge requests the server saw at once (embedding requests, which ``--workers`` does not
limit, are not counted).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import Faults, FaultServer, marked_samples

from ragmeter import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--workers", default="1,2,4,8,16")
    args = parser.parse_args()
    samples = marked_samples(args.samples)
    metrics = ["faithfulness", "answer_relevance", "context_relevance"]
    print(
        f"{args.samples} samples x {len(metrics)} metrics, {args.latency * 1000:.0f} ms per "
        "request, default client options"
    )
    base = None
    for workers in [int(w) for w in args.workers.split(",")]:
        with FaultServer(Faults(latency=args.latency)) as server:
            options = {"base_url": server.url}
            started = time.perf_counter()
            result = evaluate(
                samples,
                metrics,
                judge="openai:bench-judge",
                embedder="openai:bench-embedder",
                judge_options=options,
                embedder_options=options,
                cache=False,
                max_workers=workers,
            )
            seconds = time.perf_counter() - started
            requests = len(server.seen)
            in_flight = server.max_in_flight
        rate = len(result.scores) / seconds
        base = base or rate
        speedup = rate / base
        print(
            f"workers {workers:2d}: {rate:6.2f} items/s ({seconds:5.1f} s, {requests} requests, "
            f"at most {in_flight} judge requests at once)  speed-up {speedup:5.2f}x = "
            f"{speedup / workers:.2f} of linear; unscored {result.run.counts.unscored}"
        )


if __name__ == "__main__":
    main()
