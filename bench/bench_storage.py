"""What the disk and other runs can do to a results folder, case by case, with the count of
scores lost and of wrong scores served.

    python bench/bench_storage.py [--samples 40]

Each case starts from the same data (``--samples`` x 3 metrics, judged by a scripted judge whose
every reply is fixed by its prompt), does one thing to the folder or the call cache, runs
``evaluate``, then removes the cause (frees the disk, moves a damaged file away, lets the other
run finish) and runs it again. It prints, per case: what the faulty run ended in, the scores
saved before the fault, the scores lost (saved before the fault and missing or changed
afterwards, apart from those the damage itself destroyed), the wrong scores served (scores
returned by either run that differ from an undisturbed run's), the items judged by the runs after
the fault, whether the rerun completed with the undisturbed run's scores, and the seconds the
case took. The full-disk cases mount a tmpfs
and need root; elsewhere they are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import marked_samples
from tests.storage_faults import DiskUnavailable, fill, judge, small_disk, stored

from ragmeter import evaluate
from ragmeter.result import Result

ROOT = Path(__file__).resolve().parent.parent


def key_of(payload: str) -> tuple[str, str]:
    data = json.loads(payload)
    return data["sample_id"], data["metric"]


def comparable(result: Result | None) -> dict[tuple[str, str], Any]:
    if result is None:
        return {}
    return {(s.sample_id, s.metric): (s.value, s.explanation) for s in result.scores}


class Case:
    """One fault: ``fault`` runs the faulty run and returns what it ended in; ``cure`` removes
    the cause; then the bench reruns and counts."""

    def __init__(self, samples: list, reference: dict, folder: Path) -> None:
        self.samples = samples
        self.reference = reference
        self.folder = folder
        self.out = folder / "out"
        self.cache: Path | bool = False
        self.served: dict = {}
        self.saved_before: dict[str, str] = {}
        self.destroyed = 0
        """Saved scores the damage itself destroyed (not counted as lost)."""
        self.judged = 0
        """Items the faulty run judged."""

    def run(self, **options: Any) -> Result:
        options.setdefault("judge", judge())
        return evaluate(self.samples, cache=self.cache, out_dir=self.out, **options)

    def finish(self, outcome: str) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rerun = self.run()
        after = stored(self.out)
        by_item = {key_of(p): p for p in after.values()}
        lost = sum(
            1
            for payload in self.saved_before.values()
            if by_item.get(key_of(payload)) is None
            or json.loads(by_item[key_of(payload)])["value"] != json.loads(payload)["value"]
        )
        final = comparable(rerun)
        wrong = sum(1 for k, v in self.served.items() if self.reference[k] != v)
        wrong += sum(1 for k, v in final.items() if self.reference[k] != v)
        return {
            "outcome": outcome,
            "saved before": len(self.saved_before),
            "lost": max(0, lost - self.destroyed),
            "wrong served": wrong,
            "judged after the fault": self.judged + rerun.run.counts.judged,
            "rerun complete": final == self.reference,
        }


def faulty(case: Case, action: Callable[[], Result]) -> str:
    """Run ``action``; what it ended in, in a few words, and the scores it returned kept."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = action()
        except OSError as exc:
            return f"{type(exc).__name__}: {str(exc)[:90]}..."
    case.served = comparable(result)
    case.judged = result.run.counts.judged
    said = sorted({type(w.message).__name__ for w in caught})
    return "completed" + (f" with {', '.join(said)}" if said else "")


def full_disk_store(case: Case) -> dict[str, Any]:
    return disk_filled_midway(case, lambda disk: setattr(case, "out", disk / "out"))


def full_disk_cache(case: Case) -> dict[str, Any]:
    return disk_filled_midway(case, lambda disk: setattr(case, "cache", disk / "calls.sqlite"))


