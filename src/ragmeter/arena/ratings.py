"""The arena's Bradley-Terry ratings on the Elo scale (``ragmeter.bradley_terry``) from its
battles, and their intervals.

A tie counts as half a win for each side. The fit never looks at single battles: they are first
aggregated into counts per (pair of systems, outcome), at most 3·K(K-1)/2 numbers, so 200,000
battles cost one ``bincount``. A bootstrap round resamples the battles with replacement, which is
the same as one multinomial draw over those cells, so 1,000 rounds are a (1000, cells) array, and
the fits of all rounds run at once as batched minorise-maximise iterations (Hunter, 2004) on
(1000, K, K) arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.arena.battles import Battle
from ragmeter.bradley_terry import fit_bradley_terry, to_elo

# Columns of the per-pair count table, for the pair's lower-indexed system i and the other, j.
I_WINS, J_WINS, TIE = 0, 1, 2


@dataclass(frozen=True)
class BattleArrays:
    """Scored battles as index arrays: ``outcome`` is -1 when system ``a`` won, 1 for ``b``, 0
    for a tie (the battles' ``verdict``)."""

    systems: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray


@dataclass(frozen=True)
class PairCounts:
    """Battles aggregated per pair of systems: ``counts[k]`` holds (i wins, j wins, ties) for the
    systems ``i[k] < j[k]``; a leading axis, if any, is the bootstrap round."""

    systems: list[str]
    i: np.ndarray
    j: np.ndarray
    counts: np.ndarray


def battle_arrays(battles: Sequence[Battle]) -> BattleArrays:
    """The scored battles as arrays (unscored ones carry no outcome and are left out)."""
    scored = [b for b in battles if b.verdict is not None]
    systems = sorted({name for b in scored for name in (b.system_a, b.system_b)})
    index = {name: n for n, name in enumerate(systems)}
    return BattleArrays(
        systems=systems,
        a=np.array([index[b.system_a] for b in scored], dtype=np.int64),
        b=np.array([index[b.system_b] for b in scored], dtype=np.int64),
        outcome=np.array([b.verdict for b in scored], dtype=np.int64),
    )


def pair_counts(arrays: BattleArrays) -> PairCounts:
    """Aggregate battles into (i wins, j wins, ties) per pair of systems that met."""
    if np.any(arrays.a == arrays.b):
        raise ValueError("a battle pits a system against itself")
    n = len(arrays.systems)
    low, high = np.minimum(arrays.a, arrays.b), np.maximum(arrays.a, arrays.b)
    # The outcome seen from the lower-indexed system: flip it where that system was ``b``.
    outcome = np.where(arrays.a == low, arrays.outcome, -arrays.outcome)
    column = np.select([outcome < 0, outcome > 0], [I_WINS, J_WINS], TIE)
    pairs, which = np.unique(low * n + high, return_inverse=True)
    counts = np.bincount(which * 3 + column, minlength=3 * len(pairs)).reshape(len(pairs), 3)
    return PairCounts(arrays.systems, pairs // n, pairs % n, counts.astype(float))


def wins_matrix(counts: PairCounts) -> np.ndarray:
    """``W[..., i, j]``: wins of i over j, ties counting half to each side."""
    n = len(counts.systems)
    c = counts.counts
    wins = np.zeros((*c.shape[:-2], n, n))
    wins[..., counts.i, counts.j] = c[..., I_WINS] + 0.5 * c[..., TIE]
    wins[..., counts.j, counts.i] = c[..., J_WINS] + 0.5 * c[..., TIE]
    return wins


def bootstrap_counts(counts: PairCounts, rounds: int, seed: int = 0) -> PairCounts:
    """``rounds`` resamples of the battles with replacement, as multinomial draws of the counts."""
    flat = counts.counts.ravel()
    total = int(flat.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, flat / total, size=rounds).astype(float)
    shape = (rounds, *counts.counts.shape)
    return PairCounts(counts.systems, counts.i, counts.j, draws.reshape(shape))


@dataclass(frozen=True)
class EloRatings:
    systems: list[str]
    rating: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    counts: PairCounts


def elo_ratings(
    arrays: BattleArrays,
    *,
    anchor: str = "mean",
    rounds: int = 1000,
    seed: int = 0,
    prior: float = 0.0,
    confidence: float = 0.95,
) -> EloRatings:
    """Bradley-Terry Elo ratings with percentile-bootstrap intervals (``rounds`` = 0: none)."""
    counts = pair_counts(arrays)
    rating = to_elo(fit_bradley_terry(wins_matrix(counts), prior=prior), counts.systems, anchor)
    low = high = np.full(len(counts.systems), np.nan)
    if rounds > 0:
        met = wins_matrix(counts) > 0
        met = met | met.T
        resampled = wins_matrix(bootstrap_counts(counts, rounds, seed))
        boot = to_elo(fit_bradley_terry(resampled, prior=prior, met=met), counts.systems, anchor)
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(boot, [tail, 100 - tail], axis=0)
    return EloRatings(counts.systems, rating, low, high, counts)
