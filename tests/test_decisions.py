"""Decisions between systems: Holm's adjustment, the verdict rule, what a number of pairs can
tell apart, the ranking of several systems, the meta-evaluation against people's verdicts and
the decision curve's reader, each checked against values worked out by hand."""

from __future__ import annotations

import json

import pytest

from ragmeter.decision_curve import decision_rate, effect_bin, load_decision_curve
from ragmeter.judges.curves import CurveError
from ragmeter.meta.decisions import complete_inputs, curve, decide, system_correlation
from ragmeter.ranking import RankingError, rank_systems
from ragmeter.stats import detectable_difference, holm, paired_test, samples_needed, verdict


def test_holm_multiplies_the_kth_smallest_by_the_pairs_left_and_keeps_the_order():
    # Sorted: .01 x 3 = .03; .03 x 2 = .06; .04 x 1 = .04, raised to the .06 before it.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == [0.02]  # one comparison: unadjusted


def test_a_verdict_needs_an_adjusted_p_below_alpha_and_reads_the_direction():
    assert verdict(0.1, 0.01) == "better"
    assert verdict(-0.1, 0.01) == "worse"
    assert verdict(0.1, 0.01, higher_is_better=False) == "worse"  # a fault went up
    assert verdict(0.1, 0.05) == "cannot tell"  # at alpha is not below it
    assert verdict(0.0, 0.0) == "cannot tell"


def test_what_a_spread_tells_apart_and_the_pairs_a_difference_needs():
    # z(0.975) + z(0.8) = 1.959964 + 0.841621 = 2.801585.
    assert detectable_difference(0.2, 100) == pytest.approx(2.801585 * 0.2 / 10, abs=1e-6)
    # (2.801585 * 0.2 / 0.05)^2 = 125.58, so 126 pairs.
    assert samples_needed(0.2, 0.05) == 126
    assert samples_needed(0.2, -0.05) == 126  # the direction does not matter
    # Three pairs compared: Holm's strictest step is at .05 / 3, z(1 - .05 / 6) = 2.393980.
    assert detectable_difference(0.2, 100, comparisons=3) == pytest.approx(
        (2.393980 + 0.841621) * 0.02, abs=1e-6
    )
    assert detectable_difference(0.2, 1) is None
    assert samples_needed(0.2, 0.0) is None


def test_a_paired_test_carries_the_spread_of_the_differences():
    test = paired_test([0.0, 0.0, 0.0], [0.1, 0.2, 0.3])
    # Differences .1 .2 .3: mean .2, standard deviation (n - 1) = 0.1; 2 of 8 patterns as far.
    assert (test.pairs, test.difference, test.spread) == (3, pytest.approx(0.2), pytest.approx(0.1))
    assert test.p_value == pytest.approx(2 / 8)


def _three(samples: int, c_missing: bool = False) -> dict[str, dict[str, float | None]]:
    """A at 0, B at 1, C at 0.5 on every sample; C unscored on the last when asked."""
    keys = [f"s{i}" for i in range(samples)]
    c: dict[str, float | None] = dict.fromkeys(keys, 0.5)
    if c_missing:
        c[keys[-1]] = None
    return {"A": dict.fromkeys(keys, 0.0), "B": dict.fromkeys(keys, 1.0), "C": c}


def test_three_systems_on_seven_samples_are_all_told_apart():
    ranking = rank_systems(_three(7), metric="m")
    assert [s.system for s in ranking.systems] == ["B", "C", "A"]
    assert ranking.samples == 7 and ranking.left_out == {}
    # Seven differences of one sign: 2 of 128 sign patterns as far, p = 1/64; Holm x 3.
    for pair in ranking.pairs:
        assert pair.test.p_value == pytest.approx(1 / 64)
        assert pair.adjusted_p == pytest.approx(3 / 64)
    verdicts = {(p.a, p.b): p.verdict for p in ranking.pairs}
    assert verdicts == {("A", "B"): "better", ("A", "C"): "better", ("B", "C"): "worse"}


def test_a_sample_one_system_left_unscored_leaves_every_pair_and_is_named():
    ranking = rank_systems(_three(7, c_missing=True), metric="m")
    assert ranking.samples == 6 and ranking.left_out == {"C": ["s6"]}
    # Six samples: p = 2/64, x 3 = 0.09375: no pair can be told apart any more.
    assert {p.verdict for p in ranking.pairs} == {"cannot tell"}
    assert ranking.pairs[0].adjusted_p == pytest.approx(0.09375)


def test_lower_is_better_ranks_and_decides_the_other_way():
    ranking = rank_systems(_three(7), metric="hallucination", higher_is_better=False)
    assert [s.system for s in ranking.systems] == ["A", "C", "B"]
    assert ranking.pairs[0].verdict == "worse"  # B - A = +1 of a fault


