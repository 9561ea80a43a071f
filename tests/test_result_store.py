"""A run's result keeps each stored score's value, reason and usage, and reads the rest (the
explanation and the exchanges) from the run's ``scores.sqlite`` when asked: the same scores as
were committed, exported row by row from the store in the result's order."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing

import pytest

from ragmeter import evaluate
from ragmeter.budget import Budget
from ragmeter.evaluate import BudgetWarning
from ragmeter.judges.base import JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.report import write_outputs
from ragmeter.result import Result, ScoreList, StoredScore
from ragmeter.score import Score
from ragmeter.store import StoreError

from .conftest import routed
from .test_evaluate import REPLIES, SAMPLES

EXPORTS = ("scores.jsonl", "samples.csv", "summary.json")

# Worked out from REPLIES: faithfulness asks one Yes/No question per answer sentence (one
# sentence each, P(yes) 0.75); answer relevance asks whether the answer is noncommittal (no),
# then whether it is complete (P 1.0); context relevance asks about each of the two context
# sentences (P(needed) 0.25 each, under 0.5: none kept, so 0).
ROWS = [
    (sample, metric, value)
    for sample in ("a", "b")
    for metric, value in (
        ("faithfulness", 0.75),
        ("answer_relevance", 1.0),
        ("context_relevance", 0.0),
    )
]
PROMPTS = [
    ["faithfulness.supported"],
    ["commitment.noncommittal", "answer_relevance.complete"],
    ["context_relevance.sentence", "context_relevance.sentence"],
] * 2


def run(out_dir=None, samples=SAMPLES, judge=None, **options) -> Result:
    return evaluate(
        samples,
        judge=judge or FakeJudge(responder=routed(REPLIES)),
        embedder=HashingEmbedder(),
        cache=False,
        out_dir=out_dir,
        **options,
    )


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_the_result_keeps_values_and_reads_explanations_and_exchanges_from_the_store(tmp_path):
    committed: list[Score] = []
    result = run(tmp_path / "out", on_score=committed.append)
    # Nothing but the value, reason and usage of each score is held...
    assert isinstance(result.scores, ScoreList) and len(result.scores) == 6
    assert all(isinstance(brief, StoredScore) for brief in result.briefs())
    assert [(b.sample_id, b.metric, b.value) for b in result.briefs()] == ROWS
    # ...and each score is read back whole, the same as was committed.
    assert list(result.scores) == committed
    assert [[e.prompt for e in s.exchanges] for s in result.scores] == PROMPTS
    assert [e.probability for e in result.scores[2].exchanges] == [0.25, 0.25]
    # "x fact." and its context are too short to tell a language by: English rules, said so.
    assert result.scores[0].explanation == {
        "statements": [{"statement": "x fact.", "verdict": "yes", "p_supported": 0.75}],
        "language": "und",
        "sentence_rule": "language not determined: split by English rules",
    }
    assert [s.metric for s in result.scores[1:3]] == ["answer_relevance", "context_relevance"]
    assert result.scores_for("faithfulness") == [committed[0], committed[3]]
    # 1 + 2 + 2 calls a sample
    assert result.usage().model_calls == 10 and result.summary()[0].mean == 0.75
    with closing(sqlite3.connect(tmp_path / "out" / "scores.sqlite")) as db:
        stored = [Score.model_validate_json(p) for (p,) in db.execute("SELECT payload FROM scores")]
    assert sorted(stored, key=lambda s: (s.sample_id, s.metric)) == sorted(
        result.scores, key=lambda s: (s.sample_id, s.metric)
    )


def test_the_exports_streamed_from_the_store_are_those_written_from_memory(tmp_path):
    result = run(tmp_path / "out")
    write_outputs(result, tmp_path / "out")
    rows = lines(tmp_path / "out" / "scores.jsonl")
    assert [(r["sample_id"], r["metric"], r["value"]) for r in rows] == ROWS
    # The same scores held in memory, as before the store was read: the same bytes.
    held = Result(SAMPLES, result.metrics, list(result.scores), result.run)
    write_outputs(held, tmp_path / "held")
    for name in EXPORTS:
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "held" / name).read_bytes()
    # A run without a folder holds every score: the same rows, all but their timings.
    alone = run()
    assert all(isinstance(brief, Score) for brief in alone.briefs())
    write_outputs(alone, tmp_path / "alone")
    assert without_seconds(lines(tmp_path / "alone" / "scores.jsonl")) == without_seconds(rows)
    for name in EXPORTS[1:]:
        assert (tmp_path / "alone" / name).read_bytes() == (tmp_path / "out" / name).read_bytes()
    # Reading the store left none of its write-ahead log's files behind.
    assert not list((tmp_path / "out").glob("scores.sqlite-*"))


def test_a_resumed_run_exports_every_row_in_order(tmp_path):
    out = tmp_path / "out"
    first = run(out, samples=SAMPLES[:1])
    write_outputs(first, out)
    before = (out / "scores.jsonl").read_text().splitlines()
    judge = FakeJudge(responder=routed(REPLIES))
    rerun = run(out, judge=judge)
    assert (rerun.run.counts.resumed, rerun.run.counts.judged) == (3, 3)
    assert len(judge.history) == 5  # sample b only: 1 + 2 + 2 calls
    write_outputs(rerun, out)
    after = (out / "scores.jsonl").read_text().splitlines()
    assert [(r["sample_id"], r["metric"], r["value"]) for r in map(json.loads, after)] == ROWS
    assert after[:3] == before  # the resumed rows as the first run wrote them


def test_items_a_budget_stopped_are_held_and_exported_among_the_stored(tmp_path):
    with pytest.warns(BudgetWarning):
        partial = run(tmp_path / "out", budget=Budget(max_calls=3))
    # Calls 1-3 score a's faithfulness and answer relevance; the rest are not judged and not
    # saved: the result holds them whole.
    kinds = [type(brief) for brief in partial.briefs()]
    assert kinds == [StoredScore, StoredScore] + [Score] * 4
    write_outputs(partial, tmp_path / "out")
    rows = lines(tmp_path / "out" / "scores.jsonl")
    assert [(r["sample_id"], r["metric"], r["value"]) for r in rows] == [
        *ROWS[:2],
        *[(sample, metric, None) for sample, metric, _ in ROWS[2:]],
    ]
    assert all(r["unscored_reason"].startswith("not judged") for r in rows[2:])


def test_a_score_a_later_run_replaced_is_not_served_as_this_results(tmp_path):
    def flaky(request):
        if "z fact." in request.messages[-1].content:  # every question about sample b's answer
            raise JudgeError("connection reset")
        return routed(REPLIES)(request)

    out = tmp_path / "out"
    failed = run(out, judge=FakeJudge(responder=flaky), metrics=["faithfulness"], retries=0)
    assert [s.value for s in failed.briefs()] == [0.75, None]
    again = run(out, metrics=["faithfulness"])  # b was unscored: judged again, its row replaced
    assert [s.value for s in again.scores] == [0.75, 0.75]
    assert failed.scores[0] == again.scores[0]  # a's row is the one both runs read
    with pytest.raises(StoreError, match=r"the score of b \(faithfulness\) is no longer in .*"):
        failed.scores[1]
    assert failed.summary()[0].unscored == 1  # what the result keeps is still there


def test_a_result_whose_folder_is_gone_says_so(tmp_path):
    result = run(tmp_path / "out")
    shutil.rmtree(tmp_path / "out")
    with pytest.raises(StoreError) as caught:
        result.scores[0]
    assert str(caught.value).startswith(
        f"the run folder {tmp_path / 'out'} was removed (or moved) after the run, so its scores "
        "can no longer be read"
    )
    assert "later run" not in str(caught.value) and "damaged" not in str(caught.value)
    assert result.to_pandas()["faithfulness"].tolist() == [0.75, 0.75]
    assert not (tmp_path / "out").exists()  # reading made no store


def test_a_result_whose_folder_was_moved_or_lost_its_database_says_so(tmp_path):
    moved = run(tmp_path / "out")
    (tmp_path / "out").rename(tmp_path / "elsewhere")
    with pytest.raises(StoreError, match=r"the run folder .*out was removed \(or moved\)"):
        list(moved.scores)
    emptied = run(tmp_path / "second")
    (tmp_path / "second" / "scores.sqlite").unlink()
    with pytest.raises(
        StoreError,
        match=r"the scores database .*scores\.sqlite was removed \(or moved\) from its run "
        "folder after the run",
    ):
        emptied.scores[1]
    assert not (tmp_path / "second" / "scores.sqlite").exists()
    assert [s.value for s in emptied.briefs()] == [s.value for s in moved.briefs()]


def test_the_scores_change_as_a_list_does(tmp_path):
    scores = run(tmp_path / "out").scores
    first, changed = scores[0], scores[1].model_copy(update={"value": 0.5})
    scores[1] = changed  # held from now on
    assert scores[1] == changed and scores[1].exchanges == changed.exchanges
    del scores[2:]
    assert scores == [first, changed] and scores != [first]
    scores.append(first)
    assert [s.value for s in scores] == [0.75, 0.5, 0.75]
    scores.clear()
    assert len(scores) == 0 and list(scores) == []
