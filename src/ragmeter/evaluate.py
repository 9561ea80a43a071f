"""``evaluate()``: score a dataset with a set of metrics, resumably.

Each (sample, metric) item is committed to ``out_dir/scores.sqlite`` the moment it completes,
keyed by the sample, the metric's version (its configuration and prompts) and the models. A rerun
with the same folder takes every scored item from there and judges only the rest, so a run killed
at any moment, even by SIGKILL, loses no finished item and judges none twice; the call cache
spares the calls an interrupted item had already made. Unscored items are judged again on a
rerun, since their failure may have been passing.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any, Literal

from ragmeter.budget import Budget, Meter, is_pending, price_for
from ragmeter.cluster import (
    Executor,
    ModelRecipe,
    RayExecutor,
    RayPool,
    SharedMeter,
    WorkerDied,
    describe_executor,
    ray_executor,
)
from ragmeter.config import DEFAULT_METRICS, RunConfig
from ragmeter.data import LoadedDataset, load_samples
from ragmeter.judges import Embedder, Judge
from ragmeter.judges.base import NoJudge
from ragmeter.language import LANGUAGE, given_language, language_code, language_of
from ragmeter.limits import MAX_INPUT_CHARS, InputTruncatedWarning, fit_sample
from ragmeter.manifest import (
    Counts,
    finish_record,
    redact_options,
    start_record,
    write_run_record,
)
from ragmeter.metrics import Metric, metric_by_name, metric_names
from ragmeter.pipeline import ItemJudge, ItemPipeline, Judged, Kept, Tally
from ragmeter.planted import PlantedTextWarning, Treatment, guarded
from ragmeter.result import Result, ScoreList
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.store import FolderLock, ScoreStore

SCORES_DB = "scores.sqlite"

OnScore = Callable[[Score], None]


class BudgetWarning(UserWarning):
    """The run stopped at its budget; the result is partial."""


def _resolve_metrics(metrics: Sequence[str | Metric] | None) -> list[Metric]:
    chosen = [
        metric
        for m in metrics or DEFAULT_METRICS
        for metric in (
            [metric_by_name(name) for name in metric_names([m])] if isinstance(m, str) else [m]
        )
    ]
    names = [m.name for m in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"a metric is listed twice: {names}")
    return chosen


def _resolve_dataset(
    dataset: Any, on_invalid: Literal["raise", "skip"], columns: Mapping[str, str] | None
) -> LoadedDataset:
    if isinstance(dataset, LoadedDataset):
        return dataset
    if isinstance(dataset, list) and all(isinstance(s, Sample) for s in dataset):
        return LoadedDataset(samples=list(dataset), invalid=[])
    return load_samples(dataset, columns=columns, on_invalid=on_invalid)


def _options_set(metric: Metric) -> dict[str, Any]:
    """The options of ``metric`` that differ from its defaults, as a configuration names them."""
    return metric.options.model_dump(mode="json", exclude_defaults=True)


def _check_unique_keys(samples: Iterable[Sample]) -> None:
    seen: dict[str, int] = {}
    for row, sample in enumerate(samples, 1):
        if sample.key in seen:
            raise ValueError(
                f"row {row}, field 'id': {sample.key!r} was already used by row {seen[sample.key]}"
            )
        seen[sample.key] = row


def _check_readable(samples: Iterable[Sample], metrics: Sequence[Metric]) -> None:
    """Refuse, before any judging, a sample that a metric cannot read at all."""
    for row, sample in enumerate(samples, 1):
        for metric in metrics:
            problem = metric.unreadable(sample)
            if problem:
                raise ValueError(f"row {row} ({sample.key}): {problem}")


def _check_languages(samples: Iterable[Sample]) -> None:
    """Refuse, before any judging, a sample whose given language is no language code."""
    for row, sample in enumerate(samples, 1):
        try:
            given_language(sample)
        except ValueError as exc:
            raise ValueError(f"row {row} ({sample.key}): {exc}") from None


def _in_language(sample: Sample, language: str | None) -> Sample:
    """``sample`` with the run's ``language`` in its metadata, where it gives none of its own."""
    if language is None or given_language(sample) is not None:
        return sample
    return sample.model_copy(update={"metadata": {**sample.metadata, LANGUAGE: language}})


