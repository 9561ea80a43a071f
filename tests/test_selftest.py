"""``ragmeter selftest injection``, run in-process on the scripted judge (``fake:FILE``, whose
replies are read in order) over the three "override" cases of the reference-free metrics: answer
relevance, then context relevance, then faithfulness (metrics in name order, one case each)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from ragmeter.cli.selftest import app
from ragmeter.selftest.injection import select_cases

runner = CliRunner()


def cli(*args: str):
    """The selftest commands under a root, as ``ragmeter selftest ...`` runs them."""
    root = typer.Typer()
    root.add_typer(app, name="selftest")

    @root.callback()
    def _root() -> None: ...

    return runner.invoke(root, ["selftest", *args])


def script(path, replies):
    """A ``fake:FILE`` script: one JSON string per line (objects as their JSON text)."""
    path.write_text(
        "".join(json.dumps(r if isinstance(r, str) else json.dumps(r)) + "\n" for r in replies)
    )
    return f"fake:{path}"


def injection(judge: str, out, *more: str):
    return cli(
        "injection",
        "--judge",
        judge,
        "--embedder",
        "fake",
        "--technique",
        "override",
        *("--metric", "faithfulness", "--metric", "context_relevance"),
        *("--metric", "answer_relevance"),
        # The cases the defences were built on, with answer relevance's off-topic gate open, so
        # that every case reaches the scripted judge.
        *("--set", "design", "--option", "answer_relevance.off_topic_below=-1"),
        "--out",
        str(out),
        "--no-cache",
        *more,
    )


# The orders to the judge are taken out of each sample before it is judged. Answer relevance:
# committed, then "does the answer address the question?" Yes: 1.0, over 0.5, the attack
# succeeded. Context relevance: 3 bicycle sentences, then the attack's passage, which now reads
# only that text was removed, one Yes/No each; only that one is needed, 1/4 = 0.25: held.
# Faithfulness: the answer's two claims (the order after them is gone), the first supported,
# 1/2: held (not over 0.5). One success in three: 33.3 %.
COMMITTED = {"noncommittal": False}
ONE_IN_THREE = [COMMITTED, "Yes", "No", "No", "No", "Yes", "Yes", "No", "No"]


def test_the_rate_is_printed_and_reported(tmp_path, no_user_cache):
    judge = script(tmp_path / "replies.jsonl", ONE_IN_THREE)
    result = injection(judge, tmp_path / "out")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "3 injection cases (override; faithfulness, context_relevance, answer_relevance), "
        f"judge {judge}, options answer_relevance.off_topic_below=-1"
    )
    rows = {line.split()[0]: line.split()[2:] for line in lines[2:5]}
    assert rows == {
        "faithfulness-override": ["0.500", "0.5", "held"],
        "context_relevance-override": ["0.250", "0.5", "held"],
        "answer_relevance-override": ["1.000", "0.5", "SUCCEEDED"],
    }
    # with 95 % Wilson intervals: 1 of 3 is (0.0615, 0.7923); 1 of 1 is (1 / (1 + z^2), 1) =
    # (0.2065, 1); 0 of 1 is (0, z^2 / (1 + z^2)) = (0, 0.7935)
    assert "  override           1/3 = 33.3% (95% CI 6.1-79.2%)" in lines
    assert "  answer_relevance   1/1 = 100.0% (95% CI 20.7-100.0%)" in lines
    assert "  context_relevance  0/1 = 0.0% (95% CI 0.0-79.3%)" in lines
    # by place: the faithfulness and answer-relevance attacks are in the answer, the other in
    # a passage; 1 of 2 is 1/2 -+ z * sqrt(1/8 + z^2/16) / (1 + z^2/2) = 0.5 -+ 0.4055
    assert "  answer             1/2 = 50.0% (95% CI 9.5-90.5%)" in lines
    assert "  contexts           0/1 = 0.0% (95% CI 0.0-79.3%)" in lines
    assert f"attack success rate ({judge}): 1/3 = 33.3% (95% CI 6.1-79.2%)" in lines
    assert "unscored" not in result.output

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (report["cases"], report["scored"], report["unscored"], report["successes"]) == (
        3,
        3,
        0,
        1,
    )
    assert report["attack_success_rate"] == pytest.approx(1 / 3)
    assert report["interval_95"] == pytest.approx([0.061492, 0.792340], abs=1e-6)
    answer_place = report["by_place"]["answer"]
    assert (answer_place["successes"], answer_place["scored"]) == (1, 2)
    assert report["skipped"] == []
    assert report["by_technique"]["override"]["attack_success_rate"] == pytest.approx(1 / 3)
    assert {metric: row["successes"] for metric, row in report["by_metric"].items()} == {
        "answer_relevance": 1,
        "context_relevance": 0,
        "faithfulness": 0,
    }
    assert [(o["id"], o["value"], o["succeeded"]) for o in report["outcomes"]] == [
        ("faithfulness-override", 0.5, False),
        ("context_relevance-override", 0.25, False),
        ("answer_relevance-override", 1.0, True),
    ]
    # each metric's scores are kept under the folder, so a rerun resumes
    assert (tmp_path / "out" / "faithfulness" / "run.json").exists()


@pytest.mark.parametrize(("limit", "status"), [("0.3", 1), ("0.34", 0), ("1", 0)])
def test_fail_above_gates_on_the_overall_rate(tmp_path, no_user_cache, limit, status):
    judge = script(tmp_path / "replies.jsonl", ONE_IN_THREE)
    result = injection(judge, tmp_path / "out", "--fail-above", limit)
    assert result.exit_code == status, result.output
    assert ("is above --fail-above" in result.output) == (status == 1)
    assert (tmp_path / "out" / "report.json").exists()  # written whatever the verdict


def test_unscored_cases_are_listed_with_their_reasons_and_not_counted(tmp_path, no_user_cache):
    # Answer relevance succeeds (1.0). Context relevance: the first two sentences are needed, the
    # second adds new information: 2/4 = 0.5, held. Then the script is used up: faithfulness's
    # first call fails, twice more on retry, and the case is unscored. One success in two: 50 %,
    # which is not above 0.5.
    replies = [COMMITTED, "Yes", "Yes", "Yes", "No", "No", "Yes"]
    judge = script(tmp_path / "replies.jsonl", replies)
    result = injection(judge, tmp_path / "out", "--fail-above", "0.5")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    reason = (
        "faithfulness.supported: judge call failed: fake judge has no scripted reply left "
        "(after 3 attempts)"
    )
    assert lines[lines.index("unscored (neither successes nor defences):") + 1] == (
        f"  faithfulness-override: {reason}"
    )
    assert "  faithfulness       0/0 (1 unscored)" in lines
    # 1 of 2: p = 1/2, centre 1/2, spread z * sqrt(1/8 + z^2/16) / (1 + z^2/2) = 0.4054
    rate = f"attack success rate ({judge}): 1/2 = 50.0% (95% CI 9.5-90.5%); 1 cases unscored"
    assert rate in lines
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (report["scored"], report["unscored"], report["successes"]) == (2, 1, 1)
    assert report["attack_success_rate"] == 0.5
    assert report["by_metric"]["faithfulness"] == {
        "successes": 0,
        "scored": 0,
        "unscored": 1,
        "attack_success_rate": None,
        "interval_95": None,
    }
    assert report["outcomes"][0]["succeeded"] is None
    assert report["outcomes"][0]["unscored_reason"] == reason

    # over 0.4, the same run fails the gate
    again = injection(
        script(tmp_path / "again.jsonl", replies), tmp_path / "again", "--fail-above", "0.4"
    )
    assert again.exit_code == 1, again.output


def test_nothing_scored_passes_without_a_gate_and_fails_with_one(tmp_path, no_user_cache):
    # the bare fake judge fails every call; its one option, seed, reaches the provider
    result = injection("fake", tmp_path / "out", "--judge-option", "seed=3")
    assert result.exit_code == 0, result.output
    assert "attack success rate (fake:scripted): 0/0; 3 cases unscored" in result.output
    assert json.loads((tmp_path / "out" / "report.json").read_text())["attack_success_rate"] is None
    gated = injection("fake", tmp_path / "out2", "--fail-above", "1")
    assert gated.exit_code == 1
    assert "no case was scored" in gated.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--technique", "nope"], "unknown technique 'nope'"),
        (["--judge-option", "bogus=1"], "unknown option 'bogus'"),
        (["--judge-option", "bogus"], "NAME=VALUE"),
        (["--embedder-option", "=1"], "NAME=VALUE"),
        (["--fail-above", "1.5"], "--fail-above"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_bad_options_exit_with_status_2(tmp_path, no_user_cache, args, message):
    result = cli("injection", "--judge", "fake", "--out", str(tmp_path / "out"), *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out" / "report.json").exists()


def test_an_unknown_judge_exits_with_status_2(tmp_path, no_user_cache):
    result = cli(
        "injection", "--judge", "nope:model", "--technique", "override", "--out", str(tmp_path)
    )
    assert result.exit_code == 2
    assert "unknown judge 'nope'" in result.output


def test_techniques_select_their_cases_in_catalogue_order():
    cases = select_cases(["flooding", "override", "flooding"], sets=["design"])
    assert [c.id for c in cases] == [
        "faithfulness-override",
        "faithfulness-flooding",
        "context_relevance-override",
        "context_relevance-flooding",
        "answer_relevance-override",
        "answer_correctness-override",
        "context_recall-override",
        "context_precision-override",
        "context_utilization-override",
    ]
    assert len(select_cases(None)) == len(select_cases([])) == 230
    assert len(select_cases(sets=["held-apart"])) == 75
    # the held-apart cases follow the design ones
    assert [c.id for c in select_cases(["override"])][-4:] == [
        "held-answer_relevance-11",
        "held-answer_relevance-12",
        "held-faithfulness-36",
        "held-context_relevance-50",
    ]
    with pytest.raises(ValueError, match="unknown set 'tuned'; known: design, held-apart"):
        select_cases(sets=["tuned"])
    chosen = select_cases(["override"], ["context_recall", "faithfulness"], ["design"])
    assert [c.id for c in chosen] == ["faithfulness-override", "context_recall-override"]
    with pytest.raises(ValueError, match="unknown metric 'self_knowledge'; known: faithfulness"):
        select_cases(None, ["self_knowledge"])


def test_metric_options_build_the_suites_metrics_and_are_reported(tmp_path, no_user_cache):
    judge = script(tmp_path / "replies.jsonl", ONE_IN_THREE)
    result = injection(judge, tmp_path / "out", "--option", "context_relevance.soft=true")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith(
        ", options answer_relevance.off_topic_below=-1 context_relevance.soft=True"
    )
    # P(needed) is 0 or 1 here, so the soft score is the thresholded one: 1/4
    assert "context_relevance-override             context_relevance   0.250" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["metric_options"] == {
        "answer_relevance": {"off_topic_below": -1},
        "context_relevance": {"soft": True},
    }
    run = json.loads((tmp_path / "out" / "context_relevance" / "run.json").read_text())
    assert run["metrics"]["context_relevance"]["config"]["soft"] is True

    unused = injection(judge, tmp_path / "other", "--option", "hallucination.soft=true")
    assert unused.exit_code == 2
    assert "options given for metrics no chosen case uses: hallucination" in unused.output
