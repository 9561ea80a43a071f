"""People's labels of a run's items, kept in the run folder as an append-only log.

``labels.sqlite`` holds one row per thing a person did: a label given, an item skipped, an
action undone. Nothing is ever changed or deleted (triggers refuse it): an undo is a row of its
own naming the row it takes back, and a label given again to the same item is read over the
earlier one. What each person has labelled is read off the log (``fold``), so the log is also
the record of who gave what, when, in which order, and with what note.

Each row is its own transaction in write-ahead-log mode with ``synchronous=FULL``: once ``add``
returns, the label is on disk (the log is fsynced), and a killed server, a closed tab or a power
cut loses nothing that was acknowledged. Several processes may write the same file at once (two
people labelling the same run from two servers): SQLite serialises the writers, each waiting up
to ``BUSY_SECONDS`` for the other.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from ragmeter.heads.ratings import Scale, parse_scale
from ragmeter.store import StoreError

T = TypeVar("T")

LABELS_FILE = "labels.sqlite"
NOTE_LIMIT = 2000
"""The longest note a label keeps, in characters."""
NAME_LIMIT = 80
"""The longest annotator's name, in characters."""
BUSY_SECONDS = 30
"""How long a writer waits for another process's write before giving up."""

Kind = Literal["rating", "claim"]
Action = Literal["label", "skip", "undo"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    claim TEXT NOT NULL DEFAULT '',
    annotator TEXT NOT NULL,
    action TEXT NOT NULL,
    value REAL,
    note TEXT NOT NULL DEFAULT '',
    at TEXT NOT NULL,
    scale TEXT NOT NULL DEFAULT '',
    item_order TEXT NOT NULL DEFAULT '',
    judge REAL,
    target INTEGER
);
CREATE INDEX IF NOT EXISTS events_scope ON events (kind, metric);
CREATE TRIGGER IF NOT EXISTS events_never_change BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'labels are append-only: add a row instead'); END;
CREATE TRIGGER IF NOT EXISTS events_never_go BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'labels are append-only: undo adds a row instead'); END;
"""
_COLUMNS = (
    "seq, kind, sample_id, metric, claim, annotator, action, value, note, at, scale, "
    "item_order, judge, target"
)


@dataclass(frozen=True, order=True)
class ItemKey:
    """What a label is of: a sample rated on a metric, or one of its claims (the claim as the
    run checked it, a faithfulness statement)."""

    kind: Kind
    sample_id: str
    metric: str
    claim: str = ""

    def text(self) -> str:
        """The key as one string, as the labelling page sends it back."""
        return json.dumps([self.kind, self.sample_id, self.metric, self.claim])

    @classmethod
    def parse(cls, text: str) -> ItemKey:
        """The key ``text`` gave; ``ValueError`` for anything else."""
        try:
            kind, sample_id, metric, claim = json.loads(text)
        except (TypeError, ValueError):  # a page may send any JSON value: name it, sliced
            raise ValueError(f"not an item key: {str(text)[:80]!r}") from None
        if kind not in ("rating", "claim") or not all(
            isinstance(part, str) for part in (sample_id, metric, claim)
        ):
            raise ValueError(f"not an item key: {text[:80]!r}")
        return cls(kind, sample_id, metric, claim)


@dataclass(frozen=True)
class Event:
    """One row of the log."""

    seq: int
    item: ItemKey
    annotator: str
    action: Action
    value: float | None = None
    """A label's value: the rating, or 1 (supported) / 0 (not supported) for a claim; None
    for a claim the person could not tell."""
    note: str = ""
    at: str = ""
    """When, in UTC (ISO 8601)."""
    scale: str = ""
    """The scale the rating was given on ("1-5"), or "claim"."""
    order: str = ""
    """The order the items were shown in ("random, seed 0", "least-sure")."""
    judge: float | None = None
    """The judge's value of the item as the person was shown it after answering."""
    target: int | None = None
    """An undo: the ``seq`` of the row it takes back."""


@dataclass
class Folded:
    """What the log says now: per (annotator, item), the label that stands and the skip that
    stands, and each annotator's actions that can still be undone, oldest first."""

    labels: dict[tuple[str, ItemKey], Event] = field(default_factory=dict)
    skips: dict[tuple[str, ItemKey], Event] = field(default_factory=dict)
    live: dict[str, list[Event]] = field(default_factory=dict)

    def of(self, annotator: str) -> dict[ItemKey, Event]:
        """The labels ``annotator``'s stand by."""
        return {item: event for (who, item), event in self.labels.items() if who == annotator}

    def annotators(self) -> list[str]:
        return sorted({who for who, _ in self.labels})


def fold(events: Iterable[Event]) -> Folded:
    """Read the log in order: an undone row counts for nothing, a later label of the same item
    by the same person stands over an earlier one, and a label stands over a skip."""
    rows = sorted(events, key=lambda event: event.seq)
    undone = {event.target for event in rows if event.action == "undo"}
    folded = Folded()
    for event in rows:
        if event.action == "undo" or event.seq in undone:
            continue
        key = (event.annotator, event.item)
        (folded.labels if event.action == "label" else folded.skips)[key] = event
        folded.live.setdefault(event.annotator, []).append(event)
    return folded


