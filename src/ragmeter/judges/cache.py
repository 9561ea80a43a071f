"""A disk cache of judge and embedding calls, so that re-running an evaluation costs no model calls.

Keys hash the provider and model (the judge's ``name``) with the full request, so any change of
prompt, schema or sampling parameter is a miss.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np
import platformdirs

from ragmeter.judges.base import ChatRequest, ChatResponse, Embedder, Judge


def default_cache_path() -> Path:
    return Path(platformdirs.user_cache_dir("ragmeter")) / "calls.sqlite"


class CallCache:
    """SQLite store shared by ``CachedJudge`` and ``CachedEmbedder`` (safe across threads)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # A lost cache entry only costs a repeated call, so skip the fsync on every write.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, response TEXT)")
        self._db.execute("CREATE TABLE IF NOT EXISTS embedding (key TEXT PRIMARY KEY, vector BLOB)")

    def get_chat(self, key: str) -> ChatResponse | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM chat WHERE key=?", (key,)).fetchone()
        return ChatResponse.model_validate_json(row[0]) if row else None

    def put_chat(self, key: str, response: ChatResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO chat VALUES (?, ?)", (key, response.model_dump_json())
            )

    def get_embedding(self, key: str) -> np.ndarray | None:
        with self._lock:
            row = self._db.execute("SELECT vector FROM embedding WHERE key=?", (key,)).fetchone()
        return np.frombuffer(row[0], dtype=np.float32) if row else None

    def put_embedding(self, key: str, vector: np.ndarray) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO embedding VALUES (?, ?)",
                (key, np.asarray(vector, dtype=np.float32).tobytes()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class CachedJudge:
    """Wraps a judge; a hit returns the stored reply marked ``cached=True``.

    Failed calls are not cached, so a rerun retries them.
    """

    def __init__(self, inner: Judge, cache: CallCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(self, request: ChatRequest) -> ChatResponse:
        key = _digest(self.inner.name, request.model_dump_json())
        hit = self.cache.get_chat(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True})
        response = self.inner.complete(request)
        self.cache.put_chat(key, response)
        return response


class CachedEmbedder:
    def __init__(self, inner: Embedder, cache: CallCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_calls = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [_digest(self.inner.name, text) for text in texts]
        found = [self.cache.get_embedding(key) for key in keys]
        missing = [i for i, vector in enumerate(found) if vector is None]
        if missing:
            self.model_calls += 1
            fresh = self.inner.embed([texts[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                self.cache.put_embedding(keys[i], vector)
                found[i] = np.asarray(vector, dtype=np.float32)
        return np.stack([v for v in found if v is not None])
