"""Scores are committed to SQLite as each one completes, so a crash loses nothing and a rerun
resumes. A score is keyed by sample, metric version (config and prompts) and models, so changing
any of them re-judges instead of reusing a stale result."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ragmeter.score import Score


class ScoreStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
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

    def put(self, key: str, score: Score) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                (key, score.sample_id, score.metric, score.model_dump_json()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
