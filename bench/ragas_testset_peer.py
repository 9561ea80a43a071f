"""ragas 0.4.3's ``TestsetGenerator`` on a folder of ``.txt`` documents, for
``bench_testset_vs_ragas.py``. It runs in ragas's own virtualenv, never ragmeter's (set it up as
``ragas_peer.py`` says):

    .ragas-venv/bin/python bench/ragas_testset_peer.py DOCS --n 3 \\
        --base-url http://127.0.0.1:PORT/v1

The judge is any OpenAI-compatible server (llama-cpp-python's, serving the same GGUF as
ragmeter's local judge); the embedder is ragmeter's int8 MiniLM, as in ``ragas_peer.py``.

Offline: ragas counts tokens with tiktoken's ``cl100k_base`` (document lengths, which choose the
default transforms) and ``o200k_base`` (splitting long inputs), which tiktoken downloads at first
use. llama-index-core ships both files, and tiktoken checks their SHA-256 before use, so
``TIKTOKEN_CACHE_DIR`` points at that copy: the counts are OpenAI's, nothing is stubbed.

What ragas does, step by step, is what ``generate_with_langchain_docs`` does: the default
transforms (``default_transforms``) build a knowledge graph from the documents, then
``generate`` writes personas, scenarios and samples. The graph is built once, with the first
configuration's LLM wrapper, and every configuration generates from it, so the long step is
paid once; its seconds and calls are reported on their own line. Configurations
(``--config``, repeat; all by default):

- ``llm_factory``: the wrapper ragas 0.4.3 recommends (``llm_factory``, instructor in JSON
  mode) and ``ragas_peer.py`` uses, the default query distribution, personas written from the
  graph (``num_personas=3``) and ``raise_exceptions=True`` (the default: the first failed job
  ends the run);
- ``simple``: ``llm_factory``, one persona given (no persona step), single-hop specific
  queries only, ``raise_exceptions=False`` and ``return_executor=True``: the samples are read
  from the executor, a failed one (NaN) dropped and the rest kept;
- ``langchain``: the same defaults with the testset guide's wrapper,
  ``LangchainLLMWrapper(ChatOpenAI(...))`` (deprecated in 0.4.3).

Settings for a local server that answers one request at a time: ``RunConfig(max_workers=1,
timeout=600)`` (ragas's defaults, 16 workers and 180 s, queue requests on the one slot until
they time out) and ``max_tokens=1024`` per reply (unbounded, a small model that loops runs to
the context's end). Python's and numpy's random generators are seeded with ``--seed``.

Prints one JSON line for the graph and one per configuration: ``config``, ``accepted``,
``requested``, ``seconds``, ``calls``, ``prompt_tokens``, ``completion_tokens``, ``error``
(the exception that ended it, or null), ``where`` (the innermost ragas function of its
traceback), ``failed_jobs`` (jobs ragas logged as failed, with their exceptions) and
``questions``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# ragas sends usage analytics unless told not to; a benchmark makes no calls it was not asked to.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"
import httpx
import numpy as np
from langchain_core.documents import Document
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI
from ragas.llms import LangchainLLMWrapper
from ragas.llms.base import llm_factory
from ragas.run_config import RunConfig
from ragas.testset import TestsetGenerator
from ragas.testset.graph import KnowledgeGraph, Node, NodeType
from ragas.testset.persona import Persona
from ragas.testset.synthesizers.single_hop.specific import SingleHopSpecificQuerySynthesizer
from ragas.testset.transforms import apply_transforms, default_transforms
from ragas_peer import MiniLM, Usage

CONFIGS = ("llm_factory", "simple", "langchain")
MAX_TOKENS = 1024
GIVEN_PERSONA = Persona(
    name="Reader",
    role_description="Someone who looks up facts and explanations in these documents.",
)


class FailedJobs(logging.Handler):
    """The jobs ragas logs as failed (``Exception raised in Job[...]``), with their exceptions."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:300])


def use_bundled_tiktoken_files() -> None:
    """Point tiktoken at llama-index-core's copy of its encodings (read at first use, not at
    import, so setting it before the run is enough)."""
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llama-index-core is missing: install bench/ragas_peer.requirements.txt")
    folder = Path(spec.submodule_search_locations[0]) / "_static" / "tiktoken_cache"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def where(exc: BaseException) -> str:
    """The innermost ragas function on the traceback: the step the run stopped in."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/ragas/" in f.filename]
    if not frames:
        return "outside ragas"
    last = frames[-1]
    return f"{last.filename.split('/ragas/', 1)[1]}:{last.name}"


def wrapper(kind: str, url: str, model: str, http: httpx.AsyncClient) -> Any:
    """The judge as ragas takes it: the guide's LangChain wrapper or ``llm_factory``."""
    run_config = RunConfig(max_workers=1, timeout=600)
    if kind == "langchain":
        chat = ChatOpenAI(
            model=model, base_url=url, api_key="none", max_tokens=MAX_TOKENS,
            http_async_client=http, max_retries=0,
        )  # fmt: skip
        return LangchainLLMWrapper(chat, run_config=run_config)
    client = AsyncOpenAI(base_url=url, api_key="none", http_client=http, max_retries=0)
    return llm_factory(model, client=client, max_tokens=MAX_TOKENS)


