"""One (sample, metric) item, from its key to its stored score: the unit ``evaluate`` runs for
every item, on one thread or many.

key -> the store (a scored item is reused) -> a fresh judge session -> the metric -> the store.
The key hashes the sample, the metric's version (its options and prompts) and the identities of
the models it uses, so changing any of them re-judges instead of reusing a stale score.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from ragmeter.budget import NOT_JUDGED, BudgetExhausted
from ragmeter.judges.base import Embedder, Judge, identity_of
from ragmeter.metrics import Metric
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
        self._judge = judge
        self._embedder = embedder if embedder is not None and metric.needs_embedder else None

    def key(self, judged: Sample) -> str:
        """The key of ``judged``, the sample as the judge sees it (cut to the size limit, if it
        was): its id and its content, so an edited sample or another limit is judged afresh.

        The models' identities are read at each call: a judge that learns during a run to ask
        a server another way has another identity from then on (see ``CachedJudge``)."""
        models = [
            identity_of(self._judge).digest,
            identity_of(self._embedder).digest if self._embedder is not None else "",
        ]
        return hashlib.sha256(
            json.dumps([judged.key, judged.digest, *self._prefix, models]).encode()
        ).hexdigest()


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


class ItemPipeline:
    """Scores items one at a time, reusing what the store holds and committing what it judges."""

    def __init__(
        self,
        metrics: list[Metric],
        judge: Judge,
        embedder: Embedder | None,
        store: ScoreStore | None,
        *,
        retries: int,
        repairs: int,
        on_score: Callable[[Score], None] | None = None,
    ) -> None:
        self.judge = judge
        self.embedder = embedder
        self.store = store
        self.retries = retries
        self.repairs = repairs
        self.on_score = on_score
        self.tally = Tally()
        self._keys = {m.name: ItemKeys(m, judge, embedder) for m in metrics}

    def run(self, judged: Sample, cut: dict[str, Any], metric: Metric) -> Score:
        """Score ``judged``, the sample as the judge is to see it (``fit_sample``), with what was
        cut from it noted in the explanation."""
        keys = self._keys[metric.name]
        stored = self.store.reusable(keys.key(judged)) if self.store is not None else None
        if stored is not None:
            self.tally.count("resumed")
            score = stored
        else:
            score, keep = self._judge(metric, judged)
            if cut:
                score.explanation["truncated_inputs"] = cut
            if keep and self.store is not None:
                # Keyed anew: the judge may have learned to ask another way while judging.
                self.store.put(keys.key(judged), score)
        if self.on_score:
            self.on_score(score)
        return score

    def _judge(self, metric: Metric, sample: Sample) -> tuple[Score, bool]:
        """Score one item; returns the score and whether it should be saved (not if the budget
        stopped it). A bug in a metric or provider becomes an unscored item, not a lost run."""
        session = JudgeSession(
            self.judge, self.embedder, retries=self.retries, repairs=self.repairs
        )
        try:
            score = metric.score(sample, session)
        except BudgetExhausted as exc:
            self.tally.count("pending", session.usage)
            reason = f"{NOT_JUDGED}{exc}; rerun with a higher budget to continue"
            return _unscored(sample, metric, session, reason), False
        except Exception as exc:
            logger.exception("%s on sample %s failed", metric.name, sample.key)
            self.tally.count("internal_errors")
            reason = f"internal error: {type(exc).__name__}: {exc}"
            score = _unscored(sample, metric, session, reason)
        self.tally.count("judged", session.usage)
        return score, True


def _unscored(sample: Sample, metric: Metric, session: JudgeSession, reason: str) -> Score:
    return Score(
        sample_id=sample.key,
        metric=metric.name,
        value=None,
        unscored_reason=reason,
        exchanges=session.exchanges,
        usage=session.usage,
    )
