"""A run's labels as the commands that learn from people read them: ratings per sample for
``calibrate`` and ``report`` (``Labels``, as ``heads.ratings`` reads a file), claim labels for
``tune``, and the same written as the files those commands take (``export``).

Several people may have labelled the same item. A sample's rating is then the mean of their
ratings (the people's mean is what ``calibrate`` estimates); a claim is supported or not as most
of those who could tell said, and left out on a tie. "Can't tell" is left out of both.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from ragmeter.heads.ratings import Labels, LabelsError, Scale, parse_scale
from ragmeter.heads.tuning import CLAIM_FIELD, SUPPORTED_FIELD
from ragmeter.labels.items import check_claims_metric
from ragmeter.labels.pull import PULLED
from ragmeter.labels.store import LABELS_FILE, Event, Kind, fold, open_labels, rating_scale
from ragmeter.manifest import atomic_write_text
from ragmeter.result import Result


def _standing(
    folder: Path, kind: Kind, annotator: str | None, metric: str | None = None
) -> list[Event] | None:
    """The labels of ``kind`` (of ``metric``'s items, or every metric's) that stand in the
    run's log (one person's, or everyone's); None when the run has no log."""
    store = open_labels(folder)
    if store is None:
        return None
    with store:
        events = store.events(kind, metric)
    labels = fold(events).labels.values()
    return [e for e in labels if annotator is None or e.annotator == annotator]


def _order_notes(events: list[Event], what: str) -> list[str]:
    """What the order the labels were given in does to an estimate of the people's mean."""
    notes = []
    least_sure = sum(event.order == "least-sure" for event in events)
    if least_sure:
        notes.append(
            f"{least_sure} of the {len(events)} {what} were given in least-sure order: they are "
            "not a random draw of the run, so the people's mean estimated from them is biased "
            "(label in random order for calibrate)"
        )
    pulled = Counter(
        event.order.removeprefix(PULLED) for event in events if event.order.startswith(PULLED)
    )
    for source, count in sorted(pulled.items()):
        notes.append(
            f"{count} of the {len(events)} {what} were pulled from {source}, where people chose "
            "which traces to label: unless they labelled a random draw of the run's traces, "
            "the people's mean estimated from them is biased"
        )
    return notes


def run_ratings(
    folder: str | Path,
    result: Result,
    scales: Mapping[str | None, Scale] | None = None,
    *,
    annotator: str | None = None,
    metric: str | None = None,
) -> tuple[Labels | None, list[str]]:
    """The ratings in the run's labels (of ``metric``, or of every metric), per metric and
    sample (the mean where several people rated a sample), on the scale they were given on;
    None when there are none. The notes say how the ratings were gathered where that matters
    to an estimate.

    Raises:
        LabelsError: a metric's ratings are on several scales, or ``scales`` states another
            than theirs (a 4 of 1-5 read on 0-10 would be another rating).
    """
    folder = Path(folder)
    found = _standing(folder, "rating", annotator, metric)
    if not found:
        return None, []
    order = [sample.key for sample in result.samples]
    known = set(order)
    by_metric: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    notes = _order_notes(found, "ratings")
    foreign = 0
    for event in found:
        if event.item.sample_id not in known or event.item.metric not in result.metrics:
            foreign += 1
            continue
        if event.value is not None:
            by_metric[event.item.metric][event.item.sample_id].append(event.value)
    if foreign:
        notes.append(f"{foreign} label(s) of samples or metrics this run does not hold: not used")
    stated = dict(scales or {})
    ratings: dict[str, dict[str, float]] = {}
    chosen: dict[str, Scale] = {}
    for name, values in by_metric.items():
        try:
            given = rating_scale(found, name, stated.get(name) or stated.get(None))
        except ValueError as exc:
            raise LabelsError(f"{folder / LABELS_FILE}: {exc}") from None
        assert given is not None
        scale = parse_scale(given)
        ratings[name] = {  # in the run's order, as a file exported from them is
            key: sum(values[key]) / len(values[key]) for key in order if key in values
        }
        off = [k for k, v in ratings[name].items() if not scale.low <= v <= scale.high]
        if off:
            raise LabelsError(
                f"{folder / LABELS_FILE}: sample {off[0]!r}'s rating of {name} is off its "
                f"scale {given} ({len(off)} in all)"
            )
        chosen[name] = scale
        several = sum(len(v) > 1 for v in values.values())
        if several:
            notes.append(
                f"{name}: {several} sample(s) rated by several people: the mean of their "
                "ratings is used"
            )
    if not ratings:
        return None, notes
    labels = Labels(
        path=folder / LABELS_FILE,
        ratings=ratings,
        scales=chosen,
        rows=sum(len(v) for v in ratings.values()),
    )
    return labels, notes


