"""Arize Phoenix: a project's traces read through Phoenix's client, verdicts written back as span
annotations on each trace's root span; reference answers read from a Phoenix dataset.

``pip install 'ragmeter[phoenix]'`` (arize-phoenix-client). Spans come from the REST API
(``/v1/projects/PROJECT/spans``) with OpenInference attributes, read by
``ragmeter.traces.openinference``. A verdict is an annotation named after the metric, made by an
``LLM`` annotator, with the score, the label ``unscored`` where there is none, the explanation,
and the key (the judge's identity and the metric's version) as its ``identifier``: Phoenix keeps
one annotation per span, name and identifier, so a rerun replaces rather than adds.

A dataset's examples (``dataset=``) give the samples their reference answers: an example's
output is the reference, joined to its trace by the span it was made from, else by its
question (see ``ragmeter.traces.references``).

People's own annotations (annotator kind ``HUMAN``, on any span of a trace or on the trace
itself) are read back by :func:`human_labels`, as ``ragmeter label RUN --pull`` keeps them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ragmeter.integrations import importing
from ragmeter.traces.human import HumanLabel
from ragmeter.traces.openinference import span_from_attributes
from ragmeter.traces.references import Reference, join_references
from ragmeter.traces.spans import QUESTION_KEYS, Span, TraceSet, find_text, samples_from_spans
from ragmeter.traces.verdicts import Existing, Verdict

IDENTIFIER_PREFIX = "ragmeter-"
HUMAN = "HUMAN"
IDS_PER_REQUEST = 100
"""Trace ids asked about in one request for their annotations (the server takes up to 1,000,
and each is a query parameter of the address)."""
REFERENCE_KEYS = (
    "reference", "expected_output", "expected_answer", "expected_response", "expected",
    "ground_truth", "answer", "output", "response",
)  # fmt: skip
"""Where a dataset example's output holds the reference answer, best first (an example made
from a span holds the span's output under ``output``, edited into the expected answer)."""


def _client(server: str | None, client: Any) -> Any:
    if client is not None:
        return client
    with importing("Phoenix", "arize-phoenix-client", extra="phoenix"):
        from phoenix.client import Client
    return Client(base_url=server) if server else Client()


def read_phoenix(
    project: str = "default",
    *,
    server: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
    dataset: str | None = None,
    client: Any = None,
) -> TraceSet:
    """The samples of a Phoenix project's traces.

    Args:
        project: the project's name (or id).
        server: Phoenix's address; else ``PHOENIX_COLLECTOR_ENDPOINT`` or
            ``http://localhost:6006``, as Phoenix's client finds it.
        since: only traces that started at or after this time.
        until: only traces that started before this time.
        limit: the most recent ``limit`` traces (by the start of their root span); all by
            default. Traces without a root span (cut short) are counted among them.
        dataset: a Phoenix dataset (name or id) whose examples hold reference answers, joined
            to the samples as :func:`ragmeter.traces.references.join_references` says.
        client: a ``phoenix.client.Client`` to use instead of making one.

    Returns:
        The samples, the traces left out with their reasons, and a writer that annotates the
        traces' root spans.
    """
    phoenix = _client(server, client)
    found = phoenix.spans.get_spans(
        project_identifier=project, start_time=since, end_time=until, limit=10**9
    )
    spans = [_span(span) for span in found]
    if limit is not None:
        spans = _most_recent(spans, limit)
    source = {
        "source": "phoenix",
        "server": _address(phoenix, server),
        "project": project,
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        "limit": limit,
    }
    traces = samples_from_spans(spans, source=source, writer=PhoenixWriter(phoenix, project))
    if dataset is not None:
        traces = join_dataset(traces, dataset, phoenix, {s.span_id: s.trace_id for s in spans})
    return traces


def join_dataset(
    traces: TraceSet, dataset: str, client: Any, trace_of_span: dict[str, str]
) -> TraceSet:
    """``traces`` with the reference answers of a Phoenix dataset's examples."""
    found = client.datasets.get_dataset(dataset=dataset)
    references = [dataset_reference(example) for example in found.examples]
    return join_references(traces, references, trace_of_span, dataset=found.name)


def dataset_reference(example: Mapping[str, Any]) -> Reference:
    """A dataset example's reference answer, the span it was made from, and its question."""
    source = example.get("source") or {}
    return Reference(
        text=find_text(example.get("output"), REFERENCE_KEYS, role="assistant"),
        span_id=source.get("span_id"),
        question=find_text(example.get("input"), QUESTION_KEYS, role="user"),
    )


def _address(client: Any, server: str | None) -> str | None:
    """The address the client talks to (its HTTP client's base URL), for the record."""
    http = getattr(client, "_client", None)
    return str(http.base_url) if http is not None else server


def _span(span: Mapping[str, Any]) -> Span:
    context = span.get("context", {})
    failed = str(span.get("status_code", "")).upper() == "ERROR"
    start = span.get("start_time")
    return span_from_attributes(
        trace_id=str(context.get("trace_id", "")),
        span_id=str(context.get("span_id", "")),
        parent_id=span.get("parent_id"),
        name=str(span.get("name", "")),
        attributes=span.get("attributes") or {},
        start_ns=int(datetime.fromisoformat(start).timestamp() * 1e9) if start else 0,
        kind=span.get("span_kind"),
        error=(span.get("status_message") or "") if failed else None,
    )


def _most_recent(spans: list[Span], limit: int) -> list[Span]:
    """The spans of the ``limit`` traces that started last."""
    started: dict[str, int] = {}
    for span in spans:
        first = started.get(span.trace_id)
        started[span.trace_id] = span.start_ns if first is None else min(first, span.start_ns)
    kept = set(sorted(started, key=started.__getitem__, reverse=True)[:limit])
    return [span for span in spans if span.trace_id in kept]


