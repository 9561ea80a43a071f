"""OpenInference spans: the attribute names that OpenInference instrumentation writes (and
Phoenix stores) read into :class:`~ragmeter.traces.spans.Span` objects.

The conventions used: ``openinference.span.kind``; ``input.value``/``input.mime_type`` and
``output.value``/``output.mime_type``; a retriever's documents as
``retrieval.documents.N.document.content``; ``session.id``. Attributes come flat
(``"input.value"``) from OTLP and from Phoenix's REST API, or nested (``{"input": {"value":
...}}``) from some exports; both are read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragmeter.traces.spans import Span, decode

KIND = "openinference.span.kind"
_DOCUMENT = re.compile(r"^retrieval\.documents\.(\d+)\.document\.content$")


def flatten(attributes: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested attribute objects as dotted names: ``{"input": {"value": 1}}`` ->
    ``{"input.value": 1}``; a list of objects (``retrieval.documents``) is numbered."""
    flat: dict[str, Any] = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for index, item in enumerate(value):
                flat.update(flatten(item, f"{name}.{index}."))
        else:
            flat[name] = value
    return flat


def span_from_attributes(
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    attributes: Mapping[str, Any],
    start_ns: int = 0,
    kind: str | None = None,
    error: str | None = None,
) -> Span:
    """A span from its OpenInference attributes; ``kind`` where the source gives it apart from
    the attributes (Phoenix's ``span_kind``), ``error`` the status message of a failed span."""
    flat = flatten(attributes)
    documents = sorted(
        (int(match.group(1)), value)
        for key, value in flat.items()
        if (match := _DOCUMENT.match(key)) and isinstance(value, str)
    )
    session = flat.get("session.id")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id or None,
        name=name,
        kind=str(flat.get(KIND) or kind or "UNKNOWN").upper(),
        start_ns=start_ns,
        input=decode(flat.get("input.value"), flat.get("input.mime_type")),
        output=decode(flat.get("output.value"), flat.get("output.mime_type")),
        documents=tuple(text for _, text in documents),
        error=error,
        session=str(session) if session is not None else None,
    )
