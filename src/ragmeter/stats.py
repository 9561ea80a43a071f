"""Uncertainty for reported means."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
    means = data[rng.integers(0, data.size, size=(rounds, data.size))].mean(axis=1)
    low, high = percentile_interval(means, confidence)
    return mean, float(low), float(high)


def resample_counts(units: int, *, rounds: int, seed: int = 0) -> np.ndarray:
    """How often each of ``units`` units is drawn in each of ``rounds`` bootstrap resamples with
    replacement: a (rounds, units) integer array whose rows sum to ``units``.

    A statistic that takes weights gets its bootstrap distribution from these rows without
    copying the data: resampling clusters (e.g. questions, each with several battles) is a
    weight per cluster. Seeded, so the same data always print the same interval.
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(units, np.full(units, 1 / units), size=rounds)


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
