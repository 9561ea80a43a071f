"""Several systems scored on the same samples: which is better, and can the samples tell?

The one place a comparison of systems is decided, whatever the systems are (runs of
``ragmeter compare``, retrievers of ``ragmeter retrieval``, or people's ratings in the decision
curves): each system's mean over the samples every system scored, with its 95 % bootstrap
interval; every pair's paired test (``stats.paired_test``), its p-value adjusted by Holm for the
number of pairs, and a verdict; and, from the pair's spread, the smallest difference its samples
tell apart and the samples a given difference needs.

Systems read side by side (``rank_preferences``) are decided by the same test on each input's
preference, and ranked by Bradley-Terry ratings (``bradley_terry``, as the arena ranks its
systems) with intervals from resampled inputs.

Only samples scored by every system are compared, so that every pair is judged on the same
samples: a sample one system left unscored would otherwise drop out of its pairs alone, and a
system that fails on its hard samples would gain by failing. The samples left out are named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ragmeter.bradley_terry import fit_bradley_terry, to_elo
from ragmeter.stats import (
    POWER,
    Interval,
    PairedTest,
    Verdict,
    bootstrap_mean_ci,
    detectable_difference,
    holm,
    paired_test,
    samples_needed,
    verdict,
)


class RankedSystem(BaseModel):
    system: str
    mean: float
    ci_low: float
    ci_high: float


class PairVerdict(BaseModel):
    """System ``b`` against system ``a`` (``b`` after ``a`` in the order given): the test is of
    ``b - a``."""

    a: str
    b: str
    test: PairedTest
    adjusted_p: float
    """Holm's adjustment over every pair of the metric."""
    verdict: Verdict
    detectable: float | None
    """The smallest difference these samples tell apart at 80 % power (Holm's strictest step)."""
    needed: int | None = None
    """Samples needed to tell the asked-for difference apart at 80 % power, when one was asked."""
    read: Literal["alone", "side by side", "through an anchor"] = "alone"
    """How the pair's values came about: each system's scores read alone, the two read side by
    side (the test is of the mean preference for ``b``), or each read side by side against an
    anchor system (the test is of how much more often ``b`` beat the anchor than ``a`` did)."""
    win_rate: Interval | None = None
    """Side by side: the share of inputs on which ``b`` was preferred (a tie counting half),
    with its 95 % bootstrap interval over the inputs."""


class Ranking(BaseModel):
    metric: str
    higher_is_better: bool
    samples: int
    """Samples scored by every system: the means and every pair are over these."""
    left_out: dict[str, list[str]]
    """Per system, the samples it left unscored (so left out of every comparison)."""
    systems: list[RankedSystem]
    """Best first. Read side by side, ``mean`` is the system's Bradley-Terry rating (Elo scale,
    mean 1000)."""
    pairs: list[PairVerdict]
    power: float = POWER


class RankingError(ValueError):
    """Scores that cannot be ranked; the message names the system and the metric."""


def rank_systems(
    scores: Mapping[str, Mapping[str, float | None]],
    *,
    metric: str,
    higher_is_better: bool = True,
    difference: float | None = None,
    rounds: int = 2000,
    seed: int = 0,
) -> Ranking:
    """Rank ``scores`` (system -> sample id -> value, None where unscored) and decide every pair.

    ``difference`` asks, per pair, how many samples would tell a difference of that size apart.
    """
    if len(scores) < 2:
        raise RankingError(f"{metric}: two systems or more are compared, got {len(scores)}")
    systems = list(scores)
    first = scores[systems[0]]
    for system in systems[1:]:
        if set(scores[system]) != set(first):
            missing = sorted(set(first) ^ set(scores[system]))
            raise RankingError(
                f"{metric}: {system} scored other samples than {systems[0]} "
                f"({len(missing)} differ, e.g. {missing[0]!r}): compare runs of the same samples"
            )
    left_out = {
        system: [key for key, value in scores[system].items() if value is None]
        for system in systems
    }
    shared = [key for key in first if all(scores[s][key] is not None for s in systems)]
    if not shared:
        raise RankingError(f"{metric}: no sample was scored by every system")
    values = {s: [float(scores[s][key]) for key in shared] for s in systems}  # type: ignore[arg-type]
    ranked = []
    for system in systems:
        mean, low, high = bootstrap_mean_ci(values[system], rounds=rounds, seed=seed)  # type: ignore[misc]
        ranked.append(RankedSystem(system=system, mean=mean, ci_low=low, ci_high=high))
    ranked.sort(key=lambda r: -r.mean if higher_is_better else r.mean)
    pairs = list(combinations(systems, 2))
    tests = [paired_test(values[a], values[b], rounds=rounds, seed=seed) for a, b in pairs]
    return Ranking(
        metric=metric,
        higher_is_better=higher_is_better,
        samples=len(shared),
        left_out={s: keys for s, keys in left_out.items() if keys},
        systems=ranked,
        pairs=_decided(pairs, tests, higher_is_better, difference),
    )


