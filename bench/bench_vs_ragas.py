"""ragmeter beside ragas 0.4.3 on the same WikiEval samples, the same GGUF and the same machine,
in one run: seconds, judge calls and billed tokens per sample.

    python bench/bench_vs_ragas.py --wikieval ../shared/data/wikieval/wikieval_dev.jsonl \\
        --limit 3 --ragas-python .ragas-venv/bin/python

(set up that virtualenv as ``bench/ragas_peer.py`` says). It serves the local judge's GGUF with
llama-cpp-python's OpenAI-compatible server (``ragmeter.judges.serve``, needs ``ragmeter[serve]``)
and measures, one after another, each with an empty call cache:

- ``ragmeter local``: the default in-process judge, what ``ragmeter run`` uses offline;
- ``ragmeter remote``: ``--judge openai:qwen`` against the server, every call a billed request;
- ``ragmeter paper``: the same with ``--option faithfulness.statements=generate --option
  faithfulness.verdicts=generate --option context_relevance.mode=select``: statements written,
  their verdicts and the sentence extraction each in one generated reply, as the RAGAS paper
  asks them, instead of one Yes/No request apiece;
- ``ragmeter statements``: in-process, with ``--option faithfulness.statements=generate``: the
  judge writes statements first, as the paper does, instead of verifying the answer's own
  sentences;
- ``ragas``: faithfulness, answer relevancy (3 questions, MiniLM) and context relevance from
  ``ragas.metrics.collections`` against the same server.

Prompt tokens are what the server reports per request, i.e. what a provider bills without prompt
caching; for ``ragmeter local`` they are the tokens actually read after prefix reuse.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragmeter import evaluate
from ragmeter.evaluate import DEFAULT_METRICS
from ragmeter.judges.registry import get_embedder, get_judge
from ragmeter.judges.serve import served
from ragmeter.meta.wikieval import load_wikieval
from ragmeter.metrics import metric_by_name
from ragmeter.sample import Sample

PEER = Path(__file__).with_name("ragas_peer.py")
PAPER_MODES = {
    "faithfulness": {"statements": "generate", "verdicts": "generate"},
    "context_relevance": {"mode": "select"},
}
STATEMENTS = {"faithfulness": {"statements": "generate"}}


@dataclass
class Measure:
    """One system's figures for one sample and metric."""

    seconds: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    value: float | None
    error: str | None = None


Table = dict[str, dict[str, Measure]]  # sample id -> metric -> measure


def ragmeter_measures(
    samples: list[Sample],
    judge: object,
    scratch: Path,
    name: str,
    options: dict[str, dict[str, str]] | None = None,
) -> Table:
    table: Table = defaultdict(dict)
    metrics = [metric_by_name(m, **(options or {}).get(m, {})) for m in DEFAULT_METRICS]
    result = evaluate(
        samples, metrics, judge=judge, embedder=get_embedder("minilm"),
        cache=scratch / f"{name}.sqlite", out_dir=scratch / name,
    )  # fmt: skip
    for score in result.scores:
        table[score.sample_id][score.metric] = Measure(
            seconds=score.seconds,
            calls=score.usage.model_calls,
            prompt_tokens=score.usage.prompt_tokens,
            completion_tokens=score.usage.completion_tokens,
            value=score.value,
            error=score.unscored_reason,
        )
    return table


def ragas_measures(python: str, samples_file: Path, url: str) -> Table:
    table: Table = defaultdict(dict)
    command = [python, str(PEER), str(samples_file), "--base-url", url]
    reply = subprocess.run(command, capture_output=True, text=True, check=False)
    if reply.returncode != 0:
        raise SystemExit(f"ragas peer failed ({reply.returncode}):\n{reply.stderr[-3000:]}")
    for line in reply.stdout.splitlines():
        record = json.loads(line)
        table[record["id"]][record["metric"]] = Measure(
            seconds=record["seconds"],
            calls=record["calls"],
            prompt_tokens=record["prompt_tokens"],
            completion_tokens=record["completion_tokens"],
            value=record["value"],
            error=record["error"],
        )
    return table