def disk_filled_midway(case: Case, place_on: Callable[[Path], None]) -> dict[str, Any]:
    """Run the case with what ``place_on`` puts on a small disk, which fills up when the judge
    is asked about the middle sample; the space is freed before the case is finished."""
    with small_disk(case.folder / "disk") as disk:
        place_on(disk)
        filler: list[Path] = []
        middle = f"item-{len(case.samples) // 2:04d}"

        def on_request(request):  # type: ignore[no-untyped-def]
            if not filler and middle in request.messages[-1].content:
                filler.append(fill(disk))

        outcome = faulty(case, lambda: case.run(judge=judge(on_request=on_request)))
        filler[0].unlink()
        case.saved_before = stored(case.out)
        return case.finish(outcome)


def finished(case: Case) -> bytes:
    """A complete run in the case's folder; its database file's bytes, checkpointed."""
    case.run()
    case.saved_before = stored(case.out)
    return (case.out / "scores.sqlite").read_bytes()


def damaged_store(damage: Callable[[bytes], bytes]) -> Callable[[Case], dict[str, Any]]:
    def scenario(case: Case) -> dict[str, Any]:
        data = finished(case)
        bad = damage(data)
        (case.out / "scores.sqlite").write_bytes(bad)
        outcome = faulty(case, case.run)
        left = (case.out / "scores.sqlite").read_bytes() == bad
        (case.out / "scores.sqlite").rename(case.folder / "damaged.sqlite")
        case.destroyed = len(case.saved_before)  # in the damaged file, left as it was
        report = case.finish(outcome)
        report["outcome"] += "; file left as it was" if left else "; FILE CHANGED"
        return report

    return scenario


def damaged_rows(case: Case) -> dict[str, Any]:
    data = finished(case)
    changed = 0
    for payload in list(case.saved_before.values())[::7][:5]:
        value = json.loads(payload)["value"]
        old = f'"value":{json.dumps(value)}'.encode()
        if value is None or data.count(old) != 1 or len(old) < 12:
            continue
        digit = old[10:11]
        new = old[:10] + (b"1" if digit != b"1" else b"2") + old[11:]
        data = data.replace(old, new)
        changed += 1
    (case.out / "scores.sqlite").write_bytes(data)
    outcome = faulty(case, case.run)
    return case.finish(f"{outcome}; {changed} rows damaged")