class PhoenixWriter:
    """Writes verdicts as annotations on the root spans of a Phoenix project's traces."""

    def __init__(self, client: Any, project: str) -> None:
        self.client = client
        self.project = project

    def describe(self) -> dict[str, Any]:
        return {"server": _address(self.client, None), "project": self.project}

    def existing(self, verdicts: Sequence[Verdict]) -> dict[tuple[str, str], Existing]:
        by_span = {(v.span_id, v.metric, IDENTIFIER_PREFIX + v.key): v for v in verdicts}
        span_ids = sorted({v.span_id for v in verdicts if v.span_id})
        if not span_ids:
            return {}
        found: dict[tuple[str, str], Existing] = {}
        annotations = self.client.spans.get_span_annotations(
            span_ids=span_ids,
            project_identifier=self.project,
            include_annotation_names=sorted({v.metric for v in verdicts}),
        )
        for annotation in annotations:
            verdict = by_span.get(
                (annotation["span_id"], annotation["name"], annotation.get("identifier", ""))
            )
            if verdict is None:
                continue
            result = annotation.get("result") or {}
            found[(verdict.trace_id, verdict.metric)] = Existing(
                annotation.get("id"), result.get("score"), result.get("explanation")
            )
        return found

    def write(self, verdicts: Sequence[Verdict], replacing: Mapping[int, Existing]) -> None:
        # Phoenix keeps one annotation per span, name and identifier: the ones in ``replacing``
        # are overwritten in place.
        self.client.spans.log_span_annotations(
            span_annotations=[annotation(v) for v in verdicts], sync=True
        )


def annotation(verdict: Verdict) -> dict[str, Any]:
    """A verdict as Phoenix's span annotation."""
    result: dict[str, Any] = {"explanation": verdict.explanation}
    if verdict.value is not None:
        result["score"] = verdict.value
    if verdict.label is not None:
        result["label"] = verdict.label
    if verdict.span_id is None:
        raise ValueError(f"trace {verdict.trace_id}: no root span to annotate")
    return {
        "name": verdict.metric,
        "span_id": verdict.span_id,
        "annotator_kind": "LLM",
        "result": result,
        "metadata": dict(verdict.metadata),
        "identifier": IDENTIFIER_PREFIX + verdict.key,
    }


def human_labels(
    project: str = "default", *, server: str | None = None, client: Any = None
) -> list[HumanLabel]:
    """The labels people gave a Phoenix project's traces: every span annotation (on any span of
    a trace) and trace annotation whose annotator kind is ``HUMAN``, each named
    ``phoenix:<its identifier, else the user's id, else "human">``; the annotations of LLM and
    code annotators (ragmeter's own verdicts among them) are not read."""
    phoenix = _client(server, client)
    spans = phoenix.spans.get_spans(project_identifier=project, limit=10**9)
    trace_of = {
        str(span["context"]["span_id"]): str(span["context"]["trace_id"])
        for span in spans
        if span.get("context", {}).get("span_id")
    }
    found: list[HumanLabel] = []
    if trace_of:
        annotations = phoenix.spans.get_span_annotations(
            span_ids=sorted(trace_of), project_identifier=project
        )
        for annotation in annotations:
            span_id = str(annotation.get("span_id", ""))
            if annotation.get("annotator_kind") == HUMAN and span_id in trace_of:
                found.append(_human(annotation, trace_of[span_id], f"span {span_id}"))
    for annotation in _trace_annotations(phoenix, project, sorted(set(trace_of.values()))):
        if annotation.get("annotator_kind") == HUMAN:
            found.append(_human(annotation, str(annotation.get("trace_id", "")), "trace"))
    return found


def _trace_annotations(client: Any, project: str, trace_ids: list[str]) -> list[dict[str, Any]]:
    """The annotations of whole traces, from Phoenix's REST API (its client writes them, and
    has no call that reads them back); none from a server that keeps none."""
    http = getattr(client, "_client", None)
    if http is None or not trace_ids:
        return []
    found: list[dict[str, Any]] = []
    for start in range(0, len(trace_ids), IDS_PER_REQUEST):
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {
                "trace_ids": trace_ids[start : start + IDS_PER_REQUEST],
                "limit": 1000,
            }
            if cursor:
                params["cursor"] = cursor
            response = http.get(f"v1/projects/{project}/trace_annotations", params=params)
            if response.status_code == 404:  # an older server, or none of these traces
                break
            response.raise_for_status()
            payload = response.json()
            found += payload.get("data", [])
            cursor = payload.get("next_cursor")
            if not cursor:
                break
    return found


def _human(annotation: Mapping[str, Any], trace_id: str, where: str) -> HumanLabel:
    result = annotation.get("result") or {}
    who = annotation.get("identifier") or annotation.get("user_id") or "human"
    changed = annotation.get("updated_at") or annotation.get("created_at")
    return HumanLabel(
        trace_id=trace_id,
        name=str(annotation.get("name", "")),
        annotator=f"phoenix:{who}",
        score=result.get("score"),
        label=result.get("label"),
        note=result.get("explanation") or "",
        at=datetime.fromisoformat(changed).timestamp() if changed else 0.0,
        made=_row(annotation.get("id")),
        where=where,
    )


def _row(global_id: Any) -> int:
    """The row number in a Phoenix id (base64 of ``SpanAnnotation:12``); 0 where there is none."""
    try:
        text = base64.b64decode(str(global_id), validate=True).decode()
        return int(text.rpartition(":")[2])
    except (ValueError, UnicodeDecodeError):
        return 0
