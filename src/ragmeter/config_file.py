"""The settings file kept beside the data: ``ragmeter.toml``, or ``[tool.ragmeter]`` in
``pyproject.toml``, in the folder a command runs from.

It holds a table per command (``[evaluate]``, ``[compare]``, ``[meta.openqa]``...) whose keys are
that command's option names with underscores, and may hold the criteria (``[criteria.NAME]``
tables, as a criteria file has them). Every problem is an error that names the file and the line.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "ragmeter.toml"
PYPROJECT = "pyproject.toml"
CRITERIA_TABLE = "criteria"


class ConfigFileError(ValueError):
    """A settings file that cannot be used; the message names the file, the line and the key."""


@dataclass(frozen=True)
class ConfigFile:
    """A settings file as read: its path, its tables (``tool.ragmeter``'s, in a pyproject) and
    its lines, to say where a key stands."""

    path: Path
    tables: dict[str, Any]
    lines: list[str]
    prefix: tuple[str, ...] = ()
    """The tables the settings sit under in the file: ("tool", "ragmeter") in a pyproject."""

    @classmethod
    def read(cls, path: Path, what: str = "") -> ConfigFile:
        """The file at ``path``; ``what`` names it in the error where it cannot be read (``"the
        criteria file"``)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            named = f"{what} {path}" if what else str(path)
            raise ConfigFileError(f"cannot read {named}: {exc.strerror}") from None
        try:
            tables = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
        prefix: tuple[str, ...] = ()
        if path.name == PYPROJECT:
            prefix = ("tool", "ragmeter")
            tables = tables.get("tool", {}).get("ragmeter", {})
        return cls(path, tables, text.splitlines(), prefix)

    def table(self, *names: str) -> dict[str, Any] | None:
        """The table at ``names`` (``("meta", "openqa")``), None where the file has none."""
        table: Any = self.tables
        for name in names:
            table = table.get(name) if isinstance(table, dict) else None
        return table if isinstance(table, dict) else None

    def where(self, *names: str) -> str:
        """``"ragmeter.toml, line 7"`` for the key or table at ``names``; the table's own line
        where the key is not written on a line of its own."""
        line = self.line_of(*names)
        return f"{self.path}, line {line}" if line else str(self.path)

    def line_of(self, *names: str) -> int:
        full = [*self.prefix, *names]
        for split in range(len(full), -1, -1):  # [a.b] then key = ..., or [a] then b.key = ...
            table, key = full[:split], full[split:]
            header = _header_line(self.lines, table) if table else 1
            if not header:
                continue
            if not key:
                return header
            end = _next_header(self.lines, header) if table else len(self.lines) + 1
            dotted = r"\s*\.\s*".join(re.escape(part) for part in key)
            found = _line_of(self.lines[: end - 1], rf"^\s*[\"']?{dotted}[\"']?\s*=", header)
            if found:
                return found
        below = _header_line(self.lines, full, below=True)  # [a.b.c] holds a.b's keys
        return below or (_header_line(self.lines, full[:-1]) if len(full) > 1 else 0)


def find_config_file(folder: Path) -> ConfigFile | None:
    """``ragmeter.toml`` in ``folder``, else a ``pyproject.toml`` there with ``[tool.ragmeter]``;
    None where neither is."""
    path = folder / CONFIG_FILE
    if path.is_file():
        return ConfigFile.read(path)
    path = folder / PYPROJECT
    if path.is_file():
        found = ConfigFile.read(path)
        return found if found.tables else None
    return None


def _line_of(lines: list[str], pattern: str, after: int = 0) -> int:
    """The 1-based number of the first line at or after ``after`` matching ``pattern``; 0 if
    none does."""
    compiled = re.compile(pattern)
    for number, line in enumerate(lines[max(after - 1, 0) :], max(after, 1)):
        if compiled.search(line):
            return number
    return 0


_HEADER = re.compile(r"^\s*\[[^\]=]+\]\]?\s*(#.*)?$")


def _next_header(lines: list[str], header: int) -> int:
    return next(
        (n for n in range(header + 1, len(lines) + 1) if _HEADER.match(lines[n - 1])),
        len(lines) + 1,
    )


def _header_line(lines: list[str], table: list[str], below: bool = False) -> int:
    """The line of the header of ``table``, or with ``below`` of the first table inside it."""
    parts = r"\s*\.\s*".join(rf"[\"']?{re.escape(part)}[\"']?" for part in table)
    end = r"\s*\." if below else r"\s*\]"
    return _line_of(lines, rf"^\s*\[\s*{parts}{end}")
