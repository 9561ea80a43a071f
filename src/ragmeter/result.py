"""The outcome of an evaluation: every score, and summaries that are pure functions of them.

A run's memory must not grow with its length, so a result does not hold what its run's store
(``scores.sqlite``) already holds: ``evaluate`` with an ``out_dir`` keeps, for each score, only
its value, reason and usage (a ``StoredScore``, a few hundred bytes) and reads the whole score,
explanation and exchanges, from the store each time it is asked for (``ScoreList``). Summaries
read only what is kept; exports stream the stored rows as they are.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

from pydantic import BaseModel

from ragmeter.data import InvalidRow
from ragmeter.manifest import RunRecord
from ragmeter.sample import Sample
from ragmeter.score import Score, ScoreBrief, Usage
from ragmeter.stats import bootstrap_mean_ci
from ragmeter.store import StoreError, read_payloads

if TYPE_CHECKING:
    import pandas as pd


class StoredScore(NamedTuple):
    """A score as a result keeps it while the whole of it is in the run's store: what the
    summaries read, and the row (key and digest) that holds the rest."""

    sample_id: str
    metric: str
    value: float | None
    unscored_reason: str | None
    counts: tuple[int, ...]
    """The score's ``Usage``, its fields in order: a tuple, far lighter than the model."""
    key: bytes
    digest: bytes

    @classmethod
    def of(cls, score: Score, key: str, digest: bytes) -> StoredScore:
        counts = tuple(getattr(score.usage, name) for name in Usage.model_fields)
        return cls(
            score.sample_id,
            score.metric,
            score.value,
            score.unscored_reason,
            counts,
            bytes.fromhex(key),
            digest,
        )

    @property
    def usage(self) -> Usage:
        return Usage(**dict(zip(Usage.model_fields, self.counts, strict=True)))

    @property
    def scored(self) -> bool:
        return self.value is not None


class ScoreList(MutableSequence[Score]):
    """A run's scores in order, as a list of them, of which those in the run's store (at
    ``store``) are kept as ``StoredScore`` and read from it, whole, each time they are asked
    for: indexing and iterating give the same ``Score`` as was committed. Each access reads
    afresh, so a change to a score read from here is not kept: put the changed score back
    (``scores[i] = score``), which is then held in memory like one the store does not hold.

    The store must stay where it was: reading a score from a folder moved away, or whose row
    a later run replaced (an unscored item judged again), raises ``StoreError``; the values,
    reasons and usage (``briefs``, and the summaries made from them) are still here."""

    def __init__(
        self, store: Path | None = None, entries: Iterable[Score | StoredScore] = ()
    ) -> None:
        self.store = store
        self._entries: list[Score | StoredScore] = list(entries)

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> Score: ...
    @overload
    def __getitem__(self, index: slice) -> list[Score]: ...
    def __getitem__(self, index: int | slice) -> Score | list[Score]:
        if isinstance(index, slice):
            return list(self._scores(self._entries[index]))
        return next(self._scores([self._entries[index]]))

    @overload
    def __setitem__(self, index: int, value: Score) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Score]) -> None: ...
    def __setitem__(self, index: int | slice, value: Score | Iterable[Score]) -> None:
        if isinstance(index, slice):
            self._entries[index] = list(cast(Iterable[Score], value))
        else:
            self._entries[index] = cast(Score, value)

    def __delitem__(self, index: int | slice) -> None:
        del self._entries[index]

    def insert(self, index: int, value: Score) -> None:
        self._entries.insert(index, value)

    def __iter__(self) -> Iterator[Score]:
        return self._scores(self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        stored = sum(isinstance(entry, StoredScore) for entry in self._entries)
        return f"<ScoreList of {len(self)} scores, {stored} read from {self.store} when asked>"

    def briefs(self) -> list[Score | StoredScore]:
        """Each score's sample, metric, value, reason and usage, without reading the store."""
        return list(self._entries)

    def where(self, keep: Callable[[Score | StoredScore], bool]) -> list[Score]:
        """The scores whose brief ``keep`` accepts, read whole: the store is read for those
        alone."""
        return list(self._scores([entry for entry in self._entries if keep(entry)]))

    def json_lines(self) -> Iterator[str]:
        """Each score as its JSON, in order: a stored one as its row holds it (the text
        ``Score.model_dump_json`` gave when it was committed), streamed row by row."""
        for item in self._read(self._entries):
            yield item if isinstance(item, str) else item.model_dump_json()

    def _scores(self, entries: Sequence[Score | StoredScore]) -> Iterator[Score]:
        for item in self._read(entries):
            yield Score.model_validate_json(item) if isinstance(item, str) else item

    def _read(self, entries: Sequence[Score | StoredScore]) -> Iterator[Score | str]:
        """Each entry as the ``Score`` held, or the JSON of its stored row, reading the store
        in one pass (one connection) as the entries are consumed."""
        entries = list(entries)  # as they are now: the rows read must pair with them
        stored = [entry for entry in entries if isinstance(entry, StoredScore)]
        rows: Iterator[str | None] = iter(())
        if stored:
            assert self.store is not None, "a stored score in a list without a store"
            if not self.store.is_file():
                raise StoreError(self._gone())
            rows = read_payloads(self.store, ((entry.key, entry.digest) for entry in stored))
        for entry in entries:
            if not isinstance(entry, StoredScore):
                yield entry
                continue
            payload = next(rows)
            if payload is None:
                raise StoreError(
                    f"the score of {entry.sample_id} ({entry.metric}) is no longer in "
                    f"{self.store} as this result's run wrote it: a later run on the same "
                    "folder replaced it, or the file was damaged; its value, reason and usage "
                    "are still in the result (summary(), to_pandas())"
                )
            yield payload

    def _gone(self) -> str:
        """Why the scores cannot be read when the store is no longer where the run wrote it:
        the run's folder, or the database in it, was removed or moved after the run."""
        assert self.store is not None
        kept = "their values, reasons and usage are still in the result (summary(), to_pandas())"
        folder = self.store.parent
        if not folder.is_dir():
            return (
                f"the run folder {folder} was removed (or moved) after the run, so its scores "
                f"can no longer be read: keep the folder while the result is used; {kept}"
            )
        return (
            f"the scores database {self.store} was removed (or moved) from its run folder after "
            f"the run, so its scores can no longer be read; {kept}"
        )


class MetricSummary(BaseModel):
    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]


