"""Uncertainty for reported means, agreement coefficients and rates, and the one paired test
every comparison of systems makes (runs, retrievers, and people's ratings in the decision
curves): a paired bootstrap interval, a sign-flip permutation p-value, Holm's adjustment over
the pairs, a verdict, and what the pairs' spread can tell apart."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from statistics import NormalDist
from typing import Literal

import numpy as np
from pydantic import BaseModel

BOOTSTRAP_BLOCK = 1 << 20
"""Values drawn at once by a bootstrap (``bootstrap_mean_ci``, ``weighted_roc_auc``, tune's
gain): its memory (16 MiB) whatever the sample."""


def bootstrap_mean_ci(
    values: Sequence[float], *, rounds: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float] | None:
    """Mean with a percentile-bootstrap confidence interval; None when there are no values.

    Seeded, so the same scores always print the same interval.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    mean = float(data.mean())
    if data.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    # A block of rounds at a time: all of them at once take 16 bytes per round and value
    # (160 MB for 5,000 values: the peak of a long run, at its summary). The generator's
    # stream runs on across the blocks, so the draws, and the interval, are those of drawing
    # every round at once.
    block = max(1, BOOTSTRAP_BLOCK // data.size)
    means = np.empty(rounds)
    for start in range(0, rounds, block):
        drawn = rng.integers(0, data.size, size=(min(block, rounds - start), data.size))
        means[start : start + len(drawn)] = data[drawn].mean(axis=1)
    low, high = percentile_interval(means, confidence)
    return mean, float(low), float(high)


Coefficient = Literal["spearman", "pearson"]


class Interval(BaseModel):
    value: float
    low: float
    high: float


def coefficients(x: np.ndarray, y: np.ndarray, kind: Coefficient) -> np.ndarray:
    """The coefficient of each row of ``x`` with the same row of ``y`` (NaN where a row is
    constant); Spearman's is Pearson's on ranks, ties given their mean rank."""
    if kind == "spearman":
        import pandas as pd  # only here: reports that never rank should not pay its import

        x = pd.DataFrame(x).rank(axis=1).to_numpy()
        y = pd.DataFrame(y).rank(axis=1).to_numpy()
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    spread = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (x * y).sum(axis=1) / spread, np.nan)


def correlation(
    x: Sequence[float],
    y: Sequence[float],
    kind: Coefficient,
    *,
    rounds: int = 2000,
    seed: int = 0,
    unit: int = 1,
) -> Interval | None:
    """The coefficient with a percentile-bootstrap 95 % interval over rows (seeded); None when
    it is undefined (fewer than 3 rows, or a constant side).

    ``unit`` rows in a row (an item rated by two people, say) are drawn together, so that an
    item counted twice does not narrow the interval as two items would."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 3:
        return None
    value = coefficients(xs[None, :], ys[None, :], kind)[0]
    if np.isnan(value):
        return None
    units = len(xs) // unit
    drawn = np.random.default_rng(seed).integers(0, units, (rounds, units))
    rows = (drawn[:, :, None] * unit + np.arange(unit)).reshape(rounds, units * unit)
    spread = coefficients(xs[rows], ys[rows], kind)
    low, high = np.nanpercentile(spread, [2.5, 97.5])
    return Interval(value=float(value), low=float(low), high=float(high))


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (any labels that compare equal):
    their agreement beyond what their own label frequencies give by chance,
    ``(observed - chance) / (1 - chance)``. None when there are no items, or when chance
    agreement is already 1 (both gave one and the same label throughout), where it is
    undefined."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}: kappa pairs the same items")
    if not a:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    chance = sum((a.count(c) / len(a)) * (b.count(c) / len(b)) for c in set(a) | set(b))
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def wilson_interval(
    successes: int, trials: int, *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None when there are no trials.

    Unlike the normal approximation it stays inside [0, 1] and does not collapse to a point at
    0 or ``trials`` successes, which matters for rates near 0 measured on a few dozen cases
    (0 of 60 is still compatible with about 6 %).
    """
    if trials == 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and {trials}, got {successes}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * (p * (1 - p) / trials + z * z / (4 * trials * trials)) ** 0.5
    scale = 1 + z * z / trials
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def resample_counts(
    units: int, *, rounds: int, seed: int = 0, size: int | None = None
) -> np.ndarray:
    """How often each of ``units`` units is drawn in each of ``rounds`` bootstrap resamples with
    replacement: a (rounds, units) integer array whose rows sum to ``size`` (``units`` unless
    told: a smaller ``size`` is the m-out-of-n bootstrap, how the statistic spreads on fewer
    units).

    A statistic that takes weights gets its bootstrap distribution from these rows without
    copying the data: resampling clusters (e.g. questions, each with several battles) is a
    weight per cluster. Seeded, so the same data always print the same interval.
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(units if size is None else size, np.full(units, 1 / units), size=rounds)


def percentile_interval(
    draws: np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of bootstrap ``draws`` along their first axis; NaN draws (a
    resample in which the statistic was undefined) are left out, and an all-NaN column is NaN."""
    tail = (1 - confidence) / 2 * 100
    draws = np.asarray(draws, dtype=float)
    defined = ~np.isnan(draws).all(axis=0)
    low = np.full(draws.shape[1:], np.nan)
    high = np.full(draws.shape[1:], np.nan)
    if defined.any():
        low[defined], high[defined] = np.nanpercentile(
            draws[:, defined], [tail, 100 - tail], axis=0
        )
    return low, high


