"""The measured curves that ship beside the verifier's head (learning, ratings, decisions), or
one a user names, read as JSON and checked for their format."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any


class CurveError(ValueError):
    """A curve file that cannot be read."""


def read_curve(
    path: Path | None, shipped: str, formats: tuple[str, ...], what: str
) -> tuple[dict[str, Any], str] | None:
    """The curve in ``path``, else the file ``shipped`` with ragmeter (None where none ships),
    with where it came from; ``CurveError`` names the file where it is not JSON or its
    ``format`` is none of ``formats`` (``what`` says what was expected)."""
    if path is None:
        resource = resources.files("ragmeter.judges").joinpath(shipped)
        if not resource.is_file():
            return None
        text, source = resource.read_text(), f"the {what} shipped with ragmeter"
    else:
        try:
            text, source = path.read_text(), str(path)
        except OSError as exc:
            raise CurveError(f"cannot read the {what} {path}: {exc}") from None
    try:
        curve = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CurveError(f"{source}: not JSON: {exc}") from None
    if not isinstance(curve, dict) or curve.get("format") not in formats:
        named = " or ".join(repr(f) for f in formats)
        raise CurveError(f"{source}: not a {what} (its 'format' is not {named})")
    return curve, source
