"""Bradley-Terry ratings on the Elo scale, win rates against the reference, and their intervals.

Bradley-Terry gives system i strength p_i with P(i beats j) = p_i / (p_i + p_j); a tie counts as
half a win for each side. The fit never looks at single battles: they are first aggregated into
counts per (pair of systems, outcome), at most 3·K(K-1)/2 numbers, so 200,000 battles cost one
``bincount``. A bootstrap round resamples the battles with replacement, which is the same as one
multinomial draw over those cells, so 1,000 rounds are a (1000, cells) array, and the fits of all
rounds run at once as batched minorise-maximise iterations (Hunter, 2004) on (1000, K, K) arrays.

Ratings are 400/ln(10) times the log-strength (400·log10 of the odds, the Elo convention), shifted
so that the mean rating is 1000, or so that one anchor system (e.g. the reference) is at 1000.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.arena.battles import Battle

ELO_SCALE = 400.0 / np.log(10.0)
ELO_BASE = 1000.0
TOLERANCE = 1e-10
MAX_ITERATIONS = 100_000

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


def fit_bradley_terry(
    wins: np.ndarray, *, prior: float = 0.0, met: np.ndarray | None = None
) -> np.ndarray:
    """Log-strengths (mean 0) maximising the Bradley-Terry likelihood of ``wins`` (n, n), or of
    a batch (..., n, n) at once.

    Args:
        wins: ``wins[..., i, j]`` = wins of i over j (ties as halves).
        prior: virtual games added to every pair that met, split evenly; 0 gives the maximum
            likelihood estimate, which exists only if every system has beaten, directly or through
            others, every system that beat it (e.g. none is unbeaten or winless). A small prior
            keeps ratings finite on small samples and vanishes against real counts.
        met: which pairs get the prior; by default those with games in ``wins``. The bootstrap
            passes the pairs that met in the full data, so that a resample in which a rare pair
            happens to be missing is still on the same scale.

    Raises:
        ValueError: the estimate does not exist (with ``prior=0``), or the systems fall into
            groups that never met, whose ratings cannot be put on one scale.
    """
    wins = np.asarray(wins, dtype=float)
    games = wins + np.swapaxes(wins, -1, -2)
    met = games > 0 if met is None else (met | (games > 0))
    if not _connected(met if prior > 0 else games > 0):
        raise ValueError(
            "some systems were never compared with the others, directly or "
            "through other systems: their ratings are not on a common scale"
        )
    if prior > 0:
        wins = wins + met * (prior / 2)
        games = wins + np.swapaxes(wins, -1, -2)
    elif not _connected(wins > 0):
        raise ValueError(
            "the maximum likelihood ratings do not exist (a system never wins or "
            "never loses against the rest); use a prior > 0"
        )
    total_wins = wins.sum(axis=-1)
    log_p = np.zeros(total_wins.shape)
    for _ in range(MAX_ITERATIONS):
        p = np.exp(log_p)
        expected = (games / (p[..., :, None] + p[..., None, :])).sum(axis=-1)
        updated = np.log(total_wins / expected)
        updated -= updated.mean(axis=-1, keepdims=True)
        change = np.max(np.abs(updated - log_p))
        log_p = updated
        if change < TOLERANCE:
            break
    return log_p


def to_elo(log_strength: np.ndarray, systems: Sequence[str], anchor: str = "mean") -> np.ndarray:
    """Elo-scale ratings: mean 1000 (``anchor="mean"``) or the named system at 1000."""
    ratings = ELO_SCALE * log_strength
    if anchor == "mean":
        return ratings - ratings.mean(axis=-1, keepdims=True) + ELO_BASE
    if anchor not in systems:
        raise ValueError(f"anchor {anchor!r} is not among the systems: {list(systems)}")
    column = list(systems).index(anchor)
    return ratings - ratings[..., column : column + 1] + ELO_BASE


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


def _connected(edges: np.ndarray) -> bool:
    """Whether every system reaches every other along ``edges[..., i, j]`` (for every batch
    entry); with symmetric edges this is plain connectivity, else strong connectivity."""
    n = edges.shape[-1]
    reach = edges | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        reach = reach | (reach.astype(np.float32) @ reach.astype(np.float32) > 0)
    return bool(reach.all())
