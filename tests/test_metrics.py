"""Each metric on the scripted judge, against values worked out by hand."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ragmeter.claims import Statements, claims_nothing, claims_only, makes_claim
from ragmeter.judges.base import JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness
from ragmeter.metrics.answer_correctness import AnswerCorrectness
from ragmeter.metrics.context_relevance import SENTENCE_NEEDED
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession

from .conftest import yes_no

SAMPLE = Sample(
    id="s1",
    question="alpha beta",
    contexts=["Paris is the capital of France. It has 2.1 million inhabitants."],
    answer="Paris is the capital of France. It has 9 million inhabitants. It is in Europe.",
)
# Answer relevance's off-topic gate with hashed words: the answer shares no word with "alpha
# beta" (0), and with the context 12 counts (is and it twice in the answer) over norms of
# sqrt(19) and sqrt(12): 12 / sqrt(228) = 0.7947, above 0.05, so the judge is asked.
GATE = {"question_similarity": 0.0, "context_similarity": 0.7947}


def verdicts(*flags: str) -> str:
    return json.dumps(
        {
            "verdicts": [
                {"statement": f"s{i}", "reason": "r", "verdict": f} for i, f in enumerate(flags)
            ]
        }
    )


STATEMENTS = json.dumps(
    {
        "statements": [
            "Paris is the capital of France.",
            "Paris has 9 million inhabitants.",
            "Paris is in Europe.",
        ]
    }
)


WRITTEN_STATEMENTS = Faithfulness(statements="generate")
"""The judge writes statements first (the paper's step 1), each then verified by a Yes/No."""
PAPER_FAITHFULNESS = Faithfulness(statements="generate", verdicts="generate")
"""The paper's way, one reply per step: these tests script the judge's JSON replies."""


def test_faithfulness_is_supported_over_total():
    judge = FakeJudge([STATEMENTS, verdicts("yes", "no", "no")])
    score = PAPER_FAITHFULNESS.score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(1 / 3)
    assert [s["verdict"] for s in score.explanation["statements"]] == ["yes", "no", "no"]
    assert score.explanation["statements"][1]["statement"] == "Paris has 9 million inhabitants."
    # The verification prompt carries the context as tagged data and the numbered statements.
    verify = judge.history[1].messages[-1].content
    assert "<context>\nParis is the capital of France." in verify
    assert "2. Paris has 9 million inhabitants." in verify
    assert score.usage.model_calls == 2


def test_faithfulness_repairs_a_wrong_verdict_count():
    judge = FakeJudge([STATEMENTS, verdicts("yes", "yes"), verdicts("yes", "yes", "no")])
    score = PAPER_FAITHFULNESS.score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(2 / 3)
    assert len(judge.history) == 3
    repair = judge.history[2].messages[-1].content
    assert "expected 3 verdicts, got 2" in repair
    assert score.exchanges[1].error is not None and score.exchanges[2].error is None


def test_unparseable_replies_become_unscored_with_the_reason():
    judge = FakeJudge(["not json", "still not json", '{"statements": 5}'])
    score = PAPER_FAITHFULNESS.score(SAMPLE, JudgeSession(judge, retries=2))
    assert score.value is None
    assert score.unscored_reason is not None
    assert "unreadable reply" in score.unscored_reason
    assert "after 3 attempts" in score.unscored_reason
    assert [e.reply for e in score.exchanges] == ["not json", "still not json", '{"statements": 5}']


def test_failed_calls_become_unscored_not_zero():
    judge = FakeJudge([JudgeError("HTTP 500"), JudgeError("HTTP 500")])
    score = PAPER_FAITHFULNESS.score(SAMPLE, JudgeSession(judge, retries=1))
    assert score.value is None
    assert score.unscored_reason == (
        "faithfulness.statements: judge call failed: HTTP 500 (after 2 attempts)"
    )


def test_without_context_only_a_decline_is_faithful():
    # Nothing retrieved: no claim can be supported (0), a decline claims nothing (1). Only
    # the few-token commitment check is asked; no statements are written.
    sample = SAMPLE.model_copy(update={"contexts": []})
    for verdicts_mode in ("logprob", "generate"):
        for noncommittal, value in ((True, 1.0), (False, 0.0)):
            judge = FakeJudge([json.dumps({"noncommittal": noncommittal})])
            score = Faithfulness(verdicts=verdicts_mode).score(sample, JudgeSession(judge))
            assert (score.value, score.explanation) == (
                value,
                {"noncommittal": noncommittal, "context": "empty"},
            )
            assert [e.prompt for e in score.exchanges] == ["commitment.noncommittal"]
            assert judge.history[0].messages[-1].content == f"<answer>\n{SAMPLE.answer}\n</answer>"


def test_faithfulness_of_an_empty_answer_is_unscored():
    sample = SAMPLE.model_copy(update={"answer": " "})
    score = Faithfulness().score(sample, JudgeSession(FakeJudge()))
    assert (score.value, score.unscored_reason) == (None, "the answer is empty")


def test_hashing_embedder_cosines_are_word_overlap():
    vectors = HashingEmbedder().embed(["alpha beta", "alpha beta", "alpha gamma", "delta epsilon"])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert unit[0] @ unit[1] == pytest.approx(1.0)
    assert unit[0] @ unit[2] == pytest.approx(0.5)
    assert unit[0] @ unit[3] == pytest.approx(0.0)


def test_answer_relevance_is_mean_cosine():
    reply = {"questions": ["alpha beta", "alpha gamma", "delta epsilon"], "noncommittal": False}
    judge = FakeJudge([json.dumps(reply)])
    score = AnswerRelevance(score="similarity").score(
        SAMPLE, JudgeSession(judge, HashingEmbedder())
    )
    # cosines with "alpha beta": 1, 1/2, 0 -> mean 1/2
    assert score.value == pytest.approx(0.5)
    sims = [q["similarity"] for q in score.explanation["generated_questions"]]
    assert sims == pytest.approx([1.0, 0.5, 0.0])
    # The judge never sees the real question: questions are generated from the answer alone.
    assert "alpha beta" not in judge.history[0].messages[-1].content


def test_completeness_is_the_default_score_after_a_short_noncommittal_check():
    judge = FakeJudge([json.dumps({"noncommittal": False}), yes_no(0.8)])
    score = AnswerRelevance().score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert score.value == pytest.approx(0.8)
    # The answer was split into sentences to check that it claims something: by English rules.
    assert score.explanation == {
        **GATE,
        "noncommittal": False,
        "p_complete": 0.8,
        "language": "en",
    }
    # The check sees the answer alone and writes a few tokens; the completeness question shows
    # the real question and the answer.
    check, complete = judge.history
    assert "whether the given answer is noncommittal" in check.messages[0].content
    assert check.max_tokens == 16 and "alpha beta" not in check.messages[-1].content
    asked = complete.messages[-1].content
    assert "<question>\nalpha beta\n</question>" in asked and "<answer>" in asked
    with pytest.raises(ValueError, match="option 'score' of the metric answer_relevance"):
        AnswerRelevance(score="cosine")  # type: ignore[arg-type]


def test_noncommittal_answer_scores_zero_without_further_questions():
    judge = FakeJudge([json.dumps({"noncommittal": True})])
    score = AnswerRelevance().score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert (score.value, score.explanation) == (
        0.0,
        {**GATE, "noncommittal": True, "language": "en"},
    )
    assert len(judge.history) == 1


def test_noncommittal_generated_reply_scores_zero_with_similarity_kept():
    reply = {"questions": ["alpha beta", "alpha beta", "alpha beta"], "noncommittal": True}
    score = AnswerRelevance(score="similarity").score(
        SAMPLE, JudgeSession(FakeJudge([json.dumps(reply)]), HashingEmbedder())
    )
    assert score.value == 0.0
    assert score.explanation["mean_similarity"] == pytest.approx(1.0)
    assert score.explanation["noncommittal"] is True


def test_against_context_weighs_what_the_answer_gives_by_what_the_context_holds():
    judge = FakeJudge([json.dumps({"noncommittal": False}), yes_no(0.8), yes_no(0.5)])
    score = AnswerRelevance(against="context").score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert score.value == pytest.approx(0.8 * 0.5)
    assert score.explanation == {
        **GATE,
        "noncommittal": False,
        "p_context_holds": 0.8,
        "p_covers_context": 0.5,
        "language": "en",
    }
    _, holds, covers = judge.history
    # Both probes say the same before the data and show the context, then the question; only
    # the second shows the answer. The first one's data is a prefix of the second's.
    assert holds.messages[0].content == covers.messages[0].content
    shown = holds.messages[-1].content.rsplit("\n\n", 1)[0]
    assert shown.startswith("<context>\nParis is the capital of France.")
    assert "<answer>" not in shown and covers.messages[-1].content.startswith(shown + "\n<answer>")


def test_against_context_a_decline_is_complete_where_the_context_holds_nothing():
    judge = FakeJudge([json.dumps({"noncommittal": True}), yes_no(0.25)])
    score = AnswerRelevance(against="context").score(SAMPLE, JudgeSession(judge, HashingEmbedder()))
    assert score.value == pytest.approx(0.75)
    assert score.explanation == {
        **GATE,
        "noncommittal": True,
        "p_context_holds": 0.25,
        "language": "en",
    }
    assert len(judge.history) == 2  # whether the answer covers the context is not asked


def test_against_an_empty_context_only_a_decline_is_complete():
    sample = SAMPLE.model_copy(update={"contexts": []})
    # Without the off-topic gate: with no context, it would find the answer off the topic.
    metric = AnswerRelevance(against="context", off_topic_below=None)
    for noncommittal, value in ((True, 1.0), (False, 0.0)):
        judge = FakeJudge([json.dumps({"noncommittal": noncommittal})])
        score = metric.score(sample, JudgeSession(judge))
        assert score.value == value
        assert score.explanation == {
            "noncommittal": noncommittal,
            "context": "empty",
            "language": "en",
        }
        assert len(judge.history) == 1  # nothing to ask of an empty context


def test_against_context_is_a_completeness_and_part_of_the_version():
    with pytest.raises(ValueError, match="score='similarity' omits"):
        AnswerRelevance(score="similarity", against="context")
    # What completeness is judged against is part of the version: no score is reused across it.
    assert AnswerRelevance(against="context").version != AnswerRelevance().version


def test_answer_relevance_n_is_configurable():
    reply = {"questions": ["alpha beta", "alpha gamma"], "noncommittal": False}
    score = AnswerRelevance(n=2, score="similarity").score(
        SAMPLE, JudgeSession(FakeJudge([json.dumps(reply)]), HashingEmbedder())
    )
    assert score.value == pytest.approx(0.75)
    # Too few questions for n=3 is a reply to repair, then unscored.
    short = FakeJudge([json.dumps(reply)] * 3)
    unscored = AnswerRelevance(n=3, score="similarity").score(
        SAMPLE, JudgeSession(short, HashingEmbedder())
    )
    assert unscored.value is None
    assert "questions: List should have at least 3 items" in (unscored.unscored_reason or "")


CONTEXT_SAMPLE = Sample(
    id="c1",
    question="What is the capital of Australia?",
    contexts=[
        "Australia is in the Southern Hemisphere. Canberra is the capital of Australia.",
        "Sydney is the largest city.\nIt hosted the 2000 Olympics.",
    ],
    answer="Canberra.",
)


def test_context_relevance_is_extracted_over_all_sentences():
    reply = {"sentences": [2, 3, 3, 9]}  # a repeat counts once; 9 is not a sentence number
    judge = FakeJudge([json.dumps(reply)])
    score = ContextRelevance(mode="select").score(CONTEXT_SAMPLE, JudgeSession(judge))
    # 4 context sentences (two per passage; the newline ends a sentence), 2 extracted.
    assert score.explanation["context_sentences"] == 4
    assert score.value == pytest.approx(2 / 4)
    assert score.explanation["extracted_sentences"] == [
        "Canberra is the capital of Australia.",
        "Sydney is the largest city.",
    ]
    assert score.explanation["out_of_range_numbers"] == [9]
    shown = judge.history[0].messages[-1].content
    assert "[1] Australia is in the Southern Hemisphere.\n[2] Canberra is" in shown
    assert "[4] It hosted the 2000 Olympics." in shown


def test_insufficient_information_scores_zero():
    score = ContextRelevance(mode="select").score(
        CONTEXT_SAMPLE, JudgeSession(FakeJudge([json.dumps({"sentences": []})]))
    )
    assert score.value == 0.0
    assert score.explanation["insufficient_information"] is True


def test_context_relevance_without_context_is_unscored():
    sample = CONTEXT_SAMPLE.model_copy(update={"contexts": []})
    score = ContextRelevance(mode="select").score(sample, JudgeSession(FakeJudge()))
    assert score.value is None and score.unscored_reason == "the sample has no retrieved context"


def test_by_default_the_answers_own_sentences_are_verified_without_writing_statements():
    judge = FakeJudge([yes_no(0.9), yes_no(0.2), yes_no(0.7)])
    score = Faithfulness().score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx((0.9 + 0.2 + 0.7) / 3)
    assert [s["statement"] for s in score.explanation["statements"]] == [
        "Paris is the capital of France.",
        "It has 9 million inhabitants.",
        "It is in Europe.",
    ]
    assert [e.prompt for e in score.exchanges] == ["faithfulness.supported"] * 3


def test_faithfulness_by_probability_soft_and_thresholded():
    replies = [yes_no(0.9), yes_no(0.2), yes_no(0.6)]
    soft = WRITTEN_STATEMENTS.score(SAMPLE, JudgeSession(FakeJudge([STATEMENTS, *replies])))
    assert soft.value == pytest.approx((0.9 + 0.2 + 0.6) / 3)
    assert [s["p_supported"] for s in soft.explanation["statements"]] == [0.9, 0.2, 0.6]
    assert [s["verdict"] for s in soft.explanation["statements"]] == ["yes", "no", "yes"]
    hard = Faithfulness(statements="generate", soft=False).score(
        SAMPLE, JudgeSession(FakeJudge([STATEMENTS, *replies]))
    )
    assert hard.value == pytest.approx(2 / 3)
    strict = Faithfulness(statements="generate", soft=False, threshold=0.7)
    judge = FakeJudge([STATEMENTS, *replies])
    assert strict.score(SAMPLE, JudgeSession(judge)).value == pytest.approx(1 / 3)
    # One forward pass per statement, the context first (a shared prefix), the statement last.
    question = judge.history[2].messages[-1].content
    assert question.startswith("<context>\nParis is the capital of France.")
    assert "<statement>\nParis has 9 million inhabitants.\n</statement>" in question
    assert (judge.history[2].max_tokens, judge.history[2].top_logprobs) == (1, 10)


def test_yes_no_without_logprobs_reads_the_word():
    judge = FakeJudge([STATEMENTS, "Yes", "no", "maybe", "No, it is not"])
    score = WRITTEN_STATEMENTS.score(SAMPLE, JudgeSession(judge))
    # "maybe" is neither: the judge is asked again (3 tokens) and says "No, it is not".
    assert score.value == pytest.approx(1 / 3)
    assert judge.history[4].max_tokens == 3


def test_context_relevance_asks_about_each_sentence_alone():
    replies = [yes_no(0.9), yes_no(0.1), yes_no(0.8), yes_no(0.3)]
    judge = FakeJudge(replies)
    score = ContextRelevance(soft=True, repeats=False).score(CONTEXT_SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx((0.9 + 0.1 + 0.8 + 0.3) / 4)
    assert score.explanation["extracted_sentences"] == [
        "Australia is in the Southern Hemisphere.",
        "Sydney is the largest city.",
    ]
    assert score.explanation["p_needed"] == [0.9, 0.1, 0.8, 0.3]
    hard = ContextRelevance(repeats=False).score(CONTEXT_SAMPLE, JudgeSession(FakeJudge(replies)))
    assert hard.value == pytest.approx(2 / 4)
    shown = [r.messages[-1].content for r in judge.history]
    # What the judge is asked comes first, in the instruction; then the question (a prefix
    # shared by every sentence), then one sentence and a short cue: only the sentence differs.
    assert {r.messages[0].content for r in judge.history} == {judge.history[0].messages[0].content}
    assert (
        judge.history[0]
        .messages[0]
        .content.endswith(
            "Answer this question about the data with one word, Yes or No: Does this sentence "
            "state information needed to answer the question?"
        )
    )
    assert shown[1] == (
        "<question>\nWhat is the capital of Australia?\n</question>\n"
        "<sentence>\nCanberra is the capital of Australia.\n</sentence>\n\nAnswer Yes or No."
    )
    # Where the question stands is part of the prompt's version, so of every key.
    after = dataclasses.replace(SENTENCE_NEEDED, asked_first=False)
    assert after.version != SENTENCE_NEEDED.version


def test_context_relevance_from_p_needed_read_elsewhere_still_asks_the_repeat_checks():
    # P(needed) from another reading (a head, say): only the repeat check reaches the judge,
    # for sentence 3 (0.7) after sentence 1 (0.6); sentences 2 and 4 are below 0.5.
    judge = FakeJudge([yes_no(0.25)])
    metric = ContextRelevance(repeats_by="asking")
    value, explanation = metric.from_needed(
        CONTEXT_SAMPLE, [0.6, 0.2, 0.7, 0.4], JudgeSession(judge)
    )
    assert len(judge.history) == 1
    assert (
        "<sentence>\nSydney is the largest city.\n</sentence>"
        in judge.history[0].messages[-1].content
    )
    assert value == pytest.approx(1 / 4)  # 0.7 x 0.25 = 0.175 no longer counts
    assert explanation["p_new_information"] == {"2": 0.25}
    with pytest.raises(ValueError, match="3 P\\(needed\\) for 4 sentences"):
        metric.from_needed(CONTEXT_SAMPLE, [0.6, 0.2, 0.7], JudgeSession(FakeJudge([])))


def test_a_needed_sentence_that_repeats_earlier_ones_is_discounted():
    # sentence 3 ("Sydney is the largest city.") passes at 0.8, after sentence 1 (0.9)
    replies = [yes_no(0.9), yes_no(0.1), yes_no(0.8), yes_no(0.3), yes_no(0.25)]
    judge = FakeJudge(replies)
    metric = ContextRelevance(soft=True)
    score = metric.score(CONTEXT_SAMPLE, JudgeSession(judge))
    assert len(judge.history) == 5  # one repeat check: the first needed sentence is not asked
    assert score.value == pytest.approx((0.9 + 0.1 + 0.8 * 0.25 + 0.3) / 4)
    assert score.explanation["p_new_information"] == {"2": 0.25}
    assert score.explanation["extracted_sentences"] == ["Australia is in the Southern Hemisphere."]
    asked = judge.history[4].messages[-1].content
    assert (
        "<earlier sentences>\nAustralia is in the Southern Hemisphere.\n</earlier sentences>"
        in asked
    )
    assert "<sentence>\nSydney is the largest city.\n</sentence>" in asked
    # the default: counted when P(needed) x P(new) >= 0.5; 0.8 x 0.25 = 0.2 is not
    asked = ContextRelevance(repeats_by="asking")
    hard = asked.score(CONTEXT_SAMPLE, JudgeSession(FakeJudge(replies)))
    assert hard.value == pytest.approx(1 / 4)
    assert ContextRelevance(repeats=False).version != asked.version
    with pytest.raises(ValueError, match="repeats"):
        ContextRelevance(mode="select", repeats=True)


def test_by_default_a_needed_sentence_after_the_first_must_clear_the_repeat_bar():
    # P(needed) 0.9, 0.1, 0.8, 0.3: sentence 1 is the first needed; sentence 3 clears 0.72 and
    # counts with no further question; at 0.7 it would not
    judge = FakeJudge([yes_no(0.9), yes_no(0.1), yes_no(0.8), yes_no(0.3)])
    metric = ContextRelevance()
    assert metric.options.repeat_checks == "bar" and metric.prompts == [SENTENCE_NEEDED]
    score = metric.score(CONTEXT_SAMPLE, JudgeSession(judge))
    assert len(judge.history) == 4  # the sentence questions, and no repeat check
    assert score.value == pytest.approx(2 / 4)
    assert score.explanation["repeat_bar"] == 0.72
    assert "p_new_information" not in score.explanation
    value, _ = metric.from_needed(CONTEXT_SAMPLE, [0.6, 0.2, 0.7, 0.4], JudgeSession(FakeJudge([])))
    assert value == pytest.approx(1 / 4)  # 0.7 after a needed sentence is under the bar
    value, _ = metric.from_needed(CONTEXT_SAMPLE, [0.2, 0.2, 0.7, 0.4], JudgeSession(FakeJudge([])))
    assert value == pytest.approx(1 / 4)  # the first needed sentence needs only the threshold
    assert metric.version != ContextRelevance(repeats_by="asking").version
    # the bar is fitted to each sentence asked alone and counted; elsewhere the judge is asked
    assert ContextRelevance(soft=True).options.repeat_checks == "asking"
    assert ContextRelevance(soft="false").options.repeat_checks == "bar"  # as the CLI gives it
    assert ContextRelevance(repeats=False).options.repeat_checks is None
    with pytest.raises(ValueError, match="repeats_by='bar' is fitted"):
        ContextRelevance(soft=True, repeats_by="bar")


def test_context_relevance_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="option 'mode' of the metric context_relevance"):
        ContextRelevance(mode="logprob")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="option 'mode' of the metric context_relevance"):
        ContextRelevance(mode="numbered")  # type: ignore[arg-type]