def _decided(
    pairs: Sequence[tuple[str, str]],
    tests: Sequence[PairedTest],
    higher_is_better: bool,
    difference: float | None,
    **read: Sequence[object],
) -> list[PairVerdict]:
    """Every pair's verdict after Holm's adjustment over the pairs, with what its samples tell
    apart (and need, for ``difference``); ``read`` gives per pair any further field."""
    adjusted = holm([t.p_value for t in tests])
    return [
        PairVerdict(
            a=a,
            b=b,
            test=test,
            adjusted_p=p,
            verdict=verdict(test.difference, p, higher_is_better=higher_is_better),
            detectable=detectable_difference(test.spread, test.pairs, comparisons=len(pairs)),
            needed=None
            if difference is None
            else samples_needed(test.spread, difference, comparisons=len(pairs)),
            **{field: values[n] for field, values in read.items()},
        )
        for n, ((a, b), test, p) in enumerate(zip(pairs, tests, adjusted, strict=True))
    ]


Preferences = Mapping[tuple[str, str], Mapping[str, float | None]]
"""(a, b) -> input -> the preference for b over a read side by side: P(b better) - 0.5, from
-0.5 to 0.5 (None: unscored)."""

BRADLEY_TERRY_PRIOR = 0.5
"""Virtual games per pair that met, so that a system that won every input still gets a finite
rating (``bradley_terry.fit_bradley_terry``)."""


def rank_preferences(
    preferences: Preferences,
    systems: Sequence[str],
    *,
    metric: str,
    difference: float | None = None,
    rounds: int = 2000,
    seed: int = 0,
) -> Ranking:
    """Rank ``systems`` from the preferences read side by side, and decide every pair.

    Each pair is tested on its inputs' preferences where it was read (``paired_test`` of the
    preferences against no preference); a pair never read together but each against a third
    system (the anchor design) is tested on the difference of their preferences against it.
    Only inputs on which every read pair was scored are compared, as ``rank_systems`` compares
    only samples every system scored. Systems are ranked by Bradley-Terry ratings from the
    preferences as fractional wins, with intervals from the inputs resampled.
    """
    if len(systems) < 2:
        raise RankingError(f"{metric}: two systems or more are compared, got {len(systems)}")
    read = {pair: dict(values) for pair, values in preferences.items()}
    inputs = list(next(iter(read.values()))) if read else []
    for pair, values in read.items():
        if set(values) != set(inputs):
            raise RankingError(f"{metric}: {pair[1]} vs {pair[0]} was read on other inputs")
    left_out = sorted(k for k in inputs if any(v[k] is None for v in read.values()))
    shared = [k for k in inputs if k not in left_out]
    if not shared:
        raise RankingError(f"{metric}: no input was read for every pair")
    pairs = list(combinations(systems, 2))
    values = [_preference_of(read, a, b, shared, metric) for a, b in pairs]
    tests = [
        paired_test([0.0] * len(shared), found, rounds=rounds, seed=seed) for found, _ in values
    ]
    return Ranking(
        metric=metric,
        higher_is_better=True,
        samples=len(shared),
        left_out={"every system": left_out} if left_out else {},
        systems=_rated(read, systems, shared, rounds, seed),
        pairs=_decided(
            pairs,
            tests,
            True,
            difference,
            read=[how for _, how in values],
            win_rate=[
                _win_rate(found, rounds, seed) if how == "side by side" else None
                for found, how in values
            ],
        ),
    )