def rating_scale(
    events: Iterable[Event], metric: str, stated: Scale | str | None = None
) -> str | None:
    """The scale the ratings of ``metric`` that stand in ``events`` were given on, as the log
    writes it; None when nobody rated it. One metric's ratings share one scale, since a rating
    read on another means something else (a 4 of 1-5 is not a 4 of 0-10): ratings on several
    scales, and a ``stated`` scale that is not theirs, are refused with ``ValueError``."""
    found: dict[str, str] = {}  # the scale as parsed -> as the log first writes it
    for event in fold(events).labels.values():
        if event.item.kind == "rating" and event.item.metric == metric:
            found.setdefault(parse_scale(event.scale).text, event.scale)
    if len(found) > 1:
        raise ValueError(
            f"the run's labels of {metric} are on several scales "
            f"({', '.join(sorted(found.values()))}): one metric's ratings share one scale"
        )
    if not found:
        return None
    ((same, given),) = found.items()
    if stated is not None:
        wanted = parse_scale(stated) if isinstance(stated, str) else stated
        if wanted.text != same:
            named = stated if isinstance(stated, str) else stated.text
            raise ValueError(
                f"the run's labels of {metric} are on the scale {given}, not {named}: one "
                "metric's ratings share one scale"
            )
    return given


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class LabelStore:
    """The log at ``path``, opened (and made, where there is none) for reading and appending;
    safe to share between threads, and between processes through the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_SECONDS
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the labels {self.path} ({exc})") from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout={BUSY_SECONDS * 1000}")
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: every commit fsyncs the log, so an acknowledged label survives a power cut.
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(
                f"cannot use the labels {self.path} ({exc}); it was left as it is"
            ) from exc

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(
        self,
        item: ItemKey,
        annotator: str,
        value: float | None,
        *,
        note: str = "",
        scale: str = "",
        order: str = "",
        judge: float | None = None,
    ) -> Event:
        """Append ``annotator``'s label of ``item``; on disk when this returns. A rating on
        another scale than the ratings of its metric that stand is refused (``ValueError``),
        checked in the same transaction: two pages opened before anyone rated could otherwise
        each write a scale of its own."""
        event = Event(0, item, annotator, "label", value, note, now(), scale, order, judge)

        def append() -> Event:
            if item.kind == "rating" and scale:
                rating_scale(self._select("rating", item.metric), item.metric, scale)
            return replace(event, seq=self._insert(event))

        return self._transaction(append, "the label")

    def skip(self, item: ItemKey, annotator: str, *, order: str = "") -> Event:
        """Append that ``annotator`` passed ``item`` by, to come back to it last."""
        event = Event(0, item, annotator, "skip", at=now(), order=order)
        return self._transaction(lambda: replace(event, seq=self._insert(event)), "the skip")

    def undo(self, annotator: str, kind: Kind, metric: str) -> Event | None:
        """Take back ``annotator``'s latest label or skip of a ``kind`` item of ``metric``
        that still stands: the row it took back, or None when there is nothing to take back.
        Read and written in one transaction, so two tabs undoing at once take back two rows."""

        def take_back() -> Event | None:
            live = fold(self._select(kind, metric)).live.get(annotator, [])
            if not live:
                return None
            self._insert(Event(0, live[-1].item, annotator, "undo", at=now(), target=live[-1].seq))
            return live[-1]

        return self._transaction(take_back, "the undo")

    def _transaction(self, work: Callable[[], T], what: str) -> T:
        """``work`` read and written as one transaction, which holds the file's write lock from
        its start, so what it read still stands when it writes."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    done = work()
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot save {what} in {self.path} ({exc}); the labels saved before are kept"
                ) from exc
        return done

    def events(self, kind: Kind | None = None, metric: str | None = None) -> list[Event]:
        """The log, oldest first: all of it, or its rows of ``kind`` items, of ``metric``'s
        items, or both."""
        with self._lock:
            try:
                return self._select(kind, metric)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the labels {self.path} ({exc})") from exc

    def _select(self, kind: Kind | None, metric: str | None) -> list[Event]:
        given = {"kind": kind, "metric": metric}
        where = " AND ".join(f"{column}=?" for column, value in given.items() if value is not None)
        query = f"SELECT {_COLUMNS} FROM events {'WHERE ' + where if where else ''} ORDER BY seq"
        values = tuple(value for value in given.values() if value is not None)
        return [_event(row) for row in self._db.execute(query, values)]

    def _insert(self, event: Event) -> int:
        item = event.item  # the columns after ``seq``, in order, as ``_event`` reads them
        values = (
            *(item.kind, item.sample_id, item.metric, item.claim),
            *(event.annotator, event.action, event.value, event.note, event.at),
            *(event.scale, event.order, event.judge, event.target),
        )
        cursor = self._db.execute(
            f"INSERT INTO events ({_COLUMNS.partition(', ')[2]}) "
            f"VALUES ({', '.join('?' * len(values))})",
            values,
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid


def _event(row: Sequence[Any]) -> Event:
    seq, kind, sample_id, metric, claim, annotator, action, value, note, at = row[:10]
    scale, order, judge, target = row[10:]
    return Event(
        seq=int(seq),
        item=ItemKey(kind, str(sample_id), str(metric), str(claim)),
        annotator=str(annotator),
        action=action,
        value=None if value is None else float(value),
        note=str(note),
        at=str(at),
        scale=str(scale),
        order=str(order),
        judge=None if judge is None else float(judge),
        target=None if target is None else int(target),
    )


def open_labels(folder: str | Path) -> LabelStore | None:
    """The labels of the run in ``folder``, or None when nobody has labelled it."""
    path = Path(folder) / LABELS_FILE
    return LabelStore(path) if path.is_file() else None
