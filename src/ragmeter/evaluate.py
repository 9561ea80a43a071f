"""``evaluate()``: score a dataset with a set of metrics, resumably."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ragmeter import __version__
from ragmeter.data import LoadedDataset, load_samples
from ragmeter.judges.base import Embedder, Judge
from ragmeter.judges.cache import CachedEmbedder, CachedJudge, CallCache
from ragmeter.judges.registry import get_embedder, get_judge
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.session import JudgeSession
from ragmeter.store import ScoreStore

DEFAULT_METRICS = ("faithfulness", "answer_relevance", "context_relevance")
SCORES_DB = "scores.sqlite"

OnScore = Callable[[Score], None]


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


def resolve_models(
    judge: str | Judge,
    embedder: str | Embedder | None,
    cache: bool | str | Path,
    *,
    needs_embedder: bool = True,
) -> tuple[Judge, Embedder | None]:
    """Build the judge and (if needed) embedder from specs, behind the call cache if asked."""
    judge_model = get_judge(judge) if isinstance(judge, str) else judge
    embed_model: Embedder | None = None
    if needs_embedder:
        embed_model = (
            embedder if isinstance(embedder, Embedder) else get_embedder(embedder or "minilm")
        )
    if cache is False:
        return judge_model, embed_model
    call_cache = CallCache(None if cache is True else Path(cache))
    judge_model = CachedJudge(judge_model, call_cache)
    if embed_model is not None:
        embed_model = CachedEmbedder(embed_model, call_cache)
    return judge_model, embed_model


def result_key(sample: Sample, metric: Metric, judge: Judge, embedder: Embedder | None) -> str:
    models = [judge.name, embedder.name if (embedder and metric.needs_embedder) else ""]
    material = json.dumps([sample.key, metric.name, metric.version, models])
    return hashlib.sha256(material.encode()).hexdigest()


def evaluate(
    dataset: Any,
    metrics: Sequence[str | Metric] | None = None,
    *,
    judge: str | Judge = "local",
    embedder: str | Embedder | None = None,
    out_dir: str | Path | None = None,
    cache: bool | str | Path = True,
    retries: int = 2,
    max_workers: int = 1,
    on_invalid: Literal["raise", "skip"] = "raise",
    on_score: OnScore | None = None,
) -> Result:
    """Score every sample with every metric.

    Args:
        dataset: a path (JSONL, JSON, CSV, Parquet), DataFrame, list of dicts or Samples, a
            HuggingFace Dataset, or a ``LoadedDataset``.
        metrics: metric names or configured ``Metric`` objects; all three RAGAS metrics by default.
        judge: a ``Judge`` or a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``.
        embedder: an ``Embedder`` or a spec; MiniLM (offline) by default when a metric needs one.
        out_dir: where scores are committed as they complete; rerunning with the same folder
            resumes, judging only what is missing or was unscored.
        cache: the judge-call cache: True for the user cache folder, a path, or False.
        retries: further attempts after a failed call or an unreadable reply.
        max_workers: items judged at once (useful for remote endpoints; a local model serialises).
        on_invalid: "raise" stops at the first bad row; "skip" records it and goes on.
        on_score: called with each score as it completes (e.g. for a progress bar).
    """
    loaded = _resolve_dataset(dataset, on_invalid)
    _check_unique_keys(loaded.samples)
    chosen = _resolve_metrics(metrics)

    judge_model, embed_model = resolve_models(
        judge, embedder, cache, needs_embedder=any(m.needs_embedder for m in chosen)
    )

    store = ScoreStore(Path(out_dir) / SCORES_DB) if out_dir is not None else None
    started = datetime.now(UTC)

    def run_one(sample: Sample, metric: Metric) -> Score:
        key = result_key(sample, metric, judge_model, embed_model)
        stored = store.get(key) if store else None
        if stored is not None and stored.scored:
            score = stored
        else:
            session = JudgeSession(judge_model, embed_model, retries=retries)
            score = metric.score(sample, session)
            if store:
                store.put(key, score)
        if on_score:
            on_score(score)
        return score

    tasks = [(sample, metric) for sample in loaded.samples for metric in chosen]
    clock = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        scores = list(pool.map(lambda task: run_one(*task), tasks))
    run = {
        "ragmeter_version": __version__,
        "judge": judge_model.name,
        "embedder": embed_model.name if embed_model else None,
        "metrics": {m.name: {"config": m.config(), "version": m.version} for m in chosen},
        "retries": retries,
        "started": started.isoformat(),
        "ended": datetime.now(UTC).isoformat(),
        "seconds": round(time.perf_counter() - clock, 3),
        "samples": len(loaded.samples),
        "invalid_rows": len(loaded.invalid),
    }
    if store:
        store.close()
    return Result(
        samples=loaded.samples,
        metrics=[m.name for m in chosen],
        scores=scores,
        invalid_rows=loaded.invalid,
        run=run,
    )
