"""MLflow Tracing: an experiment's traces read through MLflow's client, verdicts written back as
feedback assessments.

``pip install 'ragmeter[mlflow]'``. Traces come from ``MlflowClient.search_traces`` on a tracking
server (``http://...``) or a local store (``sqlite:///...``, a folder). MLflow's spans hold
their inputs and outputs already decoded and their type (``RETRIEVER``, ``CHAIN``...) apart; a
retriever's outputs are its documents (``page_content``). Spans that MLflow received from
OpenInference instrumentation are read by their OpenInference attributes. An expectation named
``expected_response`` on the trace is the sample's reference.

A verdict is a feedback assessment named after the metric, with the score (or an error saying
why it is unscored), the explanation as its rationale, a source of type ``LLM_JUDGE`` named
after the judge, and the key in its metadata (``ragmeter.key``).

People's own feedback (a source of type ``HUMAN``) is read back by :func:`human_labels`, as
``ragmeter label RUN --pull`` keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ragmeter.integrations import importing
from ragmeter.traces.human import HumanLabel, feedback_value
from ragmeter.traces.openinference import KIND, span_from_attributes
from ragmeter.traces.spans import SkippedTrace, Span, TraceSet, document_text, samples_from_spans
from ragmeter.traces.verdicts import Existing, Verdict

REFERENCE_NAMES = ("expected_response", "expected_answer", "reference")
"""Expectations read as the reference answer, first found wins."""
SESSION = "mlflow.trace.session"
PAGE = 500
HUMAN = "HUMAN"


def require_mlflow() -> Any:
    with importing("MLflow", "mlflow", extra="mlflow"):
        import mlflow
        from mlflow.tracing.client import TracingClient  # noqa: F401 - checked here, used later
    return mlflow


def read_mlflow(
    experiment: str,
    *,
    tracking_uri: str | None = None,
    filter_string: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> TraceSet:
    """The samples of an MLflow experiment's traces, most recent first up to ``limit``.

    Args:
        experiment: the experiment's name, or its id.
        tracking_uri: the tracking server or store; else MLflow's own default
            (``MLFLOW_TRACKING_URI``, or ``./mlruns``).
        filter_string: an MLflow trace filter, e.g. ``"tags.env = 'prod'"``.
        since: only traces that started at or after this time.
        limit: at most this many traces; all by default.

    Raises:
        ValueError: there is no such experiment.
    """
    client = require_mlflow().MlflowClient(tracking_uri)
    found = _experiment(client, experiment)
    conditions = [filter_string] if filter_string else []
    if since is not None:
        conditions.append(f"trace.timestamp_ms >= {int(since.timestamp() * 1000)}")
    query = " AND ".join(conditions) or None
    traces = _search(client, found.experiment_id, query, limit)
    source = {
        "source": "mlflow",
        "server": client.tracking_uri,
        "experiment": found.name,
        "experiment_id": found.experiment_id,
        "filter": filter_string,
        "since": since.isoformat() if since else None,
        "limit": limit,
    }
    return samples_from_traces(traces, source=source, tracking_uri=client.tracking_uri)


def _experiment(client: Any, experiment: str) -> Any:
    """The experiment named ``experiment`` (or of that id); ``ValueError`` where there is none."""
    found = client.get_experiment_by_name(experiment)
    if found is None and experiment.isdigit():
        found = client.get_experiment(experiment)
    if found is None:
        raise ValueError(f"no MLflow experiment named {experiment!r} at {client.tracking_uri}")
    return found


def human_labels(experiment: str, *, tracking_uri: str | None = None) -> list[HumanLabel]:
    """The feedback people gave an MLflow experiment's traces: every feedback assessment whose
    source is of type ``HUMAN`` and that still stands (one overridden is not read), each named
    ``mlflow:<its source id>``. Expectations (the reference answers) are not labels of the
    answer, and feedback from judges (ragmeter's verdicts among them) is not read."""
    client = require_mlflow().MlflowClient(tracking_uri)
    found = _experiment(client, experiment)
    labels: list[HumanLabel] = []
    for trace in _search(client, found.experiment_id, None, None, include_spans=False):
        for assessment in trace.info.assessments or []:
            feedback = getattr(assessment, "feedback", None)
            source = assessment.source
            kind = str(getattr(source.source_type, "value", source.source_type)).upper()
            if feedback is None or kind != HUMAN or assessment.valid is False:
                continue
            score, label = feedback_value(feedback.value)
            if feedback.error is not None and score is None:
                label = f"an error: {feedback.error.error_message or feedback.error.error_code}"
            labels.append(
                HumanLabel(
                    trace_id=trace.info.trace_id,
                    name=assessment.name,
                    annotator=f"mlflow:{source.source_id or 'human'}",
                    score=score,
                    label=label,
                    note=assessment.rationale or "",
                    at=(assessment.last_update_time_ms or assessment.create_time_ms or 0) / 1000,
                    where=f"span {assessment.span_id}" if assessment.span_id else "trace",
                )
            )
    return labels


def samples_from_traces(
    traces: Sequence[Any], *, source: Mapping[str, Any] | None = None, tracking_uri: str = ""
) -> TraceSet:
    """The samples of MLflow ``Trace`` objects (from ``search_traces`` or ``get_trace``), with a
    writer that puts verdicts back into the store at ``tracking_uri``."""
    spans: list[Span] = []
    skipped: list[SkippedTrace] = []
    assessments: dict[str, list[Any]] = {}
    for trace in traces:
        trace_id = trace.info.trace_id
        assessments[trace_id] = list(trace.info.assessments or [])
        state = str(getattr(trace.info.state, "value", trace.info.state))
        if state == "IN_PROGRESS" or not trace.data.spans:
            skipped.append(SkippedTrace(trace_id, "cut short: the trace has no finished spans"))
            continue
        spans += [_span(trace, span) for span in trace.data.spans]
    writer = MLflowWriter(tracking_uri, assessments)
    return samples_from_spans(spans, source=source, writer=writer, skipped=skipped)


def _search(
    client: Any,
    experiment_id: str,
    query: str | None,
    limit: int | None,
    *,
    include_spans: bool = True,
) -> list[Any]:
    """Every trace the search finds, most recent first, page by page up to ``limit``."""
    traces: list[Any] = []
    token = None
    while limit is None or len(traces) < limit:
        page = client.search_traces(
            locations=[experiment_id],
            filter_string=query,
            max_results=PAGE if limit is None else min(PAGE, limit - len(traces)),
            order_by=["timestamp_ms DESC"],
            page_token=token,
            include_spans=include_spans,
        )
        traces += list(page)
        token = page.token
        if not token or not page:
            break
    return traces


def _span(trace: Any, span: Any) -> Span:
    status = span.status
    failed = str(getattr(status.status_code, "value", status.status_code)) == "ERROR"
    # What MLflow records the same way for either kind of span: where it stands, how it ended.
    placed: dict[str, Any] = {
        "trace_id": trace.info.trace_id,
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "name": span.name,
        "start_ns": span.start_time_ns or 0,
        "error": (status.description or "") if failed else None,
    }
    attributes = span.attributes or {}
    if KIND in attributes:  # OpenInference spans that MLflow received over OTLP
        found = span_from_attributes(attributes=attributes, **placed)
    else:
        kind = str(span.span_type or "UNKNOWN").upper()
        found = Span(
            kind=kind,
            input=span.inputs,
            output=span.outputs,
            documents=_documents(span.outputs) if kind == "RETRIEVER" else (),
            **placed,
        )
    metadata = trace.info.trace_metadata or {}
    session = found.session or metadata.get(SESSION)
    return Span(**{**found.__dict__, "session": session, "reference": _reference(trace)})


def _documents(outputs: Any) -> tuple[str, ...]:
    if isinstance(outputs, Mapping) and isinstance(outputs.get("documents"), list):
        outputs = outputs["documents"]
    if not isinstance(outputs, list):
        return ()
    return tuple(text for text in map(document_text, outputs) if text is not None)


def _reference(trace: Any) -> str | None:
    for name in REFERENCE_NAMES:
        for assessment in trace.info.assessments or []:
            if getattr(assessment, "expectation", None) is not None and assessment.name == name:
                value = assessment.expectation.value
                return value if isinstance(value, str) else None
    return None


class MLflowWriter:
    """Writes verdicts as feedback on an MLflow store's traces, one at a time (a failed one is
    tried again alone, so that none is written twice)."""

    batch = 1

    def __init__(self, tracking_uri: str, assessments: Mapping[str, list[Any]]) -> None:
        self.tracking_uri = tracking_uri
        self.assessments = assessments
        """What each trace held when it was read: the verdicts already there are among them."""
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            require_mlflow()
            from mlflow.tracing.client import TracingClient

            self._client = TracingClient(self.tracking_uri)
        return self._client

    def describe(self) -> dict[str, Any]:
        return {"server": self.tracking_uri}

    def existing(self, verdicts: Sequence[Verdict]) -> dict[tuple[str, str], Existing]:
        found: dict[tuple[str, str], Existing] = {}
        for verdict in verdicts:
            for assessment in self.assessments.get(verdict.trace_id, []):
                if (
                    assessment.name == verdict.metric
                    and getattr(assessment, "feedback", None) is not None
                    and (assessment.metadata or {}).get("ragmeter.key") == verdict.key
                    and assessment.valid is not False
                ):
                    value = assessment.feedback.value
                    found[(verdict.trace_id, verdict.metric)] = Existing(
                        assessment.assessment_id,
                        float(value) if isinstance(value, int | float) else None,
                        assessment.rationale,
                    )
        return found

    def write(self, verdicts: Sequence[Verdict], replacing: Mapping[int, Existing]) -> None:
        for index, verdict in enumerate(verdicts):
            feedback = self.feedback(verdict)
            old = replacing.get(index)
            if old is not None and old.id is not None:
                self.client.update_assessment(verdict.trace_id, old.id, feedback)
            else:
                self.client.log_assessment(verdict.trace_id, feedback)

    @staticmethod
    def feedback(verdict: Verdict) -> Any:
        """A verdict as MLflow's ``Feedback``."""
        require_mlflow()
        from mlflow.entities import AssessmentError, AssessmentSource, Feedback

        return Feedback(
            name=verdict.metric,
            value=verdict.value,
            error=None
            if verdict.value is not None
            else AssessmentError(error_code="UNSCORED", error_message=verdict.explanation),
            rationale=verdict.explanation,
            source=AssessmentSource(source_type="LLM_JUDGE", source_id=verdict.judge),
            metadata=dict(verdict.metadata),
        )