def _as_judged(
    sample: Sample, max_input_chars: int | None, language: str | None, planted: Treatment
) -> tuple[Sample, dict[str, Any]]:
    """The sample as the judge is to see it (cut to size, its planted text taken out unless
    kept, the run's language given), and what its scores' explanations note of that."""
    judged, cut = fit_sample(sample, max_input_chars)
    judged, found = guarded(judged, remove=planted == "remove")
    notes: dict[str, Any] = {}
    if cut:
        notes["truncated_inputs"] = cut
    if found:
        notes["planted"] = [unit.record() for unit in found]
    return _in_language(judged, language), notes


def _noted(fitted: Sequence[tuple[Sample, dict[str, Any]]]) -> dict[str, Any]:
    """The run's counts of what its samples' notes say: samples cut, samples with planted text
    and that text's units by the kind of field ("answer", "contexts", "history"...)."""
    fields: Counter[str] = Counter(
        unit["field"].split("[")[0] for _, notes in fitted for unit in notes.get("planted", ())
    )
    return {
        "truncated_samples": sum(1 for _, notes in fitted if "truncated_inputs" in notes),
        "planted_samples": sum(1 for _, notes in fitted if "planted" in notes),
        "planted_fields": dict(fields.most_common()),
    }


def check_samples(samples: Sequence[Sample], metrics: Sequence[Metric]) -> None:
    """Refuse samples that share an id, or that a metric cannot read at all: what
    ``evaluate`` refuses before judging, for a caller to check before it shows any progress."""
    _check_unique_keys(samples)
    _check_readable(samples, metrics)


Task = tuple[Sample, dict[str, Any], Metric]
"""A sample as the judge sees it, what was cut from it, and the metric to score it with."""


def _run_all(tasks: list[Task], run_one: Callable[..., Kept], workers: int) -> list[Kept]:
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


def _run_on_cluster(
    pool: RayPool, pipeline: ItemPipeline, tasks: list[Task], job: Callable[..., ItemJudge]
) -> list[Kept]:
    """Reuse what the store holds, send the rest to the workers and commit each result as it
    comes back."""
    scores: list[Kept | None] = [pipeline.reuse(judged, metric) for judged, _, metric in tasks]
    todo = [i for i, score in enumerate(scores) if score is None]
    for position, outcome in pool.map(job, [(tasks[i][0], tasks[i][2].name) for i in todo]):
        judged, cut, metric = tasks[todo[position]]
        if isinstance(outcome, WorkerDied):
            lost = Score(
                sample_id=judged.key, metric=metric.name, value=None, unscored_reason=outcome.reason
            )
            outcome = Judged(lost, pipeline.key(judged, metric), saved=True, internal_error=True)
        scores[todo[position]] = pipeline.commit(outcome, cut)
    assert all(score is not None for score in scores), "an item came back twice or never"
    return scores  # type: ignore[return-value]


def _make_meter(budget: Budget | None, judge: str | Judge) -> Meter | None:
    if budget is None:
        return None
    name = judge if isinstance(judge, str) else judge.name
    return Meter(budget, budget.price or price_for(name))


def _counts(scores: list[Kept], tally: Tally, noted: dict[str, Any]) -> Counts:
    pending = sum(1 for s in scores if is_pending(s))
    scored = sum(1 for s in scores if s.scored)
    return Counts(
        items=len(scores),
        scored=scored,
        unscored=len(scores) - scored - pending,
        pending=pending,
        resumed=tally.resumed,
        judged=tally.judged,
        internal_errors=tally.internal_errors,
        **noted,
        **tally.usage.model_dump(),
    )


