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

from pathlib import Path

from pydantic import ValidationError

from ragmeter.config_file import CONFIG_FILE, CRITERIA_TABLE, PYPROJECT, ConfigFile, ConfigFileError
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
    """The criteria of a TOML file, in the file's order; in a settings file (``ragmeter.toml``,
    ``pyproject.toml``), those of its ``[criteria]`` section."""
    try:
        file = ConfigFile.read(path, "the criteria file")
    except ConfigFileError as exc:
        raise CriteriaError(str(exc)) from None
    section = (CRITERIA_TABLE,) if path.name in (CONFIG_FILE, PYPROJECT) else ()
    tables = file.table(*section) or {}
    if not tables:
        header = ".".join([*section, "NAME"])
        raise CriteriaError(f"{path}: no criterion in the file (one [{header}] table each)")
    criteria = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise CriteriaError(
                f"{file.where(*section, name)}: {name!r} must be a table: [NAME] followed by "
                "its fields"
            )
        try:
            criteria.append(Criterion.model_validate({"name": name, **table}))
        except ValidationError as exc:
            field = _field_of(exc)
            named = f", field {field!r}" if field else ""
            where = file.where(*section, name, *([field] if field else []))
            raise CriteriaError(f"{where}: criterion {name!r}{named}: {_problem(exc)}") from None
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
