"""Runs of the same samples side by side: did the scores change, by how much, and is the
change more than noise? Two runs sample by sample (``compare_runs``); two or more ranked, every
pair decided (``rank_runs``, through ``ranking.rank_systems``), with what the shipped decision
curve says such a decision was worth.

Samples are matched by id (``Sample.key``). For each metric, over the samples scored in both
runs, the change is the mean of the paired differences (B minus A), with a paired-bootstrap 95%
interval (``stats.bootstrap_mean_ci`` over the differences: resampling samples keeps each pair
together) and a two-sided p-value from a paired sign-flip permutation test: under "no change"
each difference is as likely to have the other sign, so the observed mean is compared with the
means of the differences with random signs (all 2^n sign patterns when n is small, so tiny runs
get the exact value). Scores only comparable when made the same way: a different judge, embedder
or metric version is listed in ``Comparison.problems``.

Arena runs are compared by each system's rating difference, with an interval combined from the
two runs' bootstrap intervals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragmeter.arena.battles import RUN_FILE as ARENA_RUN_FILE
from ragmeter.decision_curve import DecisionRate, decision_rate, load_decision_curve
from ragmeter.explain import explain
from ragmeter.manifest import WHERE_AND_HOW_FAST, RunRecord, config_differences
from ragmeter.metrics import higher_is_better
from ragmeter.ranking import Ranking, rank_systems
from ragmeter.result import Result
from ragmeter.score import Score
from ragmeter.stats import P_VALUE_METHOD, paired_difference, sign_flip_p_value
from ragmeter.viewer.folders import OpenedRun


class ChangedSample(BaseModel):
    sample_id: str
    question: str
    value_a: float | None
    value_b: float | None
    difference: float | None
    """B minus A; None when one side is unscored."""
    unscored_a: str | None = None
    unscored_b: str | None = None
    explanation_a: list[str]
    explanation_b: list[str]


class MetricComparison(BaseModel):
    metric: str
    pairs: int
    """Samples scored in both runs: the differences are over these."""
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    better: int
    worse: int
    unchanged: int
    unscored_a: int
    """Samples of both runs that A left unscored for this metric; they are not paired."""
    unscored_b: int
    """The same for B."""
    changed: list[ChangedSample]
    """The largest changes first, then the samples scored in one run only."""


class RatingDifference(BaseModel):
    system: str
    rating_a: float | None
    rating_b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    win_a: float | None = None
    win_b: float | None = None


class Comparison(BaseModel):
    kind: str
    run_a: str
    run_b: str
    problems: list[str]
    """Why the two runs' scores are not comparable (empty when they are)."""
    notes: list[str]
    rounds: int
    seed: int
    p_value_method: str = P_VALUE_METHOD
    shared_samples: int = 0
    only_a: int = 0
    only_b: int = 0
    metrics: list[MetricComparison] = []
    ratings: list[RatingDifference] = []


def configured_otherwise(labels: Sequence[str], runs: Sequence[OpenedRun]) -> list[str]:
    """A note per run whose configuration judged otherwise than the first run's (where both
    recorded one): another judge, options, metrics or budget."""
    first = runs[0].record.config if runs[0].record is not None else None
    notes = []
    for label, run in zip(labels[1:], runs[1:], strict=True):
        config = run.record.config if run.record is not None else None
        if first is not None and config is not None:
            changed = config_differences(first, config, ignore=WHERE_AND_HOW_FAST)
            if changed:
                notes.append(f"{label} was configured otherwise: {'; '.join(changed)}")
    return notes


def compare_runs(
    a: OpenedRun,
    b: OpenedRun,
    *,
    rounds: int = 2000,
    seed: int = 0,
    top: int = 5,
    tolerance: float = 0.0,
) -> Comparison:
    """Compare run B with run A (both ``evaluate`` runs, or both ``arena`` runs)."""
    if a.kind != b.kind:
        raise ValueError(f"cannot compare a {a.kind} run ({a.path}) with a {b.kind} run ({b.path})")
    if a.kind == "arena":
        return _compare_arena(a, b, rounds=rounds, seed=seed)
    if a.kind != "evaluate" or a.result is None or b.result is None:
        raise ValueError(f"'compare' takes evaluate or arena runs, not {a.kind} runs")
    ids_a = {s.sample_id for s in a.result.scores}
    ids_b = {s.sample_id for s in b.result.scores}
    shared_ids = ids_a & ids_b
    if not shared_ids:
        raise ValueError(f"{a.path} and {b.path} share no sample id: they scored other samples")
    shared_metrics = [m for m in a.result.metrics if m in b.result.metrics]
    notes = [f"{a.label}: {n}" for n in a.notes] + [f"{b.label}: {n}" for n in b.notes]
    for run, other in ((a, b), (b, a)):
        alone = [m for m in run.result.metrics if m not in other.result.metrics]  # type: ignore[union-attr]
        if alone:
            notes.append(f"only {run.label} has {', '.join(alone)}: not compared")
    notes += configured_otherwise([a.label, b.label], [a, b])
    return Comparison(
        kind="evaluate",
        run_a=str(a.path),
        run_b=str(b.path),
        problems=comparability_problems(a, b, shared_metrics),
        notes=notes,
        rounds=rounds,
        seed=seed,
        shared_samples=len(shared_ids),
        only_a=len(ids_a - ids_b),
        only_b=len(ids_b - ids_a),
        metrics=[
            compare_metric(
                a.result, b.result, m, rounds=rounds, seed=seed, top=top, tolerance=tolerance
            )
            for m in shared_metrics
        ],
    )


