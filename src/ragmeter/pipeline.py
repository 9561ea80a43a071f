"""One (sample, metric) item, from its key to its stored score: the unit ``evaluate`` runs for
every item, on one thread, many, or many Ray workers.

key -> the store (a scored item is reused) -> a fresh judge session -> the metric -> the store.
The key hashes the sample, the metric's version (its options and prompts) and the identities of
the models it uses, so changing any of them re-judges instead of reusing a stale score.

The work is split in two so that it can be spread over processes: ``ItemJudge`` holds the models
and judges an item (in this process, or in a worker that loaded its own models), and
``ItemPipeline`` holds the store, reuses what it can and commits what comes back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragmeter.budget import NOT_JUDGED, BudgetExhausted
from ragmeter.judges.base import Embedder, Judge, identity_of
from ragmeter.language import keyed_language
from ragmeter.metrics import Metric
from ragmeter.result import StoredScore
from ragmeter.sample import Sample
from ragmeter.score import Score, Usage
from ragmeter.session import JudgeSession
from ragmeter.store import ScoreStore

logger = logging.getLogger(__name__)


class ItemKeys:
    """The keys scores of one metric are stored under, with the metric's version worked out
    once (it hashes the prompts, most of a key's cost)."""

    def __init__(self, metric: Metric, judge: Judge, embedder: Embedder | None) -> None:
        self._prefix = [metric.name, metric.version]
        self._metric = metric
        self._judge = judge
        self._embedder = embedder if embedder is not None and metric.needs_embedder else None

    def key(self, judged: Sample) -> str:
        """The key of ``judged``, the sample as the judge sees it (cut to the size limit, if it
        was): its id and its content, so an edited sample or another limit is judged afresh;
        and its language where it is not English, since its texts are split by that language's
        rules (``language.keyed_language``).

        The models' identities are read at each call: a judge that learns during a run to ask
        a server another way has another identity from then on (see ``CachedJudge``)."""
        models = [
            identity_of(self._judge).digest,
            identity_of(self._embedder).digest if self._embedder is not None else "",
        ]
        if not self._metric.needs_judge:  # computed from the sample alone: no model decides it
            models = []
        parts = [judged.key, judged.digest, *self._prefix, models]
        material = self._metric.sample_material(judged)
        if material is not None:  # absent otherwise: the keys of other metrics stay as they were
            parts.append(material)
        language = keyed_language(judged)
        if language is not None:  # absent for English: their keys stay as they were
            parts.append({"language": language})
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass
class Judged:
    """An item as it comes back from whoever judged it."""

    score: Score
    key: str
    """Worked out once judging ended: the judge may have learned to ask another way meanwhile."""
    saved: bool
    """False for an item the budget stopped: it is not stored, so a rerun judges it."""
    internal_error: bool = False


class ItemJudge:
    """Judges items with one judge and embedder: what runs where the models are, a thread of
    this process or a worker process that loaded its own."""

    def __init__(
        self,
        metrics: list[Metric],
        judge: Judge,
        embedder: Embedder | None,
        *,
        retries: int,
        repairs: int,
        fan_out: int = 1,
    ) -> None:
        self.judge = judge
        self.embedder = embedder
        self.retries = retries
        self.repairs = repairs
        self.fan_out = fan_out
        """Questions of one item asked at once (see ``JudgeSession.ask_yes_no_all``)."""
        self.metrics = {m.name: m for m in metrics}
        self._keys = {m.name: ItemKeys(m, judge, embedder) for m in metrics}

    def __call__(self, judged: Sample, metric_name: str) -> Judged:
        """Score one item. A bug in a metric or provider becomes an unscored item, not a lost
        run."""
        metric = self.metrics[metric_name]
        session = JudgeSession(
            self.judge,
            self.embedder,
            retries=self.retries,
            repairs=self.repairs,
            fan_out=self.fan_out,
        )
        internal_error = False
        try:
            score = metric.score(judged, session)
        except BudgetExhausted as exc:
            reason = f"{NOT_JUDGED}{exc}; rerun with a higher budget to continue"
            score = _unscored(judged, metric, session, reason)
            return Judged(score, self._keys[metric_name].key(judged), saved=False)
        except Exception as exc:
            logger.exception("%s on sample %s failed", metric.name, judged.key)
            internal_error = True
            reason = f"internal error: {type(exc).__name__}: {exc}"
            score = _unscored(judged, metric, session, reason)
        return Judged(score, self._keys[metric_name].key(judged), True, internal_error)


class Tally:
    """What this invocation did, counted across worker threads."""

    def __init__(self) -> None:
        self.resumed = 0
        self.judged = 0
        self.pending = 0
        self.internal_errors = 0
        self.usage = Usage()
        self._lock = threading.Lock()

    def count(self, outcome: str, usage: Usage | None = None) -> None:
        with self._lock:
            setattr(self, outcome, getattr(self, outcome) + 1)
            if usage is not None:
                self.usage.add(usage)


Kept = Score | StoredScore
"""What the run's result keeps of an item: a score the store holds as its ``StoredScore`` (the
store has the rest, and a long run's memory stays flat), any other score (not saved, or no
store) whole."""


class ItemPipeline:
    """Scores items, reusing what the store holds and committing what is judged.

    ``keys_judge`` and ``keys_embedder`` are the models whose identities the keys hash: the
    models themselves in one process, or stand-ins for what the workers loaded."""

    def __init__(
        self,
        metrics: list[Metric],
        keys_judge: Judge,
        keys_embedder: Embedder | None,
        store: ScoreStore | None,
        *,
        on_score: Callable[[Score], None] | None = None,
    ) -> None:
        self.store = store
        self.on_score = on_score
        self.tally = Tally()
        self._keys = {m.name: ItemKeys(m, keys_judge, keys_embedder) for m in metrics}

    def key(self, judged: Sample, metric: Metric) -> str:
        return self._keys[metric.name].key(judged)

    def reuse(self, judged: Sample, metric: Metric) -> StoredScore | None:
        """The stored score of an item if a rerun may reuse it (counted and reported as
        resumed), else None: the item is to be judged."""
        if self.store is None:
            return None
        key = self.key(judged, metric)
        found = self.store.reusable_row(key)
        if found is None:
            return None
        stored, digest = found
        self.tally.count("resumed")
        self._report(stored)
        return StoredScore.of(stored, key, digest)

    def commit(self, judged: Judged, notes: dict[str, Any]) -> Kept:
        """Record a judged item, with what its sample's ``notes`` say (what was cut from it,
        the text in it addressed to the judge) in the explanation."""
        score = judged.score
        if judged.saved and judged.internal_error:
            self.tally.count("internal_errors")
        self.tally.count("judged" if judged.saved else "pending", score.usage)
        score.explanation.update(notes)
        kept: Kept = score
        if judged.saved and self.store is not None:
            kept = StoredScore.of(score, judged.key, self.store.put(judged.key, score))
        self._report(score)
        return kept

    def run(self, judge: ItemJudge, judged: Sample, notes: dict[str, Any], metric: Metric) -> Kept:
        """Score ``judged``, the sample as the judge is to see it (``fit_sample``), in this
        process."""
        stored = self.reuse(judged, metric)
        if stored is not None:
            return stored
        return self.commit(judge(judged, metric.name), notes)

    def _report(self, score: Score) -> None:
        if self.on_score:
            self.on_score(score)


def _unscored(sample: Sample, metric: Metric, session: JudgeSession, reason: str) -> Score:
    return Score(
        sample_id=sample.key,
        metric=metric.name,
        value=None,
        unscored_reason=reason,
        exchanges=session.exchanges,
        usage=session.usage,
    )
