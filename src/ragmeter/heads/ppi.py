"""People's ratings of some samples correct the judge's mean over all of them.

A judge can rank answers well and still be off on the mean people would give. Given a person's
rating of ``n`` of a run's ``N + n`` scored samples, prediction-powered inference (PPI;
Angelopoulos et al., Science 2023) estimates the *people's* mean over all of them: the judge's
prediction averaged over the ``N`` unrated samples, corrected by the mean of (rating minus
prediction) over the rated ones. Power tuning (PPI++; Angelopoulos, Duchi and Zrnic, 2024)
weighs the judge by ``lambda`` in [0, 1] chosen to make the interval narrowest::

    estimate = mean(y) + lambda * (mean(g_unrated) - mean(g_rated))
    variance = var(y - lambda * g_rated) / n + lambda**2 * var(g_unrated) / N
    lambda   = (cov(y, g_rated) / n) / (var(g_rated) / n + var(g_unrated) / N), in [0, 1]

(the variance's minimiser; PPI++'s ``cov / ((1 + n/N) var(g))`` with each variance taken over
its own samples), so the interval is never wider than the ratings-only one, and an
uninformative judge gets ``lambda`` near 0: the estimate falls back to the ratings alone. Both
intervals take Student's t quantile with ``n - 1`` degrees of freedom (a few dozen ratings are
a small sample).

``g`` is the judge's score put on the ratings' scale by a straight line fitted on rated samples,
cross-fitted: the rated samples are split into ``folds`` folds, each rated sample is predicted
by the line fitted on the other folds (so no rating corrects itself), and each unrated sample by
the mean of the folds' lines (Zrnic and Candès, 2024).

The ratings come from ``ragmeter.heads.ratings``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ragmeter.heads.ratings import Labels, Scale, read_labels
from ragmeter.result import Result

Z_95 = 1.959964
"""The normal quantile of a two-sided 95 % interval."""
T_95_FEW = {1: 12.7062, 2: 4.3027}
"""Student's t quantiles of a two-sided 95 % interval, where the expansion is too far off."""
DEFAULT_FOLDS = 5
CALIBRATION_FILE = "calibration.json"


def t_quantile(df: int) -> float:
    """Student's t quantile of a two-sided 95 % interval with ``df`` degrees of freedom, from
    the normal one by the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5: within 0.004
    of the exact value from 3 degrees of freedom on, 0.001 from 4); the exact values below 3. A
    few dozen ratings are a small sample: a normal interval over them covers less often than it
    says."""
    if df in T_95_FEW:
        return T_95_FEW[df]
    z, v = Z_95, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


class Interval(BaseModel):
    estimate: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def within(self, low: float, high: float) -> Interval:
        """The interval cut to [low, high]: a mean of ratings cannot lie off their scale."""
        return Interval(estimate=self.estimate, low=max(self.low, low), high=min(self.high, high))


def labels_only(ratings: Sequence[float] | np.ndarray) -> Interval:
    """The mean of the ratings with a t 95 % interval (needs two ratings)."""
    y = np.asarray(ratings, dtype=float)
    half = t_quantile(y.size - 1) * math.sqrt(float(np.var(y, ddof=1)) / y.size)
    mean = float(y.mean())
    return Interval(estimate=mean, low=mean - half, high=mean + half)


def power_tuning(
    ratings: np.ndarray, predicted_rated: np.ndarray, predicted_unrated: np.ndarray
) -> float:
    """PPI++'s ``lambda`` for a mean: the minimiser of the estimated variance
    ``var(y - lambda g_rated) / n + lambda**2 var(g_unrated) / N``, clipped to [0, 1]. The
    variance is a parabola in ``lambda`` and 0 (the ratings alone) is allowed, so the interval
    is never wider than the ratings-only one, and a judge that does not help gets no weight."""
    n, unrated = ratings.size, predicted_unrated.size
    if unrated < 2 or n < 2:
        return 0.0
    curvature = float(np.var(predicted_rated, ddof=1)) / n
    curvature += float(np.var(predicted_unrated, ddof=1)) / unrated
    if curvature <= 0:
        return 0.0
    covariance = float(np.cov(ratings, predicted_rated, ddof=1)[0, 1]) / n
    return float(np.clip(covariance / curvature, 0.0, 1.0))