def comparability_problems(a: OpenedRun, b: OpenedRun, metrics: Sequence[str]) -> list[str]:
    """Why scores of ``a`` and ``b`` may differ for reasons other than the system: another
    judge or embedder (compared by the identity digest the score keys hash, which covers the
    weights and every output-changing option), or another version of a metric, or a version
    one record does not hold (then it cannot be checked)."""
    if a.record is None or b.record is None:
        missing = [str(run.path) for run in (a, b) if run.record is None]
        return [
            f"no run.json in {' and '.join(missing)}: the judges and metric versions "
            "cannot be checked"
        ]
    problems = []
    for role in ("judge", "embedder"):
        found_a, found_b = _identities(a.record, b.record, role)
        if found_a is not None and found_b is not None and found_a != found_b:
            name_a, name_b = _name(a.record, role), _name(b.record, role)
            if (name_a, name_b) != (found_a, found_b):  # digests: say which as well
                name_a, name_b = f"{name_a} ({found_a[:12]})", f"{name_b} ({found_b[:12]})"
            problems.append(f"different {role}s: {name_a} in A, {name_b} in B")
    for metric in metrics:
        version_a, version_b = a.record.metrics.get(metric), b.record.metrics.get(metric)
        if version_a is None or version_b is None:
            missing = " and ".join(
                run for run, found in (("A", version_a), ("B", version_b)) if found is None
            )
            problems.append(f"no {metric} version in the run record of {missing}: not checked")
            continue
        if version_a.version != version_b.version:
            changed = sorted(
                k
                for k in {*version_a.config, *version_b.config}
                if version_a.config.get(k) != version_b.config.get(k)
            )
            detail = f" (options differ: {', '.join(changed)})" if changed else " (prompts differ)"
            problems.append(
                f"different {metric} versions: {version_a.version} in A, "
                f"{version_b.version} in B{detail}"
            )
    return problems


def _identities(a: RunRecord, b: RunRecord, role: str) -> tuple[str | None, str | None]:
    """What to compare for ``role``: both identity digests, or both model names when either
    record was written before digests were (a digest never equals a name, so mixing the two
    would call the same model different)."""
    model_a, model_b = a.models.get(role), b.models.get(role)
    if model_a is not None and model_b is not None and model_a.identity and model_b.identity:
        return model_a.identity, model_b.identity
    return _name(a, role), _name(b, role)


def _name(record: RunRecord, role: str) -> str | None:
    model = record.models.get(role)
    if model is not None:
        return model.name
    return record.judge if role == "judge" else record.embedder


def compare_metric(
    a: Result,
    b: Result,
    metric: str,
    *,
    rounds: int = 2000,
    seed: int = 0,
    top: int = 5,
    tolerance: float = 0.0,
) -> MetricComparison:
    """One metric's paired comparison over the samples scored in both runs."""
    scores_a = {s.sample_id: s for s in a.scores_for(metric)}
    scores_b = {s.sample_id: s for s in b.scores_for(metric)}
    shared = [k for k in scores_a if k in scores_b]
    paired = [k for k in shared if scores_a[k].scored and scores_b[k].scored]
    values_a = np.array([scores_a[k].value for k in paired], dtype=float)
    values_b = np.array([scores_b[k].value for k in paired], dtype=float)
    differences = values_b - values_a
    summary: dict[str, Any] = {"difference": None, "ci_low": None, "ci_high": None}
    p_value = None
    if paired:
        mean, low, high = paired_difference(values_a, values_b, rounds=rounds, seed=seed)
        summary = {"difference": mean, "ci_low": low, "ci_high": high}
        p_value = sign_flip_p_value(differences, rounds=rounds, seed=seed)
    slack = tolerance + 1e-12
    improvement = differences if higher_is_better(metric) else -differences
    order = np.argsort(-np.abs(differences), kind="stable")[:top]
    one_sided = [k for k in shared if scores_a[k].scored != scores_b[k].scored]
    samples_a, samples_b = {s.key: s for s in a.samples}, {s.key: s for s in b.samples}
    changed = [
        _changed(k, scores_a[k], scores_b[k], samples_a, samples_b)
        for k in [paired[i] for i in order if abs(differences[i]) > slack] + one_sided[:top]
    ]
    return MetricComparison(
        metric=metric,
        pairs=len(paired),
        mean_a=float(values_a.mean()) if paired else None,
        mean_b=float(values_b.mean()) if paired else None,
        p_value=p_value,
        better=int(np.count_nonzero(improvement > slack)),
        worse=int(np.count_nonzero(improvement < -slack)),
        unchanged=int(np.count_nonzero(np.abs(differences) <= slack)),
        unscored_a=sum(not scores_a[k].scored for k in shared),
        unscored_b=sum(not scores_b[k].scored for k in shared),
        changed=changed,
        **summary,
    )


