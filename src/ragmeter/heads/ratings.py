"""A person's ratings of a run's samples, read from a file and checked against the run.

The ratings file is JSONL or CSV, one row per sample: an ``id`` field (the run's sample id) and
a field per metric holding the person's rating (empty or null: not rated). Every problem is
refused with its row and field named: an id the run does not hold, an id given twice, a field
that is not one of the run's metrics, a value that is not a number or lies off the stated scale.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragmeter.data import DatasetError, jsonl_rows
from ragmeter.result import Result

ID_FIELD = "id"
NAMED_SCALES = {"binary": (0.0, 1.0)}
SHOWN_PROBLEMS = 5
"""Problems of a ratings file listed in its error; the rest are counted."""


class LabelsError(ValueError):
    """A ratings file that cannot be used as it is; the message names the row and the field."""

    @classmethod
    def listing(cls, path: Path, problems: Sequence[str]) -> LabelsError:
        """The file's first ``SHOWN_PROBLEMS`` problems, and how many more."""
        more = len(problems) - SHOWN_PROBLEMS
        return cls(
            f"{path}: "
            + "; ".join(problems[:SHOWN_PROBLEMS])
            + (f"; and {more} more problem(s)" if more > 0 else "")
        )


class Scale(BaseModel):
    """The range of a person's ratings of one metric: stated by the user, or inferred from the
    ratings (the smallest whole-number range holding them)."""

    low: float
    high: float
    stated: bool

    @property
    def text(self) -> str:
        return f"{_number(self.low)}-{_number(self.high)}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def parse_scale(text: str) -> Scale:
    """``"1-4"``, ``"0-1"``, ``"1-5"``, ``"binary"`` -> a stated ``Scale``."""
    cleaned = text.strip().lower()
    if cleaned in NAMED_SCALES:
        low, high = NAMED_SCALES[cleaned]
        return Scale(low=low, high=high, stated=True)
    low_text, sep, high_text = cleaned.partition("-")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        low = high = math.nan
    if not sep or not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise ValueError(f"scale {text!r}: use LOW-HIGH with LOW < HIGH (e.g. 1-4) or 'binary'")
    return Scale(low=low, high=high, stated=True)


def parse_scales(items: Sequence[str] | None) -> dict[str | None, Scale]:
    """``["faithfulness=1-4", "0-1"]`` -> a scale per metric; the key ``None`` holds the scale of
    every metric not named."""
    scales: dict[str | None, Scale] = {}
    for item in items or []:
        metric, sep, text = item.rpartition("=")
        if sep and not metric.strip():
            raise ValueError(f"--scale {item!r}: use METRIC=LOW-HIGH or LOW-HIGH")
        scales[metric.strip() or None] = parse_scale(text)
    return scales


@dataclass
class Labels:
    """A person's ratings read from one file: per metric, sample id -> rating."""

    path: Path
    ratings: dict[str, dict[str, float]]
    scales: dict[str, Scale]
    rows: int
    rows_of: dict[str, int] = field(default_factory=dict)
    """The row each sample id was read from, for messages."""


