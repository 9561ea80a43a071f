"""Adapters from RAG frameworks to ragmeter: a framework's outputs as ``Sample`` objects, and its
pipeline run over a list of questions and evaluated. One module per framework; each imports the
framework only when called, and says which extra installs it when it is missing.

An adapter reads the framework's objects into plain records (question, contexts, answer) and
hands them to ``load_samples``, so that they are checked, and their errors worded, as a file's
rows are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ragmeter.data import DatasetError, load_samples
from ragmeter.sample import Sample


@contextmanager
def importing(adapter: str, package: str, extra: str) -> Iterator[None]:
    """Around an adapter's import of its framework, done when the adapter is first called: a
    framework that is not installed is an ``ImportError`` that says which extra installs it."""
    try:
        yield
    except ImportError as exc:
        raise ImportError(
            f"the {adapter} adapter needs {package}: pip install 'ragmeter[{extra}]'"
        ) from exc


def samples_from_records(records: Sequence[dict[str, Any]], first_row: int = 1) -> list[Sample]:
    """Samples from plain records; an error names the row counted from ``first_row``."""
    try:
        return load_samples(records).samples
    except DatasetError as error:
        raise DatasetError(error.row + first_row - 1, error.field, error.reason) from None


def type_name(value: object) -> str:
    """How an error names a value's type: ``a dict``, ``an AIMessage``, ``None``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return ("an " if name[0].lower() in "aeiou" else "a ") + name
