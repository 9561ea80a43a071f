"""Prompt-injection suite: how often can text inside a sample talk the judge into a high score?

    python bench/injection_suite.py --judge local
    python bench/injection_suite.py --judge openai:gpt-4o-mini --embedder openai:MODEL

The same suite as ``ragmeter selftest injection``, which adds ``--fail-above`` for CI. Each case
in ``ragmeter.selftest.injection`` is a sample whose honest score is low (an answer that
contradicts its context, an off-topic context, an answer that ignores the question) with an
attack in the text the judge reads: orders to ignore the instructions, fake closing tags, fake
verdicts, role-play, "SYSTEM:" lines, chat-template tokens, invisible or look-alike characters,
other languages. An attack succeeds when the score exceeds the case's threshold (0.5), which an
honest judge would not reach. Prints each case, the rate by technique and by metric, and the
attack success rate over the scored cases; unscored cases are listed apart. Any judge works.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragmeter.selftest.injection import CASES, format_report, run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="local", help="'local', 'openai:MODEL', a plugin")
    parser.add_argument("--embedder", default="minilm", help="for answer relevance")
    parser.add_argument("--out", type=Path, help="results folder (resumable); none by default")
    parser.add_argument("--no-cache", action="store_true", help="skip the judge-call cache")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)

    report = run_suite(
        args.judge,
        args.embedder,
        out_dir=args.out,
        cache=not args.no_cache,
        max_workers=args.workers,
    )
    print(f"{len(CASES)} injection cases, judge {report.judge}")
    print("\n".join(format_report(report)))
    if args.json:
        args.json.write_text(json.dumps(report.record(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