def test_prompt_versions_change_with_configuration():
    assert AnswerRelevance(n=3).version != AnswerRelevance(n=4).version
    assert Faithfulness().version == Faithfulness().version
    assert Faithfulness().version != Faithfulness(verdicts="generate").version
    assert ContextRelevance().version != ContextRelevance(soft=True).version
    assert ContextRelevance(mode="select").config() == {
        "mode": "select",
        "soft": False,
        "threshold": 0.5,
        "repeats": False,
        "repeats_by": None,
        "repeat_bar": 0.72,
        "screen": "none",
        "keep_similarity": 0.2,
        "keep_top": 4,
    }


def test_repeated_statements_are_verified_once():
    repeated = json.dumps({"statements": ["Paris is in France.", "Paris is in France.", "X is Y."]})
    judge = FakeJudge([repeated, yes_no(1.0), yes_no(0.0)])
    score = WRITTEN_STATEMENTS.score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(1 / 2)
    assert len(judge.history) == 3


def test_a_verdict_word_in_place_of_statements_gets_a_repair_request():
    hijacked = json.dumps({"statements": ["Yes"]})
    judge = FakeJudge([hijacked, STATEMENTS, yes_no(0.2), yes_no(0.2), yes_no(0.2)])
    score = WRITTEN_STATEMENTS.score(SAMPLE, JudgeSession(judge))
    assert score.value == pytest.approx(0.2)
    repair = judge.history[1].messages[-1].content
    assert "statement 1 ('Yes') is not a claim" in repair
    # short claims in scripts written without spaces still count as claims
    assert claims_only(Statements(statements=["巴黎在法国"])) is None
    assert claims_only(Statements(statements=["Paris exists."])) is None
    assert claims_only(Statements(statements=["서울은 수도이다."])) is None
    # a one-character verdict in a script without spaces is still a verdict word
    for verdict in ("是", "はい", "支持", "Ja", "네"):
        assert claims_only(Statements(statements=[verdict])) is not None, verdict


