"""Bradley-Terry strengths from wins between systems: the one fit behind every ranking of
systems read in pairs (the arena's battles, ``ragmeter compare --side-by-side``).

System i has strength p_i with P(i beats j) = p_i / (p_i + p_j). Wins may be fractional: a tie
is half a win for each side, and a preference read as a probability is that much of a win. The
fit takes a matrix of wins, or a batch of them (bootstrap rounds) at once, as batched
minorise-maximise iterations (Hunter, 2004).

Ratings are 400/ln(10) times the log-strength (400·log10 of the odds, the Elo convention),
shifted so that the mean rating is 1000, or so that one anchor system (e.g. the reference) is at
1000.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ELO_SCALE = 400.0 / np.log(10.0)
ELO_BASE = 1000.0
TOLERANCE = 1e-10
MAX_ITERATIONS = 100_000


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


def _connected(edges: np.ndarray) -> bool:
    """Whether every system reaches every other along ``edges[..., i, j]`` (for every batch
    entry); with symmetric edges this is plain connectivity, else strong connectivity."""
    n = edges.shape[-1]
    reach = edges | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        reach = reach | (reach.astype(np.float32) @ reach.astype(np.float32) > 0)
    return bool(reach.all())
