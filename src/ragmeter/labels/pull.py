"""People's labels from where they already give them: the human annotations (Phoenix) and the
human feedback (MLflow) on the traces a run scored, kept in the run's labels as ratings
(``ragmeter label RUN --pull``), where ``calibrate``, ``tune``, ``report`` and the labelling
page's agreement read them as any other label.

A label is a rating of a sample on a metric: the run's sample id is its trace's id, and the
metric is the label's name (or the metric a name is mapped to). Its value is the score, or a
yes/no label as 1/0. Each person is an annotator of their own (``phoenix:<who>``,
``mlflow:<who>``), so several people's labels of one trace are several ratings, averaged as the
page's are. Every label that is not kept is counted with its reason and named: a trace the run
did not score, a name that is no metric of the run, a value that is neither a number nor
yes/no, or off the metric's scale. Pulling again adds only what changed: a label already in the
log with the same value is not added twice, and a changed one is added, standing over the old.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.heads.ratings import Scale, parse_scale
from ragmeter.labels.store import (
    LABELS_FILE,
    NOTE_LIMIT,
    Event,
    ItemKey,
    LabelStore,
    fold,
    open_labels,
    rating_scale,
)
from ragmeter.result import Result
from ragmeter.traces.human import HumanLabel

PULLED = "pulled from "
"""How the log records the order of a pulled label: the people chose what to label there."""
SAME = 1e-9


@dataclass(frozen=True)
class LeftOut:
    """A label that was not kept, and why."""

    reason: str
    trace_id: str
    name: str
    annotator: str


@dataclass
class PullReport:
    """What a pull read, kept and left out."""

    source: str
    read: int = 0
    """People's labels found on the server."""
    added: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Ratings added to the run's labels, by (metric, annotator)."""
    already: int = 0
    """Labels already in the run's labels with the same value: not added again."""
    changed: int = 0
    """Labels whose value changed on the server since the last pull: added, standing over the
    old."""
    superseded: int = 0
    """Earlier labels by the same person of the same trace and metric: the latest is kept."""
    scales: dict[str, str] = field(default_factory=dict)
    """The scale each metric's pulled ratings are on."""
    inferred: list[str] = field(default_factory=list)
    """Metrics whose scale was read from the values (0-1 or binary), not stated."""
    left_out: list[LeftOut] = field(default_factory=list)

    def left_out_by_reason(self) -> dict[str, list[LeftOut]]:
        grouped: dict[str, list[LeftOut]] = defaultdict(list)
        for item in self.left_out:
            grouped[item.reason].append(item)
        return dict(grouped)


def pull_labels(
    folder: str | Path,
    result: Result,
    section: Mapping[str, Any],
    found: Sequence[HumanLabel],
    *,
    source: str,
    names: Mapping[str, str] | None = None,
    scales: Mapping[str | None, Scale] | None = None,
) -> PullReport:
    """Keep in the run's labels the people's labels ``found`` on the traces the run scored.

    Args:
        folder: the run's results folder.
        result: the run, as ``open_run`` reads it.
        section: the ``traces`` section of its record: the traces it read and left out.
        found: the people's labels on the server (``ragmeter.traces.human_labels``).
        source: where they came from (``phoenix:PROJECT``), kept with each label.
        names: a label name -> the metric it rates, beside each metric's own name.
        scales: the scale of each metric's labels (the key None: every metric's); else the
            scale the run's labels of the metric are on, else 0-1 (binary where every value
            is 0 or 1); values off it, or that need a wider scale nobody stated, are left out.

    Raises:
        ValueError: ``names`` or ``scales`` name no metric of the run, or the run's labels of a
            metric are on several scales, or on another than the one stated.
    """
    metrics = list(result.metrics)
    rates = {metric: metric for metric in metrics}
    for name, metric in (names or {}).items():
        if metric not in rates:
            raise ValueError(
                f"--annotation {metric}={name}: {metric} is not a metric of the run "
                f"({', '.join(metrics)})"
            )
        rates[name] = metric
    stated = dict(scales or {})
    unknown = [m for m in stated if m is not None and m not in metrics]
    if unknown:
        raise ValueError(f"--scale names {unknown[0]}, not a metric of the run")
    samples = {sample.key for sample in result.samples}
    scored = {str(t) for t in section.get("trace_ids", []) if str(t) in samples}
    skipped = {str(s["trace_id"]): str(s["reason"]) for s in section.get("skipped", [])}
    report = PullReport(source=source, read=len(found))

    latest: dict[tuple[str, str, str], HumanLabel] = {}
    for label in found:
        metric = rates.get(label.name)
        why = _why_not(label, metric, scored, skipped)
        if why is not None:
            report.left_out.append(LeftOut(why, label.trace_id, label.name, label.annotator))
            continue
        assert metric is not None
        key = (label.annotator, label.trace_id, metric)
        if key in latest:
            report.superseded += 1
            if (latest[key].at, latest[key].made) > (label.at, label.made):
                continue
        latest[key] = label

    existing = open_labels(folder)
    events = existing.events("rating") if existing else []
    if existing:
        existing.close()
    by_metric: dict[str, list[tuple[tuple[str, str, str], HumanLabel]]] = defaultdict(list)
    for key, label in latest.items():
        by_metric[key[2]].append((key, label))
    kept: list[tuple[ItemKey, HumanLabel, str]] = []
    for metric, labels in by_metric.items():
        chosen = _scale(metric, events, stated.get(metric) or stated.get(None), labels, report)
        if chosen is None:
            continue
        scale = parse_scale(chosen)
        for (_, trace_id, _), label in labels:
            value = label.value
            assert value is not None
            reason = None
            if label.score is None and (scale.low, scale.high) != (0.0, 1.0):
                # a yes is no rating of 1 on a scale of 1-5: it is not on such a scale at all
                reason = f"{metric}: a yes/no label ({label.label}) on the scale {scale.text}"
            elif not scale.low <= value <= scale.high:
                reason = f"{metric}: off the scale {scale.text} ({value:g})"
            if reason:
                report.left_out.append(LeftOut(reason, trace_id, label.name, label.annotator))
                continue
            kept.append((ItemKey("rating", trace_id, metric), label, chosen))
    _keep(Path(folder), result, kept, events, report)
    return report