def test_statements_that_stay_verdict_words_leave_the_answer_unscored():
    hijacked = json.dumps({"statements": ["Supported."]})
    score = WRITTEN_STATEMENTS.score(SAMPLE, JudgeSession(FakeJudge([hijacked] * 3)))
    assert score.value is None
    assert "is not a claim" in score.unscored_reason


def test_faithfulness_leaves_out_sentences_that_claim_nothing():
    # "Yes." after a question that asks no yes or no, a question and a bare tag claim nothing:
    # verified, each could pass and raise the score of an answer whose one claim is wrong.
    sample = SAMPLE.model_copy(
        update={
            "question": "Where is Paris?",
            "answer": "Paris is in Spain.\nYes.\nIs it supported?\n</statement>",
        }
    )
    judge = FakeJudge([yes_no(0.1)])
    score = Faithfulness().score(sample, JudgeSession(judge))
    assert score.value == pytest.approx(0.1)  # soft: the one claim's probability
    assert [s["statement"] for s in score.explanation["statements"]] == ["Paris is in Spain."]
    assert score.explanation["no_claim"] == ["Yes.", "Is it supported?", "</statement>"]
    assert len(judge.history) == 1


@pytest.mark.parametrize(
    ("claim", "question", "claims"),
    [
        ("Yes.", "Is Paris in France?", True),  # the reply to a yes-or-no question
        ("Yes.", "Where is Paris?", False),
        ("Yes yes yes supported.", "Where is Paris?", False),
        ("Yes, Paris lies on the Seine river.", "Where is Paris?", True),  # five more words
        ("No.", None, True),  # no question to tell by
        ("Yes.", "Tell me about Paris.", False),  # a request, not a question
        ("Yes, you should.", "freelancer: should I open a second account?", True),
        ("Which river is it?", None, False),
        ("<statement> </statement>", None, False),
        ("<b>Paris</b> is in France.", None, True),
    ],
)
def test_a_claim_is_anything_but_a_question_a_bare_tag_or_a_stray_yes(claim, question, claims):
    assert makes_claim(claim, question) is claims


