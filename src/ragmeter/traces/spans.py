"""Traces as samples: the spans of one request read as a question, its contexts and its answer.

Every source (an OTLP file, Phoenix, MLflow) turns its spans into :class:`Span` objects, and
:func:`samples_from_spans` reads them all the same way: the question from the root span's input,
the contexts from the documents of the retriever spans under it, in the order retrieved, and the
answer from the root span's output. A trace that cannot become a sample is a
:class:`SkippedTrace` with its reason, never dropped without a word.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data import load_samples
from ragmeter.sample import Sample, Turn

QUESTION_KEYS = ("question", "input", "query", "user_input", "prompt", "messages")
"""Where a structured root input holds the question, best first (a LangChain chain's dict, an
OpenAI-style request's ``messages``)."""
ANSWER_KEYS = ("answer", "result", "output", "response", "content", "text", "choices")
"""Where a structured root output holds the answer, best first."""
HISTORY_KEYS = ("chat_history", "history", "conversation_history")
"""Where a structured root input holds the earlier turns of a conversation."""
DOCUMENT_TEXT_KEYS = ("page_content", "content", "text")
"""Where a retrieved document, given as an object, holds its text."""


@dataclass(frozen=True)
class Span:
    """One span of a trace, in the terms every source shares.

    ``kind`` is the OpenInference span kind (``CHAIN``, ``RETRIEVER``, ``LLM``...); MLflow's span
    types use the same names. ``input`` and ``output`` are what the span received and returned,
    decoded from JSON where the source said they were JSON.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int = 0
    input: Any = None
    output: Any = None
    documents: tuple[str, ...] = ()
    """The text of each document a retriever span returned, in order."""
    error: str | None = None
    """The status message of a span that ended in an error; None for one that did not."""
    session: str | None = None
    """The conversation (session) the request belongs to, where the trace names one."""
    reference: str | None = None
    """A reference answer recorded with the trace (an MLflow expectation)."""


@dataclass(frozen=True)
class SkippedTrace:
    """A trace that could not become a sample, and why."""

    trace_id: str
    reason: str


@dataclass
class TraceSet:
    """The samples read from traces, the traces left out with their reasons, and where they came
    from (``source``: which server, project or experiment, filter and window), as recorded in the
    run's record.

    ``writer`` puts verdicts back beside the traces (see ``ragmeter.traces.verdicts``); None for a
    source that cannot take them, such as a file.
    """

    samples: list[Sample]
    skipped: list[SkippedTrace] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    writer: Any = None

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def traces(self) -> int:
        """How many traces were read: those that became samples and those left out."""
        return len(self.samples) + len(self.skipped)

    def skipped_reasons(self) -> dict[str, int]:
        """How many traces were left out for each reason (the reason's text before its first
        colon, so that one kind of failure is counted once)."""
        return dict(Counter(skip.reason.split(":")[0] for skip in self.skipped))

    def record(self) -> dict[str, Any]:
        """What the run's record keeps of the traces: where they came from, which were read,
        and which were left out and why."""
        return {
            **self.source,
            "traces_read": self.traces,
            "samples": len(self.samples),
            "trace_ids": [sample.key for sample in self.samples],
            "skipped": [{"trace_id": s.trace_id, "reason": s.reason} for s in self.skipped],
        }


def samples_from_spans(
    spans: Iterable[Span],
    *,
    source: Mapping[str, Any] | None = None,
    writer: Any = None,
    skipped: Iterable[SkippedTrace] = (),
) -> TraceSet:
    """The samples the traces among ``spans`` describe, one per trace, oldest first.

    A trace is left out, with its reason, when it has no root span (it was cut short before its
    first span ended, or the export holds only part of it), when any of its spans ended in an
    error, when it has no retriever span, or when its root span's input holds no question or its
    output no answer. Earlier turns come from the root input's chat history, or else from the
    earlier traces of the same session among those read. ``skipped`` are traces the source
    already left out, reported with the rest.
    """
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    read: list[tuple[int, dict[str, Any]]] = []
    left_out = list(skipped)
    for trace_id, members in by_trace.items():
        found = _read_trace(trace_id, members)
        if isinstance(found, SkippedTrace):
            left_out.append(found)
        else:
            read.append(found)
    read.sort(key=lambda item: item[0])
    records = _with_session_history([record for _, record in read])
    loaded = load_samples(records, on_invalid="skip")
    for invalid in loaded.invalid:
        trace_id = records[invalid.row - 1]["id"]
        left_out.append(SkippedTrace(trace_id, f"field {invalid.field!r}: {invalid.reason}"))
    return TraceSet(loaded.samples, left_out, dict(source or {}), writer)


def _read_trace(trace_id: str, spans: list[Span]) -> tuple[int, dict[str, Any]] | SkippedTrace:
    """The record (question, contexts, answer...) of one trace, keyed by its start, or why not."""
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id is None or span.parent_id not in ids]
    roots.sort(key=lambda span: span.start_ns)
    root = next((span for span in roots if span.parent_id is None), None)
    if root is None:
        return SkippedTrace(
            trace_id,
            "cut short: the trace has no root span (the request never finished, or only part "
            "of it was exported)",
        )
    failed = next((span for span in _ordered(spans) if span.error is not None), None)
    if failed is not None:
        return SkippedTrace(
            trace_id, f"error: span {failed.name!r} ended in an error: {failed.error or '(none)'}"
        )
    retrievers = [span for span in _ordered(spans) if span.kind == "RETRIEVER"]
    if not retrievers:
        return SkippedTrace(trace_id, "no retrieval: the trace has no retriever span")
    question = find_text(root.input, QUESTION_KEYS, role="user")
    if question is None:
        return SkippedTrace(trace_id, f"no question: root span {root.name!r} has no input text")
    answer = find_text(root.output, ANSWER_KEYS, role="assistant")
    if answer is None:
        return SkippedTrace(
            trace_id, f"no output: root span {root.name!r} has no answer (cut short?)"
        )
    record: dict[str, Any] = {
        "id": trace_id,
        "question": question,
        "contexts": [text for span in retrievers for text in span.documents],
        "answer": answer,
        "metadata": {"trace_id": trace_id, "span_id": root.span_id},
    }
    history = _history(root.input)
    if history:
        record["history"] = history
    if root.session is not None:
        record["metadata"]["session_id"] = root.session
    reference = next((span.reference for span in spans if span.reference), None)
    if reference is not None:
        record["reference"] = reference
    return root.start_ns, record


def _ordered(spans: Sequence[Span]) -> list[Span]:
    return sorted(spans, key=lambda span: span.start_ns)


def _with_session_history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each request of a session that carries no history of its own the earlier requests
    of that session (oldest first) as its earlier turns."""
    turns: dict[str, list[Turn]] = {}
    for record in records:
        session = record["metadata"].get("session_id")
        if session is None:
            continue
        earlier = turns.setdefault(session, [])
        if earlier and "history" not in record:
            record["history"] = list(earlier)
        earlier += [
            Turn(role="user", text=record["question"]),
            Turn(role="assistant", text=record["answer"]),
        ]
    return records


# --- reading inputs and outputs -------------------------------------------------------------


def decode(value: Any, mime_type: str | None = None) -> Any:
    """A span's input or output as a value: JSON decoded where it is JSON (said so by its mime
    type, or an object or array by its look), plain text otherwise."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if mime_type == "application/json" or (text[:1] in "[{" and text[-1:] in "]}"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value


def find_text(value: Any, keys: Sequence[str], *, role: str) -> str | None:
    """The question (``role="user"``) or answer (``role="assistant"``) in a span's input or
    output: the text itself, the first of ``keys`` in an object, or the last message of that role
    in a list of chat messages. None where there is none (an empty text counts as none)."""
    value = decode(value)
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, Mapping):
        value = _unwrap_message(value)
        if "choices" in value and role == "assistant":  # an OpenAI-style completion
            choices = value["choices"]
            if isinstance(choices, list) and choices:
                return find_text(choices[0], ("message", "text", "content"), role=role)
        if "message" in value and isinstance(value["message"], Mapping):
            return find_text(value["message"], ("content", "text"), role=role)
        for key in keys:
            if key in value and value[key] is not None:
                found = find_text(value[key], keys, role=role)
                if found is not None:
                    return found
        return None
    if isinstance(value, list) and value:
        messages = [_unwrap_message(m) for m in value if isinstance(m, Mapping)]
        if len(messages) == len(value):
            of_role = [m for m in messages if _role(m) == role]
            if of_role:
                return find_text(of_role[-1], ("content", "text"), role=role)
        if len(value) == 1:
            return find_text(value[0], keys, role=role)
    return None


def _unwrap_message(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A LangChain message as it is serialised (``{"lc": 1, "kwargs": {...}}``), or a nested
    message list, read as the message itself."""
    if "lc" in value and isinstance(value.get("kwargs"), Mapping):
        return value["kwargs"]
    return value


def _role(message: Mapping[str, Any]) -> str | None:
    role = message.get("role", message.get("type"))
    if not isinstance(role, str):
        return None
    return {"human": "user", "ai": "assistant", "system": "system"}.get(role.lower(), role.lower())


def _history(value: Any) -> list[dict[str, str]]:
    """The earlier turns a root input carries: its chat history, or the messages before the
    last user message of a request given as a list of messages."""
    value = decode(value)
    messages: Any = None
    if isinstance(value, Mapping):
        messages = next((value[k] for k in HISTORY_KEYS if isinstance(value.get(k), list)), None)
        if messages is None and isinstance(value.get("messages"), list):
            messages = _before_last_user(value["messages"])
    elif isinstance(value, list):
        messages = _before_last_user(value)
    turns = []
    for message in messages or []:
        if not isinstance(message, Mapping):
            continue
        message = _unwrap_message(message)
        role = _role(message)
        text = message.get("content", message.get("text"))
        if role in ("user", "assistant") and isinstance(text, str):
            turns.append({"role": role, "content": text})
    return turns


def _before_last_user(messages: list[Any]) -> list[Any]:
    users = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, Mapping) and _role(_unwrap_message(m)) == "user"
    ]
    return messages[: users[-1]] if users else []


def document_text(document: Any) -> str | None:
    """The text of one retrieved document: a string, or an object's ``page_content``,
    ``content`` or ``text``."""
    if isinstance(document, str):
        return document
    if isinstance(document, Mapping):
        for key in DOCUMENT_TEXT_KEYS:
            if isinstance(document.get(key), str):
                return str(document[key])
    return None
