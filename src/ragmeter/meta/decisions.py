"""Do ragmeter's decisions between systems agree with people's? Measured on any rated set where
several systems answered the same inputs.

Two views of one table (system -> input -> value, ragmeter's and the people's):

- **system level**: Kendall's tau-b and Spearman's rho between the systems' mean scores and
  their mean ratings, over the inputs every system was scored and rated on, each with a
  percentile-bootstrap 95 % interval over inputs;
- **decisions**: every pair of systems tested on each side by the same paired test
  (``ranking.rank_systems``). The reference is the people's ratings on all the inputs: a pair
  people tell apart is one whose paired 95 % interval excludes zero. ragmeter decides as
  ``compare`` does, all the systems at once (Holm over the pairs) and two of them alone
  (unadjusted). Over the pairs people tell apart, the share ragmeter decides the same way, and
  the share it cannot tell; over all pairs, the share of *confident wrong calls* (significant,
  and opposite to the people's mean difference).

Both as curves over N: N inputs drawn without replacement, ``draws`` times, ragmeter deciding
on the N against the people's verdict on all. And, for ``ragmeter compare`` to say what a
difference of a given size at a given N is worth, each drawn decision of a pair people tell
apart is kept by the size of ragmeter's difference on the N (``decision_curve.effect_bin``: the mean
difference over the spread of the differences), with whether its sign was the people's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragmeter.decision_curve import effect_bin
from ragmeter.ranking import (
    Preferences,
    Ranking,
    bradley_terry_ratings,
    rank_preferences,
    rank_systems,
    resampled_inputs,
    soft_wins,
)
from ragmeter.stats import (
    Interval,
    PairedTest,
    Verdict,
    coefficients,
    percentile_interval,
    verdict,
)

Table = Mapping[str, Mapping[str, float | None]]
"""system -> input -> value (None: not scored)."""


SHARES = (
    "same",
    "cannot_tell",
    "wrong",
    "same_pairwise",
    "cannot_tell_pairwise",
    "wrong_pairwise",
)
"""The shares of :class:`Decisions` a curve follows over N."""


class PairOutcome(BaseModel):
    a: str
    b: str
    people: Verdict
    """The people's verdict on every input (b against a): better or worse where the pair's 95 %
    interval excludes zero, else cannot tell."""
    people_difference: float
    people_effect: float | None
    """The difference over the spread of the differences (None where they do not spread)."""
    judge: Verdict
    """ragmeter's verdict, Holm-adjusted over the pairs as ``compare`` of all systems decides."""
    judge_pairwise: Verdict
    """ragmeter's verdict unadjusted, as ``compare`` of these two systems alone decides."""
    judge_difference: float
    judge_effect: float | None


class Decisions(BaseModel):
    """Shares of pairs: ``same`` and ``cannot_tell`` of the pairs the people tell apart,
    ``wrong`` (significant, opposite to the people's mean difference) of all pairs; each with
    ragmeter's verdicts adjusted over the pairs, and ``_pairwise`` as two systems alone."""

    inputs: int
    pairs: int
    separated: int
    """Pairs the people tell apart."""
    same: float | None
    cannot_tell: float | None
    wrong: float
    same_pairwise: float | None
    cannot_tell_pairwise: float | None
    wrong_pairwise: float
    outcomes: list[PairOutcome]


def complete_inputs(judge: Table, people: Table) -> list[str]:
    """Inputs every system was both scored and rated on, in sorted order."""
    systems = list(judge)
    if sorted(systems) != sorted(people):
        raise ValueError(f"systems differ: {sorted(systems)} scored, {sorted(people)} rated")
    found = set.intersection(
        *(
            {k for k, v in side[s].items() if v is not None}
            for side in (judge, people)
            for s in systems
        )
    )
    return sorted(found)


