"""The citation parser: knowledge triples, [NA], document numbers, malformed brackets."""

from __future__ import annotations

import pytest

from ragmeter.attribution.citations import parse_answer, parse_citation
from ragmeter.attribution.graph import Triple


def t(entity: str, prop: str, value: str) -> Triple:
    return Triple(entity=entity, property=prop, value=value)


def test_one_bracket_may_cite_several_triples_of_one_entity():
    citation = parse_citation("[Q101, occupation: glassblower, place of birth: Lowmere]")
    assert citation.kind == "knowledge" and citation.problem is None
    assert citation.triples == [
        t("Q101", "occupation", "glassblower"),
        t("Q101", "place of birth", "Lowmere"),
    ]


def test_the_qid_prefix_form_of_the_paper():
    citation = parse_citation("[qid: Q101, name: Ada Quill, employer: Lowmere Glassworks]")
    assert citation.triples == [
        t("Q101", "name", "Ada Quill"),
        t("Q101", "employer", "Lowmere Glassworks"),
    ]
    # qid may also stand among the pairs
    late = parse_citation("[name: Ada Quill, qid: Q101]")
    assert late.triples == [t("Q101", "name", "Ada Quill")] and late.problem is None


def test_values_with_commas_and_colons_stay_whole():
    citation = parse_citation(
        "[Q7, notable works: Lanterns: A Memoir, Volume Two, place of death: Lowmere]"
    )
    assert citation.triples == [
        t("Q7", "notable works", "Lanterns: A Memoir, Volume Two"),
        t("Q7", "place of death", "Lowmere"),
    ]


@pytest.mark.parametrize("raw", ["[NA]", "[na]", "[N/A]", "[ NA ]"])
def test_not_applicable(raw):
    assert parse_citation(raw).kind == "na"


@pytest.mark.parametrize(
    ("raw", "numbers"),
    [("[1]", [1]), ("[2, 3]", [2, 3]), ("[2,3]", [2, 3]), ("[4-6]", [4, 5, 6]), ("[1; 7]", [1, 7])],
)
def test_document_citations(raw, numbers):
    citation = parse_citation(raw)
    assert citation.kind == "document" and citation.documents == numbers


@pytest.mark.parametrize(
    ("raw", "kind", "problem"),
    [
        ("[sic]", "malformed", "not a citation"),
        ("[]", "malformed", "not a citation"),
        ("[Q101]", "knowledge", "incomplete: entity id without a property and value"),
        ("[Q101, occupation]", "knowledge", "incomplete: missing value"),
        ("[Q101, : glassblower]", "knowledge", "incomplete: missing property"),
        ("[occupation: glassblower]", "knowledge", "incomplete: missing entity id"),
    ],
)
def test_malformed_and_incomplete_brackets_say_what_is_wrong(raw, kind, problem):
    citation = parse_citation(raw)
    assert (citation.kind, citation.problem) == (kind, problem)


def test_incomplete_citations_still_count_as_triples():
    assert parse_citation("[Q101, occupation]").triples == [t("Q101", "occupation", "")]
    assert not parse_citation("[Q101, occupation]").triples[0].complete


def test_sentences_get_their_citations_and_lose_the_brackets():
    answer = parse_answer(
        "Ada Quill was a glassblower born in 1850 [NA] in Lowmere [Q101, occupation: "
        "glassblower, place of birth: Lowmere]. She worked for Lowmere Glassworks "
        "[Q101, employer: Lowmere Glassworks]. Sources agree [1] [2, 3]."
    )
    assert [s.text for s in answer.sentences] == [
        "Ada Quill was a glassblower born in 1850 in Lowmere.",
        "She worked for Lowmere Glassworks.",
        "Sources agree.",
    ]
    first, second, third = answer.sentences
    assert first.na and not second.na
    assert first.triples == [
        t("Q101", "occupation", "glassblower"),
        t("Q101", "place of birth", "Lowmere"),
    ]
    assert second.triples == [t("Q101", "employer", "Lowmere Glassworks")]
    assert third.documents == [1, 2, 3] and third.triples == []
    assert (
        sum(c.kind == "na" for s in answer.sentences for c in s.citations) == 1
        and len(answer.triples) == 3
    )


def test_a_citation_after_the_full_stop_belongs_to_the_sentence_before():
    answer = parse_answer(
        "Bram Quill ran the ferry. [Q102, occupation: ferryman] He died in Lowmere. "
        "[Q102, place of death: Lowmere]\n[NA]"
    )
    assert [s.text for s in answer.sentences] == [
        "Bram Quill ran the ferry.",
        "He died in Lowmere.",
    ]
    assert answer.sentences[0].triples == [t("Q102", "occupation", "ferryman")]
    assert answer.sentences[1].triples == [t("Q102", "place of death", "Lowmere")]
    assert answer.sentences[1].na  # the [NA] on its own line joins the last sentence


def test_unbalanced_brackets_are_reported_not_swallowed_silently():
    answer = parse_answer(
        "Ada blew glass ] in Lowmere. She won the Silver Lens [Q101, award received: Silv"
    )
    problems = [c.problem for c in answer.malformed]
    assert problems == ["closing bracket without an opening one", "unclosed bracket"]
    assert answer.triples == []  # a cut-off citation is not a citation
    assert [s.text for s in answer.sentences] == [
        "Ada blew glass in Lowmere.",
        "She won the Silver Lens",
    ]


def test_an_answers_text_is_read_without_its_brackets():
    assert parse_answer("A [Q1, x: y]. B [NA] c [2].").text == "A. B c."
