"""Open any folder a ragmeter command writes, and say plainly what is missing.

Each command leaves its own files: ``evaluate`` a run record (``run.json``) with ``scores.jsonl``
and ``samples.csv`` (and ``scores.sqlite``, where scores are committed as they complete);
``meta wikieval`` ``agreement.json``; ``meta attribution`` a ``summary.json`` with a
``classification``; ``arena judge`` / ``arena leaderboard`` ``leaderboard.json``; ``arena
agreement`` an ``agreement.json`` of its own; ``attribution generate`` / ``score`` /
``experiment`` a ``summary.json`` list of conditions; an ``evaluate`` folder may also hold
``calibration.json`` (``calibrate``, or ``--labels``: people's ratings against the judge).
``open_run`` tells them apart by their files and shapes, so reports and comparisons never guess.

A folder that is half written (a killed run) still opens: what could be read is shown, and each
gap is listed in ``OpenedRun.notes``, never filled in silently.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ragmeter.heads.ppi import CALIBRATION_FILE
from ragmeter.manifest import MANIFEST_SCHEMA, RUN_FILE, RunRecord
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.store import stored_payloads

RunKind = Literal[
    "evaluate",
    "wikieval",
    "meta-attribution",
    "arena",
    "arena-agreement",
    "attribution",
    "retrieval",
    "side-by-side",
]

SIDE_BY_SIDE_FILE = "side_by_side.json"
SCORES_FILE = "scores.jsonl"
SCORES_DB = "scores.sqlite"
SAMPLES_FILE = "samples.csv"
NO_TEXT = "(not recorded)"
"""Shown for a question or answer the folder does not hold (no samples.csv)."""


class RunFolderError(ValueError):
    """A folder that cannot be shown at all: missing, or holding nothing ragmeter writes."""


@dataclass
class OpenedRun:
    """What a run folder holds, read once; reports and comparisons use nothing else."""

    path: Path
    kind: RunKind
    notes: list[str] = field(default_factory=list)
    """What is missing or was cut, and what is shown instead."""
    result: Result | None = None
    """``evaluate`` runs: the scores, samples and run record."""
    data: Any = None
    """The other kinds: the summary file as written (a dict, or a list for ``attribution``)."""
    has_record: bool = True
    """False for an ``evaluate`` folder without ``run.json`` (its judge and versions unknown)."""
    calibration: dict[str, Any] | None = None
    """``evaluate`` runs: ``calibration.json`` as written (people's ratings against the judge),
    when the folder has one."""

    @property
    def label(self) -> str:
        return self.path.name or str(self.path)

    @property
    def record(self) -> RunRecord | None:
        """The run record, for ``evaluate`` runs that have one."""
        return self.result.run if self.result is not None and self.has_record else None


def open_run(path: str | Path) -> OpenedRun:
    """Read the run folder at ``path``; ``RunFolderError`` when there is nothing to show."""
    folder = Path(path)
    if not folder.exists():
        raise RunFolderError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: not a folder (give the run's results folder)")
    agreement = folder / "agreement.json"
    if agreement.is_file():
        data = _json(agreement)
        if isinstance(data, dict) and "agreements" in data:
            return OpenedRun(folder, "wikieval", data=data)
        if isinstance(data, dict) and "verdict" in data:
            return OpenedRun(folder, "arena-agreement", data=data)
        raise RunFolderError(f"{agreement}: neither a WikiEval nor an arena agreement report")
    if (folder / SIDE_BY_SIDE_FILE).is_file():  # ragmeter compare --side-by-side --out
        return OpenedRun(folder, "side-by-side", data=_json(folder / SIDE_BY_SIDE_FILE))
    if (folder / "leaderboard.json").is_file():
        return OpenedRun(folder, "arena", data=_json(folder / "leaderboard.json"))
    if (folder / "battles.jsonl").is_file():
        raise RunFolderError(
            f"{folder}: battles.jsonl but no leaderboard.json; "
            f"make it with 'ragmeter arena leaderboard {folder}'"
        )
    summary = folder / "summary.json"
    if not (folder / RUN_FILE).is_file() and summary.is_file():
        data = _json(summary)
        if isinstance(data, list):
            return OpenedRun(folder, "attribution", data=data)
        if isinstance(data, dict) and "classification" in data:
            return OpenedRun(folder, "meta-attribution", data=data)
        if isinstance(data, dict) and "qrels" in data:  # ragmeter retrieval
            rankings = folder / "rankings.json"
            found = _json(rankings) if rankings.is_file() else []
            return OpenedRun(folder, "retrieval", data={**data, "rankings": found})
    if any((folder / name).is_file() for name in (RUN_FILE, SCORES_FILE, SCORES_DB)):
        return _open_evaluation(folder)
    found = sorted(p.name for p in folder.iterdir())[:8]
    raise RunFolderError(
        f"{folder}: not a ragmeter run folder: no {RUN_FILE}, {SCORES_FILE}, agreement.json, "
        f"leaderboard.json or summary.json in it"
        + (f" (it holds {', '.join(found)})" if found else " (it is empty)")
    )


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunFolderError(f"{path}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise RunFolderError(
            f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); "
            "the run may have been killed while writing it"
        ) from None


def _open_evaluation(folder: Path) -> OpenedRun:
    notes: list[str] = []
    record, has_record = _record(folder, notes)
    scores = _scores(folder, notes)
    metrics = list(dict.fromkeys([*record.metrics, *(s.metric for s in scores)]))
    samples = _samples(folder, scores, notes)
    result = Result(samples=samples, metrics=metrics, scores=scores, run=record)
    return OpenedRun(
        folder,
        "evaluate",
        notes=notes,
        result=result,
        has_record=has_record,
        calibration=_calibration(folder, notes),
    )


def _calibration(folder: Path, notes: list[str]) -> dict[str, Any] | None:
    """``calibration.json`` (written by ``calibrate`` or ``--labels``), if there is a readable
    one; an unreadable one is noted, not fatal: the scores are still shown."""
    path = folder / CALIBRATION_FILE
    if not path.is_file():
        return None
    try:
        data = _json(path)
    except RunFolderError as exc:
        notes.append(f"{exc}: the people's means are not shown")
        return None
    return data if isinstance(data, dict) else None


def _record(folder: Path, notes: list[str]) -> tuple[RunRecord, bool]:
    path = folder / RUN_FILE
    if not path.is_file():
        notes.append(
            f"no {RUN_FILE}: the judge, the models and the metric versions are unknown; "
            "only the scores are shown"
        )
        return RunRecord(judge="unknown"), False
    try:
        record = RunRecord.read(folder)
    except ValueError as exc:
        raise RunFolderError(
            f"{exc}; the run may have been killed while writing it, or written by another program"
        ) from None
    if record.schema_version > MANIFEST_SCHEMA:
        notes.append(
            f"{RUN_FILE} was written by ragmeter {record.ragmeter_version or '(unknown version)'} "
            f"(record schema {record.schema_version}; this version reads schema "
            f"{MANIFEST_SCHEMA}): fields this version does not know are not shown"
        )
    if record.status == "running" or record.ended is None:
        notes.append(
            f"{RUN_FILE} records no end: the run is still going or was killed; "
            "the scores saved so far are shown, and items never judged are missing"
        )
    elif record.status == "stopped":
        notes.append("the run stopped at its budget: items not judged are shown as unscored")
    return record, True


def read_scores(folder: str | Path) -> tuple[list[Score], list[str]]:
    """The scores a results folder holds (its export, else its scores database), whatever
    command wrote it (``evaluate``, ``meta mtrag``, ...), with notes on what was skipped."""
    notes: list[str] = []
    return _scores(Path(folder), notes), notes


def _scores(folder: Path, notes: list[str]) -> list[Score]:
    """From ``scores.jsonl``; from the scores database when the export is missing (a run killed
    before the end writes no export, but every finished item is in the database)."""
    path = folder / SCORES_FILE
    if path.is_file():
        return _scores_from_jsonl(path, notes)
    if (folder / SCORES_DB).is_file():
        notes.append(
            f"no {SCORES_FILE} (the run did not finish): the scores are read from {SCORES_DB}"
        )
        return _scores_from_db(folder / SCORES_DB, notes)
    notes.append(f"no {SCORES_FILE} and no {SCORES_DB}: no score to show")
    return []


def _scores_from_jsonl(path: Path, notes: list[str]) -> list[Score]:
    scores, bad = [], []
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            scores.append(Score.model_validate_json(line))
        except ValidationError:
            bad.append(number)
    if bad:
        cut = " (the last line is cut: the file was truncated)" if bad[-1] == number else ""
        notes.append(
            f"{path.name}: {len(bad)} unreadable line(s) skipped, line "
            f"{', '.join(map(str, bad[:5]))}{'…' if len(bad) > 5 else ''}{cut}; "
            f"{len(scores)} scores shown"
        )
    return scores


def _scores_from_db(path: Path, notes: list[str]) -> list[Score]:
    try:
        rows = stored_payloads(path)
    except sqlite3.Error as exc:
        raise RunFolderError(f"{path}: cannot read the scores database ({exc})") from None
    latest: dict[tuple[str, str], Score] = {}
    unreadable = 0
    for payload in rows:
        if payload is None:  # damaged: it no longer matches its digest
            unreadable += 1
            continue
        try:
            score = Score.model_validate_json(payload)
        except ValidationError:
            unreadable += 1
            continue
        latest[(score.sample_id, score.metric)] = score  # a later setting's score replaces
    if unreadable:
        notes.append(f"{SCORES_DB}: {unreadable} unreadable score(s) skipped")
    if len(latest) + unreadable < len(rows):
        notes.append(
            f"{SCORES_DB} holds {len(rows) - len(latest) - unreadable} older scores of the same "
            "samples (earlier settings); the latest of each is shown"
        )
    return list(latest.values())


def _samples(folder: Path, scores: list[Score], notes: list[str]) -> list[Sample]:
    """Questions and answers from ``samples.csv``, ordered as the run listed them; a sample with
    scores but no row there is still shown, marked as not recorded."""
    samples: dict[str, Sample] = {}
    path = folder / SAMPLES_FILE
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                key = row.get("id") or ""
                samples[key] = Sample(
                    id=key, question=row.get("question") or NO_TEXT, answer=row.get("answer") or ""
                )
    elif scores:
        notes.append(f"no {SAMPLES_FILE}: questions and answers are not shown, only sample ids")
    for score in scores:
        samples.setdefault(score.sample_id, Sample(id=score.sample_id, question=NO_TEXT, answer=""))
    return list(samples.values())
