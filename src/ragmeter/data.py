"""Load evaluation samples from the files and objects people already have.

RAG logs come as JSONL, JSON, CSV, Parquet, pandas frames, plain lists or HuggingFace datasets,
with column names that follow whichever tool wrote them (ragas, LangChain, home-grown scripts).
This module turns all of them into :class:`~ragmeter.sample.Sample` objects, and when a row is
bad it says which row and which field, so that a broken line in a 10,000-row file can be found.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from ragmeter.sample import Sample, Turn, parse_answers, parse_grades, parse_ids, parse_turns

__all__ = [
    "RAGAS_COLUMNS",
    "DatasetError",
    "InvalidRow",
    "LoadedDataset",
    "jsonl_rows",
    "load_samples",
    "write_jsonl",
]

RAGAS_COLUMNS: dict[str, str] = {
    "user_input": "question",
    "retrieved_contexts": "contexts",
    "response": "answer",
    "reference": "reference",
}
"""The ragas column names, as a ``columns`` mapping; they are also recognised without it."""

# For each Sample field, the columns that may hold it, best first: the field's own name, then the
# names other tools use. The first one present in a row wins; the rest go to metadata.
_FIELD_COLUMNS: dict[str, tuple[str, ...]] = {
    "question": ("question", "user_input", "query"),
    "contexts": ("contexts", "retrieved_contexts", "context"),
    "answer": ("answer", "response", "generated_answer"),
    "reference": ("reference", "ground_truth", "reference_answer"),
    "history": ("history", "chat_history", "conversation_history"),
    "context_ids": ("context_ids", "retrieved_context_ids"),
    "reference_context_ids": ("reference_context_ids", "relevant_context_ids"),
    "id": ("id", "sample_id"),
    "metadata": ("metadata",),
}

Parsed = TypeVar("Parsed")

_Row = tuple[int, object]
"""A 1-based row number and what the source holds there: normally a mapping, or a
:class:`DatasetError` when the row could not even be decoded."""


class DatasetError(ValueError):
    """A row that cannot become a Sample, with enough detail to find and fix it in the source."""

    def __init__(self, row: int, field: str, reason: str) -> None:
        """Build the error.

        Args:
            row: 1-based row number; for JSONL, the line number in the file.
            field: the Sample field at fault, or ``<json>`` / ``<row>`` for a row that is not
                valid JSON / not an object.
            reason: what is wrong with the value, without the row and field.
        """
        super().__init__(f"row {row}, field {field!r}: {reason}")
        self.row = row
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class InvalidRow:
    """A row left out in ``on_invalid="skip"`` mode, kept so the caller can report it."""

    row: int
    field: str
    reason: str


@dataclass
class LoadedDataset:
    """The samples that loaded, and the rows that were skipped (empty unless skipping)."""

    samples: list[Sample]
    invalid: list[InvalidRow]

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)


class _BadValue(Exception):
    """Raised by a field parser; the caller adds the row and field to make a DatasetError."""


def load_samples(
    source: object,
    *,
    columns: Mapping[str, str] | None = None,
    on_invalid: Literal["raise", "skip"] = "raise",
) -> LoadedDataset:
    """Read samples from a file or an in-memory collection.

    Column names are matched to Sample fields by their own names, then by common aliases (the
    ragas names, ``query``, ``ground_truth`` and so on). Columns that match no field are kept in
    ``metadata``, so nothing in the source is silently dropped; a ``metadata`` column's own keys
    win over such columns. Rows are numbered from 1: records for CSV, Parquet and in-memory
    sources, file lines for JSONL.

    Args:
        source: a path to a ``.jsonl``/``.ndjson``, ``.json`` (an array of objects), ``.csv`` or
            ``.parquet`` file; a pandas DataFrame; or an iterable of dicts, which includes a
            HuggingFace ``datasets.Dataset``.
        columns: source column -> Sample field, for names the aliases do not cover. It overrides
            the aliases: a field named here is read only from the column given.
        on_invalid: ``"raise"`` stops at the first bad row; ``"skip"`` leaves bad rows out and
            lists them in :attr:`LoadedDataset.invalid`, for sources where some rows are known
            to be broken.

    Returns:
        The loaded samples, in source order, and the skipped rows.

    Raises:
        DatasetError: a row is invalid and ``on_invalid`` is ``"raise"``.
        ValueError: ``columns`` names an unknown field, ``on_invalid`` is unknown, or a file has
            an unknown suffix or is not a JSON array.
        FileNotFoundError: the path does not exist.
        ImportError: a Parquet file is given but pyarrow is not installed.
        TypeError: ``source`` is none of the supported kinds.
    """
    explicit = _check_columns(columns or {})
    if on_invalid not in ("raise", "skip"):
        raise ValueError(f"on_invalid must be 'raise' or 'skip', got {on_invalid!r}")
    samples: list[Sample] = []
    invalid: list[InvalidRow] = []
    for row, record in read_rows(source):
        try:
            if isinstance(record, DatasetError):
                raise record
            samples.append(_to_sample(row, record, explicit))
        except DatasetError as error:
            if on_invalid == "raise":
                raise
            invalid.append(InvalidRow(error.row, error.field, error.reason))
    return LoadedDataset(samples, invalid)


def write_jsonl(samples: Iterable[Sample], path: str | PathLike[str]) -> None:
    """Write samples as JSONL that :func:`load_samples` reads back into equal samples.

    Fields that are None are left out to keep the file short and readable by other tools.
    """
    with Path(path).open("w", encoding="utf-8") as out:
        for sample in samples:
            out.write(sample.model_dump_json(exclude_none=True) + "\n")


# --- column mapping -------------------------------------------------------------------------


def _check_columns(columns: Mapping[str, str]) -> dict[str, str]:
    """Validate a user mapping up front and invert it to field -> source column.

    Checked before reading anything so that a typo fails at once rather than as one invalid
    row per line.
    """
    by_field: dict[str, str] = {}
    for source_column, field in columns.items():
        if field not in _FIELD_PARSERS:  # the fields read from a column (a reference's
            known = ", ".join(_FIELD_PARSERS)  # alternatives come as a list under reference)
            raise ValueError(
                f"column {source_column!r} is mapped to {field!r}, which is not a Sample field "
                f"(expected one of: {known})"
            )
        if field in by_field:
            raise ValueError(
                f"columns {by_field[field]!r} and {source_column!r} are both mapped to {field!r}"
            )
        by_field[field] = source_column
    return by_field


def _resolve_columns(record: Mapping[str, Any], explicit: Mapping[str, str]) -> dict[str, str]:
    """Choose the source column for each field present in this row.

    Resolved per row because JSONL and lists of dicts need not have the same keys in every row.
    """
    chosen = dict(explicit)
    taken = set(explicit.values())
    for field, candidates in _FIELD_COLUMNS.items():
        if field in chosen:
            continue
        column = next((c for c in candidates if c in record and c not in taken), None)
        if column is not None:
            chosen[field] = column
            taken.add(column)
    return chosen


# --- rows to samples ------------------------------------------------------------------------


def _to_sample(row: int, record: object, explicit: Mapping[str, str]) -> Sample:
    """Turn one source row into a Sample, or raise a DatasetError naming the row and field."""
    if not isinstance(record, Mapping):
        raise DatasetError(row, "<row>", f"expected an object, got {_type_name(record)}")
    chosen = _resolve_columns(record, explicit)
    values: dict[str, Any] = {}
    conversation = _conversation(row, record.get(chosen.get("question", "")))
    for field, parse in _FIELD_PARSERS.items():
        raw = record.get(chosen[field]) if field in chosen else None
        # The conversation gives the question and history; a separate answer column wins.
        if conversation and field in conversation and (field != "answer" or _is_missing(raw)):
            values[field] = conversation[field]
            continue
        try:
            values[field] = parse(None if _is_missing(raw) else raw)
        except _BadValue as error:
            raise DatasetError(row, field, str(error)) from None
    used = set(chosen.values())
    extras = {key: _plain(value) for key, value in record.items() if key not in used}
    values["metadata"] = {**extras, **values["metadata"]}
    try:
        return Sample(**values)
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "<row>"
        raise DatasetError(row, field, first["msg"]) from None


def _conversation(row: int, value: object) -> dict[str, Any] | None:
    """A question given as a list of messages (ragas's multi-turn ``user_input``): the last user
    turn is the question, the turns before it its history, and assistant turns after it the
    answer (used when the row has no answer column). None for a question given as text."""
    if hasattr(value, "tolist"):  # a numpy array, from Parquet or pandas
        value = value.tolist()
    if not isinstance(value, list | tuple):
        return None
    try:
        turns = _parse_history(value)
    except _BadValue as error:
        raise DatasetError(row, "question", str(error)) from None
    asked = [i for i, turn in enumerate(turns) if turn.role == "user"]
    if not asked:
        raise DatasetError(row, "question", "the conversation has no user turn")
    last = asked[-1]
    replies = [turn.text for turn in turns[last + 1 :]]
    found = {"question": turns[last].text, "history": turns[:last]}
    return found | ({"answer": "\n".join(replies)} if replies else {})


def _parse_history(value: object) -> list[Turn]:
    """Parse ``history`` in the forms :func:`~ragmeter.sample.parse_turns` reads, and also as a
    JSON-encoded list in a string (CSV) or a numpy array (Parquet, pandas)."""
    value = _json_text(value, "a list of turns")
    if hasattr(value, "tolist"):
        value = value.tolist()
    return _parsed(parse_turns, value)


def _parsed(parse: Callable[[Any], Parsed], value: object) -> Parsed:
    """``parse(value)``, a ``ValueError`` it raises being what is wrong with the value."""
    try:
        return parse(value)
    except ValueError as error:
        raise _BadValue(str(error)) from None


def _json_text(value: object, expected: str) -> object:
    """``value`` decoded where it is a string, as CSV holds a list or an object (JSON text)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise _BadValue(f"expected {expected}, got a string that is not JSON") from None


def _required_text(value: object) -> str:
    """Parse ``question`` and ``answer``: without them there is nothing to score."""
    if value is None:
        raise _BadValue("missing")
    if not isinstance(value, str):
        raise _BadValue(f"expected a string, got {_type_name(value)}")
    return value


def _parse_reference(value: object) -> str | list[str] | None:
    """Parse ``reference``, which reference-free metrics do without: a text, or a list of
    acceptable answers (QA gold answers), which CSV can only hold as JSON text and Parquet and
    pandas give as an array. Text that starts with ``[`` but is no JSON list of strings (``[1]
    Smith et al.``) is a reference text."""
    if value is None:
        return None
    if isinstance(value, str):
        listed = _json_list(value)
        if listed is None:
            return value
        value = listed
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise _BadValue(f"expected a string or a list of answers, got {_type_name(value)}")
    return _parsed(parse_answers, value)


def _json_list(text: str) -> list[str] | None:
    """``text`` read as a JSON list of strings, or None where it is not one."""
    if not text.lstrip().startswith("["):
        return None
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return None
    if isinstance(decoded, list) and decoded and all(isinstance(i, str) for i in decoded):
        return decoded
    return None


def _parse_id(value: object) -> str | None:
    """Parse ``id``, accepting numbers because spreadsheets and pandas turn ids into them.

    An integer that pandas widened to float (because the column had gaps) is written without
    ``.0``, so that it matches the id the user typed.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _BadValue(f"expected a string or number, got {_type_name(value)}")
    if isinstance(value, Integral) or float(value).is_integer():
        return str(int(value))
    return str(value)


def _parse_contexts(value: object) -> list[str]:
    """Parse ``contexts`` from the shapes the formats produce.

    Parquet and pandas give numpy arrays, CSV can only hold a JSON-encoded list in a string, and
    many logs keep a single retrieved passage as a plain string.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return _contexts_from_text(value)
    if hasattr(value, "tolist"):  # a numpy array
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise _BadValue(f"expected a list of strings, got {_type_name(value)}")
    for item in value:
        if not isinstance(item, str):
            raise _BadValue(f"expected a list of strings, got a list containing {_type_name(item)}")
    return list(value)


def _contexts_from_text(text: str) -> list[str]:
    """Read a JSON list if the text is one, else take the text as the only context.

    Text that starts with ``[`` but is not valid JSON (``[1] Smith et al.``) is a passage.
    """
    if text.lstrip().startswith("["):
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            return [text]
        return _parse_contexts(decoded)
    return [text]


def _parse_context_ids(value: object) -> list[str] | None:
    """Parse ``context_ids``: a list of ids, or that list as JSON text (CSV)."""
    return None if value is None else _parsed(parse_ids, _decoded_ids(value))


def _parse_reference_ids(value: object) -> list[str] | dict[str, int] | None:
    """Parse ``reference_context_ids``: a list of ids or an object of graded ids, or either as
    JSON text (CSV)."""
    return None if value is None else _parsed(parse_grades, _decoded_ids(value))


def _decoded_ids(value: object) -> object:
    """Ids as the formats give them: JSON in a string (CSV), a numpy array (Parquet, pandas),
    integers that pandas widened to floats."""
    value = _json_text(value, "a list of ids")
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_whole(item) for item in value]
    if isinstance(value, Mapping):
        return {_whole(key): item for key, item in value.items()}
    return value


