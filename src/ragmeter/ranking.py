"""Several systems scored on the same samples: which is better, and can the samples tell?

The one place a comparison of systems is decided, whatever the systems are (runs of
``ragmeter compare``, retrievers of ``ragmeter retrieval``, or people's ratings in the decision
curves): each system's mean over the samples every system scored, with its 95 % bootstrap
interval; every pair's paired test (``stats.paired_test``), its p-value adjusted by Holm for the
number of pairs, and a verdict; and, from the pair's spread, the smallest difference its samples
tell apart and the samples a given difference needs.

Only samples scored by every system are compared, so that every pair is judged on the same
samples: a sample one system left unscored would otherwise drop out of its pairs alone, and a
system that fails on its hard samples would gain by failing. The samples left out are named.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

from pydantic import BaseModel

from ragmeter.stats import (
    POWER,
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


class Ranking(BaseModel):
    metric: str
    higher_is_better: bool
    samples: int
    """Samples scored by every system: the means and every pair are over these."""
    left_out: dict[str, list[str]]
    """Per system, the samples it left unscored (so left out of every comparison)."""
    systems: list[RankedSystem]
    """Best first."""
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
    adjusted = holm([t.p_value for t in tests])
    return Ranking(
        metric=metric,
        higher_is_better=higher_is_better,
        samples=len(shared),
        left_out={s: keys for s, keys in left_out.items() if keys},
        systems=ranked,
        pairs=[
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
            )
            for (a, b), test, p in zip(pairs, tests, adjusted, strict=True)
        ],
    )
