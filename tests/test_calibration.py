"""People's ratings correcting the judge (PPI++): the estimators against values worked out by
hand, the refusal of bad ratings files by row and field, and the commands end to end on runs the
real pipeline made with the scripted judge."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli.main import app
from ragmeter.heads.ppi import (
    calibrate,
    cross_fit,
    human_mean,
    labels_only,
    labels_to_halve,
    power_tuning,
    ppi_mean,
    t_quantile,
)
from ragmeter.heads.ratings import LabelsError, Scale, parse_scale, parse_scales, read_labels
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics import metric_by_name
from ragmeter.report import write_outputs
from ragmeter.sample import Sample
from ragmeter.viewer import open_run
from ragmeter.viewer.html import build_page

from .conftest import yes_no
from .report_runs import faithfulness_run

runner = CliRunner()

# Four rated samples and six judged only, the judge already on the ratings' scale.
Y = [3.0, 1.0, 4.0, 2.0]
G_RATED = [2.5, 1.5, 3.0, 2.0]
G_UNRATED = [2.0, 3.0, 1.0, 4.0, 2.0, 3.0]


def test_t_quantiles_match_the_table():
    # Student's t, two-sided 95 %, from any statistics table.
    for df, exact in [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (24, 2.064), (99, 1.984)]:
        assert t_quantile(df) == pytest.approx(exact, abs=1e-3)
    assert t_quantile(3) == pytest.approx(3.182, abs=4e-3)


def test_ppi_with_full_weight_is_the_judged_mean_corrected_by_the_rated_errors():
    found, lam = ppi_mean(Y, G_RATED, G_UNRATED, weight=1.0)
    # mean(g_unrated) = 15/6 = 2.5; rating - prediction = .5, -.5, 1, 0: mean .25.
    assert lam == 1.0
    assert found.estimate == pytest.approx(2.75)
    # var(y - g) = (.0625 + .5625 + .5625 + .0625) / 3 = 1.25/3, over n = 4;
    # var(g_unrated) = (.25 + .25 + 2.25 + 2.25 + .25 + .25) / 5 = 1.1, over N = 6.
    half = t_quantile(3) * math.sqrt(1.25 / 3 / 4 + 1.1 / 6)
    assert found.low == pytest.approx(2.75 - half)
    assert found.high == pytest.approx(2.75 + half)


def test_ppi_with_no_weight_is_the_ratings_alone():
    found, lam = ppi_mean(Y, G_RATED, G_UNRATED, weight=0.0)
    alone = labels_only(Y)
    # mean 2.5; var(y) = (.25 + 2.25 + 2.25 + .25) / 3 = 5/3.
    half = t_quantile(3) * math.sqrt(5 / 3 / 4)
    assert (found.estimate, found.low, found.high) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    assert (alone.estimate, alone.low, alone.high) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    assert lam == 0.0


def test_power_tuning_minimises_the_variance():
    # cov(y, g_rated) = (.125 + 1.125 + 1.125 + .125) / 3 = 2.5/3; var(g_rated) = 1.25/3.
    # lambda = (2.5/3 / 4) / (1.25/3 / 4 + 1.1 / 6) = 0.208333 / 0.2875.
    lam = power_tuning(np.array(Y), np.array(G_RATED), np.array(G_UNRATED))
    assert lam == pytest.approx(0.208333 / 0.2875, abs=1e-5)
    found, tuned = ppi_mean(Y, G_RATED, G_UNRATED)
    assert tuned == lam
    assert found.estimate == pytest.approx(2.5 + lam * (2.5 - 2.25))


def test_a_judge_that_does_not_help_gets_no_weight():
    y = np.array(Y)
    # Constant: nothing to learn from. Falling where people rise: clipped to 0, never negative.
    assert power_tuning(y, np.full(4, 2.0), np.full(6, 2.0)) == 0.0
    assert power_tuning(y, -y, np.array(G_UNRATED)) == 0.0
    found, lam = ppi_mean(Y, [2.0] * 4, [2.0] * 6)
    assert lam == 0.0 and found == labels_only(Y)


@given(
    st.lists(st.floats(1, 4), min_size=3, max_size=12),
    st.lists(st.floats(0, 1), min_size=12, max_size=12),
    st.lists(st.floats(0, 1), min_size=2, max_size=20),
)
def test_the_interval_is_never_wider_than_the_ratings_alone(ratings, judge, unrated):
    found, lam = ppi_mean(ratings, judge[: len(ratings)], unrated)
    assert 0.0 <= lam <= 1.0
    assert found.width <= labels_only(ratings).width + 1e-9


def test_cross_fitting_never_lets_a_rating_correct_itself():
    judge = np.array([0.1, 0.4, 0.5, 0.9, 0.2, 0.7])
    ratings = 1 + 3 * judge  # exactly on a line: every fold's line is that line
    rated, unrated = cross_fit(judge, ratings, np.array([0.0, 0.3]), bounds=(1, 4), folds=3)
    assert rated == pytest.approx(ratings)
    assert unrated == pytest.approx([1.0, 1.9])
    # Change one rating: its own prediction stays; others' (fitted with it) move.
    moved = ratings.copy()
    moved[0] = 4.0
    again, _ = cross_fit(judge, moved, np.array([0.0, 0.3]), bounds=(1, 4), folds=3)
    assert again[0] == pytest.approx(rated[0])
    assert not np.allclose(again[1:], rated[1:])


def test_predictions_stay_on_the_scale():
    judge = np.array([0.0, 0.5, 1.0, 0.25])
    ratings = np.array([1.0, 2.5, 4.0, 1.75])
    _, unrated = cross_fit(judge, ratings, np.array([-1.0, 2.0]), bounds=(1, 4), folds=2)
    assert unrated == pytest.approx([1.0, 4.0])  # the line gives -2 and 7, cut to the scale


def test_a_judge_that_knows_nothing_needs_four_times_the_ratings_to_halve_the_interval():
    ratings = np.array(Y)
    # Constant predictions: the ratings alone, variance var(y)/m; a quarter of it at m = 16.
    assert labels_to_halve(ratings, np.full(4, 2.0), np.full(16, 2.0)) == 16
    assert labels_to_halve(ratings, np.full(4, 2.0), np.full(10, 2.0)) is None  # 14 samples


def test_human_mean_reports_bias_and_correlation_on_the_scale():
    found = human_mean(
        [1.0, 0.0, 0.5], [4.0, 2.0, 2.0], [0.5, 0.5], Scale(low=1, high=4, stated=True)
    )
    # Judge on 1-4: 4, 1, 2.5 against 4, 2, 2: bias (0 - 1 + .5) / 3.
    assert found.judge_bias == pytest.approx(-1 / 6)
    assert found.judge_mean == pytest.approx(0.5)  # over all five judged samples
    assert found.judge_mean_on_scale == pytest.approx(2.5)
    assert found.correlation == pytest.approx(np.corrcoef([1, 0, 0.5], [4, 2, 2])[0, 1])
    assert (found.rated, found.unrated) == (3, 2)
    # Intervals are cut to the scale; the width ratio is of the intervals before the cut.
    assert found.labels_only.low >= 1 and found.labels_only.high == 4
    assert found.width_ratio is not None and found.width_ratio <= 1
    with pytest.raises(ValueError, match="at least two"):
        human_mean([1.0], [4.0], [0.5], Scale(low=1, high=4, stated=True))


def test_scales_are_read_and_bad_ones_refused():
    assert parse_scale("1-4") == Scale(low=1, high=4, stated=True)
    assert parse_scale("binary") == Scale(low=0, high=1, stated=True)
    scales = parse_scales(["faithfulness=1-5", "0-1"])
    assert scales["faithfulness"].text == "1-5" and scales[None].text == "0-1"
    for bad in ("4-1", "high", "1-"):
        with pytest.raises(ValueError, match="LOW-HIGH"):
            parse_scale(bad)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_ratings_are_read_and_the_scale_inferred(tmp_path):
    path = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a", "faithfulness": 4, "answer_relevance": True},
            {"id": "b", "faithfulness": 2, "answer_relevance": None},
            {"id": "c", "faithfulness": 3.5, "answer_relevance": False},
        ],
    )
    labels = read_labels(path, ["a", "b", "c", "d"], ["faithfulness", "answer_relevance"])
    assert labels.ratings == {
        "faithfulness": {"a": 4.0, "b": 2.0, "c": 3.5},
        "answer_relevance": {"a": 1.0, "c": 0.0},
    }
    assert labels.scales["faithfulness"] == Scale(low=2, high=4, stated=False)
    assert labels.scales["answer_relevance"].text == "0-1"


def test_bad_ratings_are_refused_by_row_and_field(tmp_path):
    path = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a", "faithfulness": 4},
            {"id": "zz", "faithfulness": 3},
            {"id": "a", "faithfulness": 1},
            {"id": "b", "faithfulness": 5},
            {"id": "c", "faithfullness": 2},
            {"id": "d", "faithfulness": "good"},
            {"faithfulness": 2},
        ],
    )
    with pytest.raises(LabelsError) as caught:
        read_labels(path, ["a", "b", "c", "d"], ["faithfulness"], parse_scales(["1-4"]))
    message = str(caught.value)
    assert "row 2, field 'id': sample 'zz' is not in the run" in message
    assert "row 3, field 'id': sample 'a' again (first in row 1)" in message
    assert "row 4, field 'faithfulness': 5 is off the scale 1-4" in message
    assert "row 5, field 'faithfullness': not a metric of the run (faithfulness)" in message
    assert "row 6, field 'faithfulness': 'good' is not a number" in message
    assert "and 1 more problem(s)" in message  # row 7 (no id) is counted, not listed


def test_csv_rows_are_numbered_as_a_spreadsheet_shows_them(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("id,faithfulness\na,4\nb,\nc,x\n")
    with pytest.raises(LabelsError, match=r"row 4, field 'faithfulness': 'x' is not a number"):
        read_labels(path, ["a", "b", "c"], ["faithfulness"])
    path.write_text("sample,faithfulness\na,4\n")
    with pytest.raises(LabelsError, match="row 1: the header needs an 'id' column"):
        read_labels(path, ["a"], ["faithfulness"])


def test_a_run_is_calibrated_over_its_scored_samples(tmp_path, no_user_cache):
    result = faithfulness_run(tmp_path / "run", {"a": 0.9, "b": 0.2, "c": 0.6, "d": None})
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a", "faithfulness": 4},
            {"id": "b", "faithfulness": 1},
            {"id": "d", "faithfulness": 2},
        ],
    )
    report = calibrate(result, labels, scales=parse_scales(["1-4"]))
    (row,) = report.metrics
    # d is unscored: left out, and its rating unused; a and b rated, c judged only.
    assert (row.scored, row.unscored, row.rated_unscored) == (3, 1, 1)
    assert row.result is not None
    assert (row.result.rated, row.result.unrated) == (2, 1)
    assert row.result.judge_mean == pytest.approx((0.9 + 0.2 + 0.6) / 3)
    # Judge on 1-4 for a and b: 3.7 and 1.6 against 4 and 1.
    assert row.result.judge_bias == pytest.approx((-0.3 + 0.6) / 2)
    assert row.result.labels_only.estimate == pytest.approx(2.5)

    # One usable rating (d's is of an unscored sample): no interval, and the reason why.
    write_jsonl(labels, [{"id": "a", "faithfulness": 4}, {"id": "d", "faithfulness": 2}])
    (row,) = calibrate(result, labels, scales=parse_scales(["1-4"])).metrics
    assert row.result is None
    assert row.reason == "1 rated sample(s) the judge scored; at least 2 are needed"


def run_with_answers(out, answers):
    """An evaluate run of faithfulness over samples ``a``... with the given (answer, P(yes))."""
    judge = FakeJudge(model="calibration")
    for _, probability in answers.values():
        judge.enqueue(yes_no(probability))
    samples = [
        Sample(id=key, question="What is it?", contexts=["It is a tower in Paris."], answer=text)
        for key, (text, _) in answers.items()
    ]
    result = evaluate(
        samples,
        [metric_by_name("faithfulness")],
        judge=judge,
        embedder=HashingEmbedder(),
        out_dir=out,
        cache=False,
        retries=0,
    )
    write_outputs(result, out)
    return result


def test_calibrate_command_prints_and_writes_the_estimate(tmp_path, no_user_cache):
    faithfulness_run(tmp_path / "run", {"a": 0.9, "b": 0.2, "c": 0.6, "d": 0.3})
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a", "faithfulness": 4},
            {"id": "b", "faithfulness": 1},
            {"id": "c", "faithfulness": 3},
        ],
    )
    done = runner.invoke(
        app, ["calibrate", str(tmp_path / "run"), str(labels), "--scale", "faithfulness=1-4"]
    )
    assert done.exit_code == 0, done.output
    written = json.loads((tmp_path / "run" / "calibration.json").read_text())
    (row,) = written["metrics"]
    assert row["scale"] == {"low": 1.0, "high": 4.0, "stated": True}
    assert row["result"]["labels_only"]["estimate"] == pytest.approx(8 / 3)
    assert row["result"]["rated"] == 3 and row["result"]["unrated"] == 1
    assert "faithfulness" in done.output and "2.67" in done.output

    inferred = runner.invoke(app, ["calibrate", str(tmp_path / "run"), str(labels)])
    assert "scale 1-4 inferred from the ratings" in inferred.output

    write_jsonl(labels, [{"id": "a", "faithfulness": 4}, {"id": "q", "faithfulness": 3}])
    refused = runner.invoke(app, ["calibrate", str(tmp_path / "run"), str(labels)])
    assert refused.exit_code == 2
    assert "row 2, field 'id': sample 'q' is not in the run" in refused.output


def test_evaluate_checks_the_ratings_before_judging_and_calibrates_after(tmp_path, no_user_cache):
    data = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"id": key, "question": "Q?", "contexts": ["A b. C d. E f."], "answer": answer}
            for key, answer in (("s1", "A b."), ("s2", "C d."), ("s3", "E f."))
        ],
    )
    script = tmp_path / "replies.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in ["Yes", "No", "Yes"]))
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "s1", "faithfulness": 1},
            {"id": "s2", "faithfulness": 0},
            {"id": "s4", "faithfulness": 1},
        ],
    )
    command = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", f"fake:{script}"]
    command += ["--out", str(tmp_path / "out"), "--labels", str(labels)]
    refused = runner.invoke(app, command)
    assert refused.exit_code == 2
    assert "row 3, field 'id': sample 's4' is not in the run" in refused.output
    assert not (tmp_path / "out" / "scores.jsonl").exists()  # refused before any judging

    write_jsonl(labels, [{"id": "s1", "faithfulness": 1}, {"id": "s2", "faithfulness": 0}])
    done = runner.invoke(app, command)
    assert done.exit_code == 0, done.output
    written = json.loads((tmp_path / "out" / "calibration.json").read_text())
    (row,) = written["metrics"]
    assert row["result"]["judge_mean"] == pytest.approx(2 / 3)  # Yes, No, Yes
    assert row["result"]["correlation"] == pytest.approx(1.0)
    assert row["scale"]["low"] == 0 and row["scale"]["high"] == 1


def test_compare_gives_the_difference_on_the_people_scale(tmp_path, no_user_cache):
    a = {"a": ("It is a tower.", 0.9), "b": ("It is in Rome.", 0.2), "c": ("It is tall.", 0.6)}
    b = {"a": ("It is a tower.", 0.9), "b": ("It is in Paris.", 0.8), "c": ("It is tall.", 0.6)}
    run_with_answers(tmp_path / "A", a)
    run_with_answers(tmp_path / "B", b)
    rated_a = write_jsonl(
        tmp_path / "a.jsonl",
        [{"id": k, "faithfulness": v} for k, v in [("a", 4), ("b", 1), ("c", 3)]],
    )
    rated_b = write_jsonl(
        tmp_path / "b.jsonl",
        [{"id": k, "faithfulness": v} for k, v in [("a", 4), ("b", 4), ("c", 3)]],
    )
    runs = [str(tmp_path / "A"), str(tmp_path / "B")]
    done = runner.invoke(
        app, ["compare", *runs, "--labels", str(rated_a), "--labels", str(rated_b)]
    )
    assert done.exit_code == 0, done.output
    # Differences of ratings 0, 3, 0: the ratings-only mean difference is 1.00.
    assert "people's mean, B - A" in done.output and "1.00 [" in done.output

    # One file cannot rate two different answers to sample b.
    refused = runner.invoke(app, ["compare", *runs, "--labels", str(rated_a)])
    assert refused.exit_code == 2
    assert "row 2, field 'id': the two runs answer sample 'b' differently" in refused.output


def test_report_prints_the_calibration_of_each_run(tmp_path, no_user_cache):
    pytest.importorskip("altair")
    faithfulness_run(tmp_path / "run", {"a": 0.9, "b": 0.2, "c": 0.6, "d": 0.3})
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"id": "a", "faithfulness": 4},
            {"id": "b", "faithfulness": 1},
            {"id": "c", "faithfulness": 3},
        ],
    )
    page = tmp_path / "report.html"
    done = runner.invoke(
        app, ["report", str(tmp_path / "run"), "--html", str(page), "--labels", str(labels)]
    )
    assert done.exit_code == 0, done.output
    assert "people's mean from the ratings" in done.output
    # The page shows calibration.json, which the command wrote into the run folder.
    written = json.loads((tmp_path / "run" / "calibration.json").read_text())
    ppi = written["metrics"][0]["result"]["ppi"]
    (section,) = [
        s
        for s in build_page([open_run(tmp_path / "run")])["sections"]
        if s["heading"] == "People's means from ratings"
    ]
    (shown,) = section["cards"]
    assert shown["title"] == "faithfulness · people's mean (1-4)"
    assert shown["value"] == f"{ppi['estimate']:.2f}"
    assert shown["foot"].startswith("rated 3 of 4")
    assert "problems" not in section

    # The run changed since (here: made again over three samples): the card says so.
    faithfulness_run(tmp_path / "run", {"a": 0.9, "b": 0.2, "c": 0.6})
    (section,) = [
        s
        for s in build_page([open_run(tmp_path / "run")])["sections"]
        if s["heading"] == "People's means from ratings"
    ]
    assert section["problems"] == [
        "faithfulness: calibration.json was made over 4 scored samples (judge mean 0.500) and "
        "the run now has 3 (0.567); run 'ragmeter calibrate' again"
    ]


def test_ratings_files_must_match_the_runs(tmp_path, no_user_cache):
    faithfulness_run(tmp_path / "A", {"a": 0.9, "b": 0.2})
    faithfulness_run(tmp_path / "B", {"a": 0.8, "b": 0.3})
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "a", "faithfulness": 4}])
    runs = [str(tmp_path / "A"), str(tmp_path / "B")]
    three = ["--labels", str(labels)] * 3
    refused = runner.invoke(app, ["compare", *runs, *three])
    assert refused.exit_code == 2
    assert "3 --labels files for 2 runs: give one for all runs or one per run" in refused.output

    (tmp_path / "W").mkdir()
    (tmp_path / "W" / "agreement.json").write_text(json.dumps({"agreements": []}))
    refused = runner.invoke(app, ["calibrate", str(tmp_path / "W"), str(labels)])
    assert refused.exit_code == 2
    assert "ratings calibrate evaluate runs, not wikieval runs" in refused.output