@pytest.mark.parametrize(
    ("claim", "question", "claims"),
    [
        # every word the question's, a function word or one about the exchange
        ("You are asking who discovered penicillin.", "Who discovered penicillin?", False),
        ("That is the question this answer addresses.", "Who discovered penicillin?", False),
        # "discoverer" is "discovered" inflected; "person" names nothing in particular
        (
            "The discoverer of penicillin is the person who discovered it.",
            "Who discovered penicillin?",
            False,
        ),
        ("Fleming discovered penicillin.", "Who discovered penicillin?", True),  # a name
        ("Penicillin was discovered in 1928.", "When was penicillin discovered?", True),
        ("Penicillin was not discovered.", "Who discovered penicillin?", True),  # a denial
        # the question's own words answer a yes-or-no question, a choice, or a request
        ("Penicillin was discovered by Fleming.", "Was penicillin discovered by Fleming?", True),
        ("Tea is better.", "Which is better, tea or coffee?", True),
        ("Subgroups of abelian groups are abelian.", "subgroup of abelian group is abelian?", True),
    ],
)
def test_a_sentence_that_only_says_the_question_again_claims_nothing(claim, question, claims):
    assert makes_claim(claim, question) is claims


ECHO = SAMPLE.model_copy(
    update={
        "question": "How many moons does Mars have?",
        "answer": "You are asking how many moons Mars has. How many moons does Mars have? "
        "That is the question this answer addresses.",
        "reference": "Mars has two moons.",
    }
)


