"""Bradley-Terry Elo, win rates against the reference, 'no answer' ratios: values worked by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragmeter.arena.battles import Battle, OrderVerdict
from ragmeter.arena.leaderboard import (
    answer_profiles,
    build_leaderboard,
    win_rates,
    write_leaderboard,
)
from ragmeter.arena.ratings import BattleArrays, battle_arrays, elo_ratings, pair_counts
from ragmeter.bradley_terry import ELO_SCALE, fit_bradley_terry

ELO_3_TO_1 = 400 * math.log10(3)  # 190.85: the MLE gap when one side won 3 of 4


def battle(
    a: str,
    b: str,
    verdict: int | None,
    *,
    domain: str | None = None,
    q: str = "q",
    no_answer_a: bool = False,
    no_answer_b: bool = False,
    flipped: bool | None = None,
    words: tuple[int, int] | None = None,
) -> Battle:
    return Battle(
        pair_id=f"{q}|{a}|{b}",
        question_id=q,
        domain=domain,
        system_a=a,
        system_b=b,
        verdict=verdict,  # type: ignore[arg-type]
        unscored_reason=None if verdict is not None else "unreadable reply",
        flipped=flipped,
        orders=[OrderVerdict(order="ab", preference=verdict)],  # type: ignore[arg-type]
        no_answer_a=no_answer_a,
        no_answer_b=no_answer_b,
        words_a=words[0] if words else None,
        words_b=words[1] if words else None,
    )


def ratings_of(battles: list[Battle], **options) -> dict[str, float]:
    options.setdefault("rounds", 0)
    elo = elo_ratings(battle_arrays(battles), **options)
    return dict(zip(elo.systems, elo.rating.tolist(), strict=True))


def test_three_wins_one_loss_is_400_log10_3_apart():
    battles = [battle("x", "y", -1, q=f"q{i}") for i in range(3)] + [battle("x", "y", 1, q="q3")]
    rating = ratings_of(battles)
    assert rating["x"] - rating["y"] == pytest.approx(ELO_3_TO_1, abs=1e-6)
    assert rating["x"] + rating["y"] == pytest.approx(2000.0)  # mean anchored at 1000


def test_ties_count_as_half_a_win_each():
    # 2 wins and 2 ties = 3 wins and 1 loss in half-win counting.
    battles = [
        battle("x", "y", -1, q="1"),
        battle("x", "y", -1, q="2"),
        battle("x", "y", 0, q="3"),
        battle("y", "x", 0, q="4"),
    ]
    rating = ratings_of(battles)
    assert rating["x"] - rating["y"] == pytest.approx(ELO_3_TO_1, abs=1e-6)


def test_consistent_three_system_data_gives_the_exact_strengths():
    # Observed shares equal p_i / (p_i + p_j) for p = (4, 2, 1) in every pair, so that is the MLE:
    # A-B 2:1, B-C 2:1, A-C 4:1. With C anchored at 1000: A = 1000 + 400 log10 4, B = + 400 log10 2.
    battles = (
        [battle("A", "B", -1, q=f"ab{i}") for i in range(2)]
        + [battle("A", "B", 1, q="ab2")]
        + [battle("B", "C", -1, q=f"bc{i}") for i in range(2)]
        + [battle("B", "C", 1, q="bc2")]
        + [battle("C", "A", 1, q=f"ca{i}") for i in range(4)]
        + [battle("C", "A", -1, q="ca4")]
    )
    rating = ratings_of(battles, anchor="C")
    assert rating["C"] == pytest.approx(1000.0)
    assert rating["B"] == pytest.approx(1000 + 400 * math.log10(2), abs=1e-6)
    assert rating["A"] == pytest.approx(1000 + 400 * math.log10(4), abs=1e-6)


def test_the_prior_adds_half_a_tie_each_way():
    wins = np.array([[0.0, 3.0], [1.0, 0.0]])
    # prior 1: one virtual game per pair, split: 3.5 vs 1.5.
    gap = ELO_SCALE * np.ptp(fit_bradley_terry(wins, prior=1.0))
    assert gap == pytest.approx(400 * math.log10(3.5 / 1.5), abs=1e-6)


def test_an_unbeaten_system_has_no_mle_but_a_finite_rating_with_a_prior():
    wins = np.array([[0.0, 4.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="do not exist"):
        fit_bradley_terry(wins)
    gap = ELO_SCALE * np.ptp(fit_bradley_terry(wins, prior=0.5))
    assert gap == pytest.approx(400 * math.log10(4.25 / 0.25), abs=1e-6)


def test_systems_that_never_met_cannot_share_a_scale():
    battles = [battle("a", "b", -1), battle("c", "d", 1)]
    with pytest.raises(ValueError, match="never compared"):
        ratings_of(battles, prior=0.5)


def test_pair_counts_aggregate_both_orientations():
    arrays = BattleArrays(
        ["s0", "s1", "s2"],
        a=np.array([0, 1, 1, 2, 0]),
        b=np.array([1, 0, 0, 0, 2]),
        outcome=np.array([-1, -1, 0, 1, 1]),
    )
    counts = pair_counts(arrays)
    # pair (0,1): s0 won once as a; s1 won once as a; one tie -> (1, 1, 1)
    # pair (0,2): s2 as a lost to s0 (outcome 1 = b wins) -> s0 wins; s0 as a lost -> s2 wins
    assert counts.i.tolist() == [0, 0] and counts.j.tolist() == [1, 2]
    assert counts.counts.tolist() == [[1, 1, 1], [1, 1, 0]]


def simulate(strengths: np.ndarray, battles: int, seed: int, tie_rate: float = 0.1):
    rng = np.random.default_rng(seed)
    k = len(strengths)
    a = rng.integers(0, k, battles)
    b = (a + rng.integers(1, k, battles)) % k
    p_a = 1 / (1 + np.exp(-(strengths[a] - strengths[b]) / ELO_SCALE))
    outcome = np.where(rng.random(battles) < p_a, -1, 1)
    outcome[rng.random(battles) < tie_rate] = 0
    return BattleArrays([f"s{i}" for i in range(k)], a, b, outcome)


def test_recovers_the_order_and_values_of_the_generating_model():
    true = np.array([1180.0, 1120.0, 1060.0, 1000.0, 940.0, 880.0, 820.0])
    elo = elo_ratings(simulate(true, 30_000, seed=7), rounds=300, seed=1)
    assert np.argsort(-elo.rating).tolist() == list(range(len(true)))
    # Random ties shrink the gaps a little (a tie is half a win to each side), so compare the
    # centred ratings loosely, and the spread tightly enough to catch a wrong scale (e.g. ln vs
    # log10 would be 2.3 times off).
    centred_true = true - true.mean() + 1000
    assert np.max(np.abs(elo.rating - centred_true)) < 40
    assert np.ptp(elo.rating) / np.ptp(true) == pytest.approx(0.9, abs=0.08)
    assert np.all(elo.ci_low <= elo.rating) and np.all(elo.rating <= elo.ci_high)


def test_intervals_halve_with_four_times_the_battles_and_repeat_with_the_seed():
    true = np.array([1100.0, 1000.0, 900.0])
    small = elo_ratings(simulate(true, 2_000, seed=3), rounds=400, seed=5)
    large = elo_ratings(simulate(true, 8_000, seed=3), rounds=400, seed=5)
    ratio = np.mean(large.ci_high - large.ci_low) / np.mean(small.ci_high - small.ci_low)
    assert ratio == pytest.approx(0.5, abs=0.12)
    again = elo_ratings(simulate(true, 2_000, seed=3), rounds=400, seed=5)
    assert np.array_equal(small.ci_low, again.ci_low)


def test_win_rates_against_the_reference_by_hand():
    battles = [
        battle("sys", "reference", -1, domain="d1", q="1"),  # win
        battle("reference", "sys", 0, domain="d1", q="2"),  # tie
        battle("reference", "sys", -1, domain="d2", q="3"),  # loss (reference is a, wins)
        battle("reference", "sys", 1, domain="d2", q="4"),  # win (sys is b, wins)
        battle("sys", "reference", None, domain="d2", q="5"),  # unscored
        battle("sys", "other", -1, domain="d1", q="6"),  # not against the reference
    ]
    rates = {(r.system, r.domain): r for r in win_rates(battles, rounds=500)}
    overall, d1, d2 = rates[("sys", "overall")], rates[("sys", "d1")], rates[("sys", "d2")]
    assert (overall.battles, overall.unscored, overall.win, overall.win_tie) == (4, 1, 0.5, 0.75)
    assert (d1.battles, d1.unscored, d1.win, d1.win_tie) == (2, 0, 0.5, 1.0)
    assert (d2.battles, d2.unscored, d2.win, d2.win_tie) == (2, 1, 0.5, 0.5)
    assert 0.0 <= overall.win_low <= 0.5 <= overall.win_high <= 1.0
    assert ("other", "overall") not in rates


def test_answer_profiles_count_each_answer_once():
    battles = [
        battle("s", "reference", -1, q="1", no_answer_a=True, words=(5, 40)),
        battle("s", "t", 1, q="1", no_answer_a=True, words=(5, 12)),  # s's answer seen again
        battle("s", "reference", 1, q="2", words=(30, 50)),
        battle("t", "reference", 1, q="2", no_answer_a=True, words=(5, 50)),
    ]
    profiles = answer_profiles(battles)
    # s: answers of 5 and 30 words; t: 12 and 5; the reference: 40 and 50
    assert profiles["s"] == (0.5, 2, 17.5)
    assert profiles["t"] == (0.5, 2, 8.5)
    assert profiles["reference"] == (0.0, 2, 45.0)
    # battles written before lengths were recorded: no mean rather than a partial one
    assert answer_profiles([battle("s", "t", 1)])["s"] == (0.0, 1, None)


def test_leaderboard_ranks_counts_and_writes_csv_and_json(tmp_path):
    battles = (
        [
            battle("good", "reference", v, q=f"g{i}", flipped=False)
            for i, v in enumerate([-1, -1, 0, 1])
        ]
        + [battle("bad", "reference", 1, q=f"b{i}", flipped=i == 0) for i in range(4)]
        + [battle("bad", "reference", None, q="b9")]
    )
    board = build_leaderboard(battles, rounds=200)
    # good scored 2.5 of 4 against the reference, bad 0 of 4.
    assert [r.system for r in board.systems] == ["good", "reference", "bad"]
    good, reference = board.systems[0], board.systems[1]
    # In a star each gap depends on its own pair only; the default prior adds 0.25 each way.
    assert good.rating - reference.rating == pytest.approx(400 * math.log10(2.75 / 1.75), abs=1e-6)
    assert (good.wins, good.ties, good.losses, good.win, good.win_tie) == (2, 1, 1, 0.5, 0.75)
    assert (board.scored, board.unscored, board.flips, board.both_orders) == (8, 1, 1, 8)
    assert board.unscored_reasons == {"unreadable reply": 1}
    paths = write_leaderboard(board, tmp_path)
    assert [p.name for p in paths] == ["leaderboard.json", "leaderboard.csv", "win_rates.csv"]
    saved = json.loads((tmp_path / "leaderboard.json").read_text())
    assert saved["systems"][0]["system"] == "good" and saved["flip_rate"] == 0.125
    lines = (tmp_path / "leaderboard.csv").read_text().splitlines()
    assert lines[0].startswith("system,rating,rating_low,rating_high,battles")
    assert lines[1].startswith("good,") and len(lines) == 4
