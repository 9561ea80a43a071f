"""Verdicts back beside the traces: each score, with its explanation, written onto its trace.

A :class:`Verdict` is one score as a tracing server keeps it: the metric's name, the value (or
the label ``unscored`` and the reason), the explanation as text, and a key made of the judge's
identity and the metric's version. A writer (one per server, in that server's module) reads the
verdicts already there under the same key and writes the rest; so rerunning writes nothing
twice, and a verdict whose value changed (an item unscored before and scored now) replaces the
old one. A batch that fails is tried again; one that still fails is reported with its reason,
and the run folder keeps every score whatever the server did.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from ragmeter.budget import is_pending
from ragmeter.explain import explain
from ragmeter.records import digest
from ragmeter.result import Result

UNSCORED = "unscored"
"""The label of a verdict without a value; its explanation is the reason."""


@dataclass(frozen=True)
class Verdict:
    """One score as it is written onto a trace."""

    trace_id: str
    span_id: str | None
    """The root span of the trace (Phoenix annotates spans)."""
    metric: str
    value: float | None
    explanation: str
    judge: str
    """The judge's name, shown as the verdict's source."""
    key: str
    """The judge's identity and the metric's version, hashed: a verdict under the same key is
    the same measurement."""
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str | None:
        return UNSCORED if self.value is None else None


@dataclass(frozen=True)
class Existing:
    """A verdict already on the server under a verdict's key: where it is, and what it says."""

    id: str | None
    value: float | None
    explanation: str | None


class Writer(Protocol):
    """Puts verdicts on one server's traces."""

    def describe(self) -> dict[str, Any]:
        """Where the verdicts go, for the run's record."""
        ...

    def existing(self, verdicts: Sequence[Verdict]) -> dict[tuple[str, str], Existing]:
        """The verdicts already written under the keys of ``verdicts``, by (trace id, metric)."""
        ...

    def write(self, verdicts: Sequence[Verdict], replacing: Mapping[int, Existing]) -> None:
        """Write ``verdicts``; ``replacing`` maps an index into them to the verdict it replaces.
        Raises on failure, so that the batch is tried again."""
        ...


@dataclass
class WriteReport:
    """What writing verdicts back did."""

    written: int = 0
    replaced: int = 0
    unchanged: int = 0
    """Already there under the same key with the same value and explanation: not written."""
    failed: list[dict[str, str]] = field(default_factory=list)
    """Each verdict that could not be written: trace id, metric and the last error."""
    attempts: int = 0
    seconds: float = 0.0
    target: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {
            **self.target,
            "written": self.written,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "attempts": self.attempts,
            "seconds": round(self.seconds, 3),
        }


def verdicts_for(result: Result) -> list[Verdict]:
    """A verdict per score of the samples read from traces (those whose metadata name their
    trace), pending items (not judged, the budget ran out) left out."""
    samples = {sample.key: sample for sample in result.samples}
    judge = result.run.models.get("judge")
    identity = (judge.identity if judge else None) or result.run.judge
    verdicts = []
    for score in result.scores:
        sample = samples[score.sample_id]
        trace_id = sample.metadata.get("trace_id")
        if trace_id is None or is_pending(score):
            continue
        metric = result.run.metrics.get(score.metric)
        version = metric.version if metric else ""
        lines = explain(score, sample) if score.scored else [score.unscored_reason or ""]
        verdicts.append(
            Verdict(
                trace_id=str(trace_id),
                span_id=sample.metadata.get("span_id"),
                metric=score.metric,
                value=score.value,
                explanation="\n".join(lines),
                judge=result.run.judge,
                key=digest(identity, score.metric, version),
                metadata={
                    "ragmeter.key": digest(identity, score.metric, version),
                    "judge": result.run.judge,
                    "judge_identity": str(identity),
                    "metric_version": version,
                },
            )
        )
    return verdicts


def write_verdicts(
    verdicts: Sequence[Verdict],
    writer: Writer,
    *,
    retries: int = 2,
    batch: int = 100,
    backoff: float = 0.5,
) -> WriteReport:
    """Write ``verdicts`` with ``writer``, leaving out those already there unchanged.

    Args:
        verdicts: from :func:`verdicts_for`.
        writer: the server's writer (``TraceSet.writer``).
        retries: further attempts at a batch that failed, ``backoff`` seconds apart, doubling.
        batch: verdicts written in one request, unless the writer says (``writer.batch``).
        backoff: seconds before the first retry.
    """
    report = WriteReport(target=writer.describe())
    clock = time.perf_counter()
    found = _try(lambda: writer.existing(verdicts), retries, backoff, report)
    if isinstance(found, BaseException):
        report.failed = [_failure(v, found) for v in verdicts]
        report.seconds = time.perf_counter() - clock
        return report
    todo: list[Verdict] = []
    replacing: dict[int, Existing] = {}
    for verdict in verdicts:
        old = found.get((verdict.trace_id, verdict.metric))
        if old is not None and _same(old, verdict):
            report.unchanged += 1
            continue
        if old is not None:
            replacing[len(todo)] = old
        todo.append(verdict)
    batch = getattr(writer, "batch", batch)
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        replaced = {i - start: old for i, old in replacing.items() if start <= i < start + batch}
        outcome = _try(partial(writer.write, chunk, replaced), retries, backoff, report)
        if isinstance(outcome, BaseException):
            report.failed += [_failure(v, outcome) for v in chunk]
        else:
            report.replaced += len(replaced)
            report.written += len(chunk) - len(replaced)
    report.seconds = time.perf_counter() - clock
    return report


def _same(old: Existing, verdict: Verdict) -> bool:
    if (old.value is None) != (verdict.value is None):
        return False
    if (
        old.value is not None
        and verdict.value is not None
        and abs(old.value - verdict.value) > 1e-9
    ):
        return False
    return (old.explanation or "") == verdict.explanation


def _try(call: Any, retries: int, backoff: float, report: WriteReport) -> Any:
    """``call()``, tried ``1 + retries`` times; the last exception if every try failed."""
    error: BaseException | None = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        report.attempts += 1
        try:
            return call()
        except Exception as exc:  # a server fails in many ways; each is retried, then reported
            error = exc
    return error


def _failure(verdict: Verdict, error: BaseException) -> dict[str, str]:
    return {
        "trace_id": verdict.trace_id,
        "metric": verdict.metric,
        "error": f"{type(error).__name__}: {error}",
    }
