"""Benchmark Bradley-Terry Elo with bootstrap intervals on synthetic battles.

    python bench/bench_bradley_terry.py [--battles 200000] [--systems 12] [--rounds 1000]

Battles are drawn from a known Bradley-Terry model (Elo gaps of 40 between neighbours, uniformly
random pairs, no ties unless ``--ties``). Prints the seconds for the fit plus the bootstrap
(target: at most 10 s on 2 cores), whether the fitted order is the generating order (exact, and
Spearman's rho), and how many of the 95% intervals hold the true rating. A second timing goes
through Battle records, as ``ragmeter arena leaderboard`` does.

Ties drawn at random, whatever the strengths, are not a Bradley-Terry outcome: counted as half a
win each, they pull every rating towards the mean, so with ``--ties`` the order still holds but
the intervals no longer hold the generating ratings.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragmeter.arena.battles import Battle, OrderVerdict
from ragmeter.arena.ratings import BattleArrays, battle_arrays, elo_ratings
from ragmeter.bradley_terry import ELO_SCALE


def simulate(true: np.ndarray, battles: int, tie_rate: float, seed: int) -> BattleArrays:
    rng = np.random.default_rng(seed)
    k = len(true)
    a = rng.integers(0, k, battles)
    b = (a + rng.integers(1, k, battles)) % k
    # Ties are drawn first; a decided battle follows the Bradley-Terry win probability.
    p_a = 1 / (1 + np.exp(-(true[a] - true[b]) / ELO_SCALE))
    outcome = np.where(rng.random(battles) < p_a, -1, 1)
    outcome[rng.random(battles) < tie_rate] = 0
    return BattleArrays([f"system-{i:02d}" for i in range(k)], a, b, outcome)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rank_x, rank_y = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rank_x, rank_y)[0, 1])


def as_records(arrays: BattleArrays) -> list[Battle]:
    names = arrays.systems
    return [
        Battle(
            pair_id=str(n),
            system_a=names[a],
            system_b=names[b],
            verdict=int(o),
            orders=[OrderVerdict(order="ab", preference=int(o))],
        )
        for n, (a, b, o) in enumerate(zip(arrays.a, arrays.b, arrays.outcome, strict=True))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--battles", type=int, default=200_000)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--ties", type=float, default=0.0, help="share of random ties")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    true = 1000 + 40.0 * (np.arange(args.systems)[::-1] - (args.systems - 1) / 2)
    arrays = simulate(true, args.battles, args.ties, args.seed)

    clock = time.perf_counter()
    elo = elo_ratings(arrays, rounds=args.rounds, seed=args.seed)
    seconds = time.perf_counter() - clock

    print(f"{args.battles:,} battles, {args.systems} systems, {args.rounds} bootstrap rounds")
    print(f"Bradley-Terry fit + bootstrap: {seconds:.2f} s (target <= 10 s)")
    fitted_order = np.argsort(-elo.rating)
    exact = bool(np.array_equal(fitted_order, np.argsort(-true)))
    print(f"true order recovered exactly: {exact}; Spearman rho = {spearman(elo.rating, true):.4f}")
    covered = int(np.sum((elo.ci_low <= true) & (true <= elo.ci_high)))
    print(
        f"95% CI holds the true rating for {covered} of {args.systems} systems; mean width "
        f"{np.mean(elo.ci_high - elo.ci_low):.1f} Elo; largest error "
        f"{np.max(np.abs(elo.rating - true)):.1f} Elo"
    )
    print(f"{'system':<12}{'true':>8}{'fitted':>9}{'95% CI':>18}")
    for n in fitted_order:
        print(
            f"{elo.systems[n]:<12}{true[n]:>8.0f}{elo.rating[n]:>9.1f}"
            f"{f'[{elo.ci_low[n]:.1f}, {elo.ci_high[n]:.1f}]':>18}"
        )

    records = as_records(arrays)
    clock = time.perf_counter()
    elo_ratings(battle_arrays(records), rounds=args.rounds, seed=args.seed)
    print(
        f"through {len(records):,} Battle records (as the leaderboard does): "
        f"{time.perf_counter() - clock:.2f} s"
    )


if __name__ == "__main__":
    main()
