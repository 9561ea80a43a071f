"""Score what an application already traced: OpenInference spans (an OTLP JSON file, a Phoenix
project) and MLflow traces read as samples, and the verdicts written back beside them.

One module per source, each importing its client only when called:

- ``otlp``: an OTLP JSON export (no extra needed);
- ``phoenix``: a Phoenix project, verdicts as span annotations (``ragmeter[phoenix]``);
- ``mlflow``: an MLflow experiment, verdicts as feedback assessments (``ragmeter[mlflow]``).

``spans`` reads any source's spans as samples, ``verdicts`` writes scores back, ``run`` ties
them to ``evaluate``, ``human`` is the labels people gave the traces on the server (read back by
``ragmeter label RUN --pull``), and ``scorers`` puts ragmeter's metrics inside MLflow's and
Phoenix's own evaluators.
"""

from __future__ import annotations

from ragmeter.traces.human import HumanLabel
from ragmeter.traces.mlflow import read_mlflow
from ragmeter.traces.otlp import read_otlp
from ragmeter.traces.phoenix import read_phoenix
from ragmeter.traces.run import (
    evaluate_traces,
    human_labels,
    is_trace_source,
    parse_since,
    read_traces,
    record_traces,
    trace_section,
)
from ragmeter.traces.spans import SkippedTrace, Span, TraceSet, samples_from_spans
from ragmeter.traces.verdicts import Verdict, WriteReport, verdicts_for, write_verdicts

__all__ = [
    "HumanLabel",
    "SkippedTrace",
    "Span",
    "TraceSet",
    "Verdict",
    "WriteReport",
    "evaluate_traces",
    "human_labels",
    "is_trace_source",
    "parse_since",
    "read_mlflow",
    "read_otlp",
    "read_phoenix",
    "read_traces",
    "record_traces",
    "samples_from_spans",
    "trace_section",
    "verdicts_for",
    "write_verdicts",
]
