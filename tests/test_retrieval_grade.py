"""``ragmeter retrieval --grade``: the pool of the runs' top k graded by the judge on a 0-3
scale, read as a distribution; the runs scored on the judge's grades and on both merged; the
grades written as qrels; their agreement with people; and the pairs graded by people on the
label page, each checked by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragmeter.cli.retrieval as command
from ragmeter.cli.main import app
from ragmeter.evaluate import evaluate
from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError
from ragmeter.judges.fake import FakeJudge
from ragmeter.labels import LabelSession
from ragmeter.metrics.passage_relevance import PassageRelevance
from ragmeter.retrieval import Qrels, read_run
from ragmeter.retrieval.grading import Grade, agreement, merged_qrels, pool
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession

from .test_criteria import digits

runner = CliRunner()

QUERY = "capital of France"
PASSAGES = {
    "d1": "Paris is the capital of France.",
    "d2": "Lyon has a large old town.",
    "d3": "France's government sits in its capital city.",
}
GRADED = {
    "d1": {"3": 0.6, "2": 0.4},  # expected 2.6, likeliest 3
    "d2": {"0": 0.9, "1": 0.1},  # expected 0.1, likeliest 0
    "d3": {"2": 0.7, "1": 0.3},  # expected 1.7, likeliest 2
}
PROMPT_TOKENS = 40
"""What the scripted judge says it read for each pair."""


def grader(fail: frozenset[str] = frozenset()) -> Callable[[ChatRequest], ChatResponse]:
    """The judge's replies: each passage's grades as next-token probabilities; a call about a
    passage in ``fail`` fails."""

    def reply(request: ChatRequest) -> ChatResponse:
        text = request.messages[-1].content
        (docid,) = [d for d, passage in PASSAGES.items() if passage in text]
        if docid in fail:
            raise JudgeError("connection reset")
        return digits(GRADED[docid]).model_copy(update={"prompt_tokens": PROMPT_TOKENS})

    return reply


def asked(judge: FakeJudge) -> list[str]:
    """The passages the judge was asked about, in order."""
    return [
        d
        for request in judge.history
        for d, p in PASSAGES.items()
        if p in request.messages[-1].content
    ]


@pytest.fixture
def files(tmp_path, no_user_cache):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 3\nq1 0 d2 0\n")
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 0.5 a\n")
    (tmp_path / "b.trec").write_text("q1 Q0 d3 1 2.0 b\nq1 Q0 d2 2 1.0 b\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"qid": "q1", "query": QUERY}))
    (tmp_path / "passages.jsonl").write_text(
        "".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in PASSAGES.items())
    )
    return tmp_path


def grade(files, monkeypatch, judge: FakeJudge, out: str = "out", *more: str):
    """The command, its judge the fake one (the command's own evaluate call, judge swapped)."""
    monkeypatch.setattr(command, "evaluate", lambda *a, **k: evaluate(*a, **{**k, "judge": judge}))
    args = [str(files / n) for n in ("qrels.txt", "a.trec", "b.trec")]
    texts = ["--queries", str(files / "queries.jsonl"), "--passages", str(files / "passages.jsonl")]
    options = ["--out", str(files / out), "--metrics", "nDCG@2", "--pool", "2", "--rounds", "50"]
    return runner.invoke(app, ["retrieval", *args, "--grade", *texts, *options, *more])


def said(result) -> str:
    return " ".join(result.output.split())


def test_the_pool_is_every_runs_top_k_once_by_query(tmp_path):
    (tmp_path / "a.trec").write_text(
        "q2 Q0 d9 1 3.0 a\nq1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 0.5 a\n"
    )
    # A tie: d3 before d2 (document ids descending), as trec_eval orders them.
    (tmp_path / "b.trec").write_text("q1 Q0 d2 1 2.0 b\nq1 Q0 d3 2 2.0 b\n")
    runs = [read_run(tmp_path / "a.trec"), read_run(tmp_path / "b.trec")]
    assert pool(runs, 1) == [("q1", "d1"), ("q1", "d3"), ("q2", "d9")]
    assert pool(runs, 2) == [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d9")]


def test_the_distribution_reads_into_the_expected_and_the_likeliest_grade():
    judge = FakeJudge([digits({"3": 0.6, "2": 0.4}), digits({"0": 0.25, "1": 0.25, "2": 0.5})])
    metric, session = PassageRelevance(), JudgeSession(judge)
    first = metric.score(
        Sample(id="p", question=QUERY, contexts=[PASSAGES["d1"]], answer=""), session
    )
    # 3 x 0.6 + 2 x 0.4 = 2.6, over 3.
    assert first.value == pytest.approx(2.6 / 3)
    assert first.explanation["distribution"] == {"0": 0.0, "1": 0.0, "2": 0.4, "3": 0.6}
    assert (first.explanation["expected_grade"], first.explanation["grade"]) == (2.6, 3)
    second = metric.score(
        Sample(id="q", question=QUERY, contexts=[PASSAGES["d2"]], answer=""), session
    )
    # 0.25 + 2 x 0.5 = 1.25; the likeliest 2.
    assert second.explanation["expected_grade"] == 1.25 and second.explanation["grade"] == 2
    # The query comes before the passage, and the system message is the same for every pair:
    # the prompts of one query's passages share everything up to the passage.
    one, two = (request.messages for request in judge.history)
    assert one[0] == two[0]
    user = one[1].content
    assert user.index("<query>") < user.index("<passage>") < user.index("How relevant")
    assert one[1].content.split("<passage>")[0] == two[1].content.split("<passage>")[0]
    # A pair holds one passage: any other is unscored, not judged.
    two_passages = Sample(id="r", question=QUERY, contexts=["a", "b"], answer="")
    assert metric.unreadable(two_passages) == "a graded pair holds one passage"


def test_grades_qrels_and_the_runs_on_each_source(files, monkeypatch):
    judge = FakeJudge(responder=grader())
    result = grade(files, monkeypatch, judge)
    assert result.exit_code == 0, result.output
    assert asked(judge) == ["d1", "d2", "d3"]  # one read a pair, by query
    out = files / "out"
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\n"
    lines = {
        g["docid"]: g for g in map(json.loads, (out / "grades.jsonl").read_text().splitlines())
    }
    assert {d: (g["expected"], g["grade"], g["human"]) for d, g in lines.items()} == {
        "d1": (2.6, 3, 3),
        "d2": (0.1, 0, 0),
        "d3": (1.7, 2, None),
    }
    assert lines["d1"]["distribution"] == {"0": 0.0, "1": 0.0, "2": 0.4, "3": 0.6}
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["qrels"]) == {"human", "judge", "merged"}
    # nDCG@2, gains the grades, discounts log2(rank + 1). The best top 2 on the judge's grades
    # (and on the merged, which take d1 and d2 from people and d3 from the judge): d1 (3), d3
    # (2): 3 + 2 / log2(3). a's top 2: d1 (3), d2 (0): 3. b's: d3 (2), d2 (0): 2.
    best = 3 + 2 / math.log2(3)
    qrels = summary["qrels"]
    for source in ("judge", "merged"):
        assert qrels[source]["a"]["nDCG@2"]["mean"] == pytest.approx(3 / best)
        assert qrels[source]["b"]["nDCG@2"]["mean"] == pytest.approx(2 / best)
    # On the people's qrels d3 is unjudged: b's top 2 gains nothing, a's is the best there is.
    assert (qrels["human"]["a"]["nDCG@2"]["mean"], qrels["human"]["b"]["nDCG@2"]["mean"]) == (
        1.0,
        0.0,
    )
    assert summary["judged"]["human"]["b"]["2"]["judged"] == 1
    assert summary["judged"]["judge"]["b"]["2"]["judged"] == 2
    rankings = json.loads((out / "rankings.json").read_text())
    assert set(rankings) == {"human", "judge", "merged"}
    # People and the judge agree on both pairs they share (d1: 3, d2: 0): kappa 1.
    assert "Cohen's kappa 1.000" in said(result)
    grading = json.loads((out / "grading.json").read_text())
    assert (grading["pairs"], grading["scored"], grading["unscored"]) == (3, 3, 0)
    assert (grading["judged_now"], grading["resumed"], grading["model_calls"]) == (3, 0, 3)
    assert grading["prompt_tokens_a_pair"] == PROMPT_TOKENS
    assert grading["pairs_a_minute"] > 0
    assert grading["seconds_a_pair"] > 0
    assert f"s and {PROMPT_TOKENS} prompt tokens" in said(result)
    # The bench that holds the judge's decisions against the people's reads the folder.
    bench = Path(__file__).parent.parent / "bench" / "bench_retrieval_grades.py"
    told = subprocess.run(
        [sys.executable, str(bench), str(out), "--measure", "nDCG@2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| b vs a | cannot tell | cannot tell | -1.000 / " in told
    assert "Kendall tau of the 2 runs' means 1.000" in told


def test_a_rerun_asks_the_judge_nothing(files, monkeypatch):
    assert grade(files, monkeypatch, FakeJudge(responder=grader())).exit_code == 0
    # Into the same folder: every grade is in the grading's run store.
    again = FakeJudge(responder=grader())
    result = grade(files, monkeypatch, again)
    assert result.exit_code == 0, result.output
    assert again.history == []
    out = files / "out"
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\n"
    grading = json.loads((out / "grading.json").read_text())
    assert (grading["judged_now"], grading["resumed"], grading["pairs_a_minute"]) == (0, 3, None)
    # The pace a pair is the scores' own, kept from when they were read.
    assert grading["prompt_tokens_a_pair"] == PROMPT_TOKENS and grading["seconds_a_pair"] > 0
    # Into another folder: every call is answered from the call cache.
    elsewhere = FakeJudge(responder=grader())
    result = grade(files, monkeypatch, elsewhere, "elsewhere")
    assert result.exit_code == 0, result.output
    assert elsewhere.history == []
    assert (files / "elsewhere" / "grades.qrels").read_text() == (out / "grades.qrels").read_text()
    assert json.loads((files / "elsewhere" / "grading.json").read_text())["cached_calls"] == 3


def test_a_pair_the_judge_cannot_grade_is_unscored_not_irrelevant(files, monkeypatch):
    result = grade(files, monkeypatch, FakeJudge(responder=grader(fail=frozenset({"d3"}))))
    assert result.exit_code == 0, result.output
    out = files / "out"
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\n"  # no d3 at all
    d3 = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()][-1]
    assert d3["grade"] is None and d3["distribution"] is None
    assert "connection reset" in d3["unscored"]
    grading = json.loads((out / "grading.json").read_text())
    assert (grading["scored"], grading["unscored"]) == (2, 1)
    ((reason, count),) = grading["unscored_reasons"].items()
    assert "connection reset" in reason and count == 1
    assert "1 unscored — passage_relevance: judge call failed" in said(
        result
    ) and "2 graded, 1 unscored" in said(result)
    # d3 is unjudged in the judge's qrels, not irrelevant: b's top 2 is half judged there.
    judged = json.loads((out / "summary.json").read_text())["judged"]["judge"]["b"]["2"]
    assert (judged["judged"], judged["retrieved"]) == (1, 2)
    # A rerun judges the pair it could not grade, and only that one.
    again = FakeJudge(responder=grader())
    assert grade(files, monkeypatch, again).exit_code == 0
    assert asked(again) == ["d3"]
    assert (out / "grades.qrels").read_text() == "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\n"


def test_a_dry_run_says_the_pool_and_calls_no_model(files, monkeypatch):
    judge = FakeJudge(responder=grader())
    result = grade(files, monkeypatch, judge, "out", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "3 (query, passage) pairs over 1 queries" in said(result)
    assert "No model was called" in said(result)
    assert judge.history == [] and not (files / "out").exists()


def test_an_id_the_texts_lack_is_said_before_any_judging(files, monkeypatch):
    (files / "passages.jsonl").write_text(json.dumps({"docid": "d1", "text": "x"}) + "\n")
    judge = FakeJudge(responder=grader())
    result = grade(files, monkeypatch, judge)
    assert result.exit_code == 2
    assert "document 'd2' (query q1) is not in the passages file" in said(result)
    assert judge.history == []


def test_people_grade_the_pairs_on_the_label_page(files, monkeypatch):
    assert grade(files, monkeypatch, FakeJudge(responder=grader())).exit_code == 0
    folder = files / "out" / "grades"
    session = LabelSession.open(folder, annotator="ann", seed=0)
    # The metric's own scale and what its grades mean, without --scale.
    assert session.metric == "passage_relevance" and session.scale.text == "0-3"
    assert [choice.text for choice in session.choices] == ["0", "1", "2", "3"]
    assert any("3 = the passage is about the query" in note for note in session.notes)
    pair = {item.key.sample_id: item for item in session.items}["q1\td3"]
    # The query as the question, the passage as the judge read it, no answer.
    assert (pair.question, pair.contexts, pair.answer) == (QUERY, (PASSAGES["d3"],), "")
    state = session.state()
    assert state["item"]["question"] == QUERY and len(state["item"]["contexts"]) == 1
    for item in session.items:
        session.answer("ann", item.key.text(), 2)
    revealed = session.state()["revealed"]
    judge = session.by_key[session.items[-1].key].judge
    assert revealed["judge"] == f"{judge:.2f} ({3 * judge:.1f} on 0-3)"  # the expected grade
    session.close()
    exported = files / "ratings.jsonl"
    result = runner.invoke(app, ["label", str(folder), "--export", str(exported)])
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in map(json.loads, exported.read_text().splitlines())}
    assert set(rows) == {"q1\td1", "q1\td2", "q1\td3"}
    assert {row["passage_relevance"] for row in rows.values()} == {2}
    # calibrate reads the grades as any ratings: the judge's mean put on 0-3 is the mean
    # expected grade, (2.6 + 0.1 + 1.7) / 3 = 1.47.
    calibrated = runner.invoke(app, ["calibrate", str(folder)])
    assert calibrated.exit_code == 0, calibrated.output
    assert "passage_relevance" in calibrated.output and "(1.47)" in calibrated.output


def test_kappa_on_grades_and_on_relevant_by_hand():
    grades = [
        Grade(qid="q1", docid="a", distribution=None, expected=None, grade=3, human=2),
        Grade(qid="q1", docid="b", distribution=None, expected=None, grade=0, human=0),
        Grade(qid="q2", docid="c", distribution=None, expected=None, grade=1, human=1),
        Grade(qid="q2", docid="d", distribution=None, expected=None, grade=2, human=0),
        Grade(qid="q2", docid="e", distribution=None, expected=None, grade=None, human=3),
        Grade(qid="q3", docid="f", distribution=None, expected=None, grade=2, human=None),
    ]
    found = agreement(grades, rounds=20)
    assert found.pairs == 4  # graded by both: the unscored pair and people's unjudged left out
    # 0-3: agree on 2 of 4; chance: people 0,0,1,2 and judge 0,1,2,3 -> (2x1 + 1x1 + 1x1) / 16
    # = 0.25; kappa (0.5 - 0.25) / 0.75 = 1/3.
    assert found.kappa.value == pytest.approx(1 / 3)
    # Relevant (>= 2): people F,F,F,T and judge T,F,F,T: agree on 3 of 4; chance
    # (1/4 x 2/4) + (3/4 x 2/4) = 0.5; kappa (0.75 - 0.5) / 0.5 = 0.5.
    assert found.kappa_relevant.value == pytest.approx(0.5)
    assert found.confusion == {"2": {"3": 1}, "0": {"0": 1, "2": 1}, "1": {"1": 1}}
    # Over two queries the interval spans what a draw of them can give.
    assert found.kappa_relevant.low <= found.kappa_relevant.value <= found.kappa_relevant.high


def test_merged_qrels_take_the_peoples_grade_first():
    human = Qrels(name="human", grades={"q1": {"d1": 1}})
    judge = Qrels(name="judge", grades={"q1": {"d1": 3, "d2": 2}, "q2": {"d9": 0}})
    assert merged_qrels(human, judge).grades == {"q1": {"d1": 1, "d2": 2}, "q2": {"d9": 0}}