def _changed(
    key: str, score_a: Score, score_b: Score, samples_a: dict[str, Any], samples_b: dict[str, Any]
) -> ChangedSample:
    sample_a, sample_b = samples_a.get(key), samples_b.get(key)
    both = score_a.scored and score_b.scored
    return ChangedSample(
        sample_id=key,
        question=(sample_b or sample_a).question if (sample_b or sample_a) else "",
        value_a=score_a.value,
        value_b=score_b.value,
        difference=score_b.value - score_a.value if both else None,  # type: ignore[operator]
        unscored_a=score_a.unscored_reason,
        unscored_b=score_b.unscored_reason,
        explanation_a=explain(score_a, sample_a) if sample_a else [],
        explanation_b=explain(score_b, sample_b) if sample_b else [],
    )


def _compare_arena(a: OpenedRun, b: OpenedRun, *, rounds: int, seed: int) -> Comparison:
    """Rating differences per system. The runs' bootstrap intervals are combined as if
    independent and symmetric (half-widths added in quadrature): an approximation that is
    conservative when the runs share battles."""
    problems = []
    if a.data.get("anchor") != b.data.get("anchor"):
        problems.append(
            f"different rating anchors ({a.data.get('anchor')} in A, {b.data.get('anchor')} "
            "in B): the ratings are on different scales"
        )
    if a.data.get("reference") != b.data.get("reference"):
        problems.append("different reference systems: the win rates are against other answers")
    records = [_arena_record(run) for run in (a, b)]
    judges = [_arena_judge(record) for record in records]
    if None not in judges and judges[0] != judges[1]:
        problems.append(f"different judges: {judges[0]} in A, {judges[1]} in B")
    prompts = [(record or {}).get("prompt") for record in records]
    if None not in prompts and prompts[0] != prompts[1]:
        problems.append(f"different pairwise prompts: {prompts[0]} in A, {prompts[1]} in B")
    rows_a = {row["system"]: row for row in a.data.get("systems", [])}
    rows_b = {row["system"]: row for row in b.data.get("systems", [])}
    ratings = []
    for system in [s for s in rows_b if s in rows_a]:
        ra, rb = rows_a[system], rows_b[system]
        difference = low = high = None
        if ra.get("rating") is not None and rb.get("rating") is not None:
            difference = rb["rating"] - ra["rating"]
            spread = math.hypot(_half_width(ra), _half_width(rb))
            low, high = difference - spread, difference + spread
        ratings.append(
            RatingDifference(
                system=system,
                rating_a=ra.get("rating"),
                rating_b=rb.get("rating"),
                difference=difference,
                ci_low=low,
                ci_high=high,
                win_a=ra.get("win"),
                win_b=rb.get("win"),
            )
        )
    notes = [
        f"only in {run.label}: {', '.join(sorted(set(mine) - set(other)))}"
        for run, mine, other in ((a, rows_a, rows_b), (b, rows_b, rows_a))
        if set(mine) - set(other)
    ]
    notes += [
        f"no {ARENA_RUN_FILE} in {run.path}: its judge and prompt cannot be checked"
        for run, record in zip((a, b), records, strict=True)
        if record is None
    ]
    return Comparison(
        kind="arena",
        run_a=str(a.path),
        run_b=str(b.path),
        problems=problems,
        notes=notes,
        rounds=rounds,
        seed=seed,
        p_value_method="none: rating intervals combined in quadrature",
        ratings=ratings,
    )


def _half_width(row: dict[str, Any]) -> float:
    low, high = row.get("rating_low"), row.get("rating_high")
    return 0.0 if low is None or high is None else (high - low) / 2


