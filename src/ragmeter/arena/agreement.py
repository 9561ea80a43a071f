"""How well the judge agrees with people: Cohen's kappa, Pearson, and accuracy on decided pairs.

Labels are -1 (A preferred), 0 (tie / not sure) and 1 (B preferred), for the judge and the humans
alike. The paper reports Pearson and kappa on these three values (Table 4); accuracy is taken on
the pairs the humans did not tie, where a judge tie counts as a miss (the judge failed to pick the
side people picked), and again on the pairs where neither tied.

For a both-order run the report compares, from the same judgements, the two ways of combining the
orders (a disagreement is a tie; or the preferences summed, so that a "not sure" defers to the
other order) with a single presentation: the first order alone (A shown first) and one seeded
random order per pair, which is what ``--orders random`` would have judged. It reports the flip
rate: how often the two orders disagree. A high flip rate with a first-order preference far from
one half is position bias. Where the judge gave the probabilities of its ratings, it also reports
how often its confidence settled a reversal (opposite picks) the humans' way: near one half, the
``"confidence"`` rule decides those pairs by a coin, and what it gains over a tie comes only from
deciding at all.

Length is the other bias judges are known for. The report scores a baseline that always prefers
the longer answer, on the same pairs as the verdict: a judge that does no better than that has
learnt nothing the word counts do not already say. It also gives how often the judge's picks and
the humans' picks fell on the longer answer; a judge far above the humans favours length.

Pairs decided from claims (``--method claims``) have no presentation orders: their report has
the verdict's row and the longer-answer baseline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel
from rich.table import Table

from ragmeter.arena.battles import Battle
from ragmeter.arena.data import Label, load_pairs
from ragmeter.arena.judge import (
    COMBINE_RULES,
    MAX_TOKENS,
    Combine,
    Method,
    Orders,
    combine,
    judge_pairs,
    random_order,
)
from ragmeter.judges.base import Judge
from ragmeter.stats import cohen_kappa as kappa_of

AGREEMENT_FILE = "agreement.json"


class AgreementStats(BaseModel):
    pairs: int
    """Pairs with both a judge label and a human label."""
    kappa: float | None
    pearson: float | None
    accuracy: float | None
    """On pairs the humans did not tie; a judge tie there counts as wrong."""
    accuracy_pairs: int
    decided_accuracy: float | None
    """On pairs where neither the judge nor the humans tied."""
    decided_pairs: int
    judge_tie_rate: float | None
    human_tie_rate: float | None


class AgreementReport(BaseModel):
    pairs: int
    labelled: int
    unscored: int
    unscored_reasons: dict[str, int]
    verdict: AgreementStats
    """The pair's verdict: both orders combined (or the single order in random mode)."""
    first_order: AgreementStats
    """The first presentation alone (A shown first in both-order mode)."""
    by_combination: dict[str, AgreementStats] = {}
    """Both-order runs: each way of combining the orders, and one seeded random order
    (``random order``), all from the same judgements."""
    both_orders: int
    """Pairs whose two orders were both scored."""
    flips: int
    flip_rate: float | None
    reversals: int
    """Flips in which the orders picked opposite answers (not one answer against a tie)."""
    reversal_accuracy: float | None = None
    """On reversals the humans did not tie: how often the judge's confidence (the
    ``"confidence"`` rule) sided with them. 0.5 is a coin; None without rating probabilities."""
    reversals_settled: int = 0
    """The reversals that ``reversal_accuracy`` counts."""
    first_position_rate: float | None
    """Share of scored presentations in which the answer shown first won."""
    second_position_rate: float | None
    longer_answer: AgreementStats | None = None
    """The baseline that prefers the longer answer (a tie at equal length), on the pairs the
    verdict row counts; None when the battles do not record answer lengths."""
    judge_longer_rate: float | None = None
    """Of the verdicts that picked a side between answers of different lengths, the share that
    picked the longer one."""
    human_longer_rate: float | None = None
    """The same for the human labels, on the same pairs."""