def f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """F1 of the positive class between two boolean arrays (0 when neither has a positive)."""
    tp = float(np.sum(truth & predicted))
    fp = float(np.sum(~truth & predicted))
    fn = float(np.sum(truth & ~predicted))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """The mean of both classes' F1."""
    truth, predicted = truth.astype(bool), predicted.astype(bool)
    return (f1(truth, predicted) + f1(~truth, ~predicted)) / 2


def balanced_accuracy(truth: np.ndarray, predicted: np.ndarray) -> float:
    """The mean of the recall of each class present (SummEdits' figure: a verifier that says
    Yes to everything scores 0.5 whatever the labels' balance)."""
    truth, predicted = truth.astype(bool), predicted.astype(bool)
    recalls = [
        float(np.mean(predicted[truth == kind] == kind))
        for kind in (True, False)
        if (truth == kind).any()
    ]
    return float(np.mean(recalls)) if recalls else 0.0


def best_threshold(candidates: Iterable[float], quality: Callable[[float], float]) -> float:
    """The candidate threshold of the highest ``quality``; among equals, the nearest to 0.5,
    where an uncalibrated P(Yes) would be cut."""
    return float(max(candidates, key=lambda t: (quality(t), -abs(t - 0.5))))


def roc_auc(truth: np.ndarray, scores: np.ndarray) -> float | None:
    """Probability that a supported claim outscores an unsupported one (ties count half)."""
    positive, negative = scores[truth], scores[~truth]
    if not len(positive) or not len(negative):
        return None
    greater = (positive[:, None] > negative[None, :]).sum()
    ties = (positive[:, None] == negative[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(positive) * len(negative)))


