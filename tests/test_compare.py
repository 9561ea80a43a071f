"""``ragmeter compare``: paired statistics checked against values worked out by hand, and the
refusal to compare scores made by different judges or metric versions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.stats import paired_difference, sign_flip_p_value
from ragmeter.viewer import compare_runs, open_run

from .report_runs import faithfulness_run

runner = CliRunner()


def test_exact_sign_flip_p_value_of_four_pairs():
    # d = (0.1, 0.2, 0.3, -0.4), sum 0.2. Flipping a subset S gives 1.0 - 2*sum(S) over the
    # subsets of {.1, .2, .3, .4} with sums 0 .1 .2 .3 .4 .3 .4 .5 .5 .6 .7 .6 .7 .8 .9 1:
    # the sums 1, .8, .6, .4, .2, .4, .2, 0, 0, -.2, ... ; all but the two zeros reach |0.2|.
    assert sign_flip_p_value([0.1, 0.2, 0.3, -0.4]) == pytest.approx(14 / 16)
    # All four of one sign: only "all +" and "all -" are as extreme.
    assert sign_flip_p_value([0.1, 0.2, 0.3, 0.4]) == pytest.approx(2 / 16)
    assert sign_flip_p_value([0.0, 0.0, 0.0]) == 1.0


def test_random_sign_flips_are_seeded_and_never_zero():
    d = np.full(40, 0.5)  # 2^40 patterns: sampled; only all-one-sign patterns are as extreme
    first = sign_flip_p_value(d, rounds=500, seed=3)
    assert first == sign_flip_p_value(d, rounds=500, seed=3)
    assert first == pytest.approx(1 / 501)  # (1 + 0 hits) / (1 + rounds)


def test_paired_bootstrap_interval_of_two_pairs():
    # Differences (0, 1): a resampled mean is 0, 0.5 or 1 with chances 1/4, 1/2, 1/4, so the
    # 2.5th and 97.5th percentiles of 2000 rounds are 0 and 1.
    assert paired_difference([0.0, 0.0], [0.0, 1.0]) == (0.5, 0.0, 1.0)
    # Equal differences: no spread at all.
    assert paired_difference([0.1, 0.2, 0.3], [0.3, 0.4, 0.5]) == pytest.approx((0.2, 0.2, 0.2))
    seeded = paired_difference([0.1, 0.5, 0.2, 0.9], [0.3, 0.4, 0.6, 0.8], seed=7)
    assert seeded == paired_difference([0.1, 0.5, 0.2, 0.9], [0.3, 0.4, 0.6, 0.8], seed=7)


@pytest.fixture
def two_runs(tmp_path):
    """Faithfulness A = (.2, .5, .9, unscored), B = (.4, .5, .6, .7) on samples a-d."""
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.5, "c": 0.9, "d": None})
    faithfulness_run(tmp_path / "b", {"a": 0.4, "b": 0.5, "c": 0.6, "d": 0.7})
    return tmp_path / "a", tmp_path / "b"


def test_runs_are_compared_sample_by_sample(two_runs):
    comparison = compare_runs(open_run(two_runs[0]), open_run(two_runs[1]))
    assert comparison.problems == []
    (m,) = comparison.metrics
    # Paired on a, b, c (d is unscored in A): differences +0.2, 0, -0.3.
    assert m.pairs == 3
    assert m.difference == pytest.approx(-0.1 / 3)
    assert (m.mean_a, m.mean_b) == (pytest.approx(1.6 / 3), pytest.approx(1.5 / 3))
    assert (m.better, m.worse, m.unchanged) == (1, 1, 1)
    assert (m.unscored_a, m.unscored_b) == (1, 0)
    # ±0.2 ±0.3 (the zero flips to itself): |sums| 0.5, 0.1, 0.1, 0.5 all reach 0.1.
    assert m.p_value == 1.0
    assert m.ci_low <= m.difference <= m.ci_high
    # Largest change first, then the sample scored in one run only, with its reason.
    assert [c.sample_id for c in m.changed] == ["c", "a", "d"]
    assert m.changed[0].difference == pytest.approx(-0.3)
    assert any("p_supported 0.9" in line for line in m.changed[0].explanation_a)
    assert any("p_supported 0.6" in line for line in m.changed[0].explanation_b)
    assert "connection reset" in m.changed[2].unscored_a


def test_compare_command_prints_the_difference(two_runs):
    result = runner.invoke(app, ["compare", str(two_runs[0]), str(two_runs[1])])
    assert result.exit_code == 0, result.output
    assert "-0.033" in result.output and "1.0000" in result.output
    assert "connection reset" in result.output  # the unscored sample is listed, not hidden


def test_runs_with_different_judges_are_refused_unless_forced(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.5})
    faithfulness_run(tmp_path / "b", {"a": 0.4, "b": 0.5}, model="another")
    refused = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert refused.exit_code == 4
    assert "NOT COMPARABLE" in refused.output and "different judges" in refused.output
    assert "--force" in refused.output
    forced = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "different judges" in forced.output and "+0.100" in forced.output


def test_runs_with_different_metric_versions_are_not_comparable(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.7})
    faithfulness_run(tmp_path / "b", {"a": 0.2, "b": 0.7}, soft=False)
    comparison = compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b"))
    (problem,) = comparison.problems
    assert problem.startswith("different faithfulness versions") and "soft" in problem


def test_runs_without_shared_samples_are_bad_input(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2})
    faithfulness_run(tmp_path / "b", {"b": 0.2})
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "share no sample id" in result.output


def test_arena_runs_are_compared_by_rating(tmp_path):
    prompts = {"a": "v1", "b": "v2"}
    for name, ratings in (("a", (1000.0, 980.0, 20.0)), ("b", (1030.0, 990.0, 40.0))):
        folder = tmp_path / name
        folder.mkdir()
        rating, low, width = ratings
        board = {
            "reference": "lfrqa", "anchor": "mean", "rounds": 100, "prior": 0.5,
            "battles": 10, "scored": 10, "unscored": 0, "unscored_reasons": {},
            "both_orders": 10, "flips": 1, "flip_rate": 0.1, "win_rates": [],
            "systems": [{"system": "mine", "rating": rating, "rating_low": low,
                         "rating_high": low + width, "battles": 10, "wins": 5.0,
                         "ties": 1.0, "losses": 4.0}],
        }  # fmt: skip
        (folder / "leaderboard.json").write_text(json.dumps(board))
        record = {"judge": "fake:x", "prompt": {"name": "arena.pairwise", "version": prompts[name]}}
        (folder / "arena_run.json").write_text(json.dumps(record))
    comparison = compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b"))
    (row,) = comparison.ratings
    # +30; half-widths 10 and 20 in quadrature: sqrt(100 + 400) = 22.36.
    assert row.difference == 30.0
    assert (row.ci_low, row.ci_high) == pytest.approx((30 - 500**0.5, 30 + 500**0.5))
    # Another version of the pairwise prompt: judged another way, so not comparable.
    (problem,) = comparison.problems
    assert problem.startswith("different pairwise prompts") and "'v2'" in problem


def test_a_record_without_identity_digests_is_checked_by_model_name(tmp_path):
    # A record from before digests: the same judge by name is the same judge, not "different"
    # because a digest was compared with a name.
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.7})
    faithfulness_run(tmp_path / "b", {"a": 0.2, "b": 0.7})
    record = json.loads((tmp_path / "b" / "run.json").read_text())
    record["models"]["judge"]["identity"] = None
    (tmp_path / "b" / "run.json").write_text(json.dumps(record))
    assert compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b")).problems == []
    record["models"]["judge"]["name"] = record["judge"] = "fake:another"
    (tmp_path / "b" / "run.json").write_text(json.dumps(record))
    (problem,) = compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b")).problems
    assert problem == "different judges: fake:scripted in A, fake:another in B"


def test_a_metric_version_missing_from_a_record_is_not_comparable(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2})
    faithfulness_run(tmp_path / "b", {"a": 0.4})
    record = json.loads((tmp_path / "b" / "run.json").read_text())
    del record["metrics"]["faithfulness"]
    (tmp_path / "b" / "run.json").write_text(json.dumps(record))
    comparison = compare_runs(open_run(tmp_path / "a"), open_run(tmp_path / "b"))
    assert comparison.problems == [
        "no faithfulness version in the run record of B: not checked"
    ]  # fmt: skip
    assert comparison.metrics[0].difference == pytest.approx(0.2)  # still compared


def test_the_tolerance_counts_small_changes_as_unchanged(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.5, "c": 0.9})
    faithfulness_run(tmp_path / "b", {"a": 0.25, "b": 0.5, "c": 0.6})
    a, b = open_run(tmp_path / "a"), open_run(tmp_path / "b")
    # Differences +0.05, 0, -0.3: with a tolerance of 0.1 only c changed.
    (m,) = compare_runs(a, b, tolerance=0.1).metrics
    assert (m.better, m.worse, m.unchanged) == (0, 1, 2)
    assert [c.sample_id for c in m.changed] == ["c"]
    (m,) = compare_runs(a, b).metrics
    assert (m.better, m.worse, m.unchanged) == (1, 1, 1)


def test_explanations_with_brackets_are_printed_as_written(tmp_path):
    # Rich would read "[/b]" as closing markup and fail; the table shows it as text.
    faithfulness_run(tmp_path / "a", {"a": 0.2})
    faithfulness_run(tmp_path / "b", {"a": 0.4})
    for run in ("a", "b"):
        path = tmp_path / run / "scores.jsonl"
        score = json.loads(path.read_text())
        score["sample_id"] = "a[/b]"
        path.write_text(json.dumps(score) + "\n")
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "a[/b]" in result.output


SEVEN = "abcdefg"


def test_three_runs_are_ranked_and_every_pair_decided(tmp_path):
    # Seven samples, every one a run's level: a at .2, b at .8, c at .5. Each pair differs with
    # one sign on all seven: p = 2/128, Holm x 3 pairs = 0.0469 < 0.05: all three decided.
    for name, level in (("a", 0.2), ("b", 0.8), ("c", 0.5)):
        faithfulness_run(tmp_path / name, dict.fromkeys(SEVEN, level))
    folders = [str(tmp_path / name) for name in "abc"]
    result = runner.invoke(app, ["compare", *folders, "--difference", "0.1"])
    assert result.exit_code == 0, result.output
    assert "runs ranked" in result.output and "0.0469" in result.output
    assert "b is better than a" in result.output
    assert "c is worse than b" in result.output
    # No spread at all: seven samples tell apart any difference, and 0.1 needs the minimum.
    assert "0.1 needs 2 samples" in result.output
    found = json.loads(runner.invoke(app, ["compare", *folders, "--json"]).output)
    (ranked,) = found["ranking"]["metrics"]
    assert [s["system"] for s in ranked["ranking"]["systems"]] == ["b", "c", "a"]
    assert [p["verdict"] for p in ranked["ranking"]["pairs"]] == ["better", "better", "worse"]
    assert found["comparison"] is None


def test_two_runs_keep_their_table_and_add_the_verdict(two_runs):
    result = runner.invoke(app, ["compare", str(two_runs[0]), str(two_runs[1])])
    assert result.exit_code == 0, result.output
    assert "unscored A/B" in result.output  # today's table
    # Three pairs (.2, 0, -.3): p = 1, so nobody can tell.
    assert "faithfulness, b vs a: cannot tell with 3 samples" in result.output


def test_bad_input_names_the_run_and_the_metric(tmp_path):
    faithfulness_run(tmp_path / "a", {"a": 0.2, "b": 0.5})
    faithfulness_run(tmp_path / "b", {"a": 0.4, "b": 0.5})
    one = runner.invoke(app, ["compare", str(tmp_path / "a")])
    assert one.exit_code == 2 and "needs two runs or more, got 1" in one.output
    missing = runner.invoke(
        app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "answer_relevance"]
    )
    assert missing.exit_code == 2
    assert "a has no answer_relevance" in missing.output
