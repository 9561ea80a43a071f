"""ragmeter's test-set generation beside ragas 0.4.3's ``TestsetGenerator`` on the same documents,
the same GGUF and the same machine, in one run: samples accepted, failures with the exception
measured, and seconds per accepted sample.

    python bench/bench_testset_vs_ragas.py --mtrag ../shared/data/mtrag/mtrag_dev.jsonl \\
        --n 3 --ragas-python .ragas-venv/bin/python

(set up that virtualenv as ``bench/ragas_peer.py`` says). ``--mtrag`` writes the 30 MTRAG dev
passages of docs/testsets.md to a temporary folder, one ``.txt`` each (``--documents K``: the
first K of them); ``--docs FOLDER`` takes any folder of ``.txt`` files instead.
Measured one after another:

- ``ragas``: ``bench/ragas_testset_peer.py`` in ragas's virtualenv, against the local judge's
  GGUF served by llama-cpp-python's OpenAI-compatible server (``ragmeter.judges.serve``, needs
  ``ragmeter[serve]``); its configurations and settings are in that script's docstring;
- ``ragmeter``: ``generate_testset`` (what ``ragmeter generate DOCS --n N`` runs) with the
  default in-process judge, as it runs offline, and an empty call cache.

A run that raises is a measured outcome (its exception and where it stopped), not a crash of
the benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.judges.serve import served
from ragmeter.meta.testset import people_questions
from ragmeter.testset import generate_testset

PEER = Path(__file__).with_name("ragas_testset_peer.py")
MTRAG_DOCUMENTS = 30


@dataclass
class Outcome:
    """One system's run: what it kept, what it cost and how it ended."""

    system: str
    requested: int
    accepted: int
    seconds: float
    calls: int
    error: str | None = None
    where: str | None = None
    notes: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)

    @property
    def per_sample(self) -> str:
        return f"{self.seconds / self.accepted:.0f}" if self.accepted else "-"


def write_mtrag_documents(mtrag: Path, folder: Path, count: int = MTRAG_DOCUMENTS) -> list[str]:
    """Write ``count`` MTRAG passages to ``folder`` as ``<document_id>.txt``: the sorted ids,
    shuffled with ``random.Random(0)``, first ``count`` (the selection of docs/testsets.md).

    Returns:
        The ids written, in shuffled order.
    """
    corpus, _, _ = people_questions(mtrag)  # its passages, named ``<document_id>.txt``
    passages = {document.name.removesuffix(".txt"): document.text for document in corpus}
    ids = sorted(passages)
    random.Random(0).shuffle(ids)
    folder.mkdir(parents=True, exist_ok=True)
    for document_id in ids[:count]:
        (folder / f"{document_id}.txt").write_text(passages[document_id])
    return ids[:count]


def ragas_outcomes(
    python: str, docs: Path, n: int, url: str, timeout: float, configs: list[str]
) -> list[Outcome]:
    """The peer's graph line and one outcome per configuration; the graph's seconds and calls
    are added to each, since every configuration needs the graph."""
    command = [python, str(PEER), str(docs), "--n", str(n), "--base-url", url]
    command += [f"--config={config}" for config in configs]
    try:
        reply = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        reply = subprocess.CompletedProcess(command, -1, stdout, f"timed out after {timeout:g}s")
    print(reply.stderr[-4000:], file=sys.stderr, flush=True)  # ragas's own log of the run
    records = [json.loads(line) for line in reply.stdout.splitlines() if line.startswith("{")]
    outcomes = [_peer_outcome(record) for record in records]
    if reply.returncode != 0:
        outcomes.append(
            Outcome("ragas peer", n, 0, 0.0, 0, error=reply.stderr.strip()[-500:] or None,
                    where=f"exit status {reply.returncode}")
        )  # fmt: skip
    if outcomes and outcomes[0].system.startswith("ragas knowledge graph"):
        graph = outcomes[0]
        for outcome in outcomes[1:]:
            outcome.seconds += graph.seconds
            outcome.calls += graph.calls
    return outcomes