def evaluate(
    dataset: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    config: RunConfig | None = None,
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
    executor: Executor | RayExecutor | RayPool = "threads",
    language: str | None = None,
    planted: Treatment = "remove",
    columns: Mapping[str, str] | None = None,
    _recorded: RunConfig | None = None,
) -> Result:
    """Score every sample with every metric.

    Args:
        dataset: a path (JSONL, JSON, CSV, Parquet), DataFrame, list of dicts or Samples, a
            HuggingFace Dataset, or a ``LoadedDataset``; with ``config``, its ``data`` by default.
        metrics: metric names or configured ``Metric`` objects; all three RAGAS metrics by default.
        config: the whole run as one ``RunConfig`` (``ragmeter.config``), as ``ragmeter.toml``
            and the command line describe it; with it, the keywords below that it holds are
            taken from it (``on_score`` and an open ``RayPool`` may still be given). Without
            it, the run's configuration is made from the keywords; ``run.json`` records it
            either way.
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
            ``Result.run.status`` is "stopped", and a rerun with a higher budget resumes.
        max_input_chars: each sample field (the contexts together) is cut to this many
            characters before judging, with a warning and a note in the score's explanation;
            None for no limit.
        seed: passed to the judge's provider (for those that sample with one) and recorded.
        executor: "threads" judges in this process (``max_workers`` items at once); "ray"
            spreads the items over Ray workers, each loading its own judge and embedder
            (``max_workers`` items at once each), on the cluster ``RAY_ADDRESS`` names or a
            new one on this machine; a ``RayExecutor`` says which cluster and how many
            workers; an open ``RayPool`` (``RayExecutor.open``) lends its workers and their
            models to several runs. Scores are committed here as they come back, so the run
            resumes alike.
        language: the language of every sample that gives none of its own (``language`` in
            its metadata), as an ISO 639-1 code ("de", "pt-BR"); None or "auto": each such
            sample's is detected from its texts (``ragmeter.language``). Its texts are split
            into sentences by that language's rules.
        planted: text in a sample addressed to the judge (an order, a ready verdict, a role
            marker: ``ragmeter.planted``) is taken out before judging ("remove") or left in
            ("keep"); either way it is listed under ``planted`` in the scores' explanations
            and counted in the run record.
        columns: the dataset's column names mapped to sample fields, as ``load_samples``
            takes them, where ``dataset`` is a path.

    Returns:
        Every score, in sample order then metric order, with the run record in ``run``.
    """
    if config is not None:
        chosen = config.chosen_metrics() if metrics is None else metrics
        config = config.naming(chosen)
        return evaluate(
            config.data if dataset is None else dataset,
            chosen,
            **config.evaluate_keywords(),
            on_score=on_score,
            executor=executor if isinstance(executor, RayPool) else config.executor(),
            columns=config.columns,
            _recorded=config,
        )
    if dataset is None:
        raise ValueError("no dataset: give one, or a config whose data names it")
    loaded = _resolve_dataset(dataset, on_invalid, columns)
    chosen = _resolve_metrics(metrics)
    out = Path(out_dir) if out_dir is not None else None
    recorded = _recorded or RunConfig(
        data=str(dataset) if isinstance(dataset, str | Path) else None,
        columns=columns,
        skip_invalid=on_invalid == "skip",
        metrics=[m.name for m in chosen],
        option={m.name: options for m in chosen if (options := _options_set(m))},
        judge=judge if isinstance(judge, str) else judge.name,
        judge_option=dict(judge_options or {}),
        embedder=(embedder if isinstance(embedder, str) else embedder.name)
        if embedder
        else "minilm",
        embedder_option=dict(embedder_options or {}),
        retries=retries,
        repairs=repairs,
        workers=max_workers,
        cache=cache is not False,
        max_calls=budget.max_calls if budget else None,
        max_cost=budget.max_cost if budget else None,
        max_input_chars=max_input_chars or 0,
        seed=seed,
        language=language,
        keep_planted=planted == "keep",
        out=out,
    )
    if not any(metric.needs_judge for metric in chosen):  # the ids' metrics: no model to start
        judge, embedder, judge_options, embedder_options = NoJudge(), None, None, None
    check_samples(loaded.samples, chosen)
    _check_languages(loaded.samples)
    run_language = None if language in (None, "auto") else language_code(language)
    if planted not in ("remove", "keep"):
        raise ValueError(f"planted={planted!r}: give 'remove' or 'keep'")
    fitted = [
        _as_judged(sample, max_input_chars, run_language, planted) for sample in loaded.samples
    ]
    noted = _noted(fitted)
    if noted["truncated_samples"]:
        warnings.warn(
            f"{noted['truncated_samples']} of {len(loaded.samples)} samples have fields over "
            f"{max_input_chars} characters; they were cut before judging (see 'truncated_inputs' "
            "in the scores)",
            InputTruncatedWarning,
            stacklevel=2,
        )
    if noted["planted_samples"]:
        done = "taken out before judging" if planted == "remove" else "left in (planted='keep')"
        warnings.warn(
            f"{noted['planted_samples']} of {len(loaded.samples)} samples hold text addressed to "
            f"the judge; it was {done} (see 'planted' in the scores)",
            PlantedTextWarning,
            stacklevel=2,
        )
    options = dict(judge_options or {})
    if seed is not None and isinstance(judge, str):
        options.setdefault("seed", seed)
    with ExitStack() as held:
        store = None
        if out is not None:  # one run at a time per folder; a bad store stops it before
            held.enter_context(FolderLock(out))  # any model loads
            store = ScoreStore(out / SCORES_DB)
            held.callback(store.close)
        meter = _make_meter(budget, judge)
        pool: RayPool | None = executor if isinstance(executor, RayPool) else None
        spread = pool.executor if pool is not None else ray_executor(executor, max_workers)
        recipe = ModelRecipe(
            judge,
            embedder,
            cache=cache,
            needs_embedder=any(m.needs_embedder for m in chosen),
            judge_options=options,
            embedder_options=embedder_options,
        )
        if pool is not None and budget is not None:
            raise ValueError("a budget needs workers of its own: pass a RayExecutor, not a pool")
        if pool is None and spread is not None:  # workers of this run's own, ended with it
            pool = held.enter_context(spread.open(recipe, budget, meter.price if meter else None))
            meter = pool.meter  # the same accounts, kept where every worker reaches them
        if pool is None:
            judge_model, embed_model = recipe.open(meter, in_flight=max_workers)
        else:
            judge_model, embed_model = pool.judge, pool.embedder
        return _evaluate_with(
            loaded,
            store,
            chosen,
            fitted,
            noted,
            judge_model,
            embed_model,
            pool,
            meter,
            out=out,
            on_score=on_score,
            seed=seed,
            parameters={
                "retries": retries,
                "repairs": repairs,
                "max_workers": max_workers,
                "executor": describe_executor(spread, pool),
                "max_input_chars": max_input_chars,
                "planted": planted,
                "cache": cache if isinstance(cache, bool) else str(cache),
                "judge_options": redact_options(options),
                "embedder_options": redact_options(embedder_options),
                "on_invalid": on_invalid,
                "language": run_language,
            },
            config=recorded.recorded(),
        )


