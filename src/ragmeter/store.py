"""Scores are committed to SQLite as each one completes, so a crash loses nothing and a rerun
resumes. A score is keyed by sample, metric version (config and prompts) and models, so changing
any of them re-judges instead of reusing a stale result.

Each ``put`` is its own transaction in write-ahead-log mode: once it returns, the score survives
the process being killed (``synchronous=NORMAL`` gives up durability only on power loss, for a
commit that costs microseconds instead of an fsync). A killed writer leaves at worst an
uncommitted tail of the log, which SQLite discards on the next open.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ragmeter.score import Score


class ScoreStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # Another process on the same folder waits for the lock instead of failing at once.
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, sample_id TEXT, "
            "metric TEXT, payload TEXT)"
        )

    def get(self, key: str) -> Score | None:
        with self._lock:
            row = self._db.execute("SELECT payload FROM scores WHERE key=?", (key,)).fetchone()
        return Score.model_validate_json(row[0]) if row else None

    def reusable(self, key: str) -> Score | None:
        """The stored score if a rerun may reuse it: only scored items are, since an unscored
        item's failure (a timeout, a rate limit) may have passed."""
        stored = self.get(key)
        return stored if stored is not None and stored.scored else None

    def put(self, key: str, score: Score) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                (key, score.sample_id, score.metric, score.model_dump_json()),
            )

    def count(self) -> int:
        """Stored scores, scored or not. (Not ``__len__``: callers test ``if store:``.)"""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def stored_payloads(path: Path) -> list[str]:
    """Every score in the store at ``path`` as its JSON, oldest first, read without writing:
    the store may be another process's, still being written (a report of a running or killed
    run). Raises ``sqlite3.Error`` when the file is not a readable store."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT payload FROM scores ORDER BY rowid")]
    finally:
        db.close()
