"""ragas 0.4.3's faithfulness, answer relevancy and context relevance on the same samples, for
``bench_vs_ragas.py``, or its rubric metric on rated rows, for ``bench_criteria.py --ragas-python``.
It runs in its own virtualenv, never ragmeter's:

    python3 -m venv .ragas-venv
    .ragas-venv/bin/pip install -r bench/ragas_peer.requirements.txt
    .ragas-venv/bin/python bench/ragas_peer.py SAMPLES.jsonl --base-url http://127.0.0.1:PORT/v1

SAMPLES.jsonl holds one ``{"id", "question", "contexts", "answer"}`` per line; a line that also
has ``rubrics`` (ragas's ``score1_description``...) and ``criterion`` (the criterion's question,
added to the rubric prompt's instruction) is scored by ``DomainSpecificRubrics`` alone, as
``metric`` names it. The judge is any
OpenAI-compatible server (llama-cpp-python's, serving the same GGUF as ragmeter's local judge);
answer relevancy embeds with ragmeter's own int8 MiniLM embedder (the requirements install
ragmeter's core beside ragas for it). Prints one JSON line per sample and metric: seconds, value
(null with the error when ragas failed), and the calls, prompt tokens and completion tokens the
server reported for it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

# ragas sends usage analytics unless told not to; a benchmark makes no calls it was not asked to.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

import httpx
from openai import AsyncOpenAI
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import llm_factory
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextRelevance,
    DomainSpecificRubrics,
    Faithfulness,
)

from ragmeter.judges.minilm import MiniLMEmbedder


class MiniLM(BaseRagasEmbedding):
    """ragmeter's own int8 MiniLM embedder: both systems compare texts with the same vectors."""

    def __init__(self) -> None:
        super().__init__()
        self._embedder = MiniLMEmbedder()

    def embed_text(self, text: str, **kwargs: object) -> list[float]:
        return self._embedder.embed([text])[0].tolist()

    async def aembed_text(self, text: str, **kwargs: object) -> list[float]:
        return self.embed_text(text)

    def embed_texts(self, texts: list[str], **kwargs: object) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()

    async def aembed_texts(self, texts: list[str], **kwargs: object) -> list[list[float]]:
        return self.embed_texts(texts)


class Usage:
    """Calls and tokens as the server reports them in each reply's ``usage``."""

    def __init__(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = 0

    async def count(self, response: httpx.Response) -> None:
        if not response.url.path.endswith("/chat/completions"):
            return
        await response.aread()
        self.calls += 1
        usage = response.json().get("usage") or {}
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)

    def snapshot(self) -> tuple[int, int, int]:
        return self.calls, self.prompt_tokens, self.completion_tokens


async def score(key: str, name: str, metric: Any, inputs: dict[str, Any], usage: Usage) -> None:
    """Score one sample on one metric and print its line."""
    before = usage.snapshot()
    clock = time.perf_counter()
    value, error = None, None
    try:
        value = (await metric.ascore(**inputs)).value
    except Exception as exc:  # a failed score is reported, not hidden
        error = f"{type(exc).__name__}: {exc}"[:300]
    if value is not None and value != value:
        value, error = None, "ragas returned NaN"
    seconds = time.perf_counter() - clock
    after = usage.snapshot()
    calls, prompt, completion = (a - b for a, b in zip(after, before, strict=True))
    record = {
        "id": key,
        "metric": name,
        "seconds": round(seconds, 3),
        "value": value,
        "error": error,
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }
    print(json.dumps(record), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("samples", type=Path)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="qwen")
    args = parser.parse_args()

    usage = Usage()
    http = httpx.AsyncClient(timeout=600, event_hooks={"response": [usage.count]})
    client = AsyncOpenAI(base_url=args.base_url, api_key="none", http_client=http, max_retries=0)
    llm = llm_factory(args.model, client=client)
    metrics = {
        "faithfulness": Faithfulness(llm=llm),
        "answer_relevance": AnswerRelevancy(llm=llm, embeddings=MiniLM()),
        "context_relevance": ContextRelevance(llm=llm),
    }
    for line in args.samples.read_text().splitlines():
        sample = json.loads(line)
        if "rubrics" in sample:
            rubric = DomainSpecificRubrics(
                llm=llm, rubrics=sample["rubrics"], name=sample["metric"]
            )
            rubric.scoring_prompt.instruction += f"\nThe criterion: {sample['criterion']}\n"
            asked = dict(
                user_input=sample["question"],
                response=sample["answer"],
                retrieved_contexts=sample.get("contexts"),
            )
            await score(sample["id"], sample["metric"], rubric, asked, usage)
            continue
        inputs = {
            "faithfulness": dict(
                user_input=sample["question"],
                response=sample["answer"],
                retrieved_contexts=sample["contexts"],
            ),
            "answer_relevance": dict(user_input=sample["question"], response=sample["answer"]),
            "context_relevance": dict(
                user_input=sample["question"], retrieved_contexts=sample["contexts"]
            ),
        }
        for name, metric in metrics.items():
            await score(sample["id"], name, metric, inputs[name], usage)
    await http.aclose()


if __name__ == "__main__":
    asyncio.run(main())