def ppi_mean(
    ratings: Sequence[float] | np.ndarray,
    predicted_rated: Sequence[float] | np.ndarray,
    predicted_unrated: Sequence[float] | np.ndarray,
    *,
    weight: float | None = None,
) -> tuple[Interval, float]:
    """The prediction-powered estimate of the people's mean with its 95 % interval, and the
    weight ``lambda`` given to the predictions (power-tuned unless ``weight`` is given)."""
    y = np.asarray(ratings, dtype=float)
    g_rated = np.asarray(predicted_rated, dtype=float)
    g_unrated = np.asarray(predicted_unrated, dtype=float)
    lam = power_tuning(y, g_rated, g_unrated) if weight is None else weight
    if g_unrated.size == 0:
        lam = 0.0
    estimate = float(y.mean())
    variance = float(np.var(y - lam * g_rated, ddof=1)) / y.size
    if lam:
        estimate += lam * float(g_unrated.mean() - g_rated.mean())
        if g_unrated.size > 1:
            variance += lam**2 * float(np.var(g_unrated, ddof=1)) / g_unrated.size
    # The ratings' part dominates the variance: its n - 1 degrees of freedom, as the ratings
    # alone get (so lambda = 0 gives exactly the ratings-only interval).
    half = t_quantile(y.size - 1) * math.sqrt(variance)
    return Interval(estimate=estimate, low=estimate - half, high=estimate + half), lam