def measured(
    name: str, step: Callable[[], list[str]], usage: Usage, failed: FailedJobs, n: int
) -> dict[str, Any]:
    """Run one step and report what it made, what it cost and how it ended."""
    before, failed.messages = usage.snapshot(), []
    clock = time.perf_counter()
    questions: list[str] = []
    error = stopped = None
    try:
        questions = step()
    except Exception as exc:  # the failure is the measurement, not a crash
        error, stopped = f"{type(exc).__name__}: {exc}"[:500], where(exc)
    seconds = time.perf_counter() - clock
    calls, prompt, completion = (a - b for a, b in zip(usage.snapshot(), before, strict=True))
    return {
        "config": name, "accepted": len(questions), "requested": n,
        "seconds": round(seconds, 1), "calls": calls, "prompt_tokens": prompt,
        "completion_tokens": completion, "error": error, "where": stopped,
        "failed_jobs": list(failed.messages), "questions": questions,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("docs", type=Path, help="a folder of .txt documents")
    parser.add_argument("--n", type=int, default=3, help="testset_size")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", action="append", choices=CONFIGS)
    args = parser.parse_args()
    configs = args.config or list(CONFIGS)
    use_bundled_tiktoken_files()

    random.seed(args.seed)
    np.random.seed(args.seed)
    failed = FailedJobs()
    logging.getLogger("ragas").addHandler(failed)
    usage = Usage()
    # ragas runs each step in a new event loop (asyncio.run): a connection kept alive from the
    # last loop fails in the next one, so none is kept.
    http = httpx.AsyncClient(
        timeout=600, limits=httpx.Limits(max_keepalive_connections=0),
        event_hooks={"response": [usage.count]},
    )  # fmt: skip
    embeddings = MiniLM()
    documents = [
        Document(page_content=path.read_text(), metadata={"source": path.name})
        for path in sorted(args.docs.glob("*.txt"))
    ]
    graph = KnowledgeGraph(
        nodes=[
            Node(
                type=NodeType.DOCUMENT,
                properties={"page_content": d.page_content, "document_metadata": d.metadata},
            )
            for d in documents
        ]
    )

    def build_graph() -> list[str]:
        llm = wrapper(configs[0], args.base_url, args.model, http)
        transforms = default_transforms(documents=documents, llm=llm, embedding_model=embeddings)
        apply_transforms(graph, transforms, run_config=RunConfig(max_workers=1, timeout=600))
        return []

    built = measured(f"knowledge graph ({configs[0]})", build_graph, usage, failed, 0)
    built["nodes"], built["relationships"] = len(graph.nodes), len(graph.relationships)
    print(json.dumps(built), flush=True)

    for config in configs:

        def generate(config: str = config) -> list[str]:
            llm = wrapper("langchain" if config == "langchain" else "llm_factory",
                          args.base_url, args.model, http)  # fmt: skip
            generator = TestsetGenerator(llm=llm, embedding_model=embeddings, knowledge_graph=graph)
            run_config = RunConfig(max_workers=1, timeout=600)
            if config != "simple":
                testset = generator.generate(testset_size=args.n, run_config=run_config)
                return [s.eval_sample.user_input for s in testset.samples]
            generator.persona_list = [GIVEN_PERSONA]
            executor = generator.generate(
                testset_size=args.n, run_config=run_config, num_personas=1,
                query_distribution=[(SingleHopSpecificQuerySynthesizer(llm=llm), 1.0)],
                raise_exceptions=False, return_executor=True,
            )  # fmt: skip
            # A failed sample comes back as NaN (logged as a failed job); the rest are kept.
            return [s.user_input for s in executor.results() if hasattr(s, "user_input")]

        if built["error"] is not None:
            skipped = measured(config, lambda: [], usage, failed, args.n)
            skipped["error"] = "not reached: the knowledge graph failed"
            print(json.dumps(skipped), flush=True)
            continue
        print(json.dumps(measured(config, generate, usage, failed, args.n)), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
