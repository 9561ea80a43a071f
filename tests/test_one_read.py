"""The one-read layout on the scripted judge: every Yes/No question of a sample after the same
prefix, values worked out by hand; and contexts longer than the judge's window, read in parts."""

from __future__ import annotations

import json

import pytest

from ragmeter import one_read
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.metrics import AnswerRelevance, ContextRelevance, Faithfulness
from ragmeter.options import OptionsError
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession

from .conftest import yes_no

SAMPLE = Sample(
    id="s1",
    question="What is the capital of France, and how many live there?",
    contexts=["Paris is the capital of France. It has 2.1 million inhabitants.", "Lyon is big."],
    answer="Paris is the capital of France. It has 9 million inhabitants.",
)

# P(yes) by what the question is about: the quoted statement or sentence, or the question.
SUPPORT = {"Paris is the capital of France.": 0.9, "It has 9 million inhabitants.": 0.2}
NEEDED = {"[1]": 0.8, "[2]": 0.7, "[3]": 0.1}
NEW = 0.4
COMPLETE = 0.65


def last_user(request: ChatRequest) -> str:
    return request.messages[-1].content


def responder(request: ChatRequest) -> str | ChatResponse:
    """The scripted judge: the commitment check in JSON, each one-read question by its tag."""
    if request.max_tokens != 1:
        return json.dumps({"noncommittal": False})
    assert request.messages[0].content.startswith(one_read.INSTRUCTION)
    asked = last_user(request).rsplit("</answer>", 1)[1]
    if "<statement>" in asked:
        statement = asked.split("<statement>\n", 1)[1].split("\n</statement>", 1)[0]
        return yes_no(SUPPORT[statement])
    if "no earlier sentence" in asked:
        return yes_no(NEW)
    if "<sentence>" in asked:
        return yes_no(NEEDED[asked.split("<sentence>\n", 1)[1][:3]])
    assert "every part of the question" in asked
    return yes_no(COMPLETE)


def score_all(judge: FakeJudge, sample: Sample = SAMPLE) -> dict[str, object]:
    metrics = [
        Faithfulness(layout="one_read"),
        AnswerRelevance(layout="one_read"),
        ContextRelevance(layout="one_read"),
    ]
    # Hashed words: the answer shares words with the question, past answer relevance's gate.
    return {m.name: m.score(sample, JudgeSession(judge, HashingEmbedder())) for m in metrics}


def test_every_question_of_the_sample_follows_the_same_prefix():
    judge = FakeJudge(responder=responder)
    scores = score_all(judge)
    probes = [r for r in judge.history if r.max_tokens == 1]
    # 2 statements, 1 completeness question, 3 sentences, 1 repeat check ([2] after [1]).
    assert len(probes) == 7
    data = {last_user(r).split("</answer>", 1)[0] for r in probes}
    assert len(data) == 1
    (shown,) = data
    assert shown.startswith("<question>\nWhat is the capital of France")
    assert "[1] Paris is the capital of France.\n[2] It has 2.1 million inhabitants." in shown
    assert "\n\n[3] Lyon is big." in shown  # the next passage, numbered on
    assert {r.messages[0].content for r in probes} == {probes[0].messages[0].content}
    assert all(s.scored for s in scores.values())


def test_values_are_those_of_the_separate_layout_from_the_same_verdicts():
    scores = score_all(FakeJudge(responder=responder))
    # Faithfulness, soft: (0.9 + 0.2) / 2.
    assert scores["faithfulness"].value == pytest.approx(0.55)
    # Answer relevance: it commits, so P(complete).
    assert scores["answer_relevance"].value == pytest.approx(COMPLETE)
    # Context relevance: [1] and [2] pass 0.5, [2] adds new information with P 0.4, so it
    # counts 0.7 * 0.4 = 0.28 < 0.5: one sentence of three.
    cr = scores["context_relevance"]
    assert cr.value == pytest.approx(1 / 3)
    assert cr.explanation["p_new_information"] == {"1": 0.4}
    assert cr.explanation["extracted_sentences"] == ["Paris is the capital of France."]


def test_the_repeat_check_is_asked_of_needed_sentences_after_the_first():
    judge = FakeJudge(responder=responder)
    score_all(judge)
    (check,) = [r for r in judge.history if "no earlier sentence" in last_user(r)]
    assert "Does context sentence [2] state needed information that no earlier sentence" in (
        last_user(check)
    )
    assert "<sentence>\n[2] It has 2.1 million inhabitants.\n</sentence>" in last_user(check)