def _whole(item: object) -> object:
    return int(item) if isinstance(item, float) and item.is_integer() else item


def _parse_metadata(value: object) -> dict[str, Any]:
    """Parse a ``metadata`` column: an object, or a JSON-encoded object in a string (CSV)."""
    if value is None:
        return {}
    value = _json_text(value, "an object")
    if not isinstance(value, Mapping):
        raise _BadValue(f"expected an object, got {_type_name(value)}")
    return {key: _plain(item) for key, item in value.items()}


_FIELD_PARSERS: dict[str, Callable[[Any], Any]] = {
    "question": _required_text,
    "contexts": _parse_contexts,
    "answer": _required_text,
    "reference": _parse_reference,
    "history": _parse_history,
    "context_ids": _parse_context_ids,
    "reference_context_ids": _parse_reference_ids,
    "id": _parse_id,
    "metadata": _parse_metadata,
}


def _is_missing(value: object) -> bool:
    """Treat None and NaN alike: NaN is how pandas marks an empty cell."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _plain(value: object) -> Any:
    """Convert numpy values to Python ones, so that metadata can be written back as JSON."""
    if _is_missing(value):
        return None
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _plain(value.tolist())
    return value


def _type_name(value: object) -> str:
    return type(value).__name__


# --- sources --------------------------------------------------------------------------------


def read_rows(source: object) -> Iterator[_Row]:
    """Number the rows of any supported source.

    Not a generator itself, so that a bad path or source type fails when load_samples is
    called rather than midway.
    """
    if isinstance(source, str | PathLike):
        return _read_file(Path(source))
    if _is_dataframe(source):
        return _frame_rows(source)
    # A HuggingFace Dataset iterates as dicts, so it needs no import of `datasets` here.
    if isinstance(source, Iterable) and not isinstance(source, Mapping | bytes):
        return enumerate(source, start=1)
    raise TypeError(
        f"cannot load samples from {_type_name(source)}: expected a path, a pandas DataFrame, "
        "or an iterable of dicts"
    )


def _is_dataframe(source: object) -> bool:
    """Check for a DataFrame without importing pandas: if it is not loaded, there is none."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(source, pandas.DataFrame)


