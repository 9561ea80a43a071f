"""Citation quality, alignment and [NA] metrics against values worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from ragmeter.attribution.citations import parse_answer
from ragmeter.attribution.graph import Entity, KnowledgeGraph, Triple
from ragmeter.attribution.metrics import (
    EntailmentChecker,
    alignment,
    count_citations,
    f1,
    na_scores,
)
from ragmeter.attribution.probe import NextTokenProbe
from ragmeter.attribution.report import summarize_citations
from ragmeter.judges.base import ChatRequest, ChatResponse, TokenLogprobs
from ragmeter.judges.fake import FakeJudge
from ragmeter.session import JudgeSession

# Fictional people, written for these tests.
ADA = Entity(
    id="Q101",
    name="Ada Quill",
    properties={
        "occupation": ["glassblower"],
        "place of birth": ["Lowmere"],
        "employer": ["Lowmere Glassworks"],
        "date of birth": ["1850-02-03"],
        "award received": ["Silver Lens"],
    },
)
BRAM = Entity(id="Q102", name="Bram Quill", properties={"occupation": ["ferryman"]})
GRAPH = KnowledgeGraph([ADA, BRAM])


def t(entity: str, prop: str, value: str) -> Triple:
    return Triple(entity=entity, property=prop, value=value)


OCCUPATION = t("Q101", "occupation", "glassblower")
BIRTHPLACE = t("Q101", "place of birth", "Lowmere")
EMPLOYER = t("Q101", "employer", "Lowmere Glassworks")
BIRTHDATE = t("Q101", "date of birth", "1850-02-03")
AWARD = t("Q101", "award received", "Silver Lens")

ANSWER_1 = (
    "Ada Quill was a glassblower born in Lowmere [Q101, occupation: glassblower, place of "
    "birth: lowmere]. She worked at the glassworks [Q101, employer: Lowmere Glass Works]. Her "
    "father was a ferryman [Q102, occupation: ferryman] [NA]."
)
MINIMUM_1 = [OCCUPATION, BIRTHPLACE, EMPLOYER]
ANSWER_2 = "Ada Quill was born on 3 February 1850 [Q101, date_of_birth: 1850-02-03]."
MINIMUM_2 = [BIRTHDATE]


def test_citation_counts_of_one_answer():
    counts = count_citations(parse_answer(ANSWER_1), GRAPH, MINIMUM_1)
    # 4 cited triples: occupation (correct, in the minimum set), place of birth (correct after
    # normalising "lowmere", in the set), employer (wrong value "Lowmere Glass Works"), Bram's
    # occupation (correct, not in the set).
    assert (counts.citations, counts.correct, counts.precise) == (4, 3, 2)
    assert (counts.minimum, counts.recalled, counts.na) == (3, 2, 1)
    assert counts.correctness == 3 / 4
    assert counts.precision == 2 / 4
    assert counts.recall == 2 / 3


def test_micro_and_macro_differ_on_two_answers():
    counts = [
        count_citations(parse_answer(ANSWER_1), GRAPH, MINIMUM_1),
        count_citations(parse_answer(ANSWER_2), GRAPH, MINIMUM_2),
    ]
    summary = summarize_citations(counts)
    # Answer 1: 4 citations, 3 correct, 2 precise; minimum set 3, 2 recalled. P1=1/2, R1=2/3.
    # Answer 2: 1 citation (date_of_birth normalises), correct and precise; 1/1 recalled.
    #           P2=1, R2=1.
    # Micro: P = (2+1)/(4+1) = 3/5, R = (2+1)/(3+1) = 3/4, F1 = 2*(3/5)(3/4)/(3/5+3/4) = 2/3.
    # Macro: P = (1/2+1)/2 = 3/4, R = (2/3+1)/2 = 5/6,
    #        F1 = 2*(3/4)(5/6)/(3/4+5/6) = (5/4)/(19/12) = 15/19.
    # Correctness (micro): (3+1)/5 = 4/5.
    assert summary.correctness == pytest.approx(4 / 5)
    assert summary.micro_precision == pytest.approx(3 / 5)
    assert summary.micro_recall == pytest.approx(3 / 4)
    assert summary.micro_f1 == pytest.approx(2 / 3)
    assert summary.macro_precision == pytest.approx(3 / 4)
    assert summary.macro_recall == pytest.approx(5 / 6)
    assert summary.macro_f1 == pytest.approx(15 / 19)
    assert (summary.citations, summary.na_markers) == (5, 1)


def test_incomplete_citations_are_wrong_and_uncited_answers_leave_macro_precision():
    incomplete = count_citations(parse_answer("A [Q101, occupation]. B [Q101]."), GRAPH, MINIMUM_1)
    assert (incomplete.citations, incomplete.correct, incomplete.incomplete) == (2, 0, 2)
    silent = count_citations(parse_answer("Ada Quill made glass."), GRAPH, MINIMUM_1)
    assert silent.precision is None and silent.recall == 0.0
    summary = summarize_citations([incomplete, silent])
    # Macro precision averages answers that cite: only the first (0/2); recall both (0, 0).
    assert summary.precision_answers == 1 and summary.macro_precision == 0.0
    assert summary.recall_answers == 2 and summary.macro_recall == 0.0
    assert summary.macro_f1 == 0.0 and summary.micro_f1 == 0.0


def test_without_a_minimum_set_precision_and_recall_are_unmeasured_not_zero():
    counts = count_citations(parse_answer(ANSWER_1), GRAPH, None)
    assert counts.correctness == 3 / 4
    assert counts.precision is None and counts.recall is None
    summary = summarize_citations([counts])
    assert summary.correctness == 3 / 4
    assert summary.micro_precision is None and summary.macro_f1 is None


def test_f1_edges():
    assert f1(0.0, 0.0) == 0.0
    assert f1(None, 1.0) is None
    assert f1(0.5, 1.0) == pytest.approx(2 / 3)


def yes_no(p_yes: float, p_no: float, extra: dict[str, float] | None = None) -> ChatResponse:
    top = {"yes": math.log(p_yes), "no": math.log(p_no)}
    top.update({k: math.log(v) for k, v in (extra or {}).items()})
    best = max(top, key=lambda k: top[k])
    return ChatResponse(
        text=best,
        logprobs=[TokenLogprobs(token=best, logprob=top[best], top=top)],
        prompt_tokens=10,
        completion_tokens=1,
    )


def field(request: ChatRequest, tag: str) -> str:
    text = request.messages[-1].content
    return text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def test_alignment_from_next_token_probabilities():
    # Per (sentence, knowledge) pair, the scripted P(yes), P(no).
    verdicts = {
        ("Ada Quill was a glassblower born in Lowmere.", "Ada Quill | occupation: glassblower"): (
            0.9,
            0.1,
        ),
        ("Ada Quill was a glassblower born in Lowmere.", "Ada Quill | place of birth: lowmere"): (
            0.4,
            0.35,
        ),  # unsure, but more yes than no: entailed
        ("She worked at the glassworks.", "Ada Quill | employer: Lowmere Glass Works"): (0.2, 0.7),
        ("Her father was a ferryman.", "Bram Quill | occupation: ferryman"): (0.6, 0.3),
    }

    def respond(request: ChatRequest) -> ChatResponse:
        assert request.max_tokens == 1 and request.top_logprobs == 5
        return yes_no(*verdicts[(field(request, "sentence"), field(request, "knowledge"))])

    judge = FakeJudge(responder=respond)
    session = JudgeSession(judge)
    result = alignment(parse_answer(ANSWER_1), GRAPH, EntailmentChecker(session))
    assert [p.entailed for p in result.pairs] == [True, True, False, True]
    assert result.value == 3 / 4
    assert result.pairs[1].p_yes == pytest.approx(0.4) and result.pairs[1].method == "logprobs"
    assert session.usage.model_calls == 4 and len(session.exchanges) == 4
    # The sentence comes before the knowledge, so a local judge reuses the sentence's prefix.
    last = judge.history[0].messages[-1].content
    assert last.index("<sentence>") < last.index("<knowledge>")


def test_yes_tokens_in_any_case_and_spacing_add_up():
    judge = FakeJudge([yes_no(0.3, 0.45, extra={" Yes": 0.2})])
    verdict = EntailmentChecker(JudgeSession(judge)).check("S.", "K")
    assert verdict.p_yes == pytest.approx(0.5) and verdict.entailed is True


def test_a_judge_without_logprobs_falls_back_to_a_json_verdict_once():
    replies = [
        "yes",  # the probe: plain text, no log-probabilities -> remembered as unsupported
        json.dumps({"reason": "stated", "verdict": "yes"}),
        json.dumps({"reason": "not stated", "verdict": "no"}),
    ]
    judge = FakeJudge(replies)
    probe = NextTokenProbe()
    checker = EntailmentChecker(JudgeSession(judge), probe)
    first = checker.check("Ada Quill made glass.", "Ada Quill | occupation: glassblower")
    second = checker.check("Ada Quill made glass.", "Ada Quill | employer: Lowmere Glassworks")
    assert probe.supported is False
    assert (first.entailed, first.method, first.reason) == (True, "json", "stated")
    assert (second.entailed, second.method) == (False, "json")
    assert [r.max_tokens for r in judge.history] == [1, 160, 160]  # one probe, then JSON only
    again = checker.check("Ada Quill made glass.", "Ada Quill | occupation: glassblower")
    assert again is first and len(judge.history) == 3  # memoised


def test_an_unreadable_verdict_leaves_the_pair_unscored():
    judge = FakeJudge(["x", "not json", "still not", "nope"])
    checker = EntailmentChecker(JudgeSession(judge, retries=2))
    verdict = checker.check("S.", "K")
    assert verdict.entailed is None
    assert "unreadable reply" in (verdict.unscored_reason or "")


NA_ANSWER = (
    "She worked at the Lowmere Glassworks [NA]. Her employer was the glassworks in Lowmere "
    "[NA]. She liked the sea [NA]. She was born in Lowmere [Q101, place of birth: Lowmere]."
)


def test_na_precision_and_recall_by_hand():
    absent = [EMPLOYER, AWARD]
    entailed = {
        ("She worked at the Lowmere Glassworks.", "Ada Quill | employer: Lowmere Glassworks"),
        ("Her employer was the glassworks in Lowmere.", "Ada Quill | employer: Lowmere Glassworks"),
    }

    def respond(request: ChatRequest) -> ChatResponse:
        pair = (field(request, "sentence"), field(request, "knowledge"))
        return yes_no(0.8, 0.2) if pair in entailed else yes_no(0.1, 0.9)

    judge = FakeJudge(responder=respond)
    result = na_scores(
        parse_answer(NA_ANSWER),
        absent,
        {"Q101": "Ada Quill"},
        EntailmentChecker(JudgeSession(judge)),
    )
    # Three [NA] sentences; two entail the absent employer, none the absent award.
    # Precision = 2/3 (sentences that entail some absent triple); recall = 1/2 (absent triples
    # entailed by some [NA] sentence).
    assert result.na_sentences[2] == "She liked the sea."
    assert result.sentence_hits == [True, True, False]
    assert result.absent_hits == [True, False]
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == pytest.approx(1 / 2)
    assert len(judge.history) == 6  # 3 sentences x 2 absent triples


def test_na_without_na_sentences_has_zero_recall_and_no_precision():
    result = na_scores(
        parse_answer("She was born in Lowmere [Q101, place of birth: Lowmere]."),
        [EMPLOYER],
        {},
        EntailmentChecker(JudgeSession(FakeJudge())),
    )
    assert result.precision is None and result.recall == 0.0


def test_report_tables_print_each_condition_in_the_papers_units():
    from rich.console import Console

    from ragmeter.attribution.report import (
        CitationSummary,
        ConditionSummary,
        citation_table,
        quality_table,
    )

    row = ConditionSummary(
        condition="gold",
        questions=3,
        answered=2,
        failed={"generation": 1},
        citation=CitationSummary(correctness=0.5, micro_f1=0.25, macro_f1=None),
        alignment=0.75,
        quality={"coherence": 3.456, "fluency": None},
        seconds_per_question=12.34,
    )
    console = Console(width=200, record=True)
    console.print(citation_table([row]))
    console.print(quality_table([row]))
    lines = [line.split() for line in console.export_text().splitlines() if "gold" in line]
    # condition, n, Align., Corr., micro P/R/F1, macro P/R/F1, [NA] P/R
    assert lines[0] == ["gold", "2", "75.0", "50.0", "—", "—", "25.0", "—", "—", "—", "—", "—"]
    # condition, Coh., Con., Flu., Rel., s/question, calls/q, tokens in/out, failed
    assert lines[1] == ["gold", "3.46", "—", "—", "—", "12.3", "—", "—", "—", "1"]
