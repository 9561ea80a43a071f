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
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import platformdirs
from pydantic import ValidationError

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


class CacheWarning(UserWarning):
    """The call cache could not be read or written; the run goes on, asking the model instead."""


class CacheError(OSError):
    """The call cache cannot be opened (for the commands that manage it)."""


class CallCache:
    """SQLite store shared by ``CachedJudge`` and ``CachedEmbedder`` (safe across threads).

    A cache only spares calls, so what the disk does to it never stops a run: a file that
    cannot be opened, a read that fails, an entry that no longer matches the digest written
    beside it (a damaged byte), or a write refused by a full disk each cost a call, with one
    ``CacheWarning`` per kind of trouble. Nothing damaged is served.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self.problem: str | None = None
        """Why the cache could not be opened (then it is not used); None when it was."""
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._open(self._db)
        except (sqlite3.Error, OSError) as exc:
            if self._db is not None:
                self._db.close()
                self._db = None
            self.problem = f"the call cache {self.path} cannot be used ({exc})"
            self._warn(
                "open",
                f"{self.problem}; running without it: move it away (or delete it) to cache "
                "calls again",
            )

    @staticmethod
    def _open(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA journal_mode=WAL")
        # A lost cache entry only costs a repeated call, so skip the fsync on every write.
        db.execute("PRAGMA synchronous=NORMAL")
        for table, (payload, kind) in _TABLES.items():
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, model TEXT, "
                f"identity TEXT, created REAL, {payload} {kind}, digest TEXT)"
            )
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            if "digest" not in columns:  # entries written before they carried one
                db.execute(f"ALTER TABLE {table} ADD COLUMN digest TEXT")
        # Entries of the first layout were keyed by the model's name alone, which could serve
        # another endpoint's or another file's replies: they can never be hit again.
        old = db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('chat', 'embedding')"
        ).fetchall()
        for (table,) in old:
            db.execute(f"DROP TABLE {table}")
        if old:
            db.execute("VACUUM")

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(message, CacheWarning, stacklevel=4)

    def _opened(self) -> sqlite3.Connection:
        """The connection, for the commands that manage the cache; CacheError if it is not
        open."""
        if self._db is None:
            raise CacheError(f"{self.problem}: move it away (or delete it) to start afresh")
        return self._db

    def get_chat(self, key: str) -> ChatResponse | None:
        row = self._get("replies", key)
        if row is None:
            return None
        try:
            return ChatResponse.model_validate_json(row)
        except ValidationError:
            self._warn("damaged", f"{self.path}: a damaged entry was skipped and asked again")
            return None

    def put_chat(self, key: str, identity: ModelIdentity, response: ChatResponse) -> None:
        self._put("replies", key, identity, response.model_dump_json().encode())

    def get_embedding(self, key: str) -> np.ndarray | None:
        row = self._get("vectors", key)
        if row is None:
            return None
        if len(row) % 4:
            self._warn("damaged", f"{self.path}: a damaged entry was skipped and asked again")
            return None
        return np.frombuffer(row, dtype=np.float32)

    def put_embedding(self, key: str, identity: ModelIdentity, vector: np.ndarray) -> None:
        self._put("vectors", key, identity, np.asarray(vector, dtype=np.float32).tobytes())

    def _get(self, table: str, key: str) -> bytes | None:
        """The entry's bytes; None for a miss, and for an entry that cannot be read or no
        longer matches its digest."""
        if self._db is None:
            return None
        payload = _TABLES[table][0]
        with self._lock:
            try:
                row = self._db.execute(
                    f"SELECT CAST({payload} AS BLOB), digest FROM {table} WHERE key=?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                self._warn("read", f"cannot read the call cache {self.path} ({exc}): asking again")
                return None
        if row is None:
            return None
        data, digest = row
        if digest is not None and digest != _digest(key, data.hex()):
            self._warn("damaged", f"{self.path}: a damaged entry was skipped and asked again")
            return None
        return bytes(data)

    def _put(self, table: str, key: str, identity: ModelIdentity, payload: bytes) -> None:
        if self._db is None:
            return
        stored: bytes | str = payload.decode() if _TABLES[table][1] == "TEXT" else payload
        with self._lock:
            try:
                self._db.execute(
                    f"INSERT OR REPLACE INTO {table} VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        identity.name,
                        identity.digest,
                        time.time(),
                        stored,
                        _digest(key, payload.hex()),
                    ),
                )
            except sqlite3.Error as exc:
                self._warn(
                    "write",
                    f"cannot write to the call cache {self.path} ({exc}): the run goes on, "
                    "its calls are not cached",
                )

    def entries(self) -> list[CacheEntries]:
        """Entries and bytes per model, judges' replies first."""
        found = []
        db = self._opened()
        with self._lock:
            for table, (payload, _) in _TABLES.items():
                rows = db.execute(
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
        db = self._opened()
        with self._lock:
            removed = sum(
                db.execute(f"DELETE FROM {table} {where}", arguments).rowcount for table in _TABLES
            )
            db.execute("VACUUM")
        return removed

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
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
        request_json = request.key()
        hit = self._hit(request, _digest(self.identity.digest, request_json))
        if hit is not None:
            return hit
        response = self.inner.complete(request)
        identity = self.identity
        self.cache.put_chat(_digest(identity.digest, request_json), identity, response)
        return response

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        """The hits from the cache; the misses asked of the judge together and stored."""
        asked = [request.key() for request in requests]
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
