"""Build hooks of the documentation site (``hooks`` in mkdocs.yml).

A line ``<!-- options MODULE:CLASS -->`` in a page becomes the table of that ``Options`` model:
each option's name, default, accepted values and meaning, read from the model itself, so that
the site says what the code accepts and the meaning of an option is written once, beside it.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt

SRC = Path(__file__).resolve().parent.parent / "src"
MARKER = re.compile(r"^<!-- options ([\w.]+):(\w+) -->$", re.MULTILINE)


def on_config(config: Any) -> Any:
    """Document the tree the site sits in, installed or not."""
    sys.path.insert(0, str(SRC))
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda found: options_table(found[1], found[2]), markdown)


def options_table(module: str, name: str) -> str:
    """The Markdown table of the options model ``module.name``."""
    model = getattr(importlib.import_module(module), name)
    rows = ["| option | default | values | what it does |", "|---|---|---|---|"]
    for option, field in model.model_fields.items():
        meaning = field.description or ""
        if option in model.operational:
            meaning += " Does not change the outputs (not part of the identity)."
        values = _values(field.annotation, field.metadata)
        meaning = meaning.replace("|", "\\|")
        rows.append(f"| `{option}` | {_shown(field.default)} | {values} | {meaning} |")
    return "\n".join(rows)


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _values(annotation: Any, metadata: list[Any]) -> str:
    """``a``, ``b`` for a choice, a range for a bounded number, else the type's name; "or
    unset" where None is accepted."""
    kinds = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    optional = type(None) in kinds
    kind = next((k for k in kinds if k is not type(None)), annotation) if kinds else annotation
    if get_origin(kind) is Literal:
        text = ", ".join(f"`{choice}`" for choice in get_args(kind))
    elif kind is bool:
        text = "`true`, `false`"
    else:
        text = _bounded(getattr(kind, "__name__", str(kind)), metadata)
    return text + (", or unset" if optional else "")


KINDS = {"float": "a number", "int": "a whole number", "str": "text"}


def _bounded(kind: str, metadata: list[Any]) -> str:
    """``a number from 0 to 1``, ``a whole number >= 1``, ``text``."""
    low = next((m.ge for m in metadata if isinstance(m, Ge)), None)
    high = next((m.le for m in metadata if isinstance(m, Le)), None)
    bounds = [f">= {low}"] if low is not None else []
    bounds += [f"> {m.gt}" for m in metadata if isinstance(m, Gt)]
    bounds += [f"<= {high}"] if high is not None else []
    bounds += [f"< {m.lt}" for m in metadata if isinstance(m, Lt)]
    name = KINDS.get(kind, kind)
    if low is not None and high is not None and len(bounds) == 2:
        return f"{name} from {low} to {high}"
    return " ".join([name, *bounds])
