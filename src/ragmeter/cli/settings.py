"""The settings file on the command line: each command's table in ``ragmeter.toml`` (or
``[tool.ragmeter]`` in ``pyproject.toml``) becomes that command's defaults, so that an option
given on the command line overrides it and the command can say which values came from where.

The whole file is checked against the commands before any of them runs: an unknown table or
key is refused with the nearest valid name, a value of the wrong type with the file, the line and
the key, and nothing is judged.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperGroup, TyperOption

from ragmeter.config import parse_value
from ragmeter.config_file import CRITERIA_TABLE, ConfigFile, ConfigFileError, find_config_file

SETTINGS_FILE = "ragmeter.settings_file"
"""Where the file read is kept in ``ctx.meta``, which every command's context shares."""
FROM_FILE = "DEFAULT_MAP"
"""The source click gives a value taken from ``ctx.default_map``, which holds the file's."""
DATA_KEY = "data"
"""The key that gives a command's first argument (its samples file)."""
PAIRS_IN_ONE_TEXT = frozenset({"columns"})
"""Options that take their NAME=VALUE pairs comma-separated in one text, which a table gives."""


def apply_settings_file(ctx: typer.Context, path: Path | None) -> None:
    """Read ``path``, or the settings file of the working folder, into ``ctx.default_map``."""
    file = ConfigFile.read(path) if path is not None else find_config_file(Path.cwd())
    if file is None:
        return
    defaults = _group_defaults(file, ctx.command, ())
    if file.table(CRITERIA_TABLE):  # the file's criteria go wherever criteria are taken
        _default_criteria(ctx.command, defaults, file.path)
    ctx.default_map = defaults
    ctx.meta[SETTINGS_FILE] = file


def say_sources(ctx: typer.Context, console: Console) -> None:
    """One line naming the values the settings file gave and those the command line gave."""
    file: ConfigFile | None = ctx.meta.get(SETTINGS_FILE)
    if file is None:
        return
    sources: dict[str, list[str]] = {}
    for name, key in _keys(ctx.command).items():
        source = ctx.get_parameter_source(name)
        if source is not None:
            sources.setdefault(source.name, []).append(key)
    from_file = sources.get(FROM_FILE, [])
    given = sources.get("COMMANDLINE", [])
    console.print(
        f"settings from {file.path}: {', '.join(from_file) or 'none'}; "
        f"from the command line: {', '.join(given) or 'none'}",
        soft_wrap=True,
        highlight=False,
    )


def where_from(ctx: typer.Context, name: str) -> str:
    """``"ragmeter.toml, line 7: "`` where the value of parameter ``name`` came from the
    settings file, else ``""``: the start of an error about that value."""
    file: ConfigFile | None = ctx.meta.get(SETTINGS_FILE)
    source = ctx.get_parameter_source(name)
    if file is None or source is None or source.name != FROM_FILE:
        return ""
    table = ctx.command_path.split()[1:]
    return f"{file.where(*table, _keys(ctx.command)[name])}: "


def _group_defaults(file: ConfigFile, group: Any, names: tuple[str, ...]) -> dict:
    table = file.table(*names) or {}
    defaults: dict[str, Any] = {}
    for name, value in table.items():
        if not names and name == CRITERIA_TABLE:
            continue
        command = group.commands.get(name)
        if command is None:
            raise ConfigFileError(
                f"{file.where(*names, name)}: no command {_dotted(*names, name)!r}"
                + _nearest(name, [*group.commands, *([] if names else [CRITERIA_TABLE])])
            )
        if not isinstance(value, dict):
            raise ConfigFileError(
                f"{file.where(*names, name)}: {_dotted(*names, name)} must be a table "
                f"([{_dotted(*names, name)}]) of the command's options"
            )
        if isinstance(command, TyperGroup):
            defaults[name] = _group_defaults(file, command, (*names, name))
        else:
            defaults[name] = _command_defaults(file, command, (*names, name), value)
    return defaults


