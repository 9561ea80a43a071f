"""Where a test set's candidates are judged: this process's threads, or Ray workers.

Either way the driver (the process the user started) plans the candidates, reads the
candidates log, appends each judged candidate to it and accepts or rejects it; only the
judging moves. On Ray each worker builds its judge and embedder once from the run's
``ModelRecipe`` (``cluster.py``), and is sent the job once: the function that judges one
candidate, with the chunks' texts and vectors the unanswerable check searches. The budget is
the pool's one ``Meter``, in an actor of its own, so every worker draws on the same
``--max-calls``.

A batch is the candidates judged at once: ``--workers`` with threads, ``--workers`` times the
workers (actors) on Ray. The next batch is planned when the whole batch is back, from what it
accepted, so the set depends on the seed and the batch's size, not on where it was judged: a
Ray run gives the set a thread run with ``--workers`` equal to its batch gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ragmeter.budget import Budget, BudgetExhausted, Meter, price_for
from ragmeter.cluster import (
    WORKER_DIED,
    ClusterError,
    Executor,
    Job,
    ModelRecipe,
    RayExecutor,
    RayPool,
    WorkerDied,
    describe_executor,
    ray_executor,
)
from ragmeter.judges import Embedder, Judge
from ragmeter.judges.base import identity_of
from ragmeter.judges.cache import CachedEmbedder, CallCache
from ragmeter.judges.registry import DEFAULT_EMBEDDER, get_embedder
from ragmeter.testset.candidates import CandidateRecord
from ragmeter.testset.planning import ChunkIndex, Plan
from ragmeter.testset.quality import QualityOptions

Search = Callable[[str, int], list[str]]
"""``search(question, k)``: the ``k`` chunks of the corpus closest to ``question``."""

JudgeCandidate = Callable[..., CandidateRecord]
"""``runner._judge_candidate``: ``(plan, key, judge, embedder, quality, search, retries,
repairs)`` to the judged candidate."""


@dataclass(frozen=True)
class CandidateJob:
    """Made once per worker (or once in this process) from its models: the function that
    judges one candidate, ``(plan, key)`` to its record, or None when the budget ran out
    before it was decided (it is left for a rerun)."""

    judge_candidate: JudgeCandidate
    index: ChunkIndex
    quality: QualityOptions
    retries: int
    repairs: int

    def __call__(
        self, judge: Judge, embedder: Embedder | None
    ) -> Callable[[Plan, str], CandidateRecord | None]:
        assert embedder is not None, "a test set's checks need an embedder"
        search: Search = partial(self.index.nearest, embedder)

        def judge_one(plan: Plan, key: str) -> CandidateRecord | None:
            try:
                return self.judge_candidate(
                    plan, key, judge, embedder, self.quality, search, self.retries, self.repairs
                )
            except BudgetExhausted:
                return None

        return judge_one


def lost_candidate(plan: Plan, key: str, died: WorkerDied) -> CandidateRecord:
    """A candidate whose Ray worker kept dying, rejected with the reason. It is not written
    to the candidates log, so a rerun judges it again (as ``evaluate`` judges an unscored item
    again)."""
    return CandidateRecord.of(plan, key).model_copy(
        update={"outcome": "rejected", "reason": WORKER_DIED, "detail": died.reason}
    )


class Judging:
    """The run's judge and embedder, and the threads or Ray workers that run its jobs."""

    def __init__(
        self,
        judge: Judge,
        embedder: Embedder,
        threads: ThreadPoolExecutor | None,
        pool: RayPool | None,
        spread: RayExecutor | None,
        at_once: int,
    ) -> None:
        self.judge = judge
        """The judge (on Ray, the driver's stand-in of the workers' judge: its identity)."""
        self.embedder = embedder
        """The driver's embedder: it reads the corpus and compares accepted questions."""
        self.at_once = at_once
        """Candidates judged at once: the size of a batch."""
        self._threads, self._pool, self._spread = threads, pool, spread

    def describe(self) -> dict[str, Any] | str:
        """Where the run judged, as the summary shows it."""
        return describe_executor(self._spread, self._pool)

    def map(self, job: Job, items: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """``(position, result)`` for each item as it is done: in order on threads, in the
        order they come back on Ray (each worker's ``WorkerDied`` included). Interrupted, the
        items already done are yielded before the interrupt is raised again."""
        if self._pool is not None:
            yield from self._pool.map(job, items)
            return
        assert self._threads is not None
        run = job(self.judge, self.embedder)
        yield from enumerate(self._threads.map(lambda item: run(*item), items))


@contextmanager
def judging(
    executor: Executor | RayExecutor,
    workers: int,
    recipe: ModelRecipe,
    max_calls: int | None,
) -> Iterator[Judging]:
    """The judge and embedder of a run, and the threads or Ray workers that judge for it,
    ended after the block. ``max_calls`` is one budget for every thread or worker."""
    spread = ray_executor(executor, workers)
    name = recipe.judge if isinstance(recipe.judge, str) else recipe.judge.name
    budget = Budget(max_calls=max_calls) if max_calls else None
    if spread is None:
        meter = Meter(budget, price_for(name)) if budget is not None else None
        judge, embedder = recipe.open(meter, workers)
        assert embedder is not None
        with ThreadPoolExecutor(max_workers=workers) as threads:
            yield Judging(judge, embedder, threads, None, None, workers)
        return
    with spread.open(recipe, budget, price_for(name)) as pool:
        embedder = _driver_embedder(recipe)
        mine, theirs = identity_of(embedder), pool.embedder and pool.embedder.identity
        if mine != theirs:
            raise ClusterError(
                f"the Ray workers loaded another embedder ({theirs}) than this process "
                f"({mine}): the corpus's vectors and the workers' searches must agree"
            )
        at_once = pool.size * spread.workers
        yield Judging(pool.judge, embedder, None, pool, spread, at_once)


def _driver_embedder(recipe: ModelRecipe) -> Embedder:
    """The recipe's embedder, built in the driver without its judge (which only the Ray
    workers load), behind the same call cache."""
    options: Mapping[str, Any] = recipe.embedder_options or {}
    spec = recipe.embedder
    embedder = (
        spec
        if spec is not None and not isinstance(spec, str)
        else get_embedder(spec or DEFAULT_EMBEDDER, **options)
    )
    if recipe.cache is False:
        return embedder
    assert isinstance(recipe.cache, Path)  # the recipe resolved True to the default path
    return CachedEmbedder(embedder, CallCache(recipe.cache))
