"""Reading the retrieval files line by line, with errors that say where: the file and the line.

A qrels file or a run of 10,000 queries is fixed in an editor, so every problem names the line
(from 1) to go to, and a duplicate names the line it repeats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


class RetrievalFileError(ValueError):
    """A file that cannot be read as the format it is given for; the message names the file and
    the line."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The file's non-blank lines, each with its number (from 1) and without its line break.

    Raises:
        FileNotFoundError: there is no such file.
        RetrievalFileError: a line that is not UTF-8 text.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    # Bytes, so that a line that is not UTF-8 is an error naming that line.
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise RetrievalFileError(
                    path, number, f"not UTF-8 text at byte {error.start + 1}"
                ) from None
            if line.strip():
                yield number, line.rstrip("\r\n")


def json_objects(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The objects of a JSONL file, each with its line number."""
    for number, line in text_lines(path):
        try:
            found = json.loads(line)
        except json.JSONDecodeError as error:
            raise RetrievalFileError(
                path, number, f"invalid JSON: {error.msg} at column {error.colno}"
            ) from None
        if not isinstance(found, dict):
            raise RetrievalFileError(
                path, number, f"expected a JSON object, got {type(found).__name__}"
            )
        yield number, found


def id_field(path: Path, number: int, row: Mapping[str, Any], names: tuple[str, ...]) -> str:
    """The id under the first of ``names`` the row has, as text (an integer id is read as its
    digits); an error naming the line when it has none or it is not a string or an integer."""
    name = next((n for n in names if n in row), None)
    if name is None:
        raise RetrievalFileError(path, number, f"no {' or '.join(map(repr, names))} field")
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise RetrievalFileError(
            path,
            number,
            f"field {name!r}: expected a non-empty string or an integer, got {value!r}",
        )
    return str(value)


class FirstSeen:
    """The line each key was first read on, to name it when a later line repeats the key."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self.lines: dict[Any, int] = {}

    def add(self, key: Any, number: int, shown: str) -> None:
        first = self.lines.setdefault(key, number)
        if first != number:
            raise RetrievalFileError(
                self.path, number, f"{shown} is {self.what} again (first on line {first})"
            )