def _command_defaults(
    file: ConfigFile, command: Any, names: tuple[str, ...], table: dict[str, Any]
) -> dict[str, Any]:
    params = _params_by_key(command)
    check = typer.Context(command)
    defaults = {}
    for key, value in table.items():
        where = f"{file.where(*names, key)}: {key}"
        param = params.get(key)
        if param is None:
            raise ConfigFileError(
                f"{where}: not an option of ragmeter {' '.join(names)}" + _nearest(key, params)
            )
        given = _as_given(param, value, file.path.parent)
        if given is None:
            raise ConfigFileError(f"{where}: {_shape_problem(param, value)}")
        try:
            param.process_value(check, given)
        except typer.BadParameter as exc:
            raise ConfigFileError(f"{where}: {exc.message}") from None
        defaults[param.name or key] = given
    return defaults


def _params_by_key(command: Any) -> dict[str, Any]:
    """The keys a command's table may hold: each option's name with underscores, and ``data``
    (or the argument's own name) for its first argument."""
    params: dict[str, Any] = {}
    for param in command.params:
        if isinstance(param, TyperOption) and (param.hidden or param.name == "help"):
            continue
        params[_key_of(param)] = param
        if isinstance(param, TyperArgument) and DATA_KEY not in params:
            params[DATA_KEY] = param
    return params


def _keys(command: Any) -> dict[str, str]:
    """Each parameter's key in the file, by the parameter's name (``data`` for the first
    argument)."""
    keys: dict[str, str] = {}
    for key, param in _params_by_key(command).items():
        if key == DATA_KEY or param.name not in keys:
            keys[param.name] = key
    return keys


def _key_of(param: Any) -> str:
    longest = max(param.opts, key=len) if isinstance(param, TyperOption) else ""
    return longest.lstrip("-").replace("-", "_") if longest.startswith("--") else param.name or ""


def _as_given(param: Any, value: Any, folder: Path) -> Any:
    """``value`` as the command line would give it: a table of options as ``NAME=VALUE`` items
    (``METRIC.PARAM=VALUE`` one level down), a list as comma-separated text where the option
    takes one text, a relative path from the file's folder; None where it cannot be given."""
    many = param.multiple or param.nargs != 1
    if isinstance(value, dict):
        items = [f"{name}={_text(item)}" for name, item in _flattened(value)]
        return items if many else ",".join(items) if param.name in PAIRS_IN_ONE_TEXT else None
    if isinstance(value, list):
        if many:
            return [_path(param, item, folder) for item in value]
        return ",".join(map(str, value)) if _is_text(param) else None
    if many:
        return [_path(param, value, folder)]
    return _path(param, value, folder)


def _flattened(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items = []
    for name, value in table.items():
        if isinstance(value, dict):
            items.extend(_flattened(value, f"{prefix}{name}."))
        else:
            items.append((f"{prefix}{name}", value))
    return items


def _text(value: Any) -> str:
    """A value as ``NAME=VALUE`` carries it: text as written, unless it would read back as
    something else (``"30"``, ``"true"``), which is quoted as JSON; numbers and booleans as
    JSON, so that ``30`` stays a number."""
    if isinstance(value, str) and parse_value(value) == value:
        return value
    return json.dumps(value)


def _is_text(param: Any) -> bool:
    return param.type_descriptor.annotation is str


def _path(param: Any, value: Any, folder: Path) -> Any:
    """A relative path in a file kept elsewhere is read from the file's folder."""
    if (
        param.type_descriptor.is_path
        and isinstance(value, str)
        and ":" not in value  # traces: phoenix:PROJECT, ...
        and not Path(value).is_absolute()
        and folder.resolve() != Path.cwd().resolve()
    ):
        return str(folder / value)
    return value


def _shape_problem(param: Any, value: Any) -> str:
    kind = "a table" if isinstance(value, dict) else "a list"
    return f"{kind} is not a value for this option (give {param.bare_type()})"


def _default_criteria(group: Any, defaults: dict[str, Any], path: Path) -> None:
    for name, command in group.commands.items():
        if isinstance(command, TyperGroup):
            _default_criteria(command, defaults.setdefault(name, {}), path)
        elif any(p.name == CRITERIA_TABLE for p in command.params):
            defaults.setdefault(name, {}).setdefault(CRITERIA_TABLE, str(path))


def _nearest(name: str, names: Any) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _dotted(*names: str) -> str:
    return ".".join(names)