def test_a_long_sentence_is_named_by_its_opening_words():
    assert one_read.opening("One two three four five six seven eight.") == (
        "One two three four five six ..."
    )
    assert one_read.opening("Short one.") == "Short one."


def test_layouts_are_different_results():
    for metric in (Faithfulness, AnswerRelevance, ContextRelevance):
        assert metric(layout="one_read").version != metric().version


@pytest.mark.parametrize(
    ("metric", "options", "needs"),
    [
        (Faithfulness, {"verdicts": "generate"}, "verdicts='logprob'"),
        (AnswerRelevance, {"score": "similarity"}, "score='completeness'"),
        (ContextRelevance, {"mode": "select", "repeats": False}, "mode='sentence'"),
    ],
)
def test_one_read_refuses_options_that_ask_no_yes_no_question(metric, options, needs):
    with pytest.raises(OptionsError, match=needs):
        metric(layout="one_read", **options)


LONG = Sample(
    id="long",
    question="Who built it?",
    contexts=[" ".join(f"Sentence number {n} says little of note here." for n in range(1, 9))],
    answer="Eiffel built it.",
)


def test_a_context_longer_than_the_window_is_read_in_parts_numbered_as_a_whole():
    # A 100-token window leaves 100 * 0.8 * 3 = 240 characters, less the question and the
    # answer (29): each 44-character sentence costs 52, so four sentences fit a part.
    read = one_read.reading(LONG, window=100)
    assert [p.numbers for p in read.parts] == [range(1, 5), range(5, 9)]
    assert "[5] Sentence number 5" in read.parts[1].data["context"][0]
    assert read.note is not None and "2 parts" in read.note
    assert one_read.reading(LONG).parts[0].numbers == range(1, 9)  # no window: one part


def test_faithfulness_reads_a_long_context_in_parts_and_takes_the_best_part():
    def by_part(request: ChatRequest) -> ChatResponse:
        # Only the part holding sentence 7 supports the claim.
        return yes_no(0.9 if "number 7" in last_user(request) else 0.3)

    # The claim is checked as "In answer to the question 'Who built it?': Eiffel built it."
    # (59 characters), which leaves 240 - 59 = 181 for the context: three sentences a part.
    judge = FakeJudge(responder=by_part, window=100)
    score = Faithfulness().score(LONG, JudgeSession(judge))
    assert len(judge.history) == 3  # one claim, three parts
    assert score.value == pytest.approx(0.9)
    assert "read in 3 parts" in score.explanation["parts"]
    whole = Faithfulness().score(LONG, JudgeSession(FakeJudge(responder=by_part)))
    assert "parts" not in whole.explanation  # a judge without a known window: one prompt


def test_a_judge_that_counts_its_tokens_is_read_in_parts_by_its_count():
    def by_part(request: ChatRequest) -> ChatResponse:
        return yes_no(0.9 if "number 7" in last_user(request) else 0.3)

    # Counted in words: a 50-token window leaves 40, less the checked claim's 11 words: 29.
    # Each sentence costs its 8 words and 3 more, so two fit a part (22) and three do not (33).
    judge = FakeJudge(responder=by_part, window=50, count_tokens=lambda text: len(text.split()))
    score = Faithfulness().score(LONG, JudgeSession(judge))
    assert len(judge.history) == 4
    assert score.value == pytest.approx(0.9)
    assert "read in 4 parts" in score.explanation["parts"]


def test_context_relevance_reads_each_sentence_in_its_part():
    def needed(request: ChatRequest) -> str | ChatResponse:
        if request.max_tokens != 1:
            return json.dumps({"noncommittal": False})
        asked = last_user(request).rsplit("</answer>", 1)[1]
        number = asked.split("<sentence>\n[", 1)[1].split("]", 1)[0]
        assert f"[{number}] Sentence number {number}" in last_user(request).split("</context>")[0]
        return yes_no(0.9 if number == "6" else 0.1)

    judge = FakeJudge(responder=needed, window=100)
    score = ContextRelevance(layout="one_read").score(LONG, JudgeSession(judge))
    assert score.value == pytest.approx(1 / 8)
    assert "read in 2 parts" in score.explanation["parts"]
