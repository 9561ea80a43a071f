"""Scores are committed to SQLite as each one completes, so a crash loses nothing and a rerun
resumes. A score is keyed by sample, metric version (config and prompts) and models, so changing
any of them re-judges instead of reusing a stale result.

Each ``put`` is its own transaction in write-ahead-log mode: once it returns, the score survives
the process being killed (``synchronous=NORMAL`` gives up durability only on power loss, for a
commit that costs microseconds instead of an fsync). A killed writer leaves at worst an
uncommitted tail of the log, which SQLite discards on the next open.

What the disk can do to the store ends in a ``StoreError`` (an ``OSError``) that says what
happened and what to do, never in a wrong score:

- a full disk fails the commit that needed the space; SQLite rolls that one back and every
  earlier commit stays, so a rerun once there is room judges only the rest;
- a damaged file (one that is not a database, or whose pages SQLite finds broken when it is
  opened) is refused before anything is judged, and left as it is;
- a row whose payload no longer matches the digest written beside it (a damaged byte that SQLite
  cannot see) is not served: the item is judged again and the row replaced, with a
  ``StoreDamageWarning``.

One run at a time writes a folder: ``FolderLock`` holds ``.ragmeter.lock`` in it, and a second
run on the same folder stops at once with ``FolderBusy``, naming the process that holds it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from pydantic import ValidationError

from ragmeter.score import Score

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one writer is up to the user
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".ragmeter.lock"

_FULL = {"SQLITE_FULL"}
_DAMAGED = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


class StoreError(OSError):
    """The scores database cannot be opened, read or written; the message says what to do."""


class StoreDamageWarning(UserWarning):
    """A stored score no longer matched its digest: it was judged again instead of served."""


class FolderBusy(OSError):
    """Another run is writing the same results folder."""


def _digest(key: str, payload: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\x1f" + payload).hexdigest()


def _advice(path: Path, exc: sqlite3.Error) -> str:
    """What went wrong with the database at ``path`` and what to do about it."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if name in _FULL or "disk is full" in text:
        return (
            f"the disk holding {path} is full ({text}); the scores saved before are kept: free "
            "some space and run the same command again to judge only the rest"
        )
    if name in _DAMAGED or "malformed" in text or "not a database" in text:
        return (
            f"{path} is damaged ({text}); it was left as it is: move it away (or delete it) and "
            "run again to judge every item afresh"
        )
    return (
        f"cannot use the scores database {path} ({text}); the scores saved before are kept: once "
        "the cause is gone, run the same command again to judge only the rest"
    )


class ScoreStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.damaged = 0
        """Rows found damaged and not served (each item was judged again)."""
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(_advice(path, exc)) from exc
        try:
            self._open()
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(_advice(path, exc)) from exc

    def _open(self) -> None:
        # Another process on the same folder waits for the lock instead of failing at once.
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        problems = [row[0] for row in self._db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError(f"database disk image is malformed: {problems[0]}")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, sample_id TEXT, "
            "metric TEXT, payload TEXT, digest TEXT)"
        )
        columns = [row[1] for row in self._db.execute("PRAGMA table_info(scores)")]
        if "digest" not in columns:  # written before rows carried a digest: trusted as they are
            self._db.execute("ALTER TABLE scores ADD COLUMN digest TEXT")

    def get(self, key: str) -> Score | None:
        """The score stored under ``key``; None if there is none or its row is damaged."""
        found = self._row(key)
        return found[0] if found is not None else None

    def _row(self, key: str) -> tuple[Score, bytes] | None:
        """As ``get``, with the row's digest (what ``put`` returned when it wrote it)."""
        with self._lock:
            try:
                row = self._db.execute(
                    "SELECT CAST(payload AS BLOB), digest FROM scores WHERE key=?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise StoreError(_advice(self.path, exc)) from exc
        if row is None:
            return None
        payload, digest = row
        # Rows written before rows carried a digest have none: theirs is worked out here.
        found = _digest(key, payload)
        if digest is not None and digest != found:
            return self._damaged(key)
        try:
            return Score.model_validate_json(payload), bytes.fromhex(found)
        except ValidationError:
            return self._damaged(key)

    def _damaged(self, key: str) -> None:
        self.damaged += 1
        warnings.warn(
            f"{self.path}: a stored score does not match its digest (the file was damaged); "
            f"its item is judged again (key {key[:12]})",
            StoreDamageWarning,
            stacklevel=3,
        )

    def reusable(self, key: str) -> Score | None:
        """The stored score if a rerun may reuse it: only scored items are, since an unscored
        item's failure (a timeout, a rate limit) may have passed."""
        found = self.reusable_row(key)
        return found[0] if found is not None else None

    def reusable_row(self, key: str) -> tuple[Score, bytes] | None:
        """As ``reusable``, with the row's digest."""
        found = self._row(key)
        return found if found is not None and found[0].scored else None

    def put(self, key: str, score: Score) -> bytes:
        """Commit ``score`` under ``key``; return the row's digest, by which ``read_payloads``
        knows the row again."""
        payload = score.model_dump_json()
        digest = _digest(key, payload.encode())
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?)",
                    (key, score.sample_id, score.metric, payload, digest),
                )
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot save the score of {score.sample_id} ({score.metric}): "
                    + _advice(self.path, exc)
                ) from exc
        return bytes.fromhex(digest)

    def count(self) -> int:
        """Stored scores, scored or not. (Not ``__len__``: callers test ``if store:``.)"""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _existing(path: Path, mode: str) -> sqlite3.Connection:
    """A connection to the store at ``path`` that never creates one where there is none."""
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode={mode}", uri=True)