def _directed(read: Preferences, a: str, b: str) -> Mapping[str, float | None] | None:
    """The preferences for ``b`` over ``a`` on each input, whichever way round they were read;
    None where the two were not read together."""
    if (a, b) in read:
        return read[a, b]
    if (b, a) in read:
        return {k: None if v is None else -v for k, v in read[b, a].items()}
    return None


def _preference_of(
    read: Preferences,
    a: str,
    b: str,
    inputs: Sequence[str],
    metric: str,
) -> tuple[list[float], Literal["side by side", "through an anchor"]]:
    direct = _directed(read, a, b)
    if direct is not None:
        return [float(direct[k]) for k in inputs], "side by side"  # type: ignore[arg-type]
    systems = {name for pair in read for name in pair}
    for anchor in sorted(systems - {a, b}):
        over_a, over_b = _directed(read, anchor, a), _directed(read, anchor, b)
        if over_a is not None and over_b is not None:
            found = [float(over_b[k]) - float(over_a[k]) for k in inputs]  # type: ignore[arg-type]
            return found, "through an anchor"
    raise RankingError(f"{metric}: {b} and {a} were never read beside each other or an anchor")


def _win_rate(found: Sequence[float], rounds: int, seed: int) -> Interval:
    wins = [1.0 if v > 0 else 0.5 if v == 0 else 0.0 for v in found]
    mean, low, high = bootstrap_mean_ci(wins, rounds=rounds, seed=seed)  # type: ignore[misc]
    return Interval(value=mean, low=low, high=high)


def soft_wins(
    read: Preferences,
    systems: Sequence[str],
    inputs: Sequence[str],
) -> np.ndarray:
    """``wins[input, i, j]``: how much of a win over j system i took on each input, a
    preference p for b over a counting 0.5 + p to b and 0.5 - p to a."""
    index = {name: n for n, name in enumerate(systems)}
    wins = np.zeros((len(inputs), len(systems), len(systems)))
    for (a, b), values in read.items():
        won_by_b = np.array([float(values[k]) + 0.5 for k in inputs])  # type: ignore[arg-type]
        wins[:, index[b], index[a]] += won_by_b
        wins[:, index[a], index[b]] += 1.0 - won_by_b
    return wins


def resampled_inputs(inputs: int, rounds: int, seed: int) -> np.ndarray:
    """``rounds`` resamples of the inputs with replacement, as how often each was drawn:
    (rounds, inputs) weights, so that every round's sums are one product."""
    return np.random.default_rng(seed).multinomial(inputs, [1 / inputs] * inputs, size=rounds)


def bradley_terry_ratings(
    wins: np.ndarray, systems: Sequence[str], weights: np.ndarray
) -> np.ndarray:
    """Elo-scale ratings (mean 1000) from ``soft_wins``, the inputs weighted by each row of
    ``weights`` (one row of ones: every input once): (rows, systems)."""
    met = wins.sum(axis=0) > 0
    met = met | met.T
    totals = np.einsum("ri,ijk->rjk", weights, wins)
    return to_elo(fit_bradley_terry(totals, prior=BRADLEY_TERRY_PRIOR, met=met), systems)


def _rated(
    read: Preferences,
    systems: Sequence[str],
    inputs: Sequence[str],
    rounds: int,
    seed: int,
) -> list[RankedSystem]:
    """Bradley-Terry ratings, best first, with percentile intervals over ``rounds`` resamples
    of the inputs."""
    wins = soft_wins(read, systems, inputs)
    rating = bradley_terry_ratings(wins, systems, np.ones((1, len(inputs))))[0]
    boot = bradley_terry_ratings(wins, systems, resampled_inputs(len(inputs), rounds, seed))
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    ranked = [
        RankedSystem(system=s, mean=float(rating[i]), ci_low=float(low[i]), ci_high=float(high[i]))
        for i, s in enumerate(systems)
    ]
    return sorted(ranked, key=lambda r: -r.mean)
