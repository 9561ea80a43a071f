"""WikiEval meta-evaluation on the scripted judge: loading, pair outcomes, baselines."""

from __future__ import annotations

import json

import pytest

from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.meta.pairs import PairOutcome, agreement, compare
from ragmeter.meta.wikieval import load_wikieval, run_wikieval

from .conftest import yes_no

ROW = {
    "id": 7,
    "question": "Who founded Acme?",
    "source": None,
    "context_v1": ["Acme was founded by Ada. It makes anvils."],
    "context_v2": ["Acme was founded by Ada. It makes anvils. Anvils are heavy. Iron is a metal."],
    "answer": "Ada founded Acme.",
    "ungrounded_answer": "Bob founded Acme.",
    "poor_answer": "Acme makes anvils.",
}


def test_rows_become_three_pairs_sharing_the_good_sample(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(ROW) + "\n")
    pairs = load_wikieval(path)
    assert [p.dimension for p in pairs] == ["faithfulness", "answer_relevance", "context_relevance"]
    assert pairs[0].rejected.answer == "Bob founded Acme."
    assert pairs[1].rejected.answer == "Acme makes anvils."
    assert pairs[2].rejected.contexts == ROW["context_v2"]
    assert pairs[0].preferred.key == pairs[1].preferred.key == pairs[2].preferred.key


def test_pair_records_load_too(tmp_path):
    path = tmp_path / "p.jsonl"
    record = {
        "id": 1,
        "dimension": "context_relevance",
        "question": "Q?",
        "answer": "A.",
        "preferred": ["short"],
        "rejected": ["short", "long"],
    }
    path.write_text(json.dumps(record) + "\n")
    (pair,) = load_wikieval(path)
    assert pair.preferred.contexts == ["short"] and pair.rejected.answer == "A."
    path.write_text(json.dumps({"id": 1, "dimension": "faithfulness", "question": "Q"}) + "\n")
    with pytest.raises(ValueError, match="row 1, field 'context' is missing"):
        load_wikieval(path)


def test_ties_count_half_and_unscored_pairs_count_as_ties():
    assert (compare(0.9, 0.1), compare(0.1, 0.9), compare(0.5, 0.5), compare(None, 1)) == (
        1.0,
        0.0,
        0.5,
        None,
    )
    outcomes = [
        PairOutcome(
            pair_id=str(i),
            dimension="d",
            method="m",
            preferred_value=None,
            rejected_value=None,
            outcome=o,
        )
        for i, o in enumerate([1.0, 1.0, 0.5, 0.0, None])
    ]
    result = agreement("m", "d", outcomes)
    assert result.accuracy == pytest.approx((1 + 1 + 0.5 + 0 + 0.5) / 5)
    assert (result.ties, result.unscored, result.pairs) == (1, 1, 5)


def judge_for_wikieval(request: ChatRequest) -> str | ChatResponse:
    system, user = request.messages[0].content, request.messages[-1].content
    if "create one or more statements" in system:
        return json.dumps({"statements": [user.split("<answer>\n")[1].split("\n")[0]]})
    if "whether a statement is supported" in system:
        return yes_no(0.9 if "Ada founded" in user else 0.2)
    if "whether the given answer is noncommittal" in system:  # both answers commit to one
        return json.dumps({"noncommittal": False})
    if "one sentence taken from a retrieved context" in system:  # context relevance
        return yes_no(0.9 if "founded" in user.split("<sentence>")[1] else 0.1)
    if "whether an answer addresses" in system:  # the poor answer skips "who"
        return yes_no(0.9 if "Ada founded" in user else 0.4)
    if "in the range 0-10" in system:  # GPT Score: always 7 -> every pair a tie
        return json.dumps({"score": 7})
    if "number of the better" in system:  # GPT Ranking: always the first shown
        return json.dumps({"better": 1})
    raise AssertionError(system[:60])


def test_run_wikieval_counts_agreement_for_each_method(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW | {"id": 8}) + "\n")
    report = run_wikieval(
        load_wikieval(path),
        judge=FakeJudge(responder=judge_for_wikieval),
        embedder=HashingEmbedder(),
        out_dir=tmp_path / "out",
        cache=False,
    )
    table = {(a.method, a.dimension): a for a in report.agreements}
    for dimension in ("faithfulness", "answer_relevance", "context_relevance"):
        assert table["ragmeter", dimension].accuracy == 1.0
        # A constant rating ties every pair; a first-position judge ties in both orders.
        assert table["GPT Score", dimension].accuracy == 0.5
        assert table["GPT Score", dimension].ties == 2
        assert table["GPT Ranking", dimension].accuracy == 0.5
    faith = next(
        o for o in report.outcomes if o.method == "ragmeter" and o.dimension == "faithfulness"
    )
    assert (faith.preferred_value, faith.rejected_value) == pytest.approx((0.9, 0.2))
    # sentences needed at P >= 0.5: context_v1 has 1 of 2; context_v2 has 1 of 4
    cr = next(
        o for o in report.outcomes if o.method == "ragmeter" and o.dimension == "context_relevance"
    )
    assert (cr.preferred_value, cr.rejected_value) == pytest.approx((0.5, 0.25))
