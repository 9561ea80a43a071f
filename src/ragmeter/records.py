"""Append-only JSONL files of pydantic records, read back by key so that a rerun resumes.

Each record is one line, appended and flushed as soon as it is complete, so an interrupted run
loses at most the record in progress. Reading the file back, a later line with the same key
replaces an earlier one (a retry replaces a failure). A line that cannot be read (corrupted, torn
by a process killed mid-write, or written by a version with another schema) is not silently
forgotten: it is listed in :attr:`RecordLog.skipped` with its line number and the reason, and one
:class:`RecordLogWarning` per file says how many lines were skipped: the records they held count
as missing, so a resuming run does them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

TORN = "the last line is incomplete (no newline at its end: the writer was killed mid-write)"
"""The reason given for an unreadable last line that has no newline at its end."""

_MAX_REASON = 200


def digest(*parts: Any) -> str:
    """A short key for ``parts`` (any JSON-able values): equal parts, equal key."""
    material = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(material.encode()).hexdigest()[:20]


def read_json_lines(path: Path) -> list[Any]:
    """One JSON value per non-blank line of a file written whole (not a ``RecordLog``, which
    skips what it cannot read); ``ValueError`` names the first line that is not JSON."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {number}: not JSON ({exc.msg})") from exc
    return rows


class RecordLogWarning(UserWarning):
    """Lines of a record file could not be read: the records they held count as missing."""


@dataclass(frozen=True)
class SkippedLine:
    """A line of a record file that was not loaded."""

    line: int
    """1-based line number in the file."""
    reason: str
    """Why, in short: the first parse or validation error."""


def _reason(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    if not errors:  # pragma: no cover - pydantic always reports at least one
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    reason = f"{where}: {first['msg']}" if where else first["msg"]
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more)"
    return reason if len(reason) <= _MAX_REASON else reason[: _MAX_REASON - 3] + "..."


class RecordLog(Generic[M]):
    """An append-only JSONL file of ``model`` records, indexed by ``key(record)``.

    Loading keeps the last valid line of each key; unreadable lines are listed in
    :attr:`skipped` and reported by one :class:`RecordLogWarning`; blank lines are ignored.
    Lines are split on ``\\n`` only, so a record whose text holds another line separator
    (U+2028, which JSON leaves unescaped) reads back whole.

    Args:
        path: the file; it need not exist yet (it is created by the first :meth:`append`).
        model: the pydantic model every line is validated against.
        key: what a record is filed under; by default its ``key`` attribute.
    """

    def __init__(
        self,
        path: str | Path,
        model: type[M],
        key: Callable[[M], str] = attrgetter("key"),
    ) -> None:
        self.path = Path(path)
        self.model = model
        self.key = key
        self.skipped: list[SkippedLine] = []
        """The lines of the file that were not loaded, in file order."""
        self._records: dict[str, M] = {}
        self._ends_open = False  # the file's last byte is not a newline
        if self.path.exists():
            self._load(self.path.read_bytes())

    def _load(self, data: bytes) -> None:
        lines = data.split(b"\n")
        # The text after the last newline: empty when the file ends cleanly.
        self._ends_open = bool(lines[-1])
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            last = number == len(lines)
            try:
                record = self.model.model_validate_json(raw)
            except ValidationError as exc:
                json_error = exc.errors()[0]["type"] == "json_invalid"
                reason = TORN if last and json_error else _reason(exc)
                self.skipped.append(SkippedLine(number, reason))
                continue
            self._records[self.key(record)] = record
        if self.skipped:
            first = self.skipped[0]
            count = len(self.skipped)
            warnings.warn(
                f"{self.path}: skipped {count} unreadable line{'s' if count > 1 else ''}, "
                f"their records taken as missing (first: line {first.line}: {first.reason})",
                RecordLogWarning,
                stacklevel=3,
            )

    def get(self, key: str) -> M | None:
        return self._records.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __iter__(self) -> Iterator[M]:
        """The records, one per key, in the order their keys first appeared."""
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)

    def append(self, record: M) -> None:
        """Write ``record`` as a new line and flush it; it replaces any record of its key."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            # Close a torn last line first, or the new record would be glued to it.
            prefix = "\n" if self._ends_open else ""
            handle.write(prefix + record.model_dump_json() + "\n")
            handle.flush()
        self._ends_open = False
        self._records[self.key(record)] = record

    def rewrite(self, order: Iterable[str] = ()) -> None:
        """Compact the file to one line per key: the keys in ``order`` first, in that order, then
        the others in their current order. Skipped lines are dropped (they were reported when the
        file was loaded). The new file replaces the old one atomically."""
        rank = {key: n for n, key in enumerate(dict.fromkeys(order))}
        keys = sorted(self._records, key=lambda k: rank.get(k, len(rank)))
        self._records = {k: self._records[k] for k in keys}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write("".join(r.model_dump_json() + "\n" for r in self._records.values()))
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.path)
        self._ends_open = False
        self.skipped = []
