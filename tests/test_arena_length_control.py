"""Length-controlled win rates and ratings on hand-made battles, with hand-worked values."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from ragmeter.arena.battles import Battle
from ragmeter.arena.leaderboard import build_leaderboard, length_table
from ragmeter.arena.length_control import (
    QUESTION_PRIOR,
    WEAK_PRIOR,
    LengthUnavailable,
    fit_length_model,
    length_controlled,
    length_design,
)
from ragmeter.stats import resample_counts

REF = "reference"


def battle(q: str, system: str, outcome: int, words: int, ref_words: int, ref_first=True):
    """``system`` against the reference on question ``q``; ``outcome`` from the system's side
    (1 it won, 0 tie, -1 it lost); the reference is answer A unless ``ref_first`` is False."""
    if ref_first:
        return Battle(
            pair_id=f"{q}:{system}", question_id=q, system_a=REF, system_b=system,
            verdict=outcome, orders=[], words_a=ref_words, words_b=words,
        )  # fmt: skip
    return Battle(
        pair_id=f"{q}:{system}", question_id=q, system_a=system, system_b=REF,
        verdict=-outcome, orders=[], words_a=words, words_b=ref_words,
    )  # fmt: skip


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def root(f, low: float = 0.0, high: float = 1.0) -> float:
    """The root of a decreasing ``f`` in [low, high], by bisection."""
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if f(middle) > 0 else (low, middle)
    return (low + high) / 2


def test_without_length_differences_the_controlled_rate_is_the_raw_rate():
    # 40 questions, outcomes repeating win, tie, loss, win, win: 3.5 of 5 with ties as halves;
    # the reference is shown as A on even questions, as B on odd ones. Every answer is 50 words.
    outcomes = [1, 0, -1, 1, 1]
    battles = [
        battle(f"q{i}", "s", outcomes[i % 5], 50, 50, ref_first=i % 2 == 0) for i in range(40)
    ]
    found = length_controlled(battles, REF, rounds=200)
    assert found.win_raw["s"].value == pytest.approx(0.7)
    # Without a length term the system term's score equation is "mean prediction = mean
    # outcome", off only by the weak prior's pull towards the reference.
    assert found.win["s"].value == pytest.approx(0.7, abs=1e-3)
    assert found.length_coefficient.value == 0.0 and found.scale == 0.0
    assert found.win["s"].low < 0.7 < found.win["s"].high


def test_a_system_that_wins_only_when_longer_loses_its_lead_under_length_control():
    # Won the 20 questions where it wrote 80 words against 40, lost the 20 where it wrote 40
    # against 50: half the battles raw, and at equal length it would lose most.
    battles = [battle(f"q{i}", "s", 1, 80, 40) for i in range(20)]
    battles += [battle(f"r{i}", "s", -1, 40, 50) for i in range(20)]
    found = length_controlled(battles, REF, rounds=0)
    assert found.win_raw["s"].value == 0.5
    assert found.win["s"].value < 0.25 and found.length_coefficient.value > 1
    # Mirrored (won 40 words against 50, lost 80 against 40), it gains as much.
    mirrored = [battle(f"q{i}", "s", 1, 40, 50) for i in range(20)]
    mirrored += [battle(f"r{i}", "s", -1, 80, 40) for i in range(20)]
    controlled = length_controlled(mirrored, REF, rounds=0).win["s"].value
    assert controlled == pytest.approx(1 - found.win["s"].value)


def test_two_questions_worked_by_hand():
    # q1: the system wrote 30 words more and won; q2: 30 words fewer, and lost.
    # delta = (+30, -30), so scale = std(ddof=1) = 30·√2 and the length feature is ±t with
    # t = tanh(1/√2). By symmetry theta = 0 and gamma_2 = -gamma_1 = -g. The score equations of
    # the penalised likelihood (the reference is A in both battles, so side = +1):
    #   gamma_1:  1 - sigmoid(beta·t + g) = QUESTION_PRIOR · g
    #   beta:     t·(1 - p1) - t·(0 - (1 - p1)) = 2t·(1 - p1) = WEAK_PRIOR · beta
    # so beta = 2t·g / WEAK_PRIOR (with QUESTION_PRIOR = 1), and g solves
    #   1 - sigmoid(g·(1 + 2t²/WEAK_PRIOR)) = g   ->  g ≈ 0.0417, beta ≈ 5.08.
    assert QUESTION_PRIOR == 1.0
    battles = [battle("q1", "s", 1, 80, 50), battle("q2", "s", -1, 20, 50)]
    design = length_design(battles, REF)
    t = math.tanh(1 / math.sqrt(2))
    assert design.scale == pytest.approx(30 * math.sqrt(2))
    assert design.length == pytest.approx([t, -t])
    g = root(lambda g: 1 - sigmoid(g * (1 + 2 * t * t / WEAK_PRIOR)) - g)
    assert g == pytest.approx(0.0417, abs=1e-4)
    fit = fit_length_model(design)
    assert fit.theta[design.systems.index("s")] == pytest.approx(0.0, abs=1e-9)
    assert fit.gamma == pytest.approx([g, -g], abs=1e-7)
    assert fit.beta == pytest.approx(2 * t * g / WEAK_PRIOR, abs=1e-5)
    # At equal length the two predictions are sigmoid(±g): the rate is exactly one half.
    assert length_controlled(battles, REF, rounds=0).win["s"].value == pytest.approx(0.5)


def test_a_system_that_won_everything_is_held_just_below_one_by_the_weak_prior():
    # Two questions, both won at equal length: no length term, theta and gamma_1 = gamma_2 = g.
    #   theta:  2·(1 - p) = WEAK_PRIOR · theta;   gamma:  1 - p = g;   p = sigmoid(theta + g)
    # so theta = 2g / WEAK_PRIOR = 200g, and 1 - sigmoid(201g) = g: g ≈ 0.0195, and the
    # length-controlled rate is p = 1 - g ≈ 0.9805.
    battles = [battle("q1", "s", 1, 50, 50), battle("q2", "s", 1, 60, 60)]
    g = root(lambda g: 1 - sigmoid(g * (1 + 2 / WEAK_PRIOR)) - g)
    found = length_controlled(battles, REF, rounds=0)
    assert found.win["s"].value == pytest.approx(1 - g) and 1 - g == pytest.approx(0.9805, abs=1e-4)
    assert found.win_raw["s"].value == 1.0


def test_the_question_terms_are_shared_by_the_systems_that_answered_it():
    # Two systems of the same record (each wins q1..q10 and loses r1..r10, equal lengths): the
    # questions both lose are "hard" and both win "easy", so the question terms absorb the
    # outcomes and the system terms are equal. Ratings of equal systems are equal.
    battles = [battle(f"q{i}", s, 1, 50, 50) for i in range(10) for s in ("s1", "s2")]
    battles += [battle(f"r{i}", s, -1, 50, 50) for i in range(10) for s in ("s1", "s2")]
    found = length_controlled(battles, REF, rounds=0)
    assert found.rating["s1"].value == pytest.approx(found.rating["s2"].value)
    assert found.win["s1"].value == pytest.approx(0.5) == found.win["s2"].value
    fit = fit_length_model(length_design(battles, REF))
    assert fit.gamma[:10] == pytest.approx([fit.gamma[0]] * 10)
    # The won questions ("q", sorted first) are those whose reference is easily beaten.
    assert fit.gamma[0] > 0 > fit.gamma[10]


def test_battles_without_lengths_give_a_reason_not_a_figure(tmp_path):
    battles = [battle("q1", "s", 1, 50, 50), battle("q2", "s", -1, 50, 50)]
    old = battles[1].model_copy(update={"words_a": None, "words_b": None})
    with pytest.raises(LengthUnavailable, match=r"1 of 2 scored battles .*'q2:s'.* lengths"):
        length_design([battles[0], old], REF)
    board = build_leaderboard([battles[0], old], rounds=10)
    assert "lengths" in board.length_control.unavailable
    assert all(row.lc_win is None for row in board.systems)
    assert length_table(board) is None


def test_the_leaderboard_shows_and_writes_the_controlled_figures_beside_the_raw_ones(tmp_path):
    from ragmeter.arena.leaderboard import write_leaderboard

    battles = [battle(f"q{i}", "s", 1, 80, 40) for i in range(10)]
    battles += [battle(f"r{i}", "s", -1, 40, 50) for i in range(10)]
    board = build_leaderboard(battles, rounds=50)
    row = next(r for r in board.systems if r.system == "s")
    assert row.win_half == 0.5 and row.lc_win is not None and row.lc_win < row.win_half
    assert row.lc_win_low <= row.lc_win <= row.lc_win_high
    assert row.lc_rating is not None and board.length_control.coefficient > 0
    assert board.length_control.questions == 20
    written = write_leaderboard(board, tmp_path)
    rows = list(csv.DictReader((tmp_path / "leaderboard.csv").open()))
    assert {"win_half", "lc_win", "lc_win_low", "lc_rating"} <= set(rows[0])
    assert float(next(r for r in rows if r["system"] == "s")["lc_win"]) == row.lc_win
    assert tmp_path / "leaderboard.json" in written
    table = length_table(board)
    assert table is not None and [c.header for c in table.columns][-1] == "LC win %"


def test_question_resamples_are_seeded_counts():
    counts = resample_counts(5, rounds=4, seed=3)
    assert counts.shape == (4, 5) and (counts.sum(axis=1) == 5).all()
    assert np.array_equal(counts, resample_counts(5, rounds=4, seed=3))
