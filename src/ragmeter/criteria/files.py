"""Criteria from where people write them: a TOML file kept beside the data, or one yes/no
question on the command line (``--criterion "declines=Does the answer decline ...?"``).

A criteria file has one table per criterion, named by it::

    [declines]
    question = "Does the answer decline when the context does not hold the answer?"

    [format]
    kind = "checklist"
    question = "The answer follows the product's format."
    requirements = [
      { text = "It opens with a one-sentence answer.", weight = 2 },
      { text = "It quotes a policy number not in the context.", weight = -3 },
    ]

Every problem is an error that names the file, the line and the field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from ragmeter.criteria.definition import Criterion, FieldProblem


class CriteriaError(ValueError):
    """A criteria file or ``--criterion`` that cannot be used; the message says where."""


def parse_criterion_flag(text: str) -> Criterion:
    """``"NAME=QUESTION"`` -> a yes/no criterion reading the question, contexts and answer."""
    name, sep, question = text.partition("=")
    if not sep or not name.strip() or not question.strip():
        raise CriteriaError(f"--criterion {text!r}: use NAME=QUESTION")
    try:
        return Criterion(name=name.strip(), question=question.strip())
    except ValidationError as exc:
        raise CriteriaError(f"--criterion {text!r}: {_problem(exc)}") from None


def load_criteria(path: Path) -> list[Criterion]:
    """The criteria of a TOML file, in the file's order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CriteriaError(f"cannot read the criteria file {path}: {exc.strerror}") from None
    try:
        tables = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CriteriaError(f"{path}: not valid TOML: {exc}") from None
    if not tables:
        raise CriteriaError(f"{path}: no criterion in the file (one [NAME] table each)")
    lines = text.splitlines()
    criteria = []
    for name, table in tables.items():
        where = _line_of(lines, rf"\[\s*[\"']?{re.escape(name)}[\"']?\s*\]")
        if not isinstance(table, dict):
            raise CriteriaError(
                f"{path}, line {_line_of(lines, re.escape(name))}: {name!r} "
                "must be a table: [NAME] followed by its fields"
            )
        try:
            criteria.append(Criterion.model_validate({"name": name, **table}))
        except ValidationError as exc:
            field = _field_of(exc)
            line = _field_line(lines, field, where) if field else where
            named = f", field {field!r}" if field else ""
            raise CriteriaError(
                f"{path}, line {line or where}: criterion {name!r}{named}: {_problem(exc)}"
            ) from None
    return criteria


def _field_of(exc: ValidationError) -> str:
    """The field a validation error is about: its location, or the field a check of the
    whole definition names (``FieldProblem``)."""
    error = exc.errors()[0]
    if error["loc"]:
        return str(error["loc"][0])
    cause = error.get("ctx", {}).get("error")
    return cause.field if isinstance(cause, FieldProblem) else ""


def _problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"][1:])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def _field_line(lines: list[str], field: str, table: int) -> int:
    """The line of ``field`` within the table whose header is at line ``table`` (up to the next
    header); the header's line where the field is not written there (a missing one, or a
    table written another way)."""
    header = re.compile(r"^\s*\[[^\]=]+\]\]?\s*(#.*)?$")
    end = next(
        (n for n in range(table + 1, len(lines) + 1) if header.match(lines[n - 1])),
        len(lines) + 1,
    )
    found = _line_of(lines[: end - 1], rf"^\s*{re.escape(field)}\s*=", after=table) if table else 0
    return found or table


def _line_of(lines: list[str], pattern: str, after: int = 0) -> int:
    """The 1-based number of the first line at or after ``after`` matching ``pattern``; 0 if
    none does."""
    compiled = re.compile(pattern)
    for number, line in enumerate(lines[max(after - 1, 0) :], max(after, 1)):
        if compiled.search(line):
            return number
    return 0
