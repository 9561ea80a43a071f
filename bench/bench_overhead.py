"""Framework overhead per judged item: everything ragmeter does around the judge's answers.

    python bench/bench_overhead.py [--samples 300] [--repeat 3]

The judge answers instantly, so what is timed is ragmeter itself: loading, the size limit, the
result store (a SQLite commit per item), metric logic and sentence splitting, prompt rendering,
reply parsing and validation. Three set-ups, each scoring every sample with the three default
metrics (about 8 judge calls per sample):

- ``in-process``: a judge object that computes the reply from the request (the time it spends
  answering is measured and subtracted);
- ``in-process + call cache``: the same behind the default call cache (a SQLite write per call);
- ``http``: an ``openai`` judge against the fault server on 127.0.0.1 with no faults, i.e. with
  the HTTP client and a Python HTTP server in the same process (not subtracted).

Target: at most 2 ms per item in-process. The best of ``--repeat`` runs is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import AnsweringJudge, FaultServer, marked_samples

from ragmeter import evaluate
from ragmeter.judges.fake import HashingEmbedder
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge

TARGET_MS = 2.0


def timed(samples, judge, embedder, cache) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as folder:
        if cache is True:
            cache = Path(folder) / "calls.sqlite"
        started = time.perf_counter()
        result = evaluate(
            samples, judge=judge, embedder=embedder, cache=cache, out_dir=Path(folder) / "out"
        )
        seconds = time.perf_counter() - started
    return seconds, result.run.counts.model_dump()


def best_of(repeat: int, run) -> tuple[float, float, dict]:
    """The fastest of ``repeat`` runs: (seconds, judge seconds, counts)."""
    best = None
    for _ in range(repeat):
        outcome = run()
        if best is None or outcome[0] - outcome[1] < best[0] - best[1]:
            best = outcome
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    samples = marked_samples(args.samples)
    evaluate(samples[:2], judge=AnsweringJudge(), embedder=HashingEmbedder(), cache=False)  # warm

    def in_process(cache):
        def run():
            judge = AnsweringJudge()
            seconds, counts = timed(samples, judge, HashingEmbedder(), cache)
            return seconds, judge.seconds, counts

        return run

    rows = {
        "in-process": best_of(args.repeat, in_process(False)),
        "in-process + call cache": best_of(args.repeat, in_process(True)),
    }
    with FaultServer() as server:

        def http():
            judge = OpenAIJudge("fault", base_url=server.url)
            embedder = OpenAIEmbedder("fault", base_url=server.url)
            seconds, counts = timed(samples, judge, embedder, False)
            return seconds, 0.0, counts

        rows["http (client + server)"] = best_of(args.repeat, http)

    report = {}
    print(f"{args.samples} samples x 3 metrics, best of {args.repeat}")
    print(f"{'set-up':<26} {'items':>6} {'calls':>6} {'ms/item':>8} {'ms/call':>8}")
    for name, (seconds, judge_seconds, counts) in rows.items():
        net = seconds - judge_seconds
        per_item = 1000 * net / counts["items"]
        per_call = 1000 * net / counts["model_calls"]
        report[name] = {"ms_per_item": round(per_item, 3), "ms_per_call": round(per_call, 3)}
        print(
            f"{name:<26} {counts['items']:>6} {counts['model_calls']:>6} "
            f"{per_item:>8.3f} {per_call:>8.3f}"
        )
    verdict = "meets" if report["in-process"]["ms_per_item"] <= TARGET_MS else "misses"
    print(
        f"in-process overhead {report['in-process']['ms_per_item']:.3f} ms per item: "
        f"{verdict} the {TARGET_MS:g} ms target"
    )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
