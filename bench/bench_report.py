"""How fast the HTML report and the comparison are, on synthetic runs of realistic size.

    .venv/bin/python bench/bench_report.py [--samples 1000] [--compare 10000] [--rounds 2000]

1. A 1,000-sample x 3-metric evaluate run, each score with the explanation and the judge
   exchanges the real metrics keep (rendered prompts with the context, raw replies): the
   report's write time and size, then the time headless Chromium takes from opening the file to
   the charts drawn (Chromium at /usr/bin/chromium or $RAGMETER_CHROMIUM).
2. ``compare`` of two 10,000-sample x 3-metric runs with 2,000 bootstrap rounds.

It prints the figures; it asserts nothing (timings depend on the machine).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from ragmeter.judges.base import Message
from ragmeter.manifest import MetricRecord, RunRecord
from ragmeter.report import write_outputs
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Exchange, Score, Usage
from ragmeter.viewer import compare_runs, open_run, write_report
from ragmeter.viewer.folders import OpenedRun

METRICS = ["faithfulness", "answer_relevance", "context_relevance"]
WORDS = [
    "tower",
    "river",
    "insulin",
    "pancreas",
    "glucose",
    "engineer",
    "company",
    "designed",
    "completed",
    "century",
    "museum",
    "river",
    "basin",
    "rainfall",
    "species",
    "forest",
    "protein",
    "enzyme",
    "hormone",
    "cell",
    "liver",
    "muscle",
    "blood",
    "sugar",
    "meal",
    "digestion",
    "organ",
    "stomach",
    "cancer",
    "language",
    "program",
    "release",
    "version",
    "compiler",
    "library",
    "founded",
    "city",
    "population",
    "border",
    "mountain",
    "glacier",
    "climate",
    "ocean",
    "current",
    "orbit",
    "planet",
    "moon",
]
SYSTEM = {
    "faithfulness.statements": "Given a question and an answer, create one or more statements "
    "from each sentence of the answer. Each statement must be self-contained: replace pronouns "
    "with the names they stand for, and keep every fact of the sentence. " * 3,
    "faithfulness.supported": "You judge whether a statement is supported by a context. Answer "
    "Yes only if the context states the statement or it follows directly from it. " * 3,
    "answer_relevance.questions": "Generate questions that the given answer answers, and say "
    "whether the answer is noncommittal (evasive, vague or ambiguous). " * 3,
    "answer_relevance.complete": "You judge whether an answer addresses its question: every part "
    "of the question must be answered. " * 3,
    "context_relevance.sentence": "You judge whether one sentence taken from a retrieved context "
    "states information needed to answer the question. " * 3,
}


def sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def exchange(prompt: str, user: str, reply: str, p: float | None = None) -> Exchange:
    messages = [Message(role="system", content=SYSTEM[prompt]), Message(role="user", content=user)]
    return Exchange(prompt=prompt, messages=messages, reply=reply, probability=p)


def synthetic_scores(sample: Sample, rng: random.Random) -> list[Score]:
    context = sample.contexts[0]
    statements = [sentence(rng, 10) for _ in range(4)]
    p_supported = [round(rng.random(), 4) for _ in statements]
    faith = [
        exchange(
            "faithfulness.statements",
            f"question: {sample.question}\nanswer: {sample.answer}",
            '{"statements": ' + repr(statements) + "}",
        )
    ]
    faith += [
        exchange("faithfulness.supported", f"context: {context}\nstatement: {s}", "Yes", p)
        for s, p in zip(statements, p_supported, strict=True)
    ]  # fmt: skip
    questions = [{"question": sentence(rng, 8), "similarity": round(rng.random(), 4)}
                 for _ in range(3)]  # fmt: skip
    p_complete = round(rng.random(), 4)
    sentences = [s.strip() + "." for s in context.split(".") if s.strip()]
    p_needed = [round(rng.random(), 4) for _ in sentences]
    usage = Usage(model_calls=5, prompt_tokens=1800, completion_tokens=60)
    unscored = rng.random() < 0.02  # a few unscored items, as real runs have
    return [
        Score(sample_id=sample.key, metric="faithfulness",
              value=None if unscored else sum(p_supported) / 4,
              unscored_reason="faithfulness.supported: judge call failed: timeout" if unscored
              else None,
              explanation={"statements": [{"statement": s, "verdict": "yes" if p >= .5 else "no",
                                           "p_supported": p}
                                          for s, p in zip(statements, p_supported, strict=True)]},
              exchanges=faith, usage=usage),
        Score(sample_id=sample.key, metric="answer_relevance", value=p_complete,
              explanation={"generated_questions": questions, "noncommittal": False,
                           "p_complete": p_complete},
              exchanges=[exchange("answer_relevance.questions", f"answer: {sample.answer}",
                                  repr(questions)),
                         exchange("answer_relevance.complete", f"question: {sample.question}\n"
                                  f"answer: {sample.answer}", "Yes", p_complete)], usage=usage),
        Score(sample_id=sample.key, metric="context_relevance",
              value=sum(p >= .5 for p in p_needed) / len(p_needed),
              explanation={"extracted_sentences": [s for s, p in zip(sentences, p_needed,
                                                                    strict=True) if p >= .5],
                           "context_sentences": len(sentences), "p_needed": p_needed},
              exchanges=[exchange("context_relevance.sentence", f"question: {sample.question}\n"
                                  f"sentence: {s}", "Yes", p)
                         for s, p in zip(sentences, p_needed, strict=True)], usage=usage),
    ]  # fmt: skip


def synthetic_run(n: int, seed: int, *, exchanges: bool = True) -> Result:
    rng = random.Random(seed)
    samples = [
        Sample(
            id=f"s{i:05d}",
            question=sentence(rng, 9)[:-1] + "?",
            contexts=[" ".join(sentence(rng) for _ in range(6))],
            answer=" ".join(sentence(rng) for _ in range(2)),
        )
        for i in range(n)
    ]
    scores = [s for sample in samples for s in synthetic_scores(sample, rng)]
    if not exchanges:
        for score in scores:
            score.exchanges = []
    record = RunRecord(
        judge="fake:bench",
        status="complete",
        ended="2026-01-01T00:00:00+00:00",
        metrics={m: MetricRecord(config={}, version="v1", prompts={}) for m in METRICS},
    )
    return Result(samples=samples, metrics=METRICS, scores=scores, run=record)


def render_seconds(report: Path) -> float | None:
    chromium = os.environ.get("RAGMETER_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        print("no Chromium: render time not measured (apt-get install chromium)")
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto("about:blank")
        started = time.perf_counter()
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=60_000)
        seconds = time.perf_counter() - started
        marks = page.locator("svg .mark-rect path").count()
        rows = page.locator("[data-table=samples] tbody tr.row").count()
        browser.close()
    print(f"  drawn: {marks} histogram bars, {rows} table rows")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000, help="samples of the report's run")
    parser.add_argument("--compare", type=int, default=10_000, help="samples of each compared run")
    parser.add_argument("--rounds", type=int, default=2000, help="bootstrap rounds of compare")
    parser.add_argument("--no-render", action="store_true", help="do not open it in Chromium")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ragmeter-bench-"))
    try:
        write_outputs(synthetic_run(args.samples, seed=1), folder / "run")
        write_report([open_run(folder / "run")], folder / "warm.html")  # bundles Vega once
        started = time.perf_counter()
        report = write_report([open_run(folder / "run")], folder / "report.html")
        seconds = time.perf_counter() - started
        size = report.stat().st_size / 1e6
        print(f"{args.samples:,} samples x 3 metrics, with explanations and exchanges:")
        print(f"  report written in {seconds:.2f} s (open the folder + render), {size:.2f} MB")
        shown = None if args.no_render else render_seconds(report)
        if shown is not None:
            print(f"  opened and drawn by headless Chromium in {shown:.2f} s")

        a = synthetic_run(args.compare, seed=2, exchanges=False)
        b = synthetic_run(args.compare, seed=3)
        run_a = OpenedRun(folder / "a", "evaluate", result=a)
        run_b = OpenedRun(folder / "b", "evaluate", result=b)
        started = time.perf_counter()
        comparison = compare_runs(run_a, run_b, rounds=args.rounds)
        seconds = time.perf_counter() - started
        print(f"compare, {args.compare:,} samples x 3 metrics, {args.rounds:,} bootstrap rounds:")
        print(f"  {seconds:.2f} s")
        for m in comparison.metrics:
            print(f"  {m.metric}: {m.difference:+.4f} [{m.ci_low:+.4f}, {m.ci_high:+.4f}], "
                  f"p {m.p_value:.4f}, pairs {m.pairs}")  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