def cut_log(case: Case) -> dict[str, Any]:
    case.out.mkdir(parents=True)
    script = (
        "import os, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from ragmeter import evaluate\n"
        "from tests.fault_server import marked_samples\n"
        "from tests.storage_faults import judge\n"
        f"samples = marked_samples({len(case.samples)})\n"
        "def kill(score):\n"
        f"    if score.sample_id == 'item-{len(case.samples) - 1:04d}':\n"
        "        os.kill(os.getpid(), 9)\n"
        "evaluate(samples, judge=judge(), cache=False, out_dir=sys.argv[1], on_score=kill)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(case.out), str(ROOT)], check=False)
    whole = case.folder / "whole"  # what the killed run had committed, before the cut
    whole.mkdir()
    for name in ("scores.sqlite", "scores.sqlite-wal"):
        shutil.copy(case.out / name, whole / name)
    case.saved_before = stored(whole)
    log = case.out / "scores.sqlite-wal"
    with log.open("r+b") as handle:
        handle.truncate(log.stat().st_size * 2 // 3)
    (case.out / "scores.sqlite-shm").unlink()
    kept = stored(case.out)
    case.destroyed = len(case.saved_before) - len(kept)
    return case.finish(f"killed; the log cut to 2/3, {case.destroyed} commits in the cut part")


def damaged_cache_file(case: Case) -> dict[str, Any]:
    case.cache = case.folder / "calls.sqlite"
    case.cache.write_bytes(b"not a cache\n" * 500)
    outcome = faulty(case, case.run)
    return case.finish(outcome)


def damaged_cache_rows(case: Case) -> dict[str, Any]:
    case.cache = case.folder / "calls.sqlite"
    case.run()
    shutil.rmtree(case.out)
    with closing(sqlite3.connect(case.cache)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        replies = [r for (r,) in db.execute("SELECT response FROM replies")]
    data = case.cache.read_bytes()
    changed = 0
    for text in replies:
        needle = text.encode()
        if changed < 5 and b'"text":"Yes"' in needle and data.count(needle) == 1:
            data = data.replace(needle, needle.replace(b'"text":"Yes"', b'"text":"Nes"'))
            changed += 1
    case.cache.write_bytes(data)
    outcome = faulty(case, case.run)
    return case.finish(f"{outcome}; {changed} entries damaged")


def two_runs(case: Case) -> dict[str, Any]:
    script = (
        "import sys, time\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from pathlib import Path\n"
        "from ragmeter import evaluate\n"
        "from tests.fault_server import marked_samples\n"
        "from tests.storage_faults import judge\n"
        "def slow(request):\n"
        "    time.sleep(0.005)\n"
        f"samples = marked_samples({len(case.samples)})\n"
        "evaluate(samples, judge=judge(on_request=slow), cache=False, out_dir=sys.argv[1])\n"
    )
    first = subprocess.Popen([sys.executable, "-c", script, str(case.out), str(ROOT)])
    while not (case.out / "scores.sqlite").exists():
        time.sleep(0.01)
    outcome = faulty(case, case.run)
    assert first.wait(timeout=600) == 0
    case.saved_before = stored(case.out)
    return case.finish(f"{outcome}; the first run completed")


def killed_holder(case: Case) -> dict[str, Any]:
    script = (
        "import sys, os, signal\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from ragmeter import evaluate\n"
        "from tests.fault_server import marked_samples\n"
        "from tests.storage_faults import judge\n"
        f"samples = marked_samples({len(case.samples)})\n"
        "def kill(request):\n"
        "    if 'item-0002' in request.messages[-1].content:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "evaluate(samples, judge=judge(on_request=kill), cache=False, out_dir=sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(case.out), str(ROOT)], check=False)
    case.saved_before = stored(case.out)
    outcome = faulty(case, case.run)
    return case.finish(f"killed holder; the next run {outcome}")


CASES: dict[str, Callable[[Case], Any]] = {
    "disk full under scores.sqlite": full_disk_store,
    "disk full under the call cache": full_disk_cache,
    "scores.sqlite not a database": damaged_store(lambda d: b"not a database\n" * 300),
    "scores.sqlite cut to half": damaged_store(lambda d: d[: len(d) // 2]),
    "scores.sqlite with a page zeroed": damaged_store(lambda d: d[:4096] + bytes(4096) + d[8192:]),
    "stored scores with a damaged byte": damaged_rows,
    "write-ahead log cut after a kill": cut_log,
    "call cache not a database": damaged_cache_file,
    "cache entries with a damaged byte": damaged_cache_rows,
    "two runs on one folder": two_runs,
    "a run killed while holding the folder": killed_holder,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    samples = marked_samples(args.samples)
    reference = comparable(evaluate(samples, judge=judge(), cache=False))
    print(f"{args.samples} samples x 3 metrics = {len(reference)} items, scripted judge")
    totals = {"lost": 0, "wrong served": 0}
    for name, scenario in CASES.items():
        with tempfile.TemporaryDirectory() as folder:
            case = Case(samples, reference, Path(folder))
            started = time.perf_counter()
            try:
                report = scenario(case)
            except DiskUnavailable as exc:
                print(f"{name}: skipped ({exc})")
                continue
            report["seconds"] = round(time.perf_counter() - started, 1)
        for key in totals:
            totals[key] += report[key]
        print(f"{name}:")
        print(f"  {report.pop('outcome')}")
        print("  " + ", ".join(f"{k} {v}" for k, v in report.items()))
    print(f"total: lost {totals['lost']}, wrong served {totals['wrong served']}")


if __name__ == "__main__":
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp())
    main()
