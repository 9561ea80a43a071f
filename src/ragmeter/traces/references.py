"""Reference answers kept apart from the traces, joined to the samples read from them.

A team that curates expected answers keeps them in a dataset (a Phoenix dataset, often made
from the traced spans themselves), not on the traces. :func:`join_references` gives each
sample the reference of the example that belongs to it, so that the metrics that compare with
a reference (answer correctness, context recall) can score traced requests:

- by trace: an example made from a span keeps that span's id; the example belongs to the trace
  the span is part of, whichever span of the trace it was made from;
- else by question: the example's question, word for word, is the sample's question. Two
  examples with one question and different references are ambiguous, and neither is used.

What was joined, and how many examples found no sample, goes in the run's record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.traces.spans import TraceSet


@dataclass(frozen=True)
class Reference:
    """One dataset example's reference answer, and what ties it to a trace."""

    text: str | None
    """None for an example that holds no reference."""
    span_id: str | None = None
    """The span the example was made from, where it was made from one."""
    question: str | None = None


@dataclass(frozen=True)
class JoinReport:
    """How a dataset's references were joined to the samples."""

    dataset: str
    examples: int
    """The dataset's examples, those without a reference among them."""
    without_reference: int
    by_trace: int
    """Samples that got their reference from an example made from one of their trace's spans."""
    by_question: int
    """Samples that got their reference from an example asking their question."""
    unmatched: int
    """Examples with a reference that no sample read got (another window, another project)."""
    ambiguous: int
    """Questions left without a reference: two of their examples disagree."""

    def record(self) -> dict[str, Any]:
        return dict(self.__dict__)


def join_references(
    traces: TraceSet,
    references: Sequence[Reference],
    trace_of_span: Mapping[str, str],
    *,
    dataset: str,
) -> TraceSet:
    """``traces`` with each sample's reference taken from ``references``; what was joined is in
    its source, under ``references`` (a :class:`JoinReport`'s record).

    Args:
        traces: the samples read from the traces.
        references: the dataset's examples.
        trace_of_span: the trace of every span read (not only the root spans), so that an
            example made from any span of a trace finds it.
        dataset: the dataset's name, for the record.
    """
    given = [(r, r.text) for r in references if r.text is not None]
    by_trace: dict[str, str] = {}
    by_question: dict[str, str | None] = {}  # None: examples disagree on the reference
    asked: dict[str, list[int]] = {}  # the examples (by index) asking each question
    used: set[int] = set()
    sample_traces = {sample.key for sample in traces.samples}
    for index, (reference, text) in enumerate(given):
        trace_id = trace_of_span.get(reference.span_id or "")
        if trace_id is not None and trace_id in sample_traces:
            by_trace[trace_id] = text
            used.add(index)
        elif reference.question is not None:
            seen = by_question.get(reference.question, text)
            by_question[reference.question] = text if seen == text else None
            asked.setdefault(reference.question, []).append(index)
    samples = []
    joined_by_question = 0
    for sample in traces.samples:
        found = by_trace.get(sample.key)
        if found is None:
            found = by_question.get(sample.question)
            if found is not None:
                joined_by_question += 1
                used.update(asked[sample.question])
        samples.append(sample if found is None else sample.model_copy(update={"reference": found}))
    report = JoinReport(
        dataset=dataset,
        examples=len(references),
        without_reference=len(references) - len(given),
        by_trace=len(by_trace),
        by_question=joined_by_question,
        unmatched=len(given) - len(used),
        ambiguous=sum(1 for found in by_question.values() if found is None),
    )
    source = {**traces.source, "references": report.record()}
    return TraceSet(samples, traces.skipped, source, traces.writer)
