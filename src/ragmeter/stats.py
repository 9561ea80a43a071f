"""Uncertainty for reported means."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

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
