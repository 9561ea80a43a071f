"""AttributionBench scoring of the faithfulness verifier, by hand-worked examples."""

from __future__ import annotations

import json

import pytest

from ragmeter.evidence import utf8_tokens
from ragmeter.judges.fake import FakeJudge
from ragmeter.meta.attribution import (
    MAX_REFERENCE_TOKENS,
    Claim,
    Verdict,
    calibrate_threshold,
    classify,
    load_attribution,
    verify_claims,
)

from .conftest import yes_no


def verdicts(labels, probabilities):
    return [
        Verdict(id=str(i), label=label, p_supported=p)
        for i, (label, p) in enumerate(zip(labels, probabilities, strict=True))
    ]


def test_accuracy_macro_f1_and_auc_by_hand():
    result = classify(verdicts([True, True, False, False], [0.9, 0.4, 0.6, 0.1]), 0.5)
    # predicted [T, F, T, F]: 2 of 4 right; each class has tp 1, fp 1, fn 1 -> F1 1/2
    assert (result.accuracy, result.f1_supported, result.f1_unsupported) == (0.5, 0.5, 0.5)
    assert result.macro_f1 == 0.5
    # supported outscores unsupported in 3 of the 4 cross pairs
    assert result.roc_auc == 0.75


def test_calibration_picks_the_best_macro_f1_nearest_one_half():
    rows = verdicts([True, True, False, False], [0.9, 0.4, 0.6, 0.1])
    # t=0.4 and t=0.9 both give macro-F1 (4/5 + 2/3) / 2; 0.4 is nearer 0.5
    assert calibrate_threshold(rows) == 0.4
    assert classify(rows, 0.4).macro_f1 == pytest.approx((4 / 5 + 2 / 3) / 2)


def test_unscored_claims_count_as_wrong():
    rows = [
        Verdict(id="a", label=True, p_supported=None, unscored_reason="x"),
        Verdict(id="b", label=False, p_supported=0.1),
    ]
    result = classify(rows)
    assert (result.accuracy, result.unscored) == (0.5, 1)


def test_loader_and_verifier_show_question_and_cut_long_references(tmp_path):
    path = tmp_path / "ab.jsonl"
    rows = [
        {
            "id": "1",
            "question": "who walked on the moon first",
            "claim": "Neil Armstrong",
            "references": ["Neil Armstrong was the first person to walk on the Moon."],
            "attribution_label": "attributable",
        },
        {
            "id": "2",
            "question": "q",
            "claim": "c",
            # About 2,100 tokens at three bytes a token, the sentence that bears on the claim
            # last: over MAX_REFERENCE_TOKENS, so the unrelated filler is what is left out.
            "references": ["The weather was mild that year. " * 200 + "The claim c is true."],
            "attribution_label": "not attributable",
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    claims = load_attribution(path)
    assert [c.label for c in claims] == [True, False]
    judge = FakeJudge([yes_no(0.8), yes_no(0.3)])
    result = verify_claims(claims, judge, out_dir=tmp_path / "out", cache=False)
    assert [v.p_supported for v in result] == pytest.approx([0.8, 0.3])
    assert [v.truncated for v in result] == [False, True]
    assert result[1].left_out["sentences"] > 0
    assert result[1].left_out["of_sentences"] == 201
    cut = judge.history[1].messages[-1].content
    assert "The claim c is true." in cut
    assert utf8_tokens(cut) < MAX_REFERENCE_TOKENS + 200
    shown = judge.history[0].messages[-1].content
    assert "In answer to the question 'who walked on the moon first': Neil Armstrong" in shown
    # Resumed from the folder: no further calls.
    again = verify_claims(claims, FakeJudge(), out_dir=tmp_path / "out", cache=False)
    assert [v.p_supported for v in again] == pytest.approx([0.8, 0.3])


def test_a_bad_label_names_row_and_field(tmp_path):
    path = tmp_path / "ab.jsonl"
    path.write_text(json.dumps({"claim": "c", "references": [], "attribution_label": "yes"}) + "\n")
    with pytest.raises(ValueError, match="row 1, field 'attribution_label'"):
        load_attribution(path)


def test_claim_model_round_trips():
    claim = Claim(id="1", question="", claim="c", references=["r"], label=True)
    assert Claim.model_validate_json(claim.model_dump_json()) == claim