@dataclass
class Result:
    samples: list[Sample]
    metrics: list[str]
    scores: MutableSequence[Score]
    """Every score, in sample order then metric order. From ``evaluate`` a ``ScoreList``: with
    an ``out_dir`` each score is read from its ``scores.sqlite`` when asked for, so keep the
    folder while the result is used; without one every score is held in memory."""
    run: RunRecord
    """The run record (``run.json``)."""
    invalid_rows: list[InvalidRow] = field(default_factory=list)

    def scores_for(self, metric: str) -> list[Score]:
        if isinstance(self.scores, ScoreList):  # read that metric's rows alone from the store
            return self.scores.where(lambda brief: brief.metric == metric)
        return [s for s in self.scores if s.metric == metric]

    def briefs(self) -> Sequence[ScoreBrief]:
        """Each score's sample, metric, value, reason and usage, in order, without its
        explanation and exchanges: what summaries read, and nothing is read from the store."""
        return self.scores.briefs() if isinstance(self.scores, ScoreList) else self.scores

    def json_lines(self) -> Iterator[str]:
        """Each score as its JSON (``scores.jsonl``), in order, streamed from the store where
        it is there."""
        if isinstance(self.scores, ScoreList):
            return self.scores.json_lines()
        return (score.model_dump_json() for score in self.scores)

    def summary(self) -> list[MetricSummary]:
        by_metric: dict[str, list[ScoreBrief]] = defaultdict(list)
        for brief in self.briefs():
            by_metric[brief.metric].append(brief)
        rows = []
        for metric in self.metrics:
            scores = by_metric[metric]
            values = [s.value for s in scores if s.value is not None]
            reasons = Counter(s.unscored_reason or "" for s in scores if s.value is None)
            ci = bootstrap_mean_ci(values)
            rows.append(
                MetricSummary(
                    metric=metric,
                    mean=ci[0] if ci else None,
                    ci_low=ci[1] if ci else None,
                    ci_high=ci[2] if ci else None,
                    scored=len(values),
                    unscored=len(scores) - len(values),
                    unscored_reasons=dict(reasons),
                )
            )
        return rows

    def usage(self) -> Usage:
        total = Usage()
        for brief in self.briefs():
            total.add(brief.usage)
        return total

    def to_pandas(self) -> pd.DataFrame:
        """One row per sample, a column per metric (``<NA>`` where unscored) and, per metric, a
        ``<metric>_unscored_reason`` column saying why."""
        import pandas as pd

        by_key = {(s.sample_id, s.metric): s for s in self.briefs()}
        rows = []
        for sample in self.samples:
            row: dict[str, Any] = {
                "id": sample.key,
                "question": sample.question,
                "answer": sample.answer,
            }
            for metric in self.metrics:
                score = by_key.get((sample.key, metric))
                row[metric] = score.value if score else None
                row[f"{metric}_unscored_reason"] = score.unscored_reason if score else None
            rows.append(row)
        frame = pd.DataFrame(rows)
        # Nullable floats: an unscored cell is <NA> beside its reason, never a bare NaN.
        return frame.astype({metric: "Float64" for metric in self.metrics})