def _read_file(path: Path) -> Iterator[_Row]:
    reader = _FILE_READERS.get(path.suffix.lower())
    if reader is None:
        known = ", ".join(_FILE_READERS)
        raise ValueError(
            f"cannot read {path}: unknown file type {path.suffix!r} (expected one of {known})"
        )
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return reader(path)


def jsonl_rows(path: Path) -> Iterator[_Row]:
    """Yield one row per non-blank line, numbered by file line so errors point at the line: the
    decoded value, or the :class:`DatasetError` saying why the line could not be decoded."""
    # Bytes, so that one line that is not UTF-8 is an error for that line, not for the file.
    with path.open("rb") as lines:
        for row, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf-8-sig" if row == 1 else "utf-8")
            except UnicodeDecodeError as error:
                yield row, DatasetError(row, "<json>", f"not UTF-8 text at byte {error.start + 1}")
                continue
            if line.strip():
                yield row, _decode_line(row, line)


def _decode_line(row: int, line: str) -> object:
    """Decode a JSONL line, returning (not raising) the error so skip mode can go on."""
    try:
        # Without its newline the line is one line of JSON, so the error's column is right.
        return json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as error:
        return DatasetError(row, "<json>", f"invalid JSON: {error.msg} at column {error.colno}")


def _json_rows(path: Path) -> Iterator[_Row]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of objects, got {_type_name(data)}")
    return enumerate(data, start=1)


def _csv_rows(path: Path) -> Iterator[_Row]:
    """Read every cell as text, so ids like ``007`` and answers like ``42`` stay as written.

    Only an empty cell counts as missing; ``NA`` or ``null`` are kept as text.
    """
    import pandas as pd

    frame = pd.read_csv(
        path, dtype=str, keep_default_na=False, na_values=[""], encoding="utf-8-sig"
    )
    return _frame_rows(frame)


def _parquet_rows(path: Path) -> Iterator[_Row]:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ImportError(
            f"reading {path} needs pyarrow: pip install 'ragmeter[parquet]'"
        ) from error
    return enumerate(pq.read_table(path).to_pylist(), start=1)


def _frame_rows(frame: Any) -> Iterator[_Row]:
    """Rows of a DataFrame as dicts, with every kind of pandas missing value turned into None."""
    cleaned = frame.astype(object).where(frame.notna(), None)
    return enumerate(cleaned.to_dict(orient="records"), start=1)


_FILE_READERS: dict[str, Callable[[Path], Iterator[_Row]]] = {
    ".jsonl": jsonl_rows,
    ".ndjson": jsonl_rows,
    ".json": _json_rows,
    ".csv": _csv_rows,
    ".parquet": _parquet_rows,
}
