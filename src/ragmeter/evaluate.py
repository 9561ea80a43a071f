"""``evaluate()``: score a dataset with a set of metrics, resumably.

Each (sample, metric) item is committed to ``out_dir/scores.sqlite`` the moment it completes,
keyed by the sample, the metric's version (its configuration and prompts) and the models. A rerun
with the same folder takes every scored item from there and judges only the rest, so a run killed
at any moment, even by SIGKILL, loses no finished item and judges none twice; the call cache
spares the calls an interrupted item had already made. Unscored items are judged again on a
rerun, since their failure may have been passing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from ragmeter.budget import (
    NOT_JUDGED,
    Budget,
    BudgetExhausted,
    Meter,
    MeteredJudge,
    is_pending,
    price_for,
)
from ragmeter.data import LoadedDataset, load_samples
from ragmeter.judges.base import Embedder, Judge
from ragmeter.judges.cache import CachedEmbedder, CachedJudge, CallCache
from ragmeter.judges.registry import get_embedder, get_judge
from ragmeter.limits import MAX_INPUT_CHARS, InputTruncatedWarning, fit_sample
from ragmeter.manifest import finish_record, redact_options, start_record, write_run_record
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score, Usage
from ragmeter.session import JudgeSession
from ragmeter.store import ScoreStore

DEFAULT_METRICS = ("faithfulness", "answer_relevance", "context_relevance")
SCORES_DB = "scores.sqlite"

OnScore = Callable[[Score], None]
logger = logging.getLogger(__name__)


class BudgetWarning(UserWarning):
    """The run stopped at its budget; the result is partial."""


def _resolve_metrics(metrics: Sequence[str | Metric] | None) -> list[Metric]:
    chosen = [metric_by_name(m) if isinstance(m, str) else m for m in metrics or DEFAULT_METRICS]
    names = [m.name for m in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"a metric is listed twice: {names}")
    return chosen


def _resolve_dataset(dataset: Any, on_invalid: Literal["raise", "skip"]) -> LoadedDataset:
    if isinstance(dataset, LoadedDataset):
        return dataset
    if isinstance(dataset, list) and all(isinstance(s, Sample) for s in dataset):
        return LoadedDataset(samples=list(dataset), invalid=[])
    return load_samples(dataset, on_invalid=on_invalid)


def _check_unique_keys(samples: Iterable[Sample]) -> None:
    seen: dict[str, int] = {}
    for row, sample in enumerate(samples, 1):
        if sample.key in seen:
            raise ValueError(
                f"row {row}, field 'id': {sample.key!r} was already used by row {seen[sample.key]}"
            )
        seen[sample.key] = row


def _build(factory: Callable[..., Any], spec: str, options: Mapping[str, Any]) -> Any:
    try:
        return factory(spec, **options)
    except TypeError as exc:  # an option the provider does not take
        raise ValueError(f"options for {spec!r}: {exc}") from None


def resolve_models(
    judge: str | Judge,
    embedder: str | Embedder | None,
    cache: bool | str | Path,
    *,
    needs_embedder: bool = True,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    meter: Meter | None = None,
) -> tuple[Judge, Embedder | None]:
    """Build the judge and (if needed) embedder from specs, behind the call cache if asked.

    A ``meter`` goes between the cache and the judge, so that cached calls cost nothing.
    Options are passed to the provider's factory (e.g. ``timeout`` for ``openai``).
    """
    if judge_options and not isinstance(judge, str):
        raise ValueError("judge options apply to a judge named by a spec, not to a Judge object")
    judge_model: Judge = (
        _build(get_judge, judge, judge_options or {}) if isinstance(judge, str) else judge
    )
    embed_model: Embedder | None = None
    if needs_embedder:
        embed_model = (
            embedder
            if isinstance(embedder, Embedder)
            else _build(get_embedder, embedder or "minilm", embedder_options or {})
        )
    if meter is not None:
        judge_model = MeteredJudge(judge_model, meter)
    if cache is False:
        return judge_model, embed_model
    call_cache = CallCache(None if cache is True else Path(cache))
    judge_model = CachedJudge(judge_model, call_cache)
    if embed_model is not None:
        embed_model = CachedEmbedder(embed_model, call_cache)
    return judge_model, embed_model


def result_key(
    sample: Sample, metric: Metric, judge: Judge, embedder: Embedder | None, variant: str = ""
) -> str:
    """The key a score is stored under. ``variant`` marks a sample the judge saw altered (cut
    to a size limit), so that changing the limit re-judges it."""
    return _ItemKeys(metric, judge, embedder).key(sample, variant)


class _ItemKeys:
    """``result_key`` for one metric, with the metric's version worked out once (it hashes the
    prompts, which is most of the cost of a key)."""

    def __init__(self, metric: Metric, judge: Judge, embedder: Embedder | None) -> None:
        models = [judge.name, embedder.name if (embedder and metric.needs_embedder) else ""]
        self._prefix = [metric.name, metric.version, models]

    def key(self, sample: Sample, variant: str = "") -> str:
        parts: list[Any] = [sample.key, *self._prefix]
        if variant:
            parts.append(variant)
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


class _Tally:
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


def _judge_item(
    metric: Metric, sample: Sample, session: JudgeSession, tally: _Tally
) -> tuple[Score, bool]:
    """Score one item; returns the score and whether it should be saved (not if the budget
    stopped it). A bug in a metric or provider becomes an unscored item, not a lost run."""
    try:
        score = metric.score(sample, session)
    except BudgetExhausted as exc:
        tally.count("pending", session.usage)
        reason = f"{NOT_JUDGED}{exc}; rerun with a higher budget to continue"
        return _unscored(sample, metric, session, reason), False
    except Exception as exc:
        logger.exception("%s on sample %s failed", metric.name, sample.key)
        tally.count("internal_errors")
        reason = f"internal error: {type(exc).__name__}: {exc}"
        score = _unscored(sample, metric, session, reason)
    tally.count("judged", session.usage)
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


def _run_all(
    tasks: list[tuple[Sample, Metric]], run_one: Callable[[Sample, Metric], Score], workers: int
) -> list[Score]:
    """Run every task, in order of the results. On an interrupt (Ctrl-C) the items not yet
    started are dropped and those running are let finish, so that they are saved."""
    if workers <= 1:
        return [run_one(*task) for task in tasks]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(lambda task: run_one(*task), tasks))
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def _make_meter(budget: Budget | None, judge: str | Judge) -> Meter | None:
    if budget is None:
        return None
    name = judge if isinstance(judge, str) else judge.name
    return Meter(budget, budget.price or price_for(name))


def _counts(scores: list[Score], tally: _Tally, truncated: int) -> dict[str, Any]:
    pending = sum(1 for s in scores if is_pending(s))
    scored = sum(1 for s in scores if s.scored)
    return {
        "items": len(scores),
        "scored": scored,
        "unscored": len(scores) - scored - pending,
        "pending": pending,
        "resumed": tally.resumed,
        "judged": tally.judged,
        "internal_errors": tally.internal_errors,
        "truncated_samples": truncated,
        **tally.usage.model_dump(),
    }


def evaluate(
    dataset: Any,
    metrics: Sequence[str | Metric] | None = None,
    *,
    judge: str | Judge = "local",
    embedder: str | Embedder | None = None,
    out_dir: str | Path | None = None,
    cache: bool | str | Path = True,
    retries: int = 2,
    repairs: int = 1,
    max_workers: int = 1,
    on_invalid: Literal["raise", "skip"] = "raise",
    on_score: OnScore | None = None,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    budget: Budget | None = None,
    max_input_chars: int | None = MAX_INPUT_CHARS,
    seed: int | None = None,
) -> Result:
    """Score every sample with every metric.

    Args:
        dataset: a path (JSONL, JSON, CSV, Parquet), DataFrame, list of dicts or Samples, a
            HuggingFace Dataset, or a ``LoadedDataset``.
        metrics: metric names or configured ``Metric`` objects; all three RAGAS metrics by default.
        judge: a ``Judge`` or a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``.
        embedder: an ``Embedder`` or a spec; MiniLM (offline) by default when a metric needs one.
        out_dir: where scores are committed as they complete, with the run record
            (``run.json``); rerunning with the same folder resumes, judging only what is
            missing or was unscored.
        cache: the judge-call cache: True for the user cache folder, a path, or False.
        retries: further attempts after a failed judge call (on top of the provider's own
            transport retries).
        repairs: further attempts after a reply that does not fit the prompt's schema, each
            showing the judge its mistake; then the item is unscored, its raw replies kept.
        max_workers: items judged at once (useful for remote endpoints; a local model serialises).
        on_invalid: "raise" stops at the first bad row; "skip" records it and goes on.
        on_score: called with each score as it completes (e.g. for a progress bar).
        judge_options: passed to the judge's provider when ``judge`` is a spec, e.g.
            ``{"timeout": 30, "deadline": 120, "max_retries": 6}`` for ``openai``.
        embedder_options: the same for the embedder.
        budget: limits on calls and dollars. When they run out the run stops cleanly: finished
            items are saved, the rest come back unscored with a reason starting "not judged",
            ``Result.run["status"]`` is "stopped", and a rerun with a higher budget resumes.
        max_input_chars: each sample field (the contexts together) is cut to this many
            characters before judging, with a warning and a note in the score's explanation;
            None for no limit.
        seed: passed to the judge's provider (for those that sample with one) and recorded.

    Returns:
        Every score, in sample order then metric order, with the run record in ``run``.
    """
    loaded = _resolve_dataset(dataset, on_invalid)
    _check_unique_keys(loaded.samples)
    chosen = _resolve_metrics(metrics)
    fitted = {s.key: fit_sample(s, max_input_chars) for s in loaded.samples}
    truncated = sum(1 for _, cut in fitted.values() if cut)
    if truncated:
        warnings.warn(
            f"{truncated} of {len(loaded.samples)} samples have fields over {max_input_chars} "
            "characters; they were cut before judging (see 'truncated_inputs' in the scores)",
            InputTruncatedWarning,
            stacklevel=2,
        )
    options = dict(judge_options or {})
    if seed is not None and isinstance(judge, str):
        options.setdefault("seed", seed)
    meter = _make_meter(budget, judge)
    judge_model, embed_model = resolve_models(
        judge,
        embedder,
        cache,
        needs_embedder=any(m.needs_embedder for m in chosen),
        judge_options=options,
        embedder_options=embedder_options,
        meter=meter,
    )
    out = Path(out_dir) if out_dir is not None else None
    store = ScoreStore(out / SCORES_DB) if out is not None else None
    parameters = {
        "retries": retries,
        "repairs": repairs,
        "max_workers": max_workers,
        "max_input_chars": max_input_chars,
        "cache": cache if isinstance(cache, bool) else str(cache),
        "judge_options": redact_options(options),
        "embedder_options": redact_options(embedder_options),
        "on_invalid": on_invalid,
    }
    budget_record = meter.record() if meter else None
    record = start_record(judge_model, embed_model, chosen, loaded, parameters, seed, budget_record)
    if out is not None:
        write_run_record(out, record)
    tally = _Tally()
    keys = {m.name: _ItemKeys(m, judge_model, embed_model) for m in chosen}

    def run_one(sample: Sample, metric: Metric) -> Score:
        judged, cut = fitted[sample.key]
        variant = f"max_input_chars={max_input_chars}" if cut else ""
        key = keys[metric.name].key(sample, variant)
        stored = store.reusable(key) if store is not None else None
        if stored is not None:
            tally.count("resumed")
            score = stored
        else:
            session = JudgeSession(judge_model, embed_model, retries=retries, repairs=repairs)
            score, keep = _judge_item(metric, judged, session, tally)
            if cut:
                score.explanation["truncated_inputs"] = cut
            if keep and store is not None:
                store.put(key, score)
        if on_score:
            on_score(score)
        return score

    tasks = [(sample, metric) for sample in loaded.samples for metric in chosen]
    clock = time.perf_counter()
    try:
        scores = _run_all(tasks, run_one, max_workers)
    finally:
        if store is not None:
            store.close()
    stopped = meter is not None and meter.exhausted
    record = finish_record(
        record,
        judge_model,
        embed_model,
        status="stopped" if stopped else "complete",
        seconds=time.perf_counter() - clock,
        counts=_counts(scores, tally, truncated),
        budget=meter.record() if meter else None,
    )
    if out is not None:
        write_run_record(out, record)
    if stopped:
        warnings.warn(
            f"evaluation stopped at the budget: {record['counts']['pending']} items not judged; "
            "rerun with the same out_dir and a higher budget to continue",
            BudgetWarning,
            stacklevel=2,
        )
    return Result(
        samples=loaded.samples,
        metrics=[m.name for m in chosen],
        scores=scores,
        invalid_rows=loaded.invalid,
        run=record,
    )
