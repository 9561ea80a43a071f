"""Spreading judging over a Ray cluster (the ``ray`` extra).

The driver (the process the user started) keeps everything that must survive: the run store,
the keys, the progress bar and the budget's accounts. Workers are Ray actors; each builds its
models once from a ``ModelRecipe`` (the local GGUF, or a client of an endpoint) and keeps them
for the run. The driver sends an item to a worker with a free slot, and commits each result to
its store the moment it comes back. So:

- killing the driver loses nothing committed, and a rerun reuses it (its actors die with it);
- a worker that dies has its unfinished items sent again, to a replacement worker;
- every worker must load the same models: their identities are compared before any judging,
  since the store keys hash them.

Nothing is shipped to Ray that the user did not ask to run there, and Ray's usage statistics are
switched off for a cluster this module starts.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from ragmeter.budget import Budget, BudgetExhausted, Meter, Price, guard
from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Embedder,
    Judge,
    ModelIdentity,
    identity_of,
)
from ragmeter.judges.cache import default_cache_path
from ragmeter.judges.registry import resolve_models
from ragmeter.manifest import model_record
from ragmeter.score import Score
from ragmeter.store import ScoreStore

logger = logging.getLogger(__name__)

MAX_WORKER_DEATHS = 3
"""Times an item may be in flight on a worker that died before it is given up as unscored: a
judge that crashes its process on one input must not take down worker after worker."""

WORKER_DIED = "the Ray worker judging it died"

Job = Callable[[Judge, Embedder | None], Callable[..., Any]]
"""Made once per worker from its models: the function each item is passed to (as ``*item``).
It is pickled to the workers, so it is a module-level class or function, or a partial of one."""


Executor = Literal["threads", "ray"]
"""Where items are judged: this process's threads, or Ray workers."""


class ClusterError(RuntimeError):
    """The cluster cannot run the job: Ray is missing, unreachable, or the workers disagree."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            "spreading work over Ray needs the 'ray' extra: pip install 'ragmeter[ray]'"
        ) from None
    return ray


FORWARDED_PREFIXES = ("RAGMETER_", "OPENAI_")
"""The driver's environment variables a worker is given: where the endpoint is, the API key,
the weights' folder, the threads of a local judge. A worker on another node would otherwise
build its judge from that node's environment, and ask another server than the user named."""


def _forwarded(*options: Mapping[str, Any] | None) -> dict[str, str]:
    names = {name for name in os.environ if name.startswith(FORWARDED_PREFIXES)}
    names |= {str(o["api_key_env"]) for o in options if o and o.get("api_key_env")}
    return {name: os.environ[name] for name in sorted(names) if name in os.environ}


@dataclass
class ModelRecipe:
    """How a worker builds its models: the specs and options, or picklable model objects, and
    the driver's variables that decide what they reach (held in memory only, never recorded)."""

    judge: str | Judge
    embedder: str | Embedder | None = None
    cache: bool | str | Path = True
    needs_embedder: bool = True
    judge_options: Mapping[str, Any] | None = None
    embedder_options: Mapping[str, Any] | None = None
    environment: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # The driver's cache file, as an absolute path: the workers on its machine share it,
        # and a worker elsewhere keeps its own at the same place.
        if self.cache is True:
            self.cache = default_cache_path()
        elif isinstance(self.cache, str | Path):
            self.cache = Path(self.cache).resolve()
        self.environment = {
            **_forwarded(self.judge_options, self.embedder_options),
            **self.environment,
        }

    def open(self, meter: Any = None, in_flight: int = 1) -> tuple[Judge, Embedder | None]:
        """Build the models in this process: the judge metered when there is a budget, with at
        most ``in_flight`` calls at once."""
        return resolve_models(
            self.judge,
            self.embedder,
            cache=self.cache,
            needs_embedder=self.needs_embedder,
            judge_options=self.judge_options,
            embedder_options=self.embedder_options,
            wrap_judge=partial(guard, meter=meter, in_flight=in_flight),
        )