def on_inputs(table: Table, inputs: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """``table`` on ``inputs`` only (those of :func:`complete_inputs`, say)."""
    return {s: {k: table[s][k] for k in inputs} for s in table}


def system_correlation(
    judge: Table, people: Table, *, rounds: int = 1000, seed: int = 0
) -> dict[str, Interval | None]:
    """Kendall's tau-b and Spearman's rho between system means, with bootstrap intervals over
    the inputs (resampled with replacement, each resample's means correlated anew)."""
    from scipy.stats import kendalltau  # the 'tune' extra: measuring, not scoring

    inputs = complete_inputs(judge, people)
    systems = list(judge)
    x = np.array([[judge[s][k] for k in inputs] for s in systems], dtype=float)
    y = np.array([[people[s][k] for k in inputs] for s in systems], dtype=float)
    drawn = np.random.default_rng(seed).integers(0, len(inputs), (rounds, len(inputs)))
    means_x, means_y = x[:, drawn].mean(axis=2).T, y[:, drawn].mean(axis=2).T
    found: dict[str, Interval | None] = {}
    kendall = np.array([kendalltau(a, b).statistic for a, b in zip(means_x, means_y, strict=True)])
    spearman = coefficients(means_x, means_y, "spearman")
    values = {
        "kendall": float(kendalltau(x.mean(axis=1), y.mean(axis=1)).statistic),
        "spearman": float(coefficients(x.mean(axis=1)[None], y.mean(axis=1)[None], "spearman")[0]),
    }
    for name, draws in (("kendall", kendall), ("spearman", spearman)):
        if np.isnan(values[name]):
            found[name] = None
            continue
        low, high = percentile_interval(draws[:, None])
        found[name] = Interval(value=values[name], low=float(low[0]), high=float(high[0]))
    return found


def _rank(table: Table, inputs: Sequence[str], metric: str, rounds: int, seed: int) -> Ranking:
    return rank_systems(on_inputs(table, inputs), metric=metric, rounds=rounds, seed=seed)


def decide(judge: Table, people: Table, *, rounds: int = 1000, seed: int = 0) -> Decisions:
    """Every pair of systems decided by ragmeter and by the people on all complete inputs."""
    inputs = complete_inputs(judge, people)
    return decisions_of(
        _rank(people, inputs, "people", rounds, seed),
        _rank(judge, inputs, "ragmeter", rounds, seed),
    )


def decide_preferences(
    preferences: Preferences,
    people: Table,
    systems: Sequence[str],
    *,
    rounds: int = 1000,
    seed: int = 0,
) -> tuple[dict[str, Interval | None], Decisions]:
    """Systems read side by side against the people's ratings, on the inputs rated for every
    system and read for every pair: Kendall's tau between the Bradley-Terry ratings and the
    people's means (with a bootstrap interval over inputs), and every pair decided as
    ``decide`` decides scores read alone."""
    people = {s: people[s] for s in systems}
    rated = set(complete_inputs(people, people))
    inputs = sorted(k for k in rated if all(v.get(k) is not None for v in preferences.values()))
    read = {pair: {k: values[k] for k in inputs} for pair, values in preferences.items()}
    reference = _rank(people, inputs, "people", rounds, seed)
    ours = rank_preferences(read, systems, metric="ragmeter", rounds=rounds, seed=seed)
    return _rating_correlation(read, people, systems, inputs, rounds, seed), decisions_of(
        reference, ours
    )


def _rating_correlation(
    read: Preferences,
    people: Table,
    systems: Sequence[str],
    inputs: Sequence[str],
    rounds: int,
    seed: int,
) -> dict[str, Interval | None]:
    from scipy.stats import kendalltau

    wins = soft_wins(read, systems, inputs)
    rated = np.array([[people[s][k] for k in inputs] for s in systems], dtype=float)
    weights = np.vstack([np.ones(len(inputs)), resampled_inputs(len(inputs), rounds, seed)])
    ratings = bradley_terry_ratings(wins, systems, weights)
    means = weights @ rated.T / len(inputs)
    taus = np.array([kendalltau(r, m).statistic for r, m in zip(ratings, means, strict=True)])
    if np.isnan(taus[0]):
        return {"kendall": None, "spearman": None}
    low, high = percentile_interval(taus[1:, None])
    spearman = coefficients(ratings, means, "spearman")
    s_low, s_high = percentile_interval(spearman[1:, None])
    return {
        "kendall": Interval(value=float(taus[0]), low=float(low[0]), high=float(high[0])),
        "spearman": Interval(value=float(spearman[0]), low=float(s_low[0]), high=float(s_high[0])),
    }


def _effect(test: PairedTest) -> float | None:
    return test.difference / test.spread if test.spread > 0 else None


def _told_apart(test: PairedTest, higher_is_better: bool) -> Verdict:
    """The people's verdict: better or worse where the pair's 95 % interval excludes zero."""
    if test.ci_low <= 0 <= test.ci_high:
        return "cannot tell"
    return "better" if (test.difference > 0) == higher_is_better else "worse"


def decisions_of(reference: Ranking, ours: Ranking) -> Decisions:
    """ragmeter's verdicts (``ours``) against the people's (``reference``), pair by pair."""
    outcomes = [
        PairOutcome(
            a=theirs.a,
            b=theirs.b,
            people=_told_apart(theirs.test, reference.higher_is_better),
            people_difference=theirs.test.difference,
            people_effect=_effect(theirs.test),
            judge=mine.verdict,
            judge_pairwise=verdict(
                mine.test.difference, mine.test.p_value, higher_is_better=ours.higher_is_better
            ),
            judge_difference=mine.test.difference,
            judge_effect=_effect(mine.test),
        )
        for theirs, mine in zip(reference.pairs, ours.pairs, strict=True)
    ]
    told = [o for o in outcomes if o.people != "cannot tell"]

    def shares(field: str) -> dict[str, float | None]:
        said = [getattr(o, field) for o in outcomes]
        wrong = sum(
            v != "cannot tell" and o.judge_difference * o.people_difference < 0
            for o, v in zip(outcomes, said, strict=True)
        )
        mine = [getattr(o, field) for o in told]
        return {
            "same": sum(v == o.people for v, o in zip(mine, told, strict=True)) / len(told)
            if told
            else None,
            "cannot_tell": mine.count("cannot tell") / len(told) if told else None,
            "wrong": wrong / len(outcomes) if outcomes else 0.0,
        }

    pairwise = {f"{k}_pairwise": v for k, v in shares("judge_pairwise").items()}
    return Decisions(
        inputs=ours.samples,
        pairs=len(outcomes),
        separated=len(told),
        **shares("judge"),
        **pairwise,
        outcomes=outcomes,
    )


def curve(
    judge: Table,
    people: Table,
    sizes: Sequence[int],
    *,
    draws: int = 100,
    rounds: int = 500,
    seed: int = 0,
) -> dict[str, Any]:
    """For each N in ``sizes`` (those below the number of complete inputs): over ``draws``
    draws of N inputs without replacement, the mean shares of :class:`Decisions` and the mean
    system-level Kendall tau; and by the size of ragmeter's difference, how many drawn decisions
    of pairs the people tell apart had the people's sign (``right``) of how many (``draws``)."""
    everything = complete_inputs(judge, people)
    return curve_of(
        lambda inputs: _rank(judge, inputs, "ragmeter", rounds, seed),
        people,
        everything,
        sizes,
        draws=draws,
        rounds=rounds,
        seed=seed,
    )


def preference_curve(
    preferences: Preferences,
    people: Table,
    systems: Sequence[str],
    sizes: Sequence[int],
    *,
    draws: int = 100,
    rounds: int = 500,
    seed: int = 0,
) -> dict[str, Any]:
    """``curve`` of systems read side by side: each draw's pairs decided and systems ranked on
    the preferences of its N inputs (``rank_preferences``)."""
    people = {s: people[s] for s in systems}
    rated = set(complete_inputs(people, people))
    everything = sorted(k for k in rated if all(v.get(k) is not None for v in preferences.values()))

    def ours(inputs: Sequence[str]) -> Ranking:
        read = {pair: {k: values[k] for k in inputs} for pair, values in preferences.items()}
        return rank_preferences(read, systems, metric="ragmeter", rounds=rounds, seed=seed)

    return curve_of(ours, people, everything, sizes, draws=draws, rounds=rounds, seed=seed)


def curve_of(
    ours: Callable[[Sequence[str]], Ranking],
    people: Table,
    everything: Sequence[str],
    sizes: Sequence[int],
    *,
    draws: int,
    rounds: int,
    seed: int,
) -> dict[str, Any]:
    """The curve of ``ours``, a ranking of the systems on any N of ``everything`` (their
    means read alone, or their preferences read side by side), against the people's ranking on
    all of ``everything``; the Kendall tau is of the order ``ours`` ranks the systems in."""
    from scipy.stats import kendalltau

    reference = _rank(people, everything, "people", rounds, seed)
    separated = {
        (p.a, p.b): p.test.difference
        for p in reference.pairs
        if _told_apart(p.test, reference.higher_is_better) != "cannot tell"
    }
    systems = list(people)
    people_means = [np.mean([people[s][k] for k in everything]) for s in systems]
    rng = np.random.default_rng(seed)
    found: dict[str, Any] = {}
    for size in sizes:
        if size >= len(everything):
            continue
        shares: dict[str, list[float]] = {name: [] for name in [*SHARES, "kendall"]}
        by_effect: dict[str, list[int]] = {}
        for _ in range(draws):
            chosen = sorted(rng.choice(everything, size=size, replace=False).tolist())
            ranking = ours(chosen)
            decided = decisions_of(reference, ranking)
            for name in SHARES:
                value = getattr(decided, name)
                if value is not None:
                    shares[name].append(value)
            mine = {s.system: s.mean for s in ranking.systems}
            means = [mine[s] for s in systems]
            shares["kendall"].append(float(kendalltau(means, people_means).statistic))
            for pair in ranking.pairs:
                if (pair.a, pair.b) not in separated:
                    continue
                counts = by_effect.setdefault(
                    effect_bin(pair.test.difference, pair.test.spread), [0, 0]
                )
                counts[0] += pair.test.difference * separated[(pair.a, pair.b)] > 0
                counts[1] += 1
        found[str(size)] = {
            **{k: round(float(np.nanmean(v)), 4) if v else None for k, v in shares.items()},
            "draws": draws,
            "by_effect": {
                edge: {"right": counts[0], "draws": counts[1]}
                for edge, counts in sorted(by_effect.items(), key=lambda item: float(item[0]))
            },
        }
    return found