def test_bad_input_names_the_metric_and_the_system():
    with pytest.raises(RankingError, match="m: two systems or more"):
        rank_systems({"A": {"s": 1.0}}, metric="m")
    with pytest.raises(RankingError, match="m: B scored other samples than A"):
        rank_systems({"A": {"s": 1.0}, "B": {"t": 1.0}}, metric="m")
    with pytest.raises(RankingError, match="m: no sample was scored by every system"):
        rank_systems({"A": {"s": None}, "B": {"s": 1.0}}, metric="m")


def _tables(inputs: int) -> tuple[dict, dict]:
    """People: B > C > A clearly. ragmeter: B > A clearly; C ties A (0 on every input)."""
    keys = [f"i{i:02d}" for i in range(inputs)]
    people = {
        "A": dict.fromkeys(keys, 1.0),
        "B": dict.fromkeys(keys, 3.0),
        "C": dict.fromkeys(keys, 2.0),
    }
    judge = {
        "A": dict.fromkeys(keys, 0.2),
        "B": dict.fromkeys(keys, 0.9),
        "C": dict.fromkeys(keys, 0.2),
    }
    return judge, people


def test_decisions_against_the_peoples_verdicts():
    judge, people = _tables(8)
    decided = decide(judge, people)
    # People tell all three pairs apart (p = 2/256 x 3). ragmeter decides A-B and B-C the same
    # way and cannot tell A from C (no difference at all): 2 of 3 alike, 1 of 3 cannot tell.
    assert decided.separated == 3
    assert decided.same == pytest.approx(2 / 3)
    assert decided.cannot_tell == pytest.approx(1 / 3)
    assert decided.wrong == 0.0
    # C above B for ragmeter: B-C is a confident wrong call, 1 of the 3 pairs; A-C is now
    # told apart the people's way, so 2 of 3 alike, none it cannot tell.
    judge["C"] = dict.fromkeys(judge["C"], 0.95)
    decided = decide(judge, people)
    assert decided.wrong == pytest.approx(1 / 3)
    assert (decided.same, decided.cannot_tell) == (pytest.approx(2 / 3), 0.0)


def test_system_level_correlation_of_perfectly_ordered_means():
    judge, people = _tables(8)
    judge["C"] = dict.fromkeys(judge["C"], 0.5)  # now B > C > A on both sides
    found = system_correlation(judge, people, rounds=50)
    assert found["kendall"].value == pytest.approx(1.0)
    assert found["spearman"].value == pytest.approx(1.0)
    assert (found["kendall"].low, found["kendall"].high) == (1.0, 1.0)  # no input disagrees


def test_only_inputs_every_system_was_scored_and_rated_on_count():
    judge, people = _tables(4)
    judge["A"]["i00"] = None
    people["C"]["i03"] = None
    assert complete_inputs(judge, people) == ["i01", "i02"]


def test_the_curve_counts_decisions_by_their_size():
    judge, people = _tables(10)
    found = curve(judge, people, [8, 10], draws=5, rounds=100)
    assert list(found) == ["8"]  # N = all inputs is the full-set figure, not a draw
    # Every draw: A-B (+0.7, no spread) and B-C (-0.7) have the people's sign; A-C (0) has not.
    # Zero spread and a difference is as large as an effect gets: the top bin.
    assert found["8"]["by_effect"] == {
        "0": {"right": 0, "draws": 5},
        "0.8": {"right": 10, "draws": 10},
    }
    assert found["8"]["same"] == 0.6667  # rounded to four places, as the curve keeps it


def test_effect_bins_by_the_spread_of_the_differences():
    assert effect_bin(0.05, 0.5) == "0.1"
    assert effect_bin(-0.3, 0.5) == "0.5"
    assert effect_bin(0.01, 0.5) == "0"
    assert effect_bin(0.1, 0.0) == "0.8"


CURVE = {
    "format": "ragmeter-decision-curve/1",
    "sets": {
        "summeval": {
            "coherence": {"sizes": {"10": {"by_effect": {"0.3": {"right": 8, "draws": 10}}}}}
        },
        "topicalchat": {
            "coherence": {
                "sizes": {
                    "10": {"by_effect": {"0.3": {"right": 5, "draws": 10}}},
                    "20": {"by_effect": {"0.3": {"right": 19, "draws": 20}}},
                }
            }
        },
    },
}


