"""Judge-human agreement: kappa, Pearson and accuracy on a label table worked by hand."""

from __future__ import annotations

import json

import pytest

from ragmeter.arena.agreement import (
    agreement,
    agreement_report,
    cohen_kappa,
    measure_agreement,
    pearson,
)
from ragmeter.arena.battles import Battle, OrderVerdict
from ragmeter.arena.judge import random_order
from ragmeter.judges.fake import FakeJudge

JUDGE = [-1, -1, 1, 1, 0, -1, 1, 0]
HUMAN = [-1, 1, 1, 1, 0, -1, -1, -1]


def test_kappa_on_a_hand_worked_table():
    # Agreement on 5 of 8. Marginals: judge (-1, 0, 1) = (3, 2, 3)/8, human = (4, 1, 3)/8, so
    # chance = (12 + 2 + 9)/64 = 23/64 and kappa = (40/64 - 23/64) / (41/64) = 17/41.
    assert cohen_kappa(JUDGE, HUMAN) == pytest.approx(17 / 41)


def test_pearson_on_a_hand_worked_table():
    # mean(judge) = 0, so cov ~ sum(x*y) = 2; sum(x^2) = 6; sum((y - ybar)^2) = 7 - 8/64 = 6.875.
    assert pearson(JUDGE, HUMAN) == pytest.approx(2 / (6 * 6.875) ** 0.5)


def test_accuracy_on_pairs_the_humans_decided():
    stats = agreement(JUDGE, HUMAN)
    # Humans decided 7 pairs; the judge matched 4 of them (its tie on the last one is a miss).
    assert (stats.accuracy, stats.accuracy_pairs) == (pytest.approx(4 / 7), 7)
    # Both decided on 6 pairs; 4 matched.
    assert (stats.decided_accuracy, stats.decided_pairs) == (pytest.approx(4 / 6), 6)
    assert stats.judge_tie_rate == 0.25 and stats.human_tie_rate == 0.125


def test_undefined_statistics_are_none_not_zero():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # chance agreement is already 1
    assert pearson([0, 0, 0], [1, -1, 1]) is None
    assert agreement([], []).accuracy is None


def test_perfect_and_inverted_judges():
    assert cohen_kappa(HUMAN, HUMAN) == 1.0 and pearson(HUMAN, HUMAN) == pytest.approx(1.0)
    inverted = [-h for h in HUMAN]
    assert pearson(inverted, HUMAN) == pytest.approx(-1.0)
    assert agreement(inverted, HUMAN).accuracy == 0.0


def _battle(orders: list[int | None], label: int, flipped: bool | None) -> Battle:
    verdict = None if None in orders else (orders[0] if len(set(orders)) == 1 else 0)
    return Battle(
        pair_id=f"p{len(orders)}{orders}{label}",
        system_a="A",
        system_b="B",
        verdict=verdict,  # type: ignore[arg-type]
        unscored_reason="order ba: unreadable" if verdict is None else None,
        flipped=flipped,
        orders=[
            OrderVerdict(
                order=o,
                preference=p,
                rating=None if p is None else {-1: 1, 1: 2, 0: 0}[p if o == "ab" else -p],
            )  # type: ignore[arg-type]
            for o, p in zip(("ab", "ba"), orders, strict=False)
        ],
        label=label,  # type: ignore[arg-type]
    )


def test_report_compares_the_verdict_with_the_first_order_and_counts_flips():
    battles = [
        _battle([-1, -1], -1, False),  # agree, right
        _battle([-1, 1], 1, True),  # reversal: verdict tie; first order wrong
        _battle([1, 0], 1, True),  # flip to a tie: verdict tie; first order right
        _battle([-1, None], -1, None),  # second order unscored: no verdict
    ]
    report = agreement_report(battles)
    assert (report.pairs, report.labelled, report.unscored) == (4, 4, 1)
    assert (report.both_orders, report.flips, report.reversals) == (3, 2, 1)
    assert report.flip_rate == pytest.approx(2 / 3)
    assert (report.verdict.pairs, report.verdict.accuracy) == (3, pytest.approx(1 / 3))
    assert (report.first_order.pairs, report.first_order.accuracy) == (4, 0.75)
    # In presentation terms (1 = the answer shown first won): pair 1 picks A both times, which is
    # position 1 then position 2; pair 2 picks whatever came first: [1, 2], [1, 1], [2, 0], [1].
    assert report.first_position_rate == pytest.approx(4 / 7)
    assert report.second_position_rate == pytest.approx(2 / 7)
    # The same judgements combined the other way: [1, 0] now says B (right); the reversal ties.
    summed = report.by_combination["sum"]
    assert (summed.pairs, summed.accuracy, summed.judge_tie_rate) == (
        3,
        pytest.approx(2 / 3),
        pytest.approx(1 / 3),
    )
    assert report.by_combination["agree"] == report.verdict


def test_the_longer_answer_baseline_and_length_preferences():
    def sized(orders: list[int | None], label: int, words: tuple[int, int]) -> Battle:
        flipped = None if None in orders else len(set(orders)) > 1
        battle = _battle(orders, label, flipped)
        return battle.model_copy(update={"words_a": words[0], "words_b": words[1]})

    battles = [
        sized([1, 1], 1, (10, 20)),  # B longer; judge and human both pick it
        sized([-1, -1], 1, (30, 5)),  # A longer; judge picks it, the human does not
        sized([-1, 1], -1, (8, 8)),  # same length: the baseline ties; the judge ties too
        sized([1, 1], -1, (12, 40)),  # B longer; judge picks it, the human does not
        sized([-1, None], -1, (5, 50)),  # unscored: not counted anywhere
    ]
    report = agreement_report(battles)
    baseline = report.longer_answer
    assert baseline is not None
    # baseline [1, -1, 0, 1] against humans [1, 1, -1, -1]: one right of four, one tie;
    # chance agreement 1/4 * 2/4 (A) + 2/4 * 2/4 (B) = 3/8, so kappa (1/4 - 3/8) / (5/8).
    assert (baseline.pairs, baseline.accuracy, baseline.judge_tie_rate) == (4, 0.25, 0.25)
    assert baseline.kappa == pytest.approx(-0.2)
    # the judge's three picks all fell on the longer answer; the humans' on one of three
    assert report.judge_longer_rate == 1.0
    assert report.human_longer_rate == pytest.approx(1 / 3)


