"""Does spreading over Ray workers scale? Items per second with 1, 2 and 4 workers on a Ray head
node started on this machine, and what the driver spends per item.

    python bench/bench_ray.py [--items 2000] [--latency 0.05] [--actors 1,2,4] [--workers 4]

The judge answers every call after ``latency`` seconds (``tests/fault_server.AnsweringJudge``,
deterministic, pickled to the workers), so the workers wait rather than compute, as they do on a
serving engine: cores are not what limits them. Each worker judges ``--workers`` items at once.

Prints for each worker count: seconds, items per second, the speed-up over one worker, the
driver's CPU time per item (everything ragmeter does in the driver: keys, the store, sending
items, reading results; the head node's own processes are not counted) and its wall time per
item beyond the judging. The scores of every run are checked against an in-process run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import AnsweringJudge, marked_samples
from tests.ray_cluster import local_head

from ragmeter import evaluate
from ragmeter.cluster import RayExecutor
from ragmeter.judges.fake import HashingEmbedder

METRICS = ["faithfulness", "answer_relevance", "context_relevance"]


def values(result) -> list[tuple[str, str, float | None]]:
    return [(s.sample_id, s.metric, s.value) for s in result.scores]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--actors", default="1,2,4")
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    with local_head(cpus=8) as address:
        run(args, address)


def run(args: argparse.Namespace, address: str) -> None:
    """Time the runs on the Ray head node at ``address``."""
    samples = marked_samples(-(-args.items // len(METRICS)))
    items = len(samples) * len(METRICS)
    reference = evaluate(
        samples, METRICS, judge=AnsweringJudge(), embedder=HashingEmbedder(), cache=False
    )
    calls = reference.run.counts.model_calls
    print(
        f"{items} items ({len(samples)} samples x {len(METRICS)} metrics), {calls} judge calls "
        f"of {args.latency * 1000:.0f} ms each; {args.workers} items at once per worker"
    )
    print(
        f"{'workers':>7} {'seconds':>8} {'items/s':>8} {'speed-up':>8} "
        f"{'driver CPU ms/item':>18} {'identical':>9}"
    )
    base = None
    for actors in [int(a) for a in args.actors.split(",")]:
        with tempfile.TemporaryDirectory() as folder:
            executor = RayExecutor(address=address, actors=actors, workers=args.workers)
            wall, cpu = time.perf_counter(), time.process_time()
            result = evaluate(
                samples,
                METRICS,
                judge=AnsweringJudge(latency=args.latency),
                embedder=HashingEmbedder(),
                cache=False,
                out_dir=Path(folder) / "out",
                executor=executor,
            )
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            # Read from the run's store, so while its folder exists.
            same = "yes" if values(result) == values(reference) else "NO"
        rate = items / wall
        base = base or rate
        print(
            f"{actors:>7} {wall:>8.1f} {rate:>8.2f} {rate / base:>7.2f}x "
            f"{1000 * cpu / items:>18.2f} {same:>9}"
        )


if __name__ == "__main__":
    main()