def _evaluate_with(
    loaded: LoadedDataset,
    store: ScoreStore | None,
    chosen: list[Metric],
    fitted: list[tuple[Sample, dict[str, Any]]],
    noted: dict[str, Any],
    judge_model: Judge,
    embed_model: Embedder | None,
    pool: RayPool | None,
    meter: Meter | SharedMeter | None,
    *,
    out: Path | None,
    on_score: OnScore | None,
    seed: int | None,
    parameters: dict[str, Any],
    config: dict[str, Any],
) -> Result:
    """Judge every item in this process or on ``pool``, with the run record around it;
    ``parameters`` are the run's as its record shows them."""
    languages = Counter(language_of(judged) for judged, _ in fitted)
    record = start_record(
        judge_model,
        embed_model,
        chosen,
        loaded,
        parameters,
        seed,
        meter.record() if meter else None,
        config=config,
        languages=dict(languages.most_common()),
        planted=[
            {"sample": judged.key, **unit}
            for judged, notes in fitted
            for unit in notes.get("planted", ())
        ],
    )
    if out is not None:
        write_run_record(out, record)
    pipeline = ItemPipeline(chosen, judge_model, embed_model, store, on_score=on_score)
    tasks = [(judged, cut, metric) for judged, cut in fitted for metric in chosen]
    clock = time.perf_counter()
    attempts = {"retries": parameters["retries"], "repairs": parameters["repairs"]}
    if pool is None:
        workers = parameters["max_workers"]
        item_judge = ItemJudge(chosen, judge_model, embed_model, **attempts, fan_out=workers)
        scores = _run_all(tasks, partial(pipeline.run, item_judge), workers)
    else:
        job = partial(ItemJudge, chosen, **attempts, fan_out=pool.executor.workers)
        scores = _run_on_cluster(pool, pipeline, tasks, job)
        pool.refresh_models()
        judge_model, embed_model = pool.judge, pool.embedder
    stopped = meter is not None and meter.exhausted
    counts = _counts(scores, pipeline.tally, noted)
    record = finish_record(
        record,
        judge_model,
        embed_model,
        status="stopped" if stopped else "complete",
        seconds=time.perf_counter() - clock,
        counts=counts,
        budget=meter.record() if meter else None,
    )
    if out is not None:
        write_run_record(out, record)
    if stopped:
        warnings.warn(
            f"evaluation stopped at the budget: {counts.pending} items not judged; "
            "rerun with the same out_dir and a higher budget to continue",
            BudgetWarning,
            stacklevel=3,
        )
    return Result(
        samples=loaded.samples,
        metrics=[m.name for m in chosen],
        scores=ScoreList(store.path.absolute() if store is not None else None, scores),
        invalid_rows=loaded.invalid,
        run=record,
    )