def _arena_record(run: OpenedRun) -> dict[str, Any] | None:
    """``arena_run.json`` beside the leaderboard (written by ``arena judge``), if readable."""
    path = run.path / ARENA_RUN_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _arena_judge(record: dict[str, Any] | None) -> str | None:
    """The judge's identity digest, else its name."""
    if record is None:
        return None
    model = record.get("judge_model") or {}
    return model.get("identity") or record.get("judge")


class RankedMetric(BaseModel):
    ranking: Ranking
    rates: list[DecisionRate | None]
    """Per pair (in ``ranking.pairs``' order): how often such decisions were the people's on
    the public sets measured; None where no decision of this size was measured."""
    measured: bool
    """Whether the decision curve measured this metric at all."""


class RunsRanking(BaseModel):
    runs: list[str]
    problems: list[str]
    """Why some runs' scores are not comparable with the first's (empty when all are)."""
    notes: list[str]
    samples: int
    """Samples in every run: the rankings are over these (those each run scored)."""
    not_in_every_run: list[str]
    metrics: list[RankedMetric]
    curve: str | None
    """Where the decision rates came from (None: no decision curve)."""


def with_rates(ranking: Ranking, curve: dict[str, Any] | None) -> RankedMetric:
    """The ranking with, per pair, how often decisions of its size were the people's on the
    sets ``curve`` measured (a decision curve's ``sets``, of one reading)."""
    metric = ranking.metric
    rates = [
        None
        if curve is None
        else decision_rate(curve, metric, p.test.pairs, p.test.difference, p.test.spread)
        for p in ranking.pairs
    ]
    measured = curve is not None and any(metric in found for found in curve["sets"].values())
    return RankedMetric(ranking=ranking, rates=rates, measured=measured)


def rank_runs(
    runs: Sequence[OpenedRun],
    *,
    metrics: Sequence[str] | None = None,
    difference: float | None = None,
    rounds: int = 2000,
    seed: int = 0,
) -> RunsRanking:
    """Rank two or more ``evaluate`` runs of the same samples on each metric they share (or
    on ``metrics``, each of which every run must have), every pair decided."""
    if len(runs) < 2:
        given = ", ".join(str(r.path) for r in runs) or "none"
        raise ValueError(f"a comparison needs two runs or more, got {len(runs)} ({given})")
    for run in runs:
        if run.kind != "evaluate" or run.result is None:
            raise ValueError(
                f"{run.path}: a {run.kind} run; two or more runs are ranked from evaluate runs"
            )
    labels = _labels(runs)
    results = [r.result for r in runs]
    ids = [{s.sample_id for s in result.scores} for result in results]  # type: ignore[union-attr]
    shared = set.intersection(*ids)
    if not shared:
        raise ValueError(f"{', '.join(labels)} share no sample id: they scored other samples")
    notes = [f"{label}: {n}" for label, run in zip(labels, runs, strict=True) for n in run.notes]
    if metrics:
        for label, result in zip(labels, results, strict=True):
            missing = [m for m in metrics if m not in result.metrics]  # type: ignore[union-attr]
            if missing:
                raise ValueError(f"{label} has no {', '.join(missing)}: it cannot be ranked there")
        chosen = list(metrics)
    else:
        chosen = [m for m in results[0].metrics if all(m in r.metrics for r in results)]  # type: ignore[union-attr]
        for label, result in zip(labels, results, strict=True):
            alone = [m for m in result.metrics if m not in chosen]  # type: ignore[union-attr]
            if alone:
                notes.append(f"not in every run, so not ranked: {', '.join(alone)} (in {label})")
    notes += configured_otherwise(labels, runs)
    problems = [
        f"{label}: {problem}"
        for label, run in zip(labels[1:], runs[1:], strict=True)
        for problem in comparability_problems(runs[0], run, chosen)
    ]
    found = load_decision_curve()
    curve, source = found if found is not None else (None, None)
    ranked = []
    for metric in chosen:
        scores = {
            label: {
                s.sample_id: s.value for s in result.scores_for(metric) if s.sample_id in shared
            }  # type: ignore[union-attr]
            for label, result in zip(labels, results, strict=True)
        }
        ranking = rank_systems(
            scores,
            metric=metric,
            higher_is_better=higher_is_better(metric),
            difference=difference,
            rounds=rounds,
            seed=seed,
        )
        ranked.append(with_rates(ranking, curve))
    return RunsRanking(
        runs=labels,
        problems=problems,
        notes=notes,
        samples=len(shared),
        not_in_every_run=sorted(set.union(*ids) - shared),
        metrics=ranked,
        curve=source,
    )


def _labels(runs: Sequence[OpenedRun]) -> list[str]:
    """Each run's label, or its path where two runs share a label."""
    labels = [r.label for r in runs]
    if len(set(labels)) == len(labels):
        return labels
    return [str(r.path) for r in runs]
