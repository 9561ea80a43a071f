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
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return mean, float(low), float(high)
