"""The two-document example of docs/testsets.md: a lighthouse page and a ferry timetable
(``tests/data/harbour``), ``ragmeter generate --n 3`` with the offline judge. Prints accepted
of asked, seconds, judge calls, the accepted items and what was rejected or substituted.

    python bench/bench_testset_example.py                 # the user's call cache
    python bench/bench_testset_example.py --no-cache      # every call made again

Calls go through the user's call cache by default, the one the marked test
``tests/test_testset_local.py`` uses: run this first and the test asks nothing new. Its figures
are of a cold run only when the cache holds none of these calls (see ``cached calls``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ragmeter.cli.generate import substitution_lines
from ragmeter.testset import generate_testset

HARBOUR = Path(__file__).parent.parent / "tests" / "data" / "harbour"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--out", type=Path, help="folder for the test set (default: a temp one)")
    parser.add_argument("--no-cache", action="store_true", help="do not use the call cache")
    parser.add_argument("--judge", default="local", help="the judge that writes and checks")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="harbour-"))
    started = time.perf_counter()
    generated = generate_testset(
        HARBOUR, args.n, out=folder / "testset.jsonl", judge=args.judge, cache=not args.no_cache
    )
    wall = time.perf_counter() - started
    summary = generated.summary
    usage = summary.usage
    print(
        f"accepted {summary.accepted} / {summary.requested} asked, from {summary.candidates} "
        f"candidates ({summary.resumed} resumed); {wall:.0f} s wall ({summary.seconds:.0f} s "
        f"in the run, the judge's loading included); {usage.model_calls} model calls, "
        f"{usage.cached_calls} cached calls; {usage.prompt_tokens:,} prompt / "
        f"{usage.completion_tokens:,} completion tokens; status {summary.status}"
    )
    for sample in generated.samples:
        print(f"\naccepted ({sample['metadata']['kind']}): {sample['question']}")
        print(f"  reference: {sample['reference']}")
        print(f"  from: {', '.join(sample['metadata']['documents']) or '-'}")
    for row in generated.rejected:
        print(f"\nrejected ({row['kind']}, {row['reason']}): {row['question']}")
        print(f"  reference: {row['reference']}\n  {row['detail']}")
    for line in substitution_lines(summary):
        print(f"\nsubstituted {line}")
    print(f"\nfiles in {folder}")


if __name__ == "__main__":
    main()