class ReportedModel:
    """A model as a worker reported it: enough for the driver's keys (its identity) and run
    record (``describe()``), without loading it in the driver."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.name: str = report["name"]
        self.identity = ModelIdentity.model_validate(report["identity"])
        self._description: dict[str, Any] = report["description"]

    def describe(self) -> dict[str, Any]:
        return dict(self._description)

    def complete(self, request: ChatRequest) -> ChatResponse:  # pragma: no cover - a guard
        raise RuntimeError("the driver's stand-in of a worker's judge cannot be asked")

    def embed(self, texts: list[str]) -> Any:  # pragma: no cover - a guard
        raise RuntimeError("the driver's stand-in of a worker's embedder cannot be asked")


def _report(model: Judge | Embedder | None) -> dict[str, Any] | None:
    if model is None:
        return None
    record = model_record(model)
    assert record is not None
    described = record.model_dump(mode="json", exclude_none=True)
    return {
        "name": model.name,
        "identity": identity_of(model).model_dump(mode="json"),
        "description": {k: v for k, v in described.items() if k not in ("name", "identity")},
    }


# --- the budget, shared by every worker -------------------------------------------------------


class _MeterService:
    """The run's one ``Meter``, in an actor of its own so that every worker draws on it."""

    def __init__(self, budget: Budget, price: Price | None) -> None:
        self.meter = Meter(budget, price)

    def reserve(self, request: ChatRequest) -> tuple[float | None, str]:
        try:
            return self.meter.reserve(request), ""
        except BudgetExhausted as exc:
            return None, str(exc)

    def settle(self, reserved: float, response: ChatResponse | None) -> None:
        self.meter.settle(reserved, response)

    def state(self) -> tuple[bool, dict[str, Any]]:
        return self.meter.exhausted, self.meter.record()


class SharedMeter:
    """A ``Meter`` as seen from any process of the run: each call is one round trip to the
    meter's actor, which serialises them, so workers cannot jointly overspend."""

    def __init__(self, service: Any) -> None:
        self._service = service

    def reserve(self, request: ChatRequest) -> float:
        reserved, refusal = import_ray().get(self._service.reserve.remote(request))
        if reserved is None:
            raise BudgetExhausted(refusal)
        return float(reserved)

    def settle(self, reserved: float, response: ChatResponse | None) -> None:
        import_ray().get(self._service.settle.remote(reserved, response))

    @property
    def exhausted(self) -> bool:
        return bool(import_ray().get(self._service.state.remote())[0])

    def record(self) -> dict[str, Any]:
        record: dict[str, Any] = import_ray().get(self._service.state.remote())[1]
        return record


# --- the workers -----------------------------------------------------------------------------


