"""Bootstrap 95% intervals for the judge's agreement with human labels, per way of combining orders.

    python bench/arena_kappa_ci.py RUN_DIR PAIRS_FILE [--rounds 2000] [--seed 0]

RUN_DIR is the results folder of ``ragmeter arena agreement`` (or ``arena judge --pairs``) on the
labelled PAIRS_FILE. Rows that hold the same question and answers (several humans judged one
pair) are drawn together, so the intervals are not narrowed by counting one judgement several
times. Prints Cohen's kappa with its interval for each combine rule, for the
baseline that prefers the longer answer, and for each rule minus that baseline.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from ragmeter.arena.agreement import cohen_kappa
from ragmeter.arena.battles import Battle, read_battles
from ragmeter.arena.data import load_pairs
from ragmeter.arena.judge import COMBINE_RULES, combine


def labels(battles: list[Battle]) -> dict[str, np.ndarray]:
    def of(rule: Callable[[Battle], int | None]) -> np.ndarray:
        return np.array([rule(b) for b in battles], dtype=float)

    rows: dict[str, np.ndarray] = {
        rule: of(lambda b, rule=rule: combine(b.orders, rule)[0]) for rule in COMBINE_RULES
    }
    rows["longer answer"] = of(
        lambda b: (b.words_b > b.words_a) - (b.words_a > b.words_b)  # type: ignore[operator]
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run")
    parser.add_argument("pairs")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    battles = [
        b
        for b in read_battles(args.run)
        if b.label is not None and b.scored and len(b.orders) == 2 and b.words_a is not None
    ]
    human = np.array([b.label for b in battles], dtype=float)
    judged = labels(battles)
    content = {p.id: (p.question, p.answer_a, p.answer_b) for p in load_pairs(args.pairs)}
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for row, battle in enumerate(battles):
        groups[content[battle.pair_id]].append(row)
    members = list(groups.values())
    rng = np.random.default_rng(args.seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        rows = np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])
        kappas = {name: cohen_kappa(j[rows], human[rows]) for name, j in judged.items()}
        for name, kappa in kappas.items():
            draws[name].append(kappa if kappa is not None else np.nan)
            if name != "longer answer":
                baseline = kappas["longer answer"]
                draws[f"{name} - longer answer"].append(
                    np.nan if kappa is None or baseline is None else kappa - baseline
                )

    print(f"{len(battles)} labelled rows, {len(members)} distinct pairs, {args.rounds} rounds")
    for name, j in judged.items():
        low, high = np.nanpercentile(draws[name], [2.5, 97.5])
        print(f"{name:32s} kappa {cohen_kappa(j, human):.3f}  95% CI [{low:.3f}, {high:.3f}]")
    for name in judged:
        if name != "longer answer":
            low, high = np.nanpercentile(draws[f"{name} - longer answer"], [2.5, 97.5])
            print(f"{name + ' - longer answer':32s} 95% CI [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    main()
