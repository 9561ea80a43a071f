"""A disk cache of judge and embedding calls, so that re-running an evaluation costs no model calls.

Keys hash the model's identity (provider, model, endpoint, weights, output-changing options: see
``ModelIdentity``) with the full request, so a change of any of them, or of the prompt, schema or
sampling parameters, is a miss. Each entry also records which model made it and when, for
``ragmeter cache info`` and ``prune``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import platformdirs

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Embedder,
    Judge,
    ModelIdentity,
    Reply,
    Wrapper,
    complete_each,
    is_probe,
)

_TABLES = {"replies": ("response", "TEXT"), "vectors": ("vector", "BLOB")}
"""Each table's payload column and its type: judges' replies and embedders' vectors."""


def default_cache_path() -> Path:
    return Path(platformdirs.user_cache_dir("ragmeter")) / "calls.sqlite"


@dataclass(frozen=True)
class CacheEntries:
    """What the cache holds for one model: ``kind`` is "replies" (judge) or "vectors"."""

    kind: str
    model: str
    identity: str
    entries: int
    size: int
    """Bytes of the stored replies or vectors."""
    oldest: float
    newest: float


class CallCache:
    """SQLite store shared by ``CachedJudge`` and ``CachedEmbedder`` (safe across threads)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("PRAGMA journal_mode=WAL")
        # A lost cache entry only costs a repeated call, so skip the fsync on every write.
        self._db.execute("PRAGMA synchronous=NORMAL")
        for table, (payload, kind) in _TABLES.items():
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, model TEXT, "
                f"identity TEXT, created REAL, {payload} {kind})"
            )
        # Entries of the first layout were keyed by the model's name alone, which could serve
        # another endpoint's or another file's replies: they can never be hit again.
        old = self._db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('chat', 'embedding')"
        ).fetchall()
        for (table,) in old:
            self._db.execute(f"DROP TABLE {table}")
        if old:
            self._db.execute("VACUUM")

    def get_chat(self, key: str) -> ChatResponse | None:
        row = self._get("replies", key)
        return ChatResponse.model_validate_json(row) if row else None

    def put_chat(self, key: str, identity: ModelIdentity, response: ChatResponse) -> None:
        self._put("replies", key, identity, response.model_dump_json())

    def get_embedding(self, key: str) -> np.ndarray | None:
        row = self._get("vectors", key)
        return np.frombuffer(row, dtype=np.float32) if row else None

    def put_embedding(self, key: str, identity: ModelIdentity, vector: np.ndarray) -> None:
        self._put("vectors", key, identity, np.asarray(vector, dtype=np.float32).tobytes())

    def _get(self, table: str, key: str) -> bytes | str | None:
        payload = _TABLES[table][0]
        with self._lock:
            row = self._db.execute(f"SELECT {payload} FROM {table} WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _put(self, table: str, key: str, identity: ModelIdentity, payload: bytes | str) -> None:
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO {table} VALUES (?, ?, ?, ?, ?)",
                (key, identity.name, identity.digest, time.time(), payload),
            )

    def entries(self) -> list[CacheEntries]:
        """Entries and bytes per model, judges' replies first."""
        found = []
        with self._lock:
            for table, (payload, _) in _TABLES.items():
                rows = self._db.execute(
                    f"SELECT model, identity, COUNT(*), SUM(LENGTH({payload})), MIN(created), "
                    f"MAX(created) FROM {table} GROUP BY model, identity ORDER BY model"
                ).fetchall()
                found += [CacheEntries(table, *row) for row in rows]
        return found

    def clear(self, model: str | None = None) -> int:
        """Remove every entry, or those of the model named ``provider:model``; returns how many."""
        where, arguments = ("WHERE model=?", (model,)) if model else ("", ())
        return self._delete(where, arguments)

    def prune(self, older_than_days: float) -> int:
        """Remove the entries made more than ``older_than_days`` ago; returns how many."""
        return self._delete("WHERE created < ?", (time.time() - older_than_days * 86400,))

    def _delete(self, where: str, arguments: tuple[object, ...]) -> int:
        with self._lock:
            removed = sum(
                self._db.execute(f"DELETE FROM {table} {where}", arguments).rowcount
                for table in _TABLES
            )
            self._db.execute("VACUUM")
        return removed

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class CachedJudge(Wrapper):
    """Wraps a judge; a hit returns the stored reply marked ``cached=True``.

    Failed calls are not cached, so a rerun retries them.
    """

    def __init__(self, inner: Judge, cache: CallCache) -> None:
        super().__init__(inner)
        self.cache = cache

    def _hit(self, request: ChatRequest, key: str) -> ChatResponse | None:
        """The stored reply, if it holds everything the judge's own reply would: a probe
        stored before the judge showed its hidden states lacks them, so it is asked again."""
        hit = self.cache.get_chat(key)
        if hit is None:
            return None
        if is_probe(request) and not set(self.states) <= set(hit.states or ()):
            return None
        return hit.model_copy(update={"cached": True})

    def complete(self, request: ChatRequest) -> ChatResponse:
        # The identity is read at every call, and again after a miss: a provider whose replies
        # change with what it learns of a server (one that refuses JSON schemas, say) may ask
        # another way during the call, and the reply is keyed by the way that made it.
        request_json = request.model_dump_json()
        hit = self._hit(request, _digest(self.identity.digest, request_json))
        if hit is not None:
            return hit
        response = self.inner.complete(request)
        identity = self.identity
        self.cache.put_chat(_digest(identity.digest, request_json), identity, response)
        return response

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        """The hits from the cache; the misses asked of the judge together and stored."""
        asked = [request.model_dump_json() for request in requests]
        digest = self.identity.digest
        replies: list[Reply | None] = [
            self._hit(request, _digest(digest, a))
            for request, a in zip(requests, asked, strict=True)
        ]
        missing = [i for i, reply in enumerate(replies) if reply is None]
        fresh = complete_each(self.inner, [requests[i] for i in missing], concurrency)
        identity = self.identity
        for i, reply in zip(missing, fresh, strict=True):
            if isinstance(reply, ChatResponse):
                self.cache.put_chat(_digest(identity.digest, asked[i]), identity, reply)
            replies[i] = reply
        return [reply for reply in replies if reply is not None]


class CachedEmbedder(Wrapper):
    def __init__(self, inner: Embedder, cache: CallCache) -> None:
        super().__init__(inner)
        self.cache = cache
        self.model_calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        identity = self.identity
        keys = [_digest(identity.digest, text) for text in texts]
        found = [self.cache.get_embedding(key) for key in keys]
        missing = [i for i, vector in enumerate(found) if vector is None]
        if missing:
            self.model_calls += 1
            fresh = self.inner.embed([texts[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                self.cache.put_embedding(keys[i], identity, vector)
                found[i] = np.asarray(vector, dtype=np.float32)
        return np.stack([v for v in found if v is not None])