class _Worker:
    """A Ray actor's state: the models, loaded once, and the current job's function."""

    def __init__(self, recipe: ModelRecipe, meter: SharedMeter | None, in_flight: int) -> None:
        os.environ.update(recipe.environment)  # the driver's; this process is the worker's
        self.judge, self.embedder = recipe.open(meter, in_flight)
        self._run: Callable[..., Any] | None = None

    def models(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return _report(self.judge), _report(self.embedder)

    def begin(self, job: Job) -> None:
        self._run = job(self.judge, self.embedder)

    def run(self, item: tuple[Any, ...]) -> Any:
        assert self._run is not None, "begin() comes first"
        return self._run(*item)


@dataclass
class RayExecutor:
    """Where and how widely to spread the work.

    Attributes:
        address: the cluster to join (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:10001"``)
            or ``"local"`` to start one on this machine; None does what ``ray.init()``
            does: the cluster ``RAY_ADDRESS`` names, else one running here, else a new one.
        actors: workers, each with its own models; None for one per ``actor_cpus`` CPUs of the
            cluster.
        actor_cpus: CPUs Ray sets aside for each worker (give a local judge the cores it uses).
        workers: items each worker judges at once (more than 1 pays with a remote judge).
    """

    address: str | None = None
    actors: int | None = None
    actor_cpus: float = 1.0
    workers: int = 1

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise ValueError("actors must be at least 1")
        if self.actor_cpus < 0:
            raise ValueError("actor_cpus must be >= 0")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")

    def open(
        self, recipe: ModelRecipe, budget: Budget | None = None, price: Price | None = None
    ) -> RayPool:
        """Join (or start) the cluster and start the workers, each loading its models."""
        return RayPool(self, recipe, budget, price)


def ray_executor(executor: Executor | RayExecutor, workers: int) -> RayExecutor | None:
    """The Ray executor that ``executor`` asks for (``"ray"``: the cluster ``RAY_ADDRESS``
    names or a new local one, ``workers`` items at once per worker), or None for threads."""
    if executor == "threads":
        return None
    if executor == "ray":
        return RayExecutor(workers=max(1, workers))
    if isinstance(executor, RayExecutor):
        return executor
    raise ValueError(f"executor must be 'threads', 'ray' or a RayExecutor, not {executor!r}")


@contextmanager
def workers_for(
    executor: Executor | RayExecutor | RayPool, recipe: ModelRecipe
) -> Iterator[RayPool | None]:
    """The Ray workers ``executor`` names for the block: None for this process's threads, an
    open pool as it is (its owner closes it), or workers started from ``recipe`` and ended
    after the block."""
    if isinstance(executor, RayPool):
        yield executor
        return
    spread = ray_executor(executor, 1)
    if spread is None:
        yield None
        return
    with spread.open(recipe) as pool:
        yield pool


def describe_executor(spread: RayExecutor | None, pool: RayPool | None) -> dict[str, Any] | str:
    """The executor as the run record shows it."""
    if spread is None or pool is None:
        return "threads"
    return {
        "ray": spread.address or os.environ.get("RAY_ADDRESS") or "local",
        "actors": pool.size,
        "actor_cpus": spread.actor_cpus,
        "workers": spread.workers,
    }


@dataclass
class _Slot:
    actor: Any
    busy: int = 0


@dataclass
class _InFlight:
    index: int
    slot: _Slot
    actor: Any
    """The worker it was sent to."""


class RayPool:
    """The started workers of one run. Use as a context manager: closing it ends the workers,
    and the Ray instance it started, if it started one."""

    def __init__(
        self,
        executor: RayExecutor,
        recipe: ModelRecipe,
        budget: Budget | None,
        price: Price | None,
    ) -> None:
        ray = import_ray()
        self._ray = ray
        self.executor = executor
        self._job: Job | None = None
        self._job_ref: Any = None
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            # A cluster started here reports nothing anywhere; one joined keeps its own setting.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            try:
                ray.init(
                    address=executor.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ClusterError(f"cannot join the Ray cluster: {exc}") from None
        try:
            self.meter = (
                SharedMeter(ray.remote(_MeterService).options(num_cpus=0).remote(budget, price))
                if budget is not None
                else None
            )
            self._recipe_ref = self._put(recipe, "the judge and embedder")
            count = executor.actors or max(
                1, int(ray.cluster_resources().get("CPU", 1) // max(executor.actor_cpus, 1e-9))
            )
            self._slots = [_Slot(self._start_actor()) for _ in range(count)]
            reports = self._get_all([s.actor.models.remote() for s in self._slots], "loading")
            self.judge, self.embedder = self._agreed(reports)
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        """How many workers there are."""
        return len(self._slots)

    # -- lifecycle --

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for slot in getattr(self, "_slots", []):
            with suppress(Exception):
                self._ray.kill(slot.actor)
        if self._started_ray and self._ray.is_initialized():
            self._ray.shutdown()

    def _start_actor(self) -> Any:
        remote = self._ray.remote(_Worker).options(
            num_cpus=self.executor.actor_cpus,
            max_concurrency=self.executor.workers,
        )
        return remote.remote(self._recipe_ref, self.meter, self.executor.workers)

    def _put(self, value: Any, what: str) -> Any:
        try:
            return self._ray.put(value)
        except (TypeError, pickle.PicklingError, AttributeError) as exc:
            # Ray's report walks the whole object; its last finding is the culprit.
            findings = re.findall(r"serialization: ([^\n\x1b]+)", str(exc))
            reason = findings[-1] if findings else str(exc).splitlines()[0]
            raise ValueError(
                f"{what} cannot be sent to Ray workers ({reason}): name them by spec "
                "(e.g. 'local', 'openai:MODEL') so that each worker builds its own"
            ) from None

    def _get_all(self, refs: list[Any], doing: str) -> list[Any]:
        try:
            return list(self._ray.get(refs))
        except self._ray.exceptions.RayActorError as exc:
            raise ClusterError(f"a Ray worker failed while {doing} its models: {exc}") from None

    def _agreed(self, reports: list[Any]) -> tuple[Any, Any]:
        """The workers' models, once every worker has shown it loaded the same ones."""
        first_judge, first_embedder = reports[0]
        for judge, embedder in reports[1:]:
            for mine, theirs in ((first_judge, judge), (first_embedder, embedder)):
                if (mine and mine["identity"]) != (theirs and theirs["identity"]):
                    raise ClusterError(
                        "the Ray workers loaded different models (on another node, other "
                        f"weights or settings?): {mine and mine['identity']} and "
                        f"{theirs and theirs['identity']}"
                    )
        return (
            ReportedModel(first_judge),
            ReportedModel(first_embedder) if first_embedder else None,
        )

    def refresh_models(self) -> None:
        """Read the models' descriptions again from a worker (a remote judge records what it
        learned while judging: how the server is asked, the snapshots it served)."""
        reports = self._get_all([self._slots[0].actor.models.remote()], "describing")
        self.judge, self.embedder = self._agreed(reports)

    # -- the work --

    def map(self, job: Job, items: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Yield ``(position, result)`` for every item, in the order they complete.

        A worker is sent no more items than it judges at once, so every item a dead worker
        held was being judged: each goes to another worker, and after ``MAX_WORKER_DEATHS``
        deaths its result is ``WorkerDied``. On an interrupt no further item is sent, those in
        flight are waited for and yielded, and the interrupt is raised again."""
        ray = self._ray
        job_ref = self._begin(job)
        todo = list(items)
        queue: deque[int] = deque(range(len(todo)))
        deaths = [0] * len(todo)
        in_flight: dict[Any, _InFlight] = {}
        interrupted: BaseException | None = None
        while queue or in_flight:
            if interrupted is None:
                for slot in self._slots:
                    while queue and slot.busy < self.executor.workers:
                        index = queue.popleft()
                        ref = slot.actor.run.remote(todo[index])
                        in_flight[ref] = _InFlight(index, slot, slot.actor)
                        slot.busy += 1
            try:
                done, _ = ray.wait(list(in_flight), num_returns=1)
                done += ray.wait([r for r in in_flight if r not in done], timeout=0)[0]
            except KeyboardInterrupt as exc:
                interrupted = exc
                queue.clear()
                continue
            for ref in done:
                flight = in_flight.pop(ref, None)
                if flight is None:  # a dead worker's item, already sent again
                    continue
                flight.slot.busy -= 1
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    held = [flight] + [f for f in in_flight.values() if f.actor is flight.actor]
                    in_flight = {r: f for r, f in in_flight.items() if f.actor is not flight.actor}
                    self._replace(flight.slot, job_ref)
                    for lost in held:
                        deaths[lost.index] += 1
                        if deaths[lost.index] >= MAX_WORKER_DEATHS:
                            yield lost.index, WorkerDied(deaths[lost.index], str(exc))
                        elif interrupted is None:
                            queue.appendleft(lost.index)
                    continue
                yield flight.index, result
        if interrupted is not None:
            raise interrupted

    def _begin(self, job: Job) -> Any:
        """Send ``job`` to every worker and begin it there, unless it is the job they hold:
        a run that maps batch after batch (``generate``) ships its job, and what the job
        carries (a corpus to search), once."""
        if job is not self._job:
            job_ref = self._put(job, "the job")
            self._get_all([s.actor.begin.remote(job_ref) for s in self._slots], "starting")
            self._job, self._job_ref = job, job_ref
        return self._job_ref

    def _replace(self, slot: _Slot, job_ref: Any) -> None:
        """Start a new worker in a dead one's place."""
        logger.warning("a Ray worker died; starting another and sending its items again")
        slot.actor = self._start_actor()
        slot.busy = 0
        self._get_all([slot.actor.begin.remote(job_ref)], "starting")


@dataclass
class WorkerDied:
    """An item whose worker died ``MAX_WORKER_DEATHS`` times while judging it."""

    deaths: int
    error: str = field(repr=False)

    @property
    def reason(self) -> str:
        return f"{WORKER_DIED} {self.deaths} times; the last: {self.error.splitlines()[0]}"


KeyOf = Callable[..., str]
"""``key_of(judge, *unit)``: the store key of a unit's judgement, with that judge."""


def keyed_on_cluster(
    pool: RayPool,
    store: ScoreStore | None,
    units: list[tuple[Any, ...]],
    key_of: KeyOf,
    job: Job,
    name_of: Callable[..., tuple[str, str]],
) -> Iterator[tuple[int, Score, bool]]:
    """Judge units that each make one stored ``Score`` (a presentation of a pair, a claim):
    yield ``(position, score, reused)``, first for every unit the store already holds, then
    for each judged one as it comes back, committed to the store before it is yielded.

    ``job`` makes, from a worker's models, the function that judges a unit and returns its
    key (worked out once judging ended) and score; ``name_of(*unit)`` is the ``(id, name)``
    that a unit's score is recorded under when its worker kept dying."""
    todo = []
    for position, unit in enumerate(units):
        stored = store.reusable(key_of(pool.judge, *unit)) if store is not None else None
        if stored is None:
            todo.append(position)
        else:
            yield position, stored, True
    for done, outcome in pool.map(job, [units[i] for i in todo]):
        unit = units[todo[done]]
        if isinstance(outcome, WorkerDied):
            sample_id, name = name_of(*unit)
            key = key_of(pool.judge, *unit)
            score = Score(
                sample_id=sample_id, metric=name, value=None, unscored_reason=outcome.reason
            )
        else:
            key, score = outcome
        if store is not None:
            store.put(key, score)
        yield todo[done], score, False