def timed(name: str, measure: Callable[..., Table], *arguments: object) -> Table:
    clock = time.perf_counter()
    table = measure(*arguments)
    print(f"{name}: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
    return table


def row(system: str, metric: str, seconds: float, measures: list[Measure], n: int) -> str:
    """One line of the table: the median seconds given, the rest averaged over ``n`` samples."""
    return (
        f"{system:<20}{metric:<19}{seconds:>13.1f}"
        f"{sum(m.calls for m in measures) / n:>7.1f}"
        f"{sum(m.prompt_tokens for m in measures) / n:>11.0f}"
        f"{sum(m.completion_tokens for m in measures) / n:>9.0f}"
        f"{sum(m.value is None for m in measures):>8}"
    )


def report(systems: dict[str, Table], samples: list[Sample]) -> None:
    n = len(samples)
    print(f"{'system':<20}{'metric':<19}{'s/sample med':>13}{'calls':>7}{'prompt tok':>11}"
          f"{'gen tok':>9}{'failed':>8}")  # fmt: skip
    medians = {}
    for system, table in systems.items():
        for metric in DEFAULT_METRICS:
            measures = [table[s.key][metric] for s in samples]
            seconds = statistics.median(m.seconds for m in measures)
            print(row(system, metric, seconds, measures, n))
        medians[system] = statistics.median(
            sum(m.seconds for m in table[s.key].values()) for s in samples
        )
        everything = [m for s in samples for m in table[s.key].values()]
        print(row(system, "all", medians[system], everything, n))
    print()
    for system, median in medians.items():
        if system != "ragas":
            print(f"ragas / {system}: {medians['ragas'] / median:.2f}x the seconds per sample")
    print()
    print(f"values ({' | '.join(systems)}):")
    for sample in samples:
        for metric in DEFAULT_METRICS:
            cells = []
            for table in systems.values():
                measure = table[sample.key][metric]
                cells.append(
                    f"{measure.value:.2f}" if measure.value is not None else f"- ({measure.error})"
                )
            print(f"  {sample.key[:19]:<20}{metric:<19}{' | '.join(cells)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wikieval", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=3, help="the first N samples")
    parser.add_argument("--ragas-python", required=True, help="python of ragas's virtualenv")
    args = parser.parse_args()

    pairs = load_wikieval(args.wikieval)
    samples = [p.preferred for p in pairs if p.dimension == "faithfulness"][: args.limit]
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        samples_file = scratch / "samples.jsonl"
        rows = [
            {"id": s.key, "question": s.question, "contexts": s.contexts, "answer": s.answer}
            for s in samples
        ]
        samples_file.write_text("".join(json.dumps(row) + "\n" for row in rows))
        measured: dict[str, Table] = {}
        # ragas first: a broken peer virtualenv fails the run before the long part.
        with served(log=scratch / "server.log") as url:
            measured["ragas"] = timed("ragas", ragas_measures, args.ragas_python, samples_file, url)
            remote = get_judge("openai:qwen", base_url=url, api_key_env=None)
            measured["ragmeter remote"] = timed(
                "ragmeter remote", ragmeter_measures, samples, remote, scratch, "remote"
            )
            measured["ragmeter paper"] = timed(
                "ragmeter paper", ragmeter_measures, samples, remote, scratch, "paper", PAPER_MODES
            )
        measured["ragmeter local"] = timed(
            "ragmeter local", ragmeter_measures, samples, "local", scratch, "local"
        )
        measured["ragmeter statements"] = timed(
            "ragmeter statements", ragmeter_measures, samples, "local", scratch, "statements",
            STATEMENTS,
        )  # fmt: skip
    order = ["ragmeter local", "ragmeter statements", "ragmeter remote", "ragmeter paper", "ragas"]
    systems = {name: measured[name] for name in order}
    print(f"{len(samples)} WikiEval samples; the same GGUF for all")
    report(systems, samples)


if __name__ == "__main__":
    main()