def test_battles_without_answer_lengths_have_no_length_baseline():
    report = agreement_report([_battle([-1, -1], -1, False)])
    assert report.longer_answer is None and report.judge_longer_rate is None


def test_the_random_order_row_reads_the_order_a_random_run_would_judge():
    battles = [_battle([-1, 1], -1, True) for _ in range(6)]
    battles = [b.model_copy(update={"pair_id": f"p{i}"}) for i, b in enumerate(battles)]
    report = agreement_report(battles, seed=3)
    # order ab says A (right), ba says B (wrong): accuracy = share of pairs whose coin shows ab
    shown_ab = sum(random_order(b.pair_id, 3) == "ab" for b in battles)
    assert 0 < shown_ab < 6  # the coin is not constant on these ids
    assert report.by_combination["random order"].accuracy == pytest.approx(shown_ab / 6)


def test_measure_agreement_exposes_a_judge_that_always_picks_the_first_answer(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"question": f"q{i}", "answer_a": f"a{i}", "answer_b": f"b{i}", "overall_preference": lab}
        for i, lab in enumerate([-1, -1, -1, 1])
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    biased = FakeJudge(responder=lambda _r: '{"reasoning": "first", "rating": 1}')
    report = measure_agreement(pairs, judge=biased, out_dir=tmp_path / "run", cache=False)
    # Both orders disagree on every pair (a reversal), so every verdict is a tie.
    assert (report.flips, report.reversals, report.flip_rate) == (4, 4, 1.0)
    assert report.verdict.judge_tie_rate == 1.0 and report.verdict.accuracy == 0.0
    # The first order alone always says A: right on the three pairs the humans gave to A.
    assert report.first_order.accuracy == 0.75
    assert report.first_position_rate == 1.0
    assert len(biased.history) == 8
    saved = json.loads((tmp_path / "run" / "agreement.json").read_text())
    assert saved["first_order"]["accuracy"] == 0.75
    # one-word answers: the baseline ties every pair, and no pick fell on a longer answer
    assert report.longer_answer is not None and report.longer_answer.judge_tie_rate == 1.0
    assert report.judge_longer_rate is None

    # --limit judges only the first pairs; the rest of the file is not touched.
    limited = measure_agreement(
        pairs, judge=FakeJudge(), out_dir=tmp_path / "run", limit=2, cache=False
    )
    assert limited.pairs == 2 and limited.unscored == 0  # resumed from the store: no calls


def test_measure_agreement_refuses_a_file_without_labels(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"question": "q", "answer_a": "a", "answer_b": "b"}) + "\n")
    with pytest.raises(ValueError, match="no human labels"):
        measure_agreement(pairs, judge=FakeJudge(), out_dir=tmp_path / "run", cache=False)


def test_a_pair_labelled_by_several_humans_is_judged_once_and_scored_per_label(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    same = {"question": "q", "answer_a": "good", "answer_b": "bad"}
    rows = [
        {**same, "overall_preference": -1},
        {**same, "overall_preference": -1},
        {**same, "overall_preference": 1},
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge = FakeJudge(['{"reasoning": "r", "rating": 1}', '{"reasoning": "r", "rating": 2}'])
    report = measure_agreement(pairs, judge=judge, out_dir=tmp_path / "run", cache=False)
    assert len(judge.history) == 2  # one pair, two orders; the repeats come from the store
    assert report.verdict.pairs == 3 and report.verdict.accuracy == pytest.approx(2 / 3)


def test_the_report_says_how_often_confidence_settled_a_reversal_the_humans_way():
    def reversal(label: int, ab: dict[str, float] | None, ba: dict[str, float] | None) -> Battle:
        battle = _battle([-1, 1], label, True)  # each order picked the answer shown first
        orders = [
            battle.orders[0].model_copy(update={"probabilities": ab}),
            battle.orders[1].model_copy(update={"probabilities": ba}),
        ]
        return battle.model_copy(update={"pair_id": f"r{label}{ab}{ba}", "orders": orders})

    sure_first = {"1": 0.9, "2": 0.1, "0": 0.0}
    unsure_first = {"1": 0.5, "2": 0.4, "0": 0.1}
    battles = [
        # (0.1 - 0.9) + (0.5 - 0.4) < 0: A, as the human said
        reversal(-1, sure_first, unsure_first),
        # (0.4 - 0.5) + (0.9 - 0.1) > 0: B, the human said A
        reversal(-1, unsure_first, sure_first),
        # (0.1 - 0.9) + (0.9 - 0.1) = 0: a tie, which misses the human's B
        reversal(1, sure_first, sure_first),
        reversal(1, None, None),  # no probabilities: not counted
        _battle([-1, -1], -1, False),  # not a reversal
    ]
    report = agreement_report(battles)
    assert report.reversals == 4 and report.reversals_settled == 3
    assert report.reversal_accuracy == pytest.approx(1 / 3)
    assert agreement_report([_battle([-1, 1], -1, True)]).reversal_accuracy is None
