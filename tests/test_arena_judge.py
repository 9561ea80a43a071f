"""The pairwise judge on the scripted judge: both-order logic, unscored replies, resume, designs."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable

import pytest

from ragmeter.arena.battles import JUDGEMENTS_DB, RUN_FILE, OrderVerdict, read_battles
from ragmeter.arena.data import Pair, Question, SystemAnswers
from ragmeter.arena.designs import complete_pairs, design_pairs, reference_pairs
from ragmeter.arena.judge import (
    MAX_TOKENS,
    PAIRWISE,
    RATING_ALTERNATIVES,
    combine,
    expected_preference,
    judge_pair,
    judge_pairs,
    judgement_key,
    preference_in_pair,
    presentation_orders,
    rating_probabilities,
)
from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError, TokenLogprobs, identity_of
from ragmeter.judges.fake import FakeJudge


def rating(value: int, reasoning: str = "because") -> str:
    return json.dumps({"reasoning": reasoning, "rating": value})


def shown(request: ChatRequest) -> tuple[str, str]:
    """The two answers of the pair being judged, in the order the judge sees them."""
    text = request.messages[-1].content
    first = re.search(r"<answer 1>\n(.*)\n</answer 1>", text, re.S)
    second = re.search(r"<answer 2>\n(.*)\n</answer 2>", text, re.S)
    assert first and second
    return first[1], second[1]


def prefers(best: Callable[[str], int]) -> Callable[[ChatRequest], str]:
    """A consistent judge: rates the answer with the higher ``best`` score, 0 on equal scores."""

    def respond(request: ChatRequest) -> str:
        one, two = (best(answer) for answer in shown(request))
        return rating(0 if one == two else (1 if one > two else 2))

    return respond


PAIR = Pair(
    id="p1",
    question="Why is the sky blue?",
    answer_a="Rayleigh scattering.",
    answer_b="Because it reflects the sea.",
    system_a="good",
    system_b="bad",
)


def test_both_orders_are_ab_then_ba_and_a_random_order_is_seeded_per_pair():
    assert presentation_orders(PAIR, "both") == ["ab", "ba"]
    pairs = [PAIR.model_copy(update={"id": f"p{i}"}) for i in range(200)]
    first = [presentation_orders(p, "random", seed=3)[0] for p in pairs]
    assert first == [presentation_orders(p, "random", seed=3)[0] for p in pairs]
    assert 70 < first.count("ab") < 130  # a fair coin, not a constant
    assert first != [presentation_orders(p, "random", seed=4)[0] for p in pairs]
    with pytest.raises(ValueError):
        presentation_orders(PAIR, "sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rating_value", "order", "preference"),
    [(1, "ab", -1), (2, "ab", 1), (0, "ab", 0), (1, "ba", 1), (2, "ba", -1), (0, "ba", 0)],
)
def test_a_rating_names_a_position_which_maps_back_to_a_or_b(rating_value, order, preference):
    assert preference_in_pair(rating_value, order) == preference


def _v(
    order: str, preference: int | None, probabilities: dict[str, float] | None = None
) -> OrderVerdict:
    return OrderVerdict(
        order=order,  # type: ignore[arg-type]
        preference=preference,  # type: ignore[arg-type]
        probabilities=probabilities,
        unscored_reason=None if preference is not None else "unreadable",
    )


def test_agreement_is_the_verdict_disagreement_a_tie_and_unscored_stays_unscored():
    assert combine([_v("ab", -1), _v("ba", -1)]) == (-1, False, None)
    assert combine([_v("ab", 0), _v("ba", 0)]) == (0, False, None)
    assert combine([_v("ab", -1), _v("ba", 1)]) == (0, True, None)
    assert combine([_v("ab", 1), _v("ba", 0)]) == (0, True, None)
    assert combine([_v("ba", 1)]) == (1, None, None)
    verdict, flipped, reason = combine([_v("ab", -1), _v("ba", None)])
    assert (verdict, flipped) == (None, None) and reason == "order ba: unreadable"


def test_summed_orders_let_not_sure_defer_and_opposite_picks_tie():
    assert combine([_v("ab", -1), _v("ba", -1)], "sum") == (-1, False, None)
    assert combine([_v("ab", 1), _v("ba", 0)], "sum") == (1, True, None)
    assert combine([_v("ab", 0), _v("ba", -1)], "sum") == (-1, True, None)
    assert combine([_v("ab", -1), _v("ba", 1)], "sum") == (0, True, None)
    assert combine([_v("ab", 0), _v("ba", 0)], "sum") == (0, False, None)
    assert combine([_v("ab", 1), _v("ba", None)], "sum")[0] is None
    with pytest.raises(ValueError, match="combine must be"):
        combine([_v("ab", 1), _v("ba", 1)], "average")  # type: ignore[arg-type]


def test_expected_preference_weighs_the_ratings_by_their_probabilities_in_pair_terms():
    probabilities = {"1": 0.7, "2": 0.2, "0": 0.1}
    # A shown first: rating 1 is A (-1), rating 2 is B (+1): 0.2 - 0.7
    assert expected_preference(_v("ab", -1, probabilities)) == pytest.approx(-0.5)
    # B shown first: rating 1 is B: 0.7 - 0.2
    assert expected_preference(_v("ba", 1, probabilities)) == pytest.approx(0.5)
    assert expected_preference(_v("ab", 0)) == 0  # no probabilities: the preference itself
    assert expected_preference(_v("ab", None, probabilities)) is None


def test_confidence_settles_opposite_picks_and_otherwise_sums():
    # Both orders pick the answer shown first: A at 0.9 vs 0.1, then B at 0.6 vs 0.3. Weighted:
    # (0.1 - 0.9) + (0.6 - 0.3) = -0.5, so A, the more confident pick.
    sure_a = _v("ab", -1, {"1": 0.9, "2": 0.1, "0": 0.0})
    unsure_b = _v("ba", 1, {"1": 0.6, "2": 0.3, "0": 0.1})
    assert combine([sure_a, unsure_b], "confidence") == (-1, True, None)
    assert combine([sure_a, unsure_b], "sum") == (0, True, None)
    strong_b = _v("ba", 1, {"1": 0.95, "2": 0.05, "0": 0.0})  # (-0.8) + 0.9 = 0.1: B
    assert combine([sure_a, strong_b], "confidence") == (1, True, None)
    # Not a reversal: the written ratings decide as under "sum", whatever the probabilities.
    leaning_a = _v("ba", 0, {"1": 0.1, "2": 0.4, "0": 0.5})  # not sure, leaning A
    assert combine([_v("ab", 1, {"1": 0.4, "2": 0.5, "0": 0.1}), leaning_a], "confidence") == (
        1,
        True,
        None,
    )
    unsure = {"1": 0.3, "2": 0.1, "0": 0.6}
    assert combine([_v("ab", 0, unsure), _v("ba", 0, unsure)], "confidence") == (0, False, None)
    # Without probabilities a reversal stays a tie, as under "sum"; also with them on one side
    # only, where a bare -1 would outweigh any probability on the other.
    assert combine([_v("ab", -1), _v("ba", 1)], "confidence") == (0, True, None)
    assert combine([_v("ab", -1), strong_b], "confidence") == (0, True, None)
    assert combine([_v("ab", -1), _v("ba", None)], "confidence")[0] is None


def _tokens(pieces: list[str], at: int, top: dict[str, float]) -> list[TokenLogprobs]:
    return [
        TokenLogprobs(
            token=piece,
            logprob=math.log(top.get(piece.strip(), 0.5)) if n == at else -0.01,
            top={k: math.log(v) for k, v in top.items()} if n == at else {piece: -0.01},
        )
        for n, piece in enumerate(pieces)
    ]


def test_rating_probabilities_are_read_where_the_rating_digit_was_written():
    pieces = ['{"', "reasoning", '":', ' "', "2", " is", " better", '",', ' "', "rating", '":']
    # The "2" in the reasoning is not the rating; the digit after "rating": is.
    top = {"2": 0.6, "1": 0.2, "0": 0.1, "}": 0.05}
    logprobs = _tokens([*pieces, " ", "2", "}"], at=12, top=top)
    assert rating_probabilities(logprobs) == pytest.approx(
        {"1": 0.2 / 0.9, "2": 0.6 / 0.9, "0": 0.1 / 0.9}
    )
    # A tokenizer that writes the space and the digit as one token (" 2"), with " 1" beside it
    merged = _tokens([*pieces, " 2", "}"], at=11, top={" 2": 0.5, " 1": 0.5})
    assert rating_probabilities(merged) == pytest.approx({"1": 0.5, "2": 0.5, "0": 0.0})


def test_rating_probabilities_are_none_without_log_probabilities_or_a_rating():
    assert rating_probabilities(None) is None and rating_probabilities([]) is None
    assert rating_probabilities(_tokens(['{"', "rating", '":', " 7", "}"], 3, {"7": 1.0})) is None
    assert (
        rating_probabilities(_tokens(['{"', "reasoning", '":', ' "', "1"], 4, {"1": 1.0})) is None
    )


def test_the_judge_keeps_the_probabilities_of_its_ratings_and_confidence_uses_them():
    def reply(rating_value: int, top: dict[str, float]) -> ChatResponse:
        text = json.dumps({"reasoning": "r", "rating": rating_value})
        head, digit, tail = text.rpartition(str(rating_value))
        return ChatResponse(
            text=text,
            logprobs=[
                TokenLogprobs(token=head, logprob=0.0),
                TokenLogprobs(
                    token=digit,
                    logprob=math.log(top[digit]),
                    top={k: math.log(v) for k, v in top.items()},
                ),
                TokenLogprobs(token=tail, logprob=0.0),
            ],
        )

    # Position-biased: the first answer both times, surer when it is A.
    judge = FakeJudge(
        [reply(1, {"1": 0.8, "2": 0.15, "0": 0.05}), reply(1, {"1": 0.5, "2": 0.4, "0": 0.1})]
    )
    battle = judge_pair(PAIR, judge, combine_rule="confidence")
    assert all(r.top_logprobs == RATING_ALTERNATIVES for r in judge.history)
    assert battle.orders[0].probabilities == pytest.approx({"1": 0.8, "2": 0.15, "0": 0.05})
    assert (battle.verdict, battle.flipped) == (-1, True)  # (0.15 - 0.8) + (0.5 - 0.4) < 0
    # The same judgements under "sum" tie: opposite picks.
    assert combine(battle.orders, "sum")[0] == 0


def test_judgements_without_probabilities_keep_their_key_and_with_them_get_another():
    judge = FakeJudge()
    shown = [PAIR.question, PAIR.answer_b, PAIR.answer_a]
    plain = json.dumps([PAIRWISE.version, identity_of(judge).digest, 200, *shown])
    assert judgement_key(PAIR, "ba", judge, 200) == hashlib.sha256(plain.encode()).hexdigest()
    assert judgement_key(PAIR, "ba", judge, 200, RATING_ALTERNATIVES) != judgement_key(
        PAIR, "ba", judge, 200
    )


def test_a_judge_without_log_probabilities_keeps_none_and_confidence_is_the_sum():
    battle = judge_pair(PAIR, FakeJudge([rating(1), rating(1)]), combine_rule="confidence")
    assert [o.probabilities for o in battle.orders] == [None, None]
    assert (battle.verdict, battle.flipped) == (0, True)


def test_a_consistent_judge_gives_a_verdict_and_a_position_biased_one_a_flip():
    consistent = FakeJudge([rating(1), rating(2)])  # A first: 1 = A; B first: 2 = A
    battle = judge_pair(PAIR, consistent)
    assert (battle.verdict, battle.flipped) == (-1, False)
    assert [o.rating for o in battle.orders] == [1, 2]
    assert shown(consistent.history[0]) == (PAIR.answer_a, PAIR.answer_b)
    assert shown(consistent.history[1]) == (PAIR.answer_b, PAIR.answer_a)

    biased = FakeJudge([rating(1), rating(1)])  # always the first answer shown
    battle = judge_pair(PAIR, biased)
    assert (battle.verdict, battle.flipped) == (0, True)
    assert [o.preference for o in battle.orders] == [-1, 1]


def test_the_request_carries_the_rubric_examples_schema_and_a_small_budget():
    judge = FakeJudge([rating(1), rating(2)])
    judge_pair(PAIR, judge)
    request = judge.history[0]
    assert "prefer the all truthful one" in request.messages[0].content
    assert len(request.messages) == 1 + 2 * len(PAIRWISE.examples) + 1
    assert [json.loads(m.content)["rating"] for m in request.messages if m.role == "assistant"] == [
        1,
        2,
        0,
    ]
    assert request.json_schema["properties"]["rating"]["enum"] == [0, 1, 2]
    assert list(request.json_schema["properties"]) == ["reasoning", "rating"]  # think, then rate
    assert request.max_tokens == MAX_TOKENS == 200
    assert request.top_logprobs == 0  # only the confidence rule asks for log-probabilities
    assert "<query>\nWhy is the sky blue?\n</query>" in request.messages[-1].content


def test_an_unparseable_reply_is_retried_then_unscored_never_a_tie():
    judge = FakeJudge([rating(1), "no idea", "still no", '{"rating": 7}'])
    battle = judge_pair(PAIR, judge, retries=2)
    assert battle.verdict is None and battle.flipped is None
    assert battle.orders[0].preference == -1 and battle.orders[1].preference is None
    assert "unreadable reply" in battle.unscored_reason
    assert "after 3 attempts" in battle.unscored_reason
    assert len(judge.history) == 4  # 1 + (1 + 2 retries)
    assert "That reply was not usable" in judge.history[2].messages[-1].content


def test_a_reply_repaired_on_retry_counts():
    judge = FakeJudge(["<rating>1</rating>", rating(2)])
    battle = judge_pair(PAIR, judge, orders="random", seed=0)
    assert battle.scored and len(battle.orders) == 1
    assert battle.orders[0].usage.model_calls == 2


def test_a_failing_judge_call_is_unscored_with_its_reason():
    judge = FakeJudge([JudgeError("connection refused")] * 3)
    battle = judge_pair(PAIR, judge, orders="random", retries=2)
    assert battle.verdict is None and "connection refused" in battle.unscored_reason


PAIRS = [
    Pair(
        id=f"q{i}",
        question=f"question {i}?",
        answer_a=f"good answer {i}",
        answer_b=f"bad answer {i}",
        system_a="good",
        system_b="bad",
    )
    for i in range(4)
]


def quality(answer: str) -> int:
    return 1 if answer.startswith("good") else 0


def test_judging_commits_as_it_goes_and_resumes_without_any_call(tmp_path):
    first_judge = FakeJudge(responder=prefers(quality))
    first = judge_pairs(PAIRS, judge=first_judge, out_dir=tmp_path, cache=False)
    assert [b.verdict for b in first] == [-1, -1, -1, -1] and len(first_judge.history) == 8
    assert (tmp_path / JUDGEMENTS_DB).exists()
    assert read_battles(tmp_path) == first
    assert (first[0].words_a, first[0].words_b) == (3, 3)  # "good answer 0", "bad answer 0"
    run = json.loads((tmp_path / RUN_FILE).read_text())
    assert run["usage_this_run"]["model_calls"] == 8 and run["orders"] == "both"

    # A judge that fails on any call: everything comes from the store, with identical results.
    broken = FakeJudge()
    second = judge_pairs(PAIRS, judge=broken, out_dir=tmp_path, cache=False)
    assert broken.history == []
    strip = {"orders": {"__all__": {"cached"}}}
    assert [b.model_dump(exclude=strip) for b in second] == [
        b.model_dump(exclude=strip) for b in first
    ]
    assert all(o.cached for b in second for o in b.orders)
    run = json.loads((tmp_path / RUN_FILE).read_text())
    assert run["usage_this_run"]["model_calls"] == 0


def test_an_interrupted_run_keeps_what_was_judged(tmp_path):
    calls = {"n": 0}

    def crash_after_five(request: ChatRequest) -> str:
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt
        return prefers(quality)(request)

    with pytest.raises(KeyboardInterrupt):
        judge_pairs(
            PAIRS, judge=FakeJudge(responder=crash_after_five), out_dir=tmp_path, cache=False
        )
    resumed_judge = FakeJudge(responder=prefers(quality))
    resumed = judge_pairs(PAIRS, judge=resumed_judge, out_dir=tmp_path, cache=False)
    assert len(resumed_judge.history) == 3  # 8 judgements, 5 were committed before the crash
    assert [b.verdict for b in resumed] == [-1, -1, -1, -1]


def test_unscored_judgements_are_retried_on_the_next_run(tmp_path):
    first = judge_pairs(
        PAIRS[:1], judge=FakeJudge(["x"] * 6), out_dir=tmp_path, cache=False, retries=2
    )
    assert first[0].verdict is None
    second = judge_pairs(
        PAIRS[:1], judge=FakeJudge(responder=prefers(quality)), out_dir=tmp_path, cache=False
    )
    assert second[0].verdict == -1


def test_the_same_answers_in_the_same_positions_are_judged_once(tmp_path):
    swapped = [
        p.model_copy(
            update={
                "id": p.id + "-swapped",
                "answer_a": p.answer_b,
                "answer_b": p.answer_a,
                "system_a": "bad",
                "system_b": "good",
            }
        )
        for p in PAIRS
    ]
    judge = FakeJudge(responder=prefers(quality))
    judge_pairs(PAIRS, judge=judge, out_dir=tmp_path, cache=False)
    battles = judge_pairs(swapped, judge=judge, out_dir=tmp_path, cache=False)
    assert len(judge.history) == 8  # the swapped pairs' two orders were already judged
    assert [b.verdict for b in battles] == [1, 1, 1, 1]  # "good" is now B, and still wins


def test_duplicate_pair_ids_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unique"):
        judge_pairs([PAIR, PAIR], judge=FakeJudge(), out_dir=tmp_path, cache=False)


QUESTIONS = [
    Question(id=f"{d}{i}", question=f"{d} question {i}?", reference=f"ref {d}{i}", domain=d)
    for d in ("x", "y")
    for i in range(3)
] + [Question(id="noref", question="no reference?", domain="x")]
SYSTEMS = [
    SystemAnswers(name="s1", answers={q.id: f"s1 {q.id}" for q in QUESTIONS}),
    SystemAnswers(name="s2", answers={**{q.id: f"s2 {q.id}" for q in QUESTIONS}, "x0": None}),
    SystemAnswers(name="s3", answers={q.id: f"s3 {q.id}" for q in QUESTIONS if q.id != "y2"}),
]


def test_reference_design_pairs_each_answer_with_the_reference():
    plan = reference_pairs(QUESTIONS, SYSTEMS)
    assert len(plan.pairs) == 3 * 6 - 2
    assert plan.missing == {"s2": 1, "s3": 1} and plan.without_reference == 1
    pair = plan.pairs[0]
    assert (pair.system_a, pair.system_b, pair.answer_b, pair.design) == (
        "s1",
        "reference",
        "ref x0",
        "reference",
    )
    with pytest.raises(ValueError, match="reference"):
        reference_pairs(QUESTIONS, [SystemAnswers(name="reference", answers={})])


def test_complete_design_samples_per_domain_and_pairs_every_system():
    plan = complete_pairs(QUESTIONS, SYSTEMS, per_domain=2, seed=1)
    questions = sorted({p.question_id for p in plan.pairs})
    # x0 and y2 lack an answer from some system; 2 of the remaining per domain, 3 pairs each.
    assert len(plan.pairs) == 2 * 2 * 3 and "x0" not in questions and "y2" not in questions
    assert sorted({p.domain for p in plan.pairs}) == ["x", "y"]
    assert {(p.system_a, p.system_b) for p in plan.pairs} == {
        ("s1", "s2"),
        ("s1", "s3"),
        ("s2", "s3"),
    }
    again = complete_pairs(QUESTIONS, SYSTEMS, per_domain=2, seed=1)
    assert [p.id for p in again.pairs] == [p.id for p in plan.pairs]
    both = design_pairs(QUESTIONS, SYSTEMS, "both", per_domain=2, seed=1)
    assert len(both.pairs) == 16 + 12 and both.missing == {"s2": 1, "s3": 1}
