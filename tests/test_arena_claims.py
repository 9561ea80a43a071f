"""Pairwise decisions from claims, on a scripted judge, against figures worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import plugins
from ragmeter.arena.claim_judge import answer_figures, decide
from ragmeter.arena.data import Pair, load_pairs
from ragmeter.arena.judge import judge_pairs
from ragmeter.claims import ClaimTable
from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.viewer import open_run
from ragmeter.viewer.html import build_page

from .conftest import yes_no
from .test_reference_metrics import _checked

runner = CliRunner()

QUESTION = "How long is the Elbe, and where does it flow?"
REFERENCE = "The Elbe is 1,094 km long. It flows into the North Sea."
R1, R2 = "The Elbe is 1,094 km long.", "It flows into the North Sea."
PASSAGE = "The Elbe rises in the Krkonose mountains of the Czech Republic."

# Without passages: A is complete and correct with two uncertain checks; B is certain but
# leaves out the sea; C is wrong and says nothing of the reference.
A = "The Elbe is about 1,100 km long. It ends in the North Sea."
A1, A2 = "The Elbe is about 1,100 km long.", "It ends in the North Sea."
B = "The Elbe is 1,094 km long."
C = "The Elbe is 5 km long."
# With the passage: both state the length; D adds what the passage says, E invents.
D = "The Elbe is 1,094 km long. It rises in the Czech Republic."
D2 = "It rises in the Czech Republic."
E = "The Elbe is 1,094 km long. It is the longest river in Europe."
E2 = "It is the longest river in Europe."

SUPPORT = {
    (A1, REFERENCE): 1.0, (A2, REFERENCE): 0.5, (R1, A): 1.0, (R2, A): 0.5,
    (R1, REFERENCE): 1.0, (R1, B): 1.0, (R2, B): 0.0,
    (C, REFERENCE): 0.0, (R1, C): 0.0, (R2, C): 0.0,
    (D2, REFERENCE): 0.0, (R1, D): 1.0, (R2, D): 0.0,
    (E2, REFERENCE): 0.0, (R1, E): 1.0, (R2, E): 0.0,
    (R1, PASSAGE): 0.0, (D2, PASSAGE): 1.0,
}  # fmt: skip
"""P(supported) of each (claim, text); E2 against the passage is set by each test."""


def checker(grounded_e2: float = 0.6):
    """A judge answering each check from SUPPORT, with E2 in the passage at ``grounded_e2``."""
    support = {**SUPPORT, (E2, PASSAGE): grounded_e2}

    def respond(request: ChatRequest) -> ChatResponse:
        return yes_no(support[_checked(request)])

    return FakeJudge(responder=respond, model=f"elbe-checker-{grounded_e2}")


def pair(name: str, answer_a: str, answer_b: str, passages=(), label=None) -> Pair:
    return Pair(
        id=name,
        question=QUESTION,
        answer_a=answer_a,
        answer_b=answer_b,
        reference=REFERENCE,
        contexts=tuple(passages),
        label=label,
        design="complete",
    )


def decided(pairs, judge, out):
    battles = judge_pairs(pairs, judge=judge, out_dir=out, method="claims", cache=False)
    return {b.pair_id: b for b in battles}


# A: precision (1 + 0.5) / 2 = 0.75, recall (1 + 0.5) / 2 = 0.75, F1 0.75. d F1 / d precision =
# 2 R^2 / (P + R)^2 = 0.5, likewise for recall; each check weighs 0.5 / 2, and only the two at 0.5
# vary: variance 2 x 0.25^2 x 0.25 = 0.03125, standard error 0.1768.
# B: precision 1, recall 0.5, F1 2/3; every check certain, standard error 0.
# C: precision 0, recall 0, F1 0, standard error 0.
SE_A = math.sqrt(0.03125)


def test_without_passages_a_small_difference_ties_and_a_large_one_wins(tmp_path):
    battles = decided([pair("ab", A, B), pair("ca", C, A)], checker(), tmp_path)
    close = battles["ab"].claims
    assert (close.a.precision, close.a.recall, close.a.f1) == pytest.approx((0.75, 0.75, 0.75))
    assert close.a.unsupported is None and close.a.score == pytest.approx(0.75)
    assert close.a.standard_error == pytest.approx(SE_A)
    assert (close.b.f1, close.b.standard_error) == pytest.approx((2 / 3, 0.0), abs=1e-9)
    # 2/3 - 0.75 = -0.083, within one standard error of the difference (0.177): a tie.
    assert close.difference == pytest.approx(2 / 3 - 0.75)
    assert close.margin == pytest.approx(SE_A)
    assert battles["ab"].verdict == 0
    # C's 0 against A's 0.75: the difference (0.75) is outside the margin (0.177), B = A wins.
    assert battles["ca"].claims.difference == pytest.approx(0.75)
    assert battles["ca"].verdict == 1
    assert battles["ca"].orders == [] and battles["ca"].flipped is None


def test_with_passages_the_unsupported_claim_decides(tmp_path):
    # Both: precision 0.5 (the length), recall 0.5 (not the sea), F1 0.5. D's second claim is
    # in the passage: unsupported 0, score 0.5. E's is in no text: unsupported 1/2, score 0;
    # every check certain, so the margin is 0 and D wins.
    certain = decided([pair("de", D, E, [PASSAGE])], checker(0.0), tmp_path / "certain")["de"]
    assert certain.claims.a.unsupported == pytest.approx(0.0, abs=1e-9)
    assert certain.claims.b.unsupported == pytest.approx(0.5)
    assert (certain.claims.a.score, certain.claims.b.score) == pytest.approx((0.5, 0.0), abs=1e-9)
    assert certain.claims.margin == pytest.approx(0.0, abs=1e-9) and certain.verdict == -1
    # Without the passage nothing tells E's invention from a true claim: 0.5 each, a tie.
    bare = decided([pair("de", D, E)], checker(0.0), tmp_path / "bare")["de"]
    assert bare.claims.b.unsupported is None and bare.verdict == 0


@pytest.mark.parametrize(
    ("grounded", "unsupported", "error", "verdict"),
    [
        # E2 in the passage at 0.6: unsupported (1 x 0.4) / 2 = 0.2, score 0.3. Its grounding
        # check weighs (1 - 0) / 2 on the unsupported share: variance 0.25 x 0.6 x 0.4 = 0.06.
        # The difference 0.3 - 0.5 = -0.2 is within sqrt(0.06) = 0.245: a tie.
        (0.6, 0.2, math.sqrt(0.06), 0),
        # At 0.2: unsupported 0.4, score 0.1, variance 0.25 x 0.2 x 0.8 = 0.04; the difference
        # -0.4 is outside 0.2: D wins.
        (0.2, 0.4, 0.2, -1),
    ],
)
def test_an_uncertain_check_widens_the_margin(tmp_path, grounded, unsupported, error, verdict):
    battle = decided([pair("de", D, E, [PASSAGE])], checker(grounded), tmp_path)["de"]
    assert battle.claims.b.unsupported == pytest.approx(unsupported)
    assert battle.claims.b.standard_error == pytest.approx(error)
    assert battle.claims.margin == pytest.approx(error)
    assert battle.claims.difference == pytest.approx(0.5 - unsupported - 0.5)
    assert battle.verdict == verdict


def test_the_score_and_its_standard_error_off_a_table_worked_by_hand():
    table = ClaimTable(
        answer_claims=["x", "y"],
        reference_claims=["r", "s"],
        chunks=["c"],
        answer_in_reference=np.array([0.5, 1.0]),
        reference_in_answer=np.array([0.5, 1.0]),
        answer_in_chunks=np.array([[0.5], [0.0]]),
    )
    figures = answer_figures(table)
    # P = R = F1 = 0.75; unsupported (0.5 x 0.5 + 0) / 2 = 0.125; score 0.625.
    assert figures.score == pytest.approx(0.625) and figures.unsupported == pytest.approx(0.125)
    # Weights: x against the reference 0.5 / 2 (F1) + 0.5 / 2 (unsupported) = 0.5, y's check is
    # certain; x in the chunk (1 - 0.5) / 2 = 0.25; r in the answer 0.5 / 2 = 0.25.
    # Variance 0.5^2 x 0.25 + 0.25^2 x 0.25 + 0.25^2 x 0.25 = 0.09375.
    assert figures.standard_error == pytest.approx(math.sqrt(0.09375))
    # Against a copy scored 0.1: the difference -0.525 is outside sqrt(2 x 0.09375) = 0.433.
    verdict, decision = decide(figures, figures.model_copy(update={"score": 0.1}))
    assert verdict == -1 and decision.margin == pytest.approx(math.sqrt(2 * 0.09375))


def test_each_answer_is_checked_once_and_a_rerun_asks_nothing(tmp_path):
    judge = checker()
    pairs = [pair("ab", A, B), pair("ca", C, A), pair("bc", B, C)]
    judge_pairs(pairs, judge=judge, out_dir=tmp_path, method="claims", cache=False)
    # A: 2 claims against the reference, 2 reference claims against A; B: 1 + 2; C: 1 + 2.
    assert len(judge.history) == 4 + 3 + 3
    fresh = checker()  # the same judge by identity, in a new process
    again = decided(pairs, fresh, tmp_path)
    assert fresh.history == []
    assert {k: b.verdict for k, b in again.items()} == {"ab": 0, "ca": 1, "bc": -1}
    run = json.loads((tmp_path / "arena_run.json").read_text())
    assert run["method"] == "claims" and run["prompt"]["name"] == "arena.claims"
    assert "orders" not in run and run["usage_this_run"]["model_calls"] == 0


def test_a_pair_without_a_reference_is_unscored_and_the_reference_design_refused(tmp_path):
    bare = Pair(id="x", question=QUESTION, answer_a=A, answer_b=B, design="complete")
    (battle,) = decided([bare], checker(), tmp_path).values()
    assert battle.verdict is None
    assert "answer A: the pair has no reference answer" in battle.unscored_reason
    against = bare.model_copy(update={"design": "reference", "reference": REFERENCE})
    with pytest.raises(ValueError, match="reference design"):
        decided([against], checker(), tmp_path)


# -- the command line ---------------------------------------------------------------------------


def create_checker(model: str = "", **_: object) -> FakeJudge:
    return checker(0.0)


@pytest.fixture
def elbe_checker(monkeypatch, no_user_cache):
    monkeypatch.setitem(plugins.BUILTINS["judge"], "elbe", f"{__name__}:create_checker")


def pairs_file(tmp_path) -> str:
    rows = [
        {"question": QUESTION, "answer_a": D, "answer_b": E, "reference": REFERENCE,
         "contexts": [PASSAGE], "label": -1},
        {"question": QUESTION, "answer_a": C, "answer_b": B, "reference": REFERENCE, "label": 1},
        {"question": QUESTION, "answer_a": A, "answer_b": B, "reference": REFERENCE, "label": 1},
    ]  # fmt: skip
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_pairs_file_carries_its_reference_and_passages(tmp_path):
    first, second, _ = load_pairs(pairs_file(tmp_path))
    assert (first.reference, first.contexts) == (REFERENCE, (PASSAGE,))
    assert second.contexts == ()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "q", "answer_a": "a", "answer_b": "b", "contexts": "x"}))
    with pytest.raises(ValueError, match="contexts"):
        load_pairs(bad)


def test_agreement_with_the_claims_method(tmp_path, elbe_checker):
    out = tmp_path / "agree"
    result = runner.invoke(
        app,
        ["arena", "agreement", pairs_file(tmp_path), "--method", "claims", "--judge", "elbe",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "agreement.json").read_text())
    # D beats E (the people agree), B beats C (agree), A against B ties (the people chose B).
    assert [json.loads(line)["verdict"] for line in (out / "battles.jsonl").open()] == [-1, 1, 0]
    assert report["verdict"]["accuracy"] == pytest.approx(2 / 3)
    assert report["flips"] == 0 and report["by_combination"] == {}
    assert "first order" not in result.output and "baseline" in result.output
    (section,) = build_page([open_run(out)])["sections"]
    assert [row["cells"][0] for row in section["table"]["rows"]] == [
        "verdict", "baseline: longer answer"
    ]  # fmt: skip


def test_judge_with_the_claims_method_and_its_refusals(tmp_path, elbe_checker):
    out = tmp_path / "run"
    args = ["arena", "judge", "--pairs", pairs_file(tmp_path), "--judge", "elbe", "--out", str(out)]
    result = runner.invoke(app, [*args, "--method", "claims"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "arena_run.json").read_text())["method"] == "claims"
    assert runner.invoke(app, [*args, "--method", "vibes"]).exit_code == 2
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "e", "question": QUESTION, "reference": REFERENCE}))
    answers = tmp_path / "s.jsonl"
    answers.write_text(json.dumps({"id": "e", "answer": A}))
    refused = runner.invoke(
        app,
        ["arena", "judge", str(questions), "--answers", f"s={answers}", "--method", "claims",
         "--judge", "elbe", "--out", str(tmp_path / "ref")],
    )  # fmt: skip
    assert refused.exit_code == 2 and "reference design" in " ".join(refused.output.split())