def _peer_outcome(record: dict[str, Any]) -> Outcome:
    failed = record["failed_jobs"]
    notes = [f"{len(failed)} failed jobs logged, first: {failed[0]}"] if failed else []
    if "nodes" in record:
        notes.append(f"{record['nodes']} nodes, {record['relationships']} relationships")
    notes.append(f"{record['prompt_tokens']} prompt / {record['completion_tokens']} gen tokens")
    return Outcome(
        system=f"ragas {record['config']}", requested=record["requested"],
        accepted=record["accepted"], seconds=record["seconds"], calls=record["calls"],
        error=record["error"], where=record["where"], notes=notes,
        questions=record["questions"],
    )  # fmt: skip


def ragmeter_outcome(docs: Path, n: int, scratch: Path, judge: str = "local") -> Outcome:
    """``generate_testset`` with the in-process judge and an empty call cache."""
    clock = time.perf_counter()
    try:
        generated = generate_testset(
            docs, n, out=scratch / "ragmeter" / "testset.jsonl", judge=judge,
            cache=scratch / "ragmeter-cache.sqlite",
        )  # fmt: skip
    except Exception as exc:  # the failure is the measurement, not a crash
        seconds = time.perf_counter() - clock
        return Outcome(f"ragmeter {judge}", n, 0, seconds, 0, error=f"{type(exc).__name__}: {exc}")
    summary = generated.summary
    rejected = ", ".join(f"{reason} {count}" for reason, count in summary.rejected.items())
    return Outcome(
        system=f"ragmeter {judge}", requested=n, accepted=summary.accepted,
        seconds=time.perf_counter() - clock, calls=summary.usage.model_calls,
        notes=[
            f"status {summary.status}, {summary.candidates} candidates",
            f"rejected: {rejected or 'none'}",
            f"{summary.usage.prompt_tokens} prompt / {summary.usage.completion_tokens} gen tokens",
        ],
        questions=[sample["question"] for sample in generated.samples],
    )  # fmt: skip


def report(outcomes: list[Outcome], documents: int) -> None:
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"{documents} documents; the same GGUF for all; {machine}")
    print(f"{'system':<34}{'accepted':>9}{'seconds':>9}{'s/sample':>10}{'calls':>7}  ended")
    for o in outcomes:
        ended = "ok" if o.error is None else f"{o.error} (in {o.where})"
        print(f"{o.system:<34}{o.accepted:>4} / {o.requested:<2}{o.seconds:>9.0f}"
              f"{o.per_sample:>10}{o.calls:>7}  {ended}")  # fmt: skip
        for note in o.notes:
            print(f"{'':<36}{note}")
    for o in outcomes:
        for question in o.questions:
            print(f"  {o.system}: {question}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--mtrag", type=Path, help="mtrag_dev.jsonl: its 30 passages")
    source.add_argument("--docs", type=Path, help="a folder of .txt documents")
    parser.add_argument(
        "--documents", type=int, default=MTRAG_DOCUMENTS, help="with --mtrag: the first K of the 30"
    )
    parser.add_argument("--n", type=int, default=3, help="samples asked of each system")
    parser.add_argument("--ragas-python", help="python of ragas's virtualenv")
    parser.add_argument("--ragas-timeout", type=float, default=1800.0, help="seconds")
    parser.add_argument(
        "--ragas-config", action="append", default=[],
        help="the peer's configurations, in order (repeat; all by default); the first builds "
        "the knowledge graph",
    )  # fmt: skip
    parser.add_argument("--no-ragmeter", action="store_true", help="measure ragas only")
    parser.add_argument("--no-ragas", action="store_true", help="measure ragmeter only")
    parser.add_argument("--judge", default="local", help="ragmeter's judge")
    args = parser.parse_args()
    if not args.no_ragas and args.ragas_python is None:
        parser.error("--ragas-python is required unless --no-ragas is given")

    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        docs = args.docs
        if args.mtrag is not None:
            docs = scratch / "mtrag30"
            write_mtrag_documents(args.mtrag, docs, args.documents)
        documents = len(list(docs.glob("*.txt")))
        outcomes = []
        if not args.no_ragas:
            # ragas first: a broken peer virtualenv shows before the long part.
            clock = time.perf_counter()
            with served(log=scratch / "server.log") as url:
                outcomes = ragas_outcomes(
                    args.ragas_python, docs, args.n, url, args.ragas_timeout, args.ragas_config
                )
            print(f"ragas: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
        if not args.no_ragmeter:
            outcomes.append(ragmeter_outcome(docs, args.n, scratch, args.judge))
    report(outcomes, documents)


if __name__ == "__main__":
    main()