def weighted_roc_auc(truth: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """:func:`roc_auc` once per row of ``weights`` (rounds x items), each item counted as often
    as its weight says: the bootstrap distribution of ROC AUC from :func:`resample_counts`
    rows, without copying the items. NaN in a row that weighs no item of one class."""
    truth = np.asarray(truth, dtype=bool)
    scores = np.asarray(scores, dtype=float)
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    order = np.argsort(scores[~truth], kind="stable")
    negative = scores[~truth][order]
    positive = scores[truth]
    # Per positive: the negatives strictly below it, and those up to and level with it.
    below = np.searchsorted(negative, positive, side="left")
    level = np.searchsorted(negative, positive, side="right")
    found = np.full(len(weights), np.nan)
    block = max(1, BOOTSTRAP_BLOCK // max(1, len(scores)))
    for start in range(0, len(weights), block):
        rows = weights[start : start + block]
        on_negative = rows[:, ~truth][:, order]
        on_positive = rows[:, truth]
        cumulative = np.concatenate(
            [np.zeros((len(rows), 1)), np.cumsum(on_negative, axis=1)], axis=1
        )
        beaten = cumulative[:, below] + 0.5 * (cumulative[:, level] - cumulative[:, below])
        pairs = on_positive.sum(axis=1) * on_negative.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            found[start : start + len(rows)] = np.where(
                pairs > 0, (on_positive * beaten).sum(axis=1) / pairs, np.nan
            )
    return found


EXACT_UP_TO = 12
"""Up to this many pairs the permutation test enumerates every sign pattern (4,096 at most)."""
CHUNK = 256
"""Permutation rounds drawn at once: memory stays at a few rows of the samples."""


def paired_difference(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``b - a`` with a paired-bootstrap 95% interval (pairs resampled together)."""
    differences = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    found = bootstrap_mean_ci(differences, rounds=rounds, seed=seed)
    if found is None:
        raise ValueError("no pairs to compare")
    return found


def sign_flip_p_value(differences: Sequence[float], *, rounds: int = 2000, seed: int = 0) -> float:
    """Two-sided p-value of a paired sign-flip permutation test of mean difference zero.

    Exact (the share of all 2^n sign patterns whose mean is at least as far from zero) up to
    ``EXACT_UP_TO`` pairs; beyond, ``rounds`` seeded random patterns, counted as
    ``(1 + hits) / (1 + rounds)`` so that the p-value is never 0.
    """
    d = np.asarray(differences, dtype=float)
    observed = abs(d.sum())
    if d.size == 0 or observed == 0:
        return 1.0
    slack = 1e-9 * float(np.abs(d).sum())  # sums equal up to rounding count as "as far"
    if d.size <= EXACT_UP_TO:
        patterns = (np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1
        sums = np.abs((1 - 2 * patterns) @ d)
        return float(np.mean(sums >= observed - slack))
    rng = np.random.default_rng(seed)
    total, hits = d.sum(), 0
    for start in range(0, rounds, CHUNK):
        flipped = rng.random((min(CHUNK, rounds - start), d.size)) < 0.5
        hits += int(np.count_nonzero(np.abs(total - 2 * (flipped @ d)) >= observed - slack))
    return (1 + hits) / (1 + rounds)


P_VALUE_METHOD = (
    "paired sign-flip permutation test, two-sided "
    f"(exact up to {EXACT_UP_TO} pairs, else seeded random sign patterns)"
)


class PairedTest(BaseModel):
    """B - A over paired samples: the mean difference with its paired-bootstrap 95 % interval,
    the sign-flip p-value (unadjusted), and the spread of the differences, from which what the
    pairs can tell apart follows."""

    pairs: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    spread: float
    """The differences' standard deviation (n - 1 in the denominator; 0 for one pair)."""


def paired_test(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 2000, seed: int = 0
) -> PairedTest:
    """:func:`paired_difference` and :func:`sign_flip_p_value` of ``b - a`` in one result."""
    differences = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    mean, low, high = paired_difference(a, b, rounds=rounds, seed=seed)
    return PairedTest(
        pairs=len(differences),
        difference=mean,
        ci_low=low,
        ci_high=high,
        p_value=sign_flip_p_value(differences, rounds=rounds, seed=seed),
        spread=float(differences.std(ddof=1)) if len(differences) > 1 else 0.0,
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values for the number of comparisons made: the k-th
    smallest is multiplied by (m - k + 1), kept at least as large as the one before it, and
    capped at 1. The family-wise error stays at most alpha, as with Bonferroni, but fewer real
    differences are lost."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for step, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


ALPHA = 0.05
"""The error rate every verdict is decided at (after Holm's adjustment)."""
POWER = 0.8
"""The chance of telling a real difference apart that sample sizes are planned for."""

Verdict = Literal["better", "worse", "cannot tell"]


def verdict(
    difference: float, adjusted_p: float, *, higher_is_better: bool = True, alpha: float = ALPHA
) -> Verdict:
    """B against A: "better" or "worse" where the adjusted p-value is below ``alpha`` (the
    direction read from the difference and whether higher is better), else "cannot tell"."""
    if adjusted_p >= alpha or difference == 0:
        return "cannot tell"
    return "better" if (difference > 0) == higher_is_better else "worse"


def _z_sum(alpha: float, power: float, comparisons: int) -> float:
    """z of the two-sided test at alpha / comparisons (Holm's strictest step) plus z of the
    power: the normal approximation of a paired test's power."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / comparisons / 2) + normal.inv_cdf(power)


def detectable_difference(
    spread: float,
    pairs: int,
    *,
    comparisons: int = 1,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float | None:
    """The smallest mean difference ``pairs`` pairs with this spread tell apart with the given
    power (a paired test at alpha over ``comparisons``, normal approximation); None with fewer
    than two pairs, where the spread is unknown."""
    if pairs < 2:
        return None
    return _z_sum(alpha, power, comparisons) * spread / math.sqrt(pairs)


def samples_needed(
    spread: float,
    difference: float,
    *,
    comparisons: int = 1,
    alpha: float = ALPHA,
    power: float = POWER,
) -> int | None:
    """Pairs needed to tell a mean difference of ``difference`` apart with the given power, at
    this spread of the differences; None for a zero difference, which no number tells apart."""
    if difference == 0:
        return None
    return max(2, math.ceil((_z_sum(alpha, power, comparisons) * spread / abs(difference)) ** 2))