def read_labels(
    path: str | Path,
    sample_ids: Sequence[str],
    metrics: Sequence[str],
    scales: Mapping[str | None, Scale] | None = None,
    *,
    described_by: Sequence[str] = (),
) -> Labels:
    """Read and check a ratings file against the run's sample ids and metrics; ``LabelsError``
    names each bad row and field (the first few, and how many more). ``described_by``: fields
    that describe a row rather than rate it (which system answered, say), passed over."""
    source = Path(path)
    known, wanted = set(sample_ids), list(metrics)
    stated = dict(scales or {})
    unknown_scales = [m for m in stated if m is not None and m not in wanted]
    if unknown_scales:
        raise LabelsError(
            f"--scale names {', '.join(map(str, unknown_scales))}, not a metric of the run "
            f"({', '.join(wanted)})"
        )
    problems: list[str] = []
    ratings: dict[str, dict[str, float]] = {m: {} for m in wanted}
    rows_of: dict[str, int] = {}
    rows = read_rows(source)
    for number, row in rows:
        raw_id = row.get(ID_FIELD)
        if raw_id is None or str(raw_id).strip() == "":
            problems.append(f"row {number}, field {ID_FIELD!r}: missing")
            continue
        key = str(raw_id).strip()
        if key not in known:
            problems.append(f"row {number}, field {ID_FIELD!r}: sample {key!r} is not in the run")
            continue
        if key in rows_of:
            problems.append(
                f"row {number}, field {ID_FIELD!r}: sample {key!r} again (first in row "
                f"{rows_of[key]})"
            )
            continue
        rows_of[key] = number
        for name, value in row.items():
            if name == ID_FIELD or name in described_by:
                continue
            if name not in ratings:
                problems.append(
                    f"row {number}, field {name!r}: not a metric of the run ({', '.join(wanted)})"
                )
                continue
            rating = _rating(value)
            if isinstance(rating, str):
                problems.append(f"row {number}, field {name!r}: {rating}")
                continue
            if rating is None:
                continue
            scale = stated.get(name) or stated.get(None)
            if scale is not None and not scale.low <= rating <= scale.high:
                problems.append(
                    f"row {number}, field {name!r}: {_number(rating)} is off the scale {scale.text}"
                )
                continue
            ratings[name][key] = rating
    if problems:
        raise LabelsError.listing(source, problems)
    found = {m: values for m, values in ratings.items() if values}
    if not found:
        raise LabelsError(
            f"{source}: no rating of any metric of the run ({', '.join(wanted)}); each row needs "
            f"an {ID_FIELD!r} and a field named after a metric"
        )
    return Labels(
        path=source,
        ratings=found,
        scales={m: stated.get(m) or stated.get(None) or _inferred(v) for m, v in found.items()},
        rows=len(rows),
        rows_of=rows_of,
    )


def read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, fields): JSONL rows numbered by line, CSV rows by line with the header as
    line 1, as a spreadsheet shows them."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise LabelsError(f"{path}: give ratings as .jsonl or .csv")
    try:
        if suffix == ".csv":
            reader = csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines())
            if not reader.fieldnames or ID_FIELD not in reader.fieldnames:
                raise LabelsError(f"{path}: row 1: the header needs an {ID_FIELD!r} column")
            return [(number, dict(row)) for number, row in enumerate(reader, 2)]
        found = list(jsonl_rows(path))
    except OSError as exc:
        raise LabelsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    rows = []
    for number, row in found:
        if isinstance(row, DatasetError):
            raise LabelsError(f"{path}: row {number}: {row.reason}")
        if not isinstance(row, dict):
            raise LabelsError(f"{path}: row {number}: not a JSON object")
        rows.append((number, row))
    return rows


def _rating(value: Any) -> float | str | None:
    """The rating as a number, None when not rated, or why it is not one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a number"
    return number if math.isfinite(number) else f"{value!r} is not a finite number"


def _inferred(ratings: Mapping[str, float]) -> Scale:
    values = list(ratings.values())
    low, high = math.floor(min(values)), math.ceil(max(values))
    return Scale(low=low, high=high if high > low else low + 1, stated=False)


def ratings_for_runs(
    results: Sequence[Result],
    files: Sequence[Path],
    scales: Mapping[str | None, Scale] | None = None,
) -> list[Labels]:
    """Each run's ratings: one file for every run, or one per run, read against the run's
    samples and metrics; one file for several runs only where they answered the rated samples
    alike."""
    if len(files) not in (1, len(results)):
        raise ValueError(
            f"{len(files)} --labels files for {len(results)} runs: give one for all runs or one "
            "per run"
        )
    paths = list(files) * len(results) if len(files) == 1 else list(files)
    found = [
        read_labels(path, [s.key for s in result.samples], result.metrics, scales)
        for path, result in zip(paths, results, strict=True)
    ]
    if len(files) == 1:
        for other, ratings in zip(results[1:], found[1:], strict=True):
            check_shared_labels(results[0], other, ratings)
    return found


def check_shared_labels(a: Result, b: Result, labels: Labels) -> None:
    """One ratings file rates one answer per sample: refuse it for two runs that answered a
    rated sample differently (each run then needs its own file)."""
    answers_a = {s.key: s.answer for s in a.samples}
    answers_b = {s.key: s.answer for s in b.samples}
    rated = {k for values in labels.ratings.values() for k in values}
    differ = sorted(k for k in rated if answers_a.get(k, "") != answers_b.get(k, ""))
    if differ:
        row = labels.rows_of.get(differ[0], "?")
        raise LabelsError(
            f"{labels.path}: row {row}, field {ID_FIELD!r}: the two runs answer sample "
            f"{differ[0]!r} differently ({len(differ)} rated sample(s) in all), so one rating "
            "cannot stand for both; give a ratings file per run (--labels A --labels B)"
        )