def has_ratings(folder: str | Path, result: Result) -> bool:
    """Whether a rating of the run's samples stands in its labels: looked for, not read as
    ``run_ratings`` reads them (their scales are not checked), for a command that will not
    use them."""
    known = {sample.key for sample in result.samples}
    return any(
        event.value is not None
        and event.item.sample_id in known
        and event.item.metric in result.metrics
        for event in _standing(Path(folder), "rating", None) or []
    )


def run_claims(
    folder: str | Path, result: Result, *, annotator: str | None = None
) -> tuple[dict[tuple[str, str], bool], list[str]]:
    """(sample id, claim) -> supported, from the claim labels in the run's labels: as most of
    the people who could tell said; a tie, and "can't tell" alone, are left out."""
    folder = Path(folder)
    found = _standing(folder, "claim", annotator) or []
    known = {sample.key for sample in result.samples}
    votes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for event in found:
        if event.value is not None and event.item.sample_id in known:
            votes[(event.item.sample_id, event.item.claim)].append(event.value >= 0.5)
    claims = {
        key: sum(said) > len(said) / 2 for key, said in votes.items() if sum(said) * 2 != len(said)
    }
    notes = []
    ties = len(votes) - len(claims)
    if ties:
        notes.append(f"{ties} claim(s) on which the people are split evenly: left out")
    unsure = len({(e.item.sample_id, e.item.claim) for e in found if e.value is None} - set(votes))
    if unsure:
        notes.append(f"{unsure} claim(s) nobody could tell: left out")
    return claims, notes


def export(
    folder: str | Path,
    path: str | Path,
    result: Result,
    *,
    claims: bool = False,
    annotator: str | None = None,
    metric: str | None = None,
) -> tuple[int, list[str]]:
    """Write the run's ratings (a row per sample, a field per metric, or for ``metric`` alone:
    the file ``calibrate`` reads) or claim labels (``id``, ``claim``, ``supported``: the file
    ``tune`` reads) to ``path``, JSONL or CSV by its suffix; the number of rows written, and
    what reading the labels noted (an order that biases PPI, labels left out)."""
    target = Path(path)
    if target.suffix.lower() not in (".jsonl", ".csv"):
        raise ValueError(f"{target}: export to .jsonl or .csv")
    check_claims_metric(claims, metric)
    if metric is not None and metric not in result.metrics:
        raise ValueError(
            f"--metric {metric}: not a metric of the run ({', '.join(result.metrics)})"
        )
    rows: list[dict[str, object]]
    if claims:
        found, notes = run_claims(folder, result, annotator=annotator)
        order = {sample.key: i for i, sample in enumerate(result.samples)}
        rows = [
            {"id": key, CLAIM_FIELD: claim, SUPPORTED_FIELD: int(supported)}
            for (key, claim), supported in sorted(
                found.items(), key=lambda f: (order[f[0][0]], f[0][1])
            )
        ]
        fields = ["id", CLAIM_FIELD, SUPPORTED_FIELD]
    else:
        labels, notes = run_ratings(folder, result, annotator=annotator, metric=metric)
        ratings = labels.ratings if labels else {}
        fields = ["id", *[m for m in result.metrics if m in ratings]]
        rows = []
        for sample in result.samples:
            row: dict[str, object] = {"id": sample.key}
            row.update({m: ratings[m][sample.key] for m in fields[1:] if sample.key in ratings[m]})
            if len(row) > 1:
                rows.append(row)
    if not rows:
        what = "claim labels" if claims else f"ratings{f' of {metric}' if metric else ''}"
        who = f" by {annotator}" if annotator else ""
        raise ValueError(f"{folder}: no {what}{who} in the run's labels to export")
    atomic_write_text(
        target, _csv(rows, fields) if target.suffix.lower() == ".csv" else _jsonl(rows)
    )
    return len(rows), notes


def _jsonl(rows: Iterable[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _csv(rows: Iterable[dict[str, object]], fields: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
