"""Scoring traces: read them from a source named in one string, score them as any samples are
scored, write the verdicts back, and keep what was read and written in the run's record.

A source is ``phoenix:PROJECT``, ``mlflow:EXPERIMENT`` or ``otlp:FILE``; the run's record
(``run.json``) gains a ``traces`` section: the source, the trace ids read, the traces left out
with their reasons and, after writing back, how many verdicts were written, replaced, already
there or failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragmeter.evaluate import evaluate
from ragmeter.manifest import write_run_record
from ragmeter.metrics import Metric
from ragmeter.result import Result
from ragmeter.traces.human import HumanLabel
from ragmeter.traces.mlflow import human_labels as mlflow_labels
from ragmeter.traces.mlflow import read_mlflow
from ragmeter.traces.otlp import read_otlp
from ragmeter.traces.phoenix import human_labels as phoenix_labels
from ragmeter.traces.phoenix import read_phoenix
from ragmeter.traces.spans import TraceSet
from ragmeter.traces.verdicts import WriteReport, verdicts_for, write_verdicts

SOURCES = ("phoenix", "mlflow", "otlp")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def is_trace_source(spec: str) -> bool:
    """Whether ``spec`` names traces (``phoenix:PROJECT``...) rather than a file of samples."""
    kind, sep, _ = spec.partition(":")
    return bool(sep) and kind in SOURCES


def read_traces(
    spec: str,
    *,
    server: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    filter_string: str | None = None,
    dataset: str | None = None,
) -> TraceSet:
    """The samples of the traces ``spec`` names.

    Args:
        spec: ``phoenix:PROJECT`` (``phoenix:`` alone: the ``default`` project),
            ``mlflow:EXPERIMENT`` (a name or an id) or ``otlp:FILE``.
        server: Phoenix's address, or MLflow's tracking URI; else each client's own default.
        since: only traces that started at or after this time (see :func:`parse_since`).
        limit: the most recent ``limit`` traces.
        filter_string: an MLflow trace filter.
        dataset: a Phoenix dataset whose examples hold the reference answers.

    Raises:
        ValueError: an unknown source, or an option the source does not take.
    """
    kind, _, name = spec.partition(":")
    if kind == "phoenix":
        if filter_string:
            raise ValueError("--filter is MLflow's trace filter; Phoenix takes --since/--limit")
        return read_phoenix(
            name or "default", server=server, since=since, limit=limit, dataset=dataset
        )
    if dataset:
        raise ValueError(
            "--dataset names a Phoenix dataset; MLflow reads a trace's reference from its "
            "expected_response expectation"
        )
    if kind == "mlflow":
        if not name:
            raise ValueError("name the experiment: mlflow:EXPERIMENT")
        return read_mlflow(
            name, tracking_uri=server, filter_string=filter_string, since=since, limit=limit
        )
    if kind == "otlp":
        if server or since or limit is not None or filter_string:
            raise ValueError(
                "an OTLP file is read whole: --server, --since, --limit and "
                "--filter are for Phoenix and MLflow"
            )
        return read_otlp(name)
    raise ValueError(f"unknown trace source {kind!r}: expected one of {', '.join(SOURCES)}")


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: a time (ISO 8601, UTC unless it says) or how long ago (``30m``, ``24h``,
    ``7d``, ``2w``)."""
    match = _DURATION.match(text.strip())
    if match:
        amount, unit = float(match.group(1)), match.group(2)
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give a time (2026-11-27T08:00) or how long ago (30m, 24h, 7d)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def evaluate_traces(
    traces: TraceSet | str,
    metrics: Sequence[str | Metric] | None = None,
    *,
    write_back: bool = False,
    write_retries: int = 2,
    out_dir: str | Path | None = None,
    **evaluate_options: Any,
) -> Result:
    """Score traces and, with ``write_back``, put each verdict beside its trace.

    Args:
        traces: a ``TraceSet`` (``read_phoenix``, ``read_mlflow``, ``read_otlp``) or a source
            string for :func:`read_traces`.
        metrics: as ``ragmeter.evaluate`` takes them.
        write_back: write every score onto its trace (Phoenix span annotations, MLflow
            feedback); verdicts already there under the same judge and metric version are
            not written again.
        write_retries: further attempts at a write that failed.
        out_dir: the results folder, as ``evaluate`` takes it; its ``run.json`` records the
            traces read and the verdicts written.
        evaluate_options: passed to ``ragmeter.evaluate`` (``judge``, ``cache``...).

    Returns:
        The result; ``result.run`` has the ``traces`` section described in the module
        docstring.

    Raises:
        ValueError: ``write_back`` for traces read from a file.
    """
    found = read_traces(traces) if isinstance(traces, str) else traces
    if write_back and found.writer is None:
        raise ValueError("traces read from a file have no server to write the verdicts back to")
    result = evaluate(found.samples, metrics, out_dir=out_dir, **evaluate_options)
    return record_traces(result, found, out_dir, write_back=write_back, retries=write_retries)


def record_traces(
    result: Result,
    traces: TraceSet,
    out_dir: str | Path | None,
    *,
    write_back: bool,
    retries: int = 2,
) -> Result:
    """Write the verdicts back (with ``write_back``) and put the ``traces`` section in the run's
    record, in ``result.run`` and in ``out_dir``'s ``run.json``."""
    report: WriteReport | None = None
    if write_back:
        if traces.writer is None:
            raise ValueError("these traces have no server to write the verdicts back to")
        report = write_verdicts(verdicts_for(result), traces.writer, retries=retries)
    section = traces.record()
    if report is not None:
        section["write_back"] = report.record()
    result.run = result.run.model_copy(update={"traces": section})
    if out_dir is not None:
        write_run_record(Path(out_dir), result.run)
    return result


def trace_section(result: Result) -> dict[str, Any] | None:
    """The ``traces`` section of a run's record, None for a run not read from traces."""
    extra = result.run.model_extra or {}
    section = extra.get("traces")
    return section if isinstance(section, dict) else None


def source_name(section: Mapping[str, Any]) -> str:
    """The traces a run read, as ``evaluate`` takes them: ``phoenix:PROJECT``..."""
    kind = str(section.get("source", ""))
    name = section.get("project") or section.get("experiment") or section.get("file") or ""
    return f"{kind}:{name}"


def human_labels(section: Mapping[str, Any], *, server: str | None = None) -> list[HumanLabel]:
    """The labels people gave on the server a run read its traces from (its ``traces``
    section), or at ``server`` instead of the address it recorded.

    Raises:
        ValueError: the run read its traces from a file, which holds no people's labels, or
            its record names no MLflow experiment.
    """
    kind = section.get("source")
    where = server or section.get("server")
    if kind == "phoenix":
        project = str(section.get("project") or "default")
        return phoenix_labels(project, server=where)
    if kind == "mlflow":
        experiment = section.get("experiment") or section.get("experiment_id")
        if not experiment:
            raise ValueError(
                "the run's record of its traces names no MLflow experiment (neither "
                "'experiment' nor 'experiment_id' in the 'traces' section of its run.json): "
                "there is no experiment to read people's labels from"
            )
        return mlflow_labels(str(experiment), tracking_uri=where)
    raise ValueError(
        f"the run read its traces from {source_name(section)}: people's labels are read from "
        "a Phoenix or MLflow server"
    )