def test_the_decision_rate_pools_the_sets_at_the_largest_n_not_above():
    # 15 samples: each set read at N = 10; 8 + 5 of 10 + 10.
    rate = decision_rate(CURVE, "coherence", 15, 0.2, 0.5)  # effect 0.4: the 0.3 bin
    assert (rate.right, rate.draws, rate.inputs) == (13, 20, 10)
    assert rate.sets == ["summeval", "topicalchat"]
    assert "65% of the time (13 of 20)" in rate.sentence()
    # 25 samples: Topical-Chat's N = 20 now; SummEval still at its 10.
    rate = decision_rate(CURVE, "coherence", 25, 0.2, 0.5)
    assert (rate.right, rate.draws) == (27, 30)
    # Fewer samples than any N measured: the smallest.
    assert decision_rate(CURVE, "coherence", 4, 0.2, 0.5).draws == 20
    assert decision_rate(CURVE, "fluency", 15, 0.2, 0.5) is None  # never measured
    assert decision_rate(CURVE, "coherence", 15, 0.01, 0.5) is None  # no draw that small


def test_a_curve_file_of_another_kind_is_refused(tmp_path):
    path = tmp_path / "curve.json"
    path.write_text(json.dumps({"format": "ragmeter-learning-curve/1"}))
    with pytest.raises(CurveError, match="not a decision curve"):
        load_decision_curve(path)
    path.write_text(json.dumps(CURVE))
    assert load_decision_curve(path) == (CURVE, str(path))


def test_pairwise_verdicts_are_those_of_two_systems_compared_alone():
    keys = [f"i{i}" for i in range(8)]
    people = {s: dict.fromkeys(keys, level) for s, level in (("A", 1.0), ("B", 2.0), ("C", 3.0))}
    # Every ragmeter pair differs by six large steps up and two small ones down: 8 of the 256
    # sign patterns are as far (the small ones either way), p = 1/32 = 0.031 < 0.05 alone;
    # Holm over three such pairs: 0.094, so none is told apart then.
    ups = [1.0] * 6 + [-0.1] * 2
    judge = {"A": dict.fromkeys(keys, 0.0), "B": dict(zip(keys, ups, strict=True))}
    judge["C"] = {k: 2 * v for k, v in judge["B"].items()}
    decided = decide(judge, people)
    assert decided.separated == 3  # people: constant steps, 1/128 x 3
    assert (decided.same, decided.cannot_tell) == (0.0, 1.0)
    assert (decided.same_pairwise, decided.cannot_tell_pairwise) == (1.0, 0.0)
    first = decided.outcomes[0]
    assert (first.judge, first.judge_pairwise) == ("cannot tell", "better")
    assert first.people_effect is None  # people's steps do not spread
    # B - A: mean 0.725 over a standard deviation of 0.5092 (n - 1).
    assert first.judge_effect == pytest.approx(0.725 / 0.509201, abs=1e-4)


def _rated_run(tmp_path):
    """Three systems (A, B, C) answering the same eight inputs; faithfulness is the judge's
    P(supported): A 0.2, B 0.9, C 0.2 on every input. People rated A 1, B 3, C 2."""
    from ragmeter.sample import Sample

    from .report_runs import faithfulness_run

    levels = {"A": (0.2, 1), "B": (0.9, 3), "C": (0.2, 2)}
    samples, supported, rows = [], {}, []
    for system, (probability, rating) in levels.items():
        for i in range(8):
            key = f"{system}-{i}"
            samples.append(
                Sample(
                    id=key,
                    question=f"Question {i}: when was the tower finished?",
                    contexts=["The tower was finished in 1889."],
                    answer="It was finished in 1889.",
                )
            )
            supported[key] = probability
            row = {"id": key, "system": system, "input": f"i{i}", "faithfulness": rating}
            rows.append(json.dumps(row))
    out = tmp_path / "run"
    faithfulness_run(out, supported, of=samples)
    labels = tmp_path / "ratings.jsonl"
    labels.write_text("\n".join(rows) + "\n")
    return out, labels


def test_meta_decisions_measures_a_rated_set_of_systems(tmp_path):
    from typer.testing import CliRunner

    from ragmeter.cli.main import app

    out, labels = _rated_run(tmp_path)
    args = ["meta", "decisions", str(out), str(labels), "--sizes", "4", "--draws", "5"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["faithfulness"]
    assert (found["systems"], found["inputs"]) == (3, 8)
    # As in test_decisions_against_the_peoples_verdicts: A-B and B-C alike, A-C a tie.
    assert found["full"]["separated"] == 3
    assert found["full"]["same"] == pytest.approx(2 / 3)
    assert found["full"]["wrong"] == 0.0
    assert list(found["sizes"]) == ["4"]
    printed = CliRunner().invoke(app, args)
    assert "people tell 3 of 3 pairs apart" in " ".join(printed.output.split())


def test_meta_decisions_names_a_sample_without_its_system(tmp_path):
    from typer.testing import CliRunner

    from ragmeter.cli.main import app

    out, labels = _rated_run(tmp_path)
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    rows[2].pop("system")
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = CliRunner().invoke(app, ["meta", "decisions", str(out), str(labels)])
    assert result.exit_code == 2
    assert "row 3, field 'system': missing" in result.output
