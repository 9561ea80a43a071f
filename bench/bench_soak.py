"""A long run: memory, open files and throughput, thousand by thousand.

    python bench/bench_soak.py [--samples 5000] [--workers 1] [--judge fake] [--no-cache]

Scores ``--samples`` samples with the three default metrics into a fresh results folder, with
the judge-call cache in a fresh folder of its own, and after every ``--every`` samples (1,000 by
default) prints the samples done, the items per second over that stretch, the process's
resident memory now and at its peak so far, and its open file descriptors. Then it writes the
exports (``scores.jsonl``, ``samples.csv``, ``summary.json``) as ``ragmeter evaluate`` does, and
prints the memory after them, and runs the same command again on the same folder: every item
must come from the store, none judged.

``--judge fake`` (the default) is a scripted judge whose every reply is fixed by its prompt and
which keeps no history, so that what grows is ragmeter's own; any other spec (``local``,
``openai:MODEL``) judges for real, e.g. ``--samples 200 --every 50 --judge local``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import marked_samples
from tests.storage_faults import reply

from ragmeter import evaluate
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.score import Score


class Forgetful(FakeJudge):
    """The scripted judge without its history: a soak of 5,000 samples would keep 40,000
    requests in it."""

    def complete(self, request: ChatRequest) -> ChatResponse:
        try:
            return super().complete(request)
        finally:
            self.history.clear()


def memory() -> tuple[float, float]:
    """Resident memory now and at its peak, in MiB (Linux's /proc)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--judge", default="fake")
    parser.add_argument("--no-cache", dest="cache", action="store_false")
    args = parser.parse_args()
    samples = marked_samples(args.samples)
    metrics = 3
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    cache: Path | bool = folder / "calls.sqlite" if args.cache else False
    judge = Forgetful(responder=reply, model="soak") if args.judge == "fake" else args.judge
    rows: list[tuple[int, float, float, float, int]] = []
    done = 0
    mark = time.perf_counter()
    start = mark

    def on_score(_score: Score) -> None:
        nonlocal done, mark
        done += 1
        if done % (args.every * metrics) == 0:
            now = time.perf_counter()
            rss, peak = memory()
            rows.append(
                (done // metrics, args.every * metrics / (now - mark), rss, peak, open_files())
            )
            mark = now
            print(
                f"{rows[-1][0]:>6} samples  {rows[-1][1]:8.1f} items/s  RSS {rss:7.1f} MiB  "
                f"peak {peak:7.1f} MiB  open files {rows[-1][4]}",
                flush=True,
            )

    rss, _ = memory()
    print(
        f"{args.samples} samples x {metrics} metrics, judge {args.judge}, {args.workers} "
        f"worker(s), cache {'on' if args.cache else 'off'}; before: RSS {rss:.1f} MiB, open files "
        f"{open_files()}",
        flush=True,
    )
    result = evaluate(
        samples,
        judge=judge,
        cache=cache,
        out_dir=folder / "out",
        max_workers=args.workers,
        on_score=on_score,
    )
    seconds = time.perf_counter() - start
    counts = result.run.counts
    print(
        f"done in {seconds:.1f} s: {counts.scored} scored, {counts.unscored} unscored, "
        f"{counts.model_calls} model calls, {counts.cached_calls} cached"
    )
    if len(rows) >= 2:
        first, last = rows[0][3], rows[-1][3]
        print(
            f"peak RSS from the first {args.every} samples to the last: {first:.1f} -> "
            f"{last:.1f} MiB ({100 * (last - first) / first:+.1f}%); throughput "
            f"{min(r[1] for r in rows):.1f}-{max(r[1] for r in rows):.1f} items/s; open files "
            f"{min(r[4] for r in rows)}-{max(r[4] for r in rows)}"
        )
    # Imported only now: the exports load pandas (about 70 MiB), which judging never needs.
    from ragmeter.report import write_outputs

    started = time.perf_counter()
    write_outputs(result, folder / "out")
    rss, peak = memory()
    print(
        f"exports written in {time.perf_counter() - started:.1f} s: RSS {rss:.1f} MiB, peak "
        f"{peak:.1f} MiB"
    )
    del result
    started = time.perf_counter()
    again = evaluate(samples, judge=judge, cache=cache, out_dir=folder / "out")
    counts = again.run.counts
    print(
        f"rerun on the same folder: {counts.resumed} resumed, {counts.judged} judged, "
        f"{time.perf_counter() - started:.1f} s"
    )
    print(f"results in {folder}")


if __name__ == "__main__":
    main()