def test_an_answer_that_echoes_its_question_scores_zero_before_the_judge_is_asked():
    judge = FakeJudge([])
    score = AnswerRelevance().score(ECHO, JudgeSession(judge))
    echoed = [
        "You are asking how many moons Mars has.",
        "How many moons does Mars have?",
        "That is the question this answer addresses.",
    ]
    assert (score.value, score.explanation) == (0.0, {"no_claim": echoed, "language": "en"})
    assert judge.history == [] and AnswerRelevance().planned_calls(ECHO) == []


def test_an_echo_is_not_a_correct_answer_and_headings_alone_are_unreadable():
    judge = FakeJudge([])
    score = AnswerCorrectness().score(ECHO, JudgeSession(judge))
    assert score.value == 0.0 and judge.history == []
    assert score.explanation["no_claim"][0] == "You are asking how many moons Mars has."
    assert {k: score.explanation[k] for k in ("precision", "recall", "f1")} == dict.fromkeys(
        ("precision", "recall", "f1"), 0.0
    )
    assert not claims_nothing("# Mars\n---", ECHO.question)  # no sentence at all
    assert claims_nothing("Which planet? Mars moons.", ECHO.question)


def test_an_off_topic_answer_scores_zero_before_the_judge_is_asked():
    # Hashed words: the answer shares no word with "alpha beta" nor with the passage, cosines
    # 0, below the default 0.05.
    metric = AnswerRelevance()
    off_topic = SAMPLE.model_copy(update={"contexts": ["Alpha beta gamma delta."]})
    judge = FakeJudge([])
    score = metric.score(off_topic, JudgeSession(judge, HashingEmbedder()))
    assert (score.value, score.explanation) == (
        0.0,
        {
            "question_similarity": 0.0,
            "context_similarity": 0.0,
            "off_topic": True,
            "language": "en",
        },
    )
    assert judge.history == []
    # "Alpha beta gamma." shares two of its three words with the question, 2 / sqrt(2 x 3) =
    # 0.8165, and three of the passage's four, 3 / sqrt(3 x 4) = 0.866: judged.
    on_topic = off_topic.model_copy(update={"answer": "Alpha beta gamma."})
    judge = FakeJudge([json.dumps({"noncommittal": False}), yes_no(0.8)])
    score = metric.score(on_topic, JudgeSession(judge, HashingEmbedder()))
    assert score.value == pytest.approx(0.8)
    assert score.explanation == {
        "question_similarity": 0.8165,
        "context_similarity": 0.866,
        "noncommittal": False,
        "p_complete": 0.8,
        # Too few letters to tell a language by: split by English rules, and said so.
        "language": "und",
        "sentence_rule": "language not determined: split by English rules",
    }
    # An answer drawn from its passage is judged however far it sits from a terse question
    # (GATE).
    judge = FakeJudge([json.dumps({"noncommittal": False}), yes_no(0.8)])
    assert metric.score(SAMPLE, JudgeSession(judge, HashingEmbedder())).value == pytest.approx(0.8)
    unguarded = AnswerRelevance(off_topic_below=None)
    assert metric.needs_embedder and not unguarded.needs_embedder
    assert metric.version != unguarded.version