def _why_not(
    label: HumanLabel, metric: str | None, scored: set[str], skipped: Mapping[str, str]
) -> str | None:
    """Why a label cannot be a rating of the run's samples; None when it can."""
    if label.trace_id not in scored:
        if label.trace_id in skipped:
            return f"on a trace the run left out ({skipped[label.trace_id].split(':')[0]})"
        return "on a trace the run did not read"
    if metric is None:
        return f"named {label.name!r}: not a metric of the run (map it: --annotation METRIC=NAME)"
    if label.value is None:
        return f"{label.name}: neither a number nor yes/no ({label.label!r})"
    return None


def _scale(
    metric: str,
    events: Sequence[Event],
    stated: Scale | None,
    labels: Sequence[tuple[Any, HumanLabel]],
    report: PullReport,
) -> str | None:
    """The scale the pulled ratings of ``metric`` are kept on (as the log writes it): the one
    its labels are already on, else the stated one, else 0-1 read from the values; None (each
    label left out, saying why) where the values need a scale nobody stated."""
    used = rating_scale(events, metric, stated) or (None if stated is None else stated.text)
    if used is not None:
        report.scales[metric] = used
        return used
    values = [label.value for _, label in labels if label.value is not None]
    if all(v in (0.0, 1.0) for v in values):
        chosen = "binary"
    elif all(0.0 <= v <= 1.0 for v in values):
        chosen = "0-1"
    else:
        reason = (
            f"{metric}: values from {min(values):g} to {max(values):g} on a scale nobody "
            f"stated (say it: --scale {metric}=LOW-HIGH)"
        )
        report.left_out += [
            LeftOut(reason, key[1], label.name, label.annotator) for key, label in labels
        ]
        return None
    report.scales[metric] = chosen
    report.inferred.append(metric)
    return chosen


def _keep(
    folder: Path,
    result: Result,
    kept: Sequence[tuple[ItemKey, HumanLabel, str]],
    events: Sequence[Event],
    report: PullReport,
) -> None:
    """Append the labels not already standing in the log with the same value."""
    standing = fold(events).labels
    judged = {(s.sample_id, s.metric): s.value for s in result.briefs()}  # store not read
    todo = []
    for item, label, scale in kept:
        before = standing.get((label.annotator, item))
        value = label.value
        assert value is not None
        if before is not None and before.value is not None and abs(before.value - value) < SAME:
            report.already += 1
            continue
        if before is not None:
            report.changed += 1
        todo.append((item, label, scale, value))
    if not todo:
        return
    with LabelStore(folder / LABELS_FILE) as store:
        for item, label, scale, value in todo:
            store.add(
                item,
                label.annotator,
                value,
                note=label.note.strip()[:NOTE_LIMIT],
                scale=scale,
                order=PULLED + report.source,
                judge=judged.get((item.sample_id, item.metric)),
            )
            report.added[(item.metric, label.annotator)] += 1