def stored_payloads(path: Path) -> list[str | None]:
    """Every score in the store at ``path`` as its JSON, oldest first, read without writing:
    the store may be another process's, still being written (a report of a running or killed
    run). A row that no longer matches its digest is None. Raises ``sqlite3.Error`` when the
    file is not a readable store."""
    db = _existing(path, "ro")
    try:
        columns = [row[1] for row in db.execute("PRAGMA table_info(scores)")]
        digest = "digest" if "digest" in columns else "NULL"
        rows = db.execute(
            f"SELECT key, CAST(payload AS BLOB), {digest} FROM scores ORDER BY rowid"
        ).fetchall()
    finally:
        db.close()
    return [
        None
        if digest is not None and digest != _digest(key, payload)
        else payload.decode("utf-8", errors="replace")
        for key, payload, digest in rows
    ]


def read_payloads(path: Path, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[str | None]:
    """The JSON of each ``(key, digest)`` row of the store at ``path`` (key and digest as
    bytes, as ``put`` wrote them), in the order given, one at a time, written nowhere.
    None for a row that is no longer there as it was written: replaced by a later run on the
    same folder, or damaged. Raises ``StoreError`` when the store cannot be read at all."""
    try:
        # Read-write though nothing is written: a read-only connection that is the last to
        # close leaves the write-ahead log's two files behind in the results folder, this one
        # removes them as the run's own connection did.
        db = _existing(path, "rw")
        try:
            for key, digest in rows:
                found = db.execute(
                    "SELECT CAST(payload AS BLOB) FROM scores WHERE key=?", (key.hex(),)
                ).fetchone()
                if found is None or _digest(key.hex(), found[0]) != digest.hex():
                    yield None
                else:
                    yield found[0].decode()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the scores database {path} ({exc})") from exc


class FolderLock:
    """Holds ``LOCK_FILE`` in a results folder while a run writes it.

    The lock is the operating system's (``flock``), so it goes with the process: a killed run
    leaves no stale lock behind. Taking it again in the same thread (``evaluate`` inside a
    command that already holds the folder) only counts up. Where ``fcntl`` is missing (Windows)
    nothing is locked.
    """

    _held: ClassVar[dict[tuple[str, int], tuple[int, int]]] = {}
    """(folder, thread) -> (descriptor, depth) of the locks this process holds."""
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._key = (str(folder.resolve()), threading.get_ident())

    def __enter__(self) -> FolderLock:
        if fcntl is None:
            return self
        with self._guard:
            held = self._held.get(self._key)
            if held is not None:
                self._held[self._key] = (held[0], held[1] + 1)
                return self
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / LOCK_FILE
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(handle, 200).decode(errors="replace").strip() or "unknown"
                os.close(handle)
                raise FolderBusy(
                    f"another ragmeter run is writing {self.folder} (process {holder}); wait for "
                    "it to finish and run again (it resumes from what that run saved), or choose "
                    "another folder"
                ) from None
            except BaseException:
                os.close(handle)
                raise
            try:  # who holds it, for the message of a run that finds it busy
                os.ftruncate(handle, 0)
                os.write(handle, f"{os.getpid()}\n".encode())
            except OSError:  # a full disk: the lock holds all the same
                pass
            self._held[self._key] = (handle, 1)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if fcntl is None:
            return
        with self._guard:
            handle, depth = self._held[self._key]
            if depth > 1:
                self._held[self._key] = (handle, depth - 1)
                return
            del self._held[self._key]
            os.close(handle)  # closing the descriptor releases the lock