def cohen_kappa(judge: Sequence[int], human: Sequence[int]) -> float | None:
    """Agreement beyond chance on the three labels; None when chance agreement is already 1
    (both raters always gave the same single label), where kappa is undefined."""
    return kappa_of([int(x) for x in judge], [int(y) for y in human])


def pearson(judge: Sequence[int], human: Sequence[int]) -> float | None:
    """Pearson correlation of the labels as numbers; None when either side is constant."""
    x, y = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def agreement(judge: Sequence[int], human: Sequence[int]) -> AgreementStats:
    """All agreement statistics for paired label lists."""
    if len(judge) != len(human):
        raise ValueError("judge and human labels differ in length")
    x, y = np.asarray(judge), np.asarray(human)
    human_decided = y != 0
    both_decided = human_decided & (x != 0)
    return AgreementStats(
        pairs=int(x.size),
        kappa=cohen_kappa(judge, human),
        pearson=pearson(judge, human),
        accuracy=_mean(x[human_decided] == y[human_decided]),
        accuracy_pairs=int(human_decided.sum()),
        decided_accuracy=_mean(x[both_decided] == y[both_decided]),
        decided_pairs=int(both_decided.sum()),
        judge_tie_rate=_mean(x == 0),
        human_tie_rate=_mean(y == 0),
    )


def agreement_report(battles: Sequence[Battle], seed: int = 0) -> AgreementReport:
    """Agreement of the verdicts and of single orders with the human labels, and flips.

    ``seed`` picks the random order of each pair, as ``--orders random`` with that seed would.
    """
    labelled = [b for b in battles if b.label is not None]

    def stats(judged: Callable[[Battle], Label | None]) -> AgreementStats:
        pairs = [(judged(b), b.label) for b in labelled]
        kept = [(j, h) for j, h in pairs if j is not None]
        return agreement([j for j, _ in kept], [h for _, h in kept])  # type: ignore[misc]

    def in_order(order: str) -> Callable[[Battle], Label | None]:
        return lambda b: next((o.preference for o in b.orders if o.order == order), None)

    by_combination: dict[str, AgreementStats] = {}
    paired = [b for b in labelled if len(b.orders) == 2]
    if paired:
        weighed = any(o.probabilities is not None for b in paired for o in b.orders)
        # Without the ratings' probabilities the confidence rule is the sum: no row of its own.
        for rule in (r for r in COMBINE_RULES if weighed or r != "confidence"):
            by_combination[rule] = stats(
                lambda b, rule=rule: combine(b.orders, rule)[0] if len(b.orders) == 2 else None
            )
        # On the same pairs as the combined rows: those whose two orders were both scored.
        by_combination["random order"] = stats(
            lambda b: (
                in_order(random_order(b.pair_id, seed))(b)
                if len(b.orders) == 2 and all(o.preference is not None for o in b.orders)
                else None
            )
        )
    sized = [b for b in labelled if b.scored and _longer(b) is not None]
    longer_answer = None
    if sized:
        longer_answer = agreement([_longer(b) for b in sized], [b.label for b in sized])  # type: ignore[misc]
    both = [b for b in battles if b.flipped is not None]
    flips = [b for b in both if b.flipped]
    reversals = [b for b in flips if {o.preference for o in b.orders} == {-1, 1}]
    settled = [
        (combine(b.orders, "confidence")[0], b.label)
        for b in reversals
        if b.label and all(o.probabilities is not None for o in b.orders)
    ]
    ratings = [o.rating for b in battles for o in b.orders if o.rating is not None]
    return AgreementReport(
        pairs=len(battles),
        labelled=len(labelled),
        unscored=sum(not b.scored for b in battles),
        unscored_reasons=dict(Counter(b.unscored_reason or "" for b in battles if not b.scored)),
        verdict=stats(lambda b: b.verdict),
        first_order=stats(lambda b: b.orders[0].preference if b.orders else None),
        by_combination=by_combination,
        both_orders=len(both),
        flips=len(flips),
        flip_rate=len(flips) / len(both) if both else None,
        reversals=len(reversals),
        reversal_accuracy=_mean(np.asarray([j == h for j, h in settled])) if settled else None,
        reversals_settled=len(settled),
        first_position_rate=_mean(np.asarray(ratings) == 1) if ratings else None,
        second_position_rate=_mean(np.asarray(ratings) == 2) if ratings else None,
        longer_answer=longer_answer,
        judge_longer_rate=_longer_rate(sized, lambda b: b.verdict),
        human_longer_rate=_longer_rate(sized, lambda b: b.label),
    )


