"""OTLP JSON files: the OpenTelemetry file exporter's format, read as OpenInference spans.

A file holds one ``ExportTraceServiceRequest`` in JSON (``{"resourceSpans": [...]}``), or one
per line as the OpenTelemetry Collector's file exporter writes them. Ids are hex, as OTLP/JSON
has them, or base64, as a protobuf JSON printer writes bytes; attribute values are OTLP's
``AnyValue`` objects. Needs nothing beyond ragmeter itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from ragmeter.data import DatasetError, jsonl_rows
from ragmeter.traces.openinference import span_from_attributes
from ragmeter.traces.spans import Span, TraceSet, samples_from_spans

_ERROR_CODES = (2, "STATUS_CODE_ERROR", "ERROR")


def read_otlp(path: str | PathLike[str]) -> TraceSet:
    """The samples of the traces in an OTLP JSON file (see the module docstring).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a line (or the file) is not JSON, or holds no ``resourceSpans``.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no such file: {file}")
    spans = list(_spans(file))
    return samples_from_spans(spans, source={"source": "otlp", "file": str(file)})


def _requests(file: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Each export request in the file, with the line it starts on."""
    text = file.read_text(encoding="utf-8-sig")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, Mapping):
        yield 1, whole
        return
    for number, request in jsonl_rows(file):
        if isinstance(request, DatasetError):
            raise ValueError(f"{file}, line {number}: {request.reason}")
        if not isinstance(request, Mapping):
            raise ValueError(f"{file}, line {number}: expected an object with 'resourceSpans'")
        yield number, request


def _spans(file: Path) -> Iterator[Span]:
    for number, request in _requests(file):
        resources = request.get("resourceSpans", request.get("resource_spans"))
        if not isinstance(resources, list):
            raise ValueError(f"{file}, line {number}: no 'resourceSpans' in the object")
        for resource in resources:
            for scope in resource.get("scopeSpans", resource.get("scope_spans", [])):
                for span in scope.get("spans", []):
                    yield _span(span)


def _span(span: Mapping[str, Any]) -> Span:
    attributes = {
        item["key"]: any_value(item.get("value", {})) for item in span.get("attributes", [])
    }
    status = span.get("status") or {}
    error = None
    if status.get("code") in _ERROR_CODES:
        error = status.get("message") or _exception_message(span) or ""
    return span_from_attributes(
        trace_id=hex_id(span.get("traceId", span.get("trace_id", ""))),
        span_id=hex_id(span.get("spanId", span.get("span_id", ""))),
        parent_id=hex_id(span.get("parentSpanId", span.get("parent_span_id", ""))) or None,
        name=str(span.get("name", "")),
        attributes=attributes,
        start_ns=int(span.get("startTimeUnixNano", span.get("start_time_unix_nano", 0)) or 0),
        error=error,
    )


def _exception_message(span: Mapping[str, Any]) -> str | None:
    """The message of the span's ``exception`` event, where a failed span has no status text."""
    for event in span.get("events", []):
        if event.get("name") == "exception":
            for item in event.get("attributes", []):
                if item.get("key") == "exception.message":
                    return str(any_value(item.get("value", {})))
    return None


def any_value(value: Mapping[str, Any]) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])  # a string in OTLP/JSON: 64-bit integers
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [any_value(item) for item in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {
            item["key"]: any_value(item.get("value", {}))
            for item in value["kvlistValue"].get("values", [])
        }
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def hex_id(value: str) -> str:
    """A trace or span id as lowercase hex: as OTLP/JSON writes it, or from base64."""
    if not value:
        return ""
    if len(value) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value