def cross_fit(
    judge_rated: np.ndarray,
    ratings: np.ndarray,
    judge_unrated: np.ndarray,
    *,
    bounds: tuple[float, float],
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The judge's scores on the ratings' scale: each rated sample predicted by a line fitted on
    the other folds' rated samples, each unrated sample by the mean of the folds' lines; every
    prediction kept within ``bounds``. Folds are drawn with ``seed``."""
    n = ratings.size
    k = max(2, min(folds, n))
    fold = np.empty(n, dtype=int)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    rated = np.empty(n)
    unrated = np.zeros(judge_unrated.size)
    for part in range(k):
        held = fold == part
        slope, intercept = _line(judge_rated[~held], ratings[~held])
        rated[held] = intercept + slope * judge_rated[held]
        unrated += np.clip(intercept + slope * judge_unrated, *bounds) / k
    return np.clip(rated, *bounds), unrated


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept; a flat line at the mean when ``x`` does not vary."""
    spread = float(np.var(x))
    slope = float(np.mean((x - x.mean()) * (y - y.mean()))) / spread if spread > 0 else 0.0
    return slope, float(y.mean()) - slope * float(x.mean())


def labels_to_halve(
    ratings: np.ndarray, predicted_rated: np.ndarray, predicted_unrated: np.ndarray
) -> int | None:
    """How many of the samples would need a rating for the interval to be half as wide (the
    rest judged only), with ``lambda`` tuned again at each count; None when even rating every
    sample would not do it."""
    n, total = ratings.size, ratings.size + predicted_unrated.size
    predicted = np.concatenate([predicted_rated, predicted_unrated])
    var_y = float(np.var(ratings, ddof=1))
    var_g = float(np.var(predicted, ddof=1)) if predicted.size > 1 else 0.0
    cov = float(np.cov(ratings, predicted_rated, ddof=1)[0, 1]) if n > 1 else 0.0

    def variance(rated: int) -> float:
        unrated = total - rated
        if unrated < 2 or var_g <= 0:
            return var_y / rated
        lam = float(np.clip(cov / (var_g * (1 + rated / unrated)), 0.0, 1.0))
        return (var_y - 2 * lam * cov + lam**2 * var_g) / rated + lam**2 * var_g / unrated

    target = variance(n) / 4
    return next((m for m in range(n + 1, total + 1) if variance(m) <= target), None)


class HumanMean(BaseModel):
    """What the ratings of one metric say, beside the judge, on the ratings' scale."""

    rated: int
    """Samples both rated and scored: the ratings used."""
    unrated: int
    """Scored samples without a rating: they enter through the judge alone."""
    judge_mean: float
    """The judge's mean over all scored samples, as it scores (0-1)."""
    judge_mean_on_scale: float
    """The same put on the ratings' scale linearly (0 at its low end, 1 at its high end)."""
    labels_only: Interval
    """The ratings' mean, its interval cut to the scale."""
    ppi: Interval
    """The prediction-powered estimate of the people's mean over all scored samples, its
    interval cut to the scale."""
    weight: float
    """PPI++'s ``lambda``: 0 is the ratings alone, 1 trusts the judge fully."""
    width_ratio: float | None
    """The PPI interval's width over the ratings-only width (before both are cut to the scale:
    at most 1)."""
    judge_bias: float
    """Mean of (judge on the scale minus rating) over the rated samples."""
    correlation: float | None
    """Pearson's r of the judge's score and the rating over the rated samples (None when either
    does not vary)."""
    labels_to_halve: int | None
    """Rated samples needed for half the PPI interval's width; None if more than there are."""


def human_mean(
    judge_rated: Sequence[float] | np.ndarray,
    ratings: Sequence[float] | np.ndarray,
    judge_unrated: Sequence[float] | np.ndarray,
    scale: Scale,
    *,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    judge_range: tuple[float, float] = (0.0, 1.0),
) -> HumanMean:
    """Every figure of one metric from the judge's scores of rated and unrated samples and the
    ratings (two or more). ``judge_range`` is the judge's own scale (0-1 for a metric; a
    difference of two runs ranges over -1..1)."""
    f_rated = np.asarray(judge_rated, dtype=float)
    y = np.asarray(ratings, dtype=float)
    f_unrated = np.asarray(judge_unrated, dtype=float)
    if y.size < 2:
        raise ValueError("needs at least two rated, scored samples")
    bounds = (scale.low, scale.high)
    g_rated, g_unrated = cross_fit(f_rated, y, f_unrated, bounds=bounds, folds=folds, seed=seed)
    alone, (ppi, lam) = labels_only(y), ppi_mean(y, g_rated, g_unrated)
    # The width ratio before the intervals are cut to the scale: the judge's help, which is
    # never below none (cutting can trim the ratings-only interval more than the PPI one).
    ratio = ppi.width / alone.width if alone.width > 0 else None
    all_judged = np.concatenate([f_rated, f_unrated])
    stretch = (scale.high - scale.low) / (judge_range[1] - judge_range[0])

    def on_scale(values: np.ndarray) -> np.ndarray:
        return scale.low + (values - judge_range[0]) * stretch

    varies = np.std(f_rated) > 0 and np.std(y) > 0
    return HumanMean(
        rated=int(y.size),
        unrated=int(f_unrated.size),
        judge_mean=float(all_judged.mean()),
        judge_mean_on_scale=float(on_scale(all_judged).mean()),
        labels_only=alone.within(*bounds),
        ppi=ppi.within(*bounds),
        weight=lam,
        width_ratio=ratio,
        judge_bias=float(np.mean(on_scale(f_rated) - y)),
        correlation=float(np.corrcoef(f_rated, y)[0, 1]) if varies else None,
        labels_to_halve=labels_to_halve(y, g_rated, g_unrated),
    )


class MetricCalibration(BaseModel):
    metric: str
    scale: Scale
    scored: int
    """Samples the judge scored: the estimate is of the people's mean over these."""
    unscored: int
    """Samples the judge left unscored: left out of every figure."""
    rated_unscored: int
    """Ratings of samples the judge left unscored: not used."""
    result: HumanMean | None
    reason: str | None = None
    """Why there is no result."""


class CalibrationReport(BaseModel):
    run: str
    labels: str
    source: Literal["file", "run"] | None = None
    """Where the ratings came from: a ratings file (``labels``), or the run's own labels
    (``ragmeter label``); None in a file written before this was recorded."""
    folds: int
    seed: int
    confidence: float = 0.95
    method: str = (
        "PPI++ (power-tuned prediction-powered inference) of the people's mean; the judge's "
        "score mapped to the ratings' scale by a line fitted on rated samples, cross-fitted"
    )
    metrics: list[MetricCalibration]

    def made_as(self, source: Literal["file", "run"], folds: int, seed: int) -> bool:
        """Whether this calibration was made from ratings of ``source`` with these folds and
        seed (one written before its source was recorded is a file's unless its labels are a
        run's ``labels.sqlite``, ``ragmeter.labels.LABELS_FILE``)."""
        made = self.source or ("run" if Path(self.labels).name == "labels.sqlite" else "file")
        return (made, self.folds, self.seed) == (source, folds, seed)

    def write(self, folder: str | Path) -> Path:
        """``calibration.json`` in ``folder``."""
        path = Path(folder) / CALIBRATION_FILE
        path.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return path


def _judged(result: Result, metric: str) -> tuple[dict[str, float], int]:
    """The metric's scores by sample id, and how many samples it left unscored."""
    scores = [s for s in result.briefs() if s.metric == metric]
    scored = {s.sample_id: float(s.value) for s in scores if s.value is not None}
    return scored, len(scores) - len(scored)


def calibrate_result(
    result: Result,
    labels: Labels,
    *,
    run: str = "",
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    source: Literal["file", "run"] = "file",
) -> CalibrationReport:
    """Per rated metric of ``result``: the judge's mean, the ratings-only mean and the PPI++
    estimate of the people's mean over the scored samples, with the judge's bias and
    correlation on the rated ones. ``source`` says where ``labels`` came from: a ratings file,
    or the run's own labels."""
    rows = []
    for metric in [m for m in result.metrics if m in labels.ratings]:
        scored, unscored = _judged(result, metric)
        rated = labels.ratings[metric]
        used = [k for k in rated if k in scored]
        found = MetricCalibration(
            metric=metric,
            scale=labels.scales[metric],
            scored=len(scored),
            unscored=unscored,
            rated_unscored=len(rated) - len(used),
            result=None,
        )
        if len(used) < 2:
            found.reason = f"{len(used)} rated sample(s) the judge scored; at least 2 are needed"
        else:
            found.result = human_mean(
                [scored[k] for k in used],
                [rated[k] for k in used],
                [v for k, v in scored.items() if k not in rated],
                labels.scales[metric],
                folds=folds,
                seed=seed,
            )
        rows.append(found)
    return CalibrationReport(
        run=run, labels=str(labels.path), source=source, folds=folds, seed=seed, metrics=rows
    )


def calibrate(
    result: Result,
    labels: str | Path,
    *,
    scales: Mapping[str | None, Scale] | None = None,
    run: str = "",
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
) -> CalibrationReport:
    """Read the ratings file ``labels`` against ``result`` (refusing bad rows by row and field)
    and estimate each rated metric's people's mean."""
    found = read_labels(labels, [s.key for s in result.samples], result.metrics, scales)
    return calibrate_result(result, found, run=run, folds=folds, seed=seed)


class DifferenceCalibration(BaseModel):
    """B minus A on the people's scale, paired on the samples both runs scored."""

    metric: str
    scale: Scale
    """The ratings' scale; a difference ranges over plus or minus its width."""
    pairs: int
    """Samples scored in both runs."""
    result: HumanMean | None
    """On the difference: the judge's mean difference (-1..1), the ratings-only and the PPI++
    difference of the people's means."""
    reason: str | None = None


def calibrate_difference(
    a: Result,
    labels_a: Labels,
    b: Result,
    labels_b: Labels,
    *,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
) -> list[DifferenceCalibration]:
    """PPI++ of the difference of the people's means (B minus A) per metric rated in both:
    a sample rated in both runs is a rated pair (the difference of its ratings), any other
    sample scored in both runs enters through the judge's difference alone."""
    found = []
    for metric in [m for m in a.metrics if m in b.metrics]:
        if metric not in labels_a.ratings or metric not in labels_b.ratings:
            continue
        # One scale for both: a stated one is the same for both, inferred ones are joined.
        scale_a, scale_b = labels_a.scales[metric], labels_b.scales[metric]
        scale = Scale(
            low=min(scale_a.low, scale_b.low),
            high=max(scale_a.high, scale_b.high),
            stated=scale_a.stated and scale_b.stated,
        )
        scored_a, _ = _judged(a, metric)
        scored_b, _ = _judged(b, metric)
        pairs = [k for k in scored_a if k in scored_b]
        rated_a, rated_b = labels_a.ratings[metric], labels_b.ratings[metric]
        rated = [k for k in pairs if k in rated_a and k in rated_b]
        unrated = [k for k in pairs if k not in rated]
        row = DifferenceCalibration(metric=metric, scale=scale, pairs=len(pairs), result=None)
        if len(rated) < 2:
            row.reason = f"{len(rated)} sample(s) rated in both runs and scored; 2 are needed"
        else:
            width = scale.high - scale.low
            row.result = human_mean(
                [scored_b[k] - scored_a[k] for k in rated],
                [rated_b[k] - rated_a[k] for k in rated],
                [scored_b[k] - scored_a[k] for k in unrated],
                Scale(low=-width, high=width, stated=scale.stated),
                folds=folds,
                seed=seed,
                judge_range=(-1.0, 1.0),
            )
        found.append(row)
    return found