def _longer(battle: Battle) -> Label | None:
    """-1 when answer A has more words, 1 when B has, 0 when equal; None if not recorded."""
    if battle.words_a is None or battle.words_b is None:
        return None
    return (battle.words_b > battle.words_a) - (battle.words_a > battle.words_b)  # type: ignore[return-value]


def _longer_rate(
    battles: Sequence[Battle], picked: Callable[[Battle], Label | None]
) -> float | None:
    """Share of side-picking labels, on pairs of different lengths, that fell on the longer."""
    sides = [(picked(b), _longer(b)) for b in battles]
    hits = [pick == longer for pick, longer in sides if pick and longer]
    return _mean(np.asarray(hits)) if hits else None


def measure_agreement(
    pairs_path: str | Path,
    *,
    judge: str | Judge = "local",
    out_dir: str | Path,
    orders: Orders = "both",
    combine_rule: Combine = "agree",
    limit: int | None = None,
    seed: int = 0,
    retries: int = 2,
    max_tokens: int = MAX_TOKENS,
    cache: bool | str | Path = True,
    on_battle: Callable[[Battle], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    method: Method = "generative",
) -> AgreementReport:
    """Judge the first ``limit`` pairs of a labelled pairs file (resumably, in ``out_dir``) with
    ``method`` and report the agreement with the labels; the report is also written to
    ``agreement.json``."""
    pairs = load_pairs(pairs_path)
    if limit is not None:
        pairs = pairs[:limit]
    if not any(p.label is not None for p in pairs):
        raise ValueError(f"{pairs_path} has no human labels (label / overall_preference)")
    battles = judge_pairs(
        pairs,
        judge=judge,
        out_dir=out_dir,
        orders=orders,
        combine_rule=combine_rule,
        seed=seed,
        retries=retries,
        max_tokens=max_tokens,
        cache=cache,
        on_battle=on_battle,
        judge_options=judge_options,
        method=method,
    )
    report = agreement_report(battles, seed=seed)
    (Path(out_dir) / AGREEMENT_FILE).write_text(report.model_dump_json(indent=2))
    return report


def agreement_table(report: AgreementReport, title: str = "judge vs human labels") -> Table:
    names = {
        "agree": "both orders, a disagreement is a tie",
        "sum": "both orders, summed (not sure defers)",
        "confidence": "both orders, summed; opposite picks by confidence",
        "random order": "one random order",
    }
    rows = [("verdict", report.verdict)]
    rows += [(names[key], stats) for key, stats in report.by_combination.items()]
    if report.first_order.pairs:  # none when the pairs were decided from claims
        first = "first order alone (A first)" if report.by_combination else "the order judged"
        rows.append((first, report.first_order))
    if report.longer_answer is not None:
        rows.append(("baseline: the longer answer", report.longer_answer))
    return stats_table(rows, title)


def stats_table(rows: Sequence[tuple[str, AgreementStats]], title: str) -> Table:
    """A row of agreement statistics per way of deciding the pairs."""
    table = Table(title=title)
    table.add_column("judge label")
    for column in (
        "pairs",
        "Cohen's κ",
        "Pearson",
        "accuracy (human non-tie)",
        "accuracy (both non-tie)",
        "judge ties",
    ):
        table.add_column(column, justify="right")
    for name, stats in rows:
        table.add_row(
            name,
            str(stats.pairs),
            _num(stats.kappa),
            _num(stats.pearson),
            f"{_num(stats.accuracy)} (n={stats.accuracy_pairs})",
            f"{_num(stats.decided_accuracy)} (n={stats.decided_pairs})",
            _num(stats.judge_tie_rate),
        )
    return table


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if values.size else None


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
