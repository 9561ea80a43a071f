"""Knowledge graphs: normalisation, entity records, triple files, the name index."""

from __future__ import annotations

import json

import pytest

from ragmeter.attribution.graph import (
    Entity,
    GraphError,
    KnowledgeGraph,
    Triple,
    entity_from_record,
    load_graph,
    normalize,
)

# Fictional people, written for these tests.
ADA = {
    "qid": "Q101",
    "name": "Ada Quill",
    "instance of": "human",
    "occupation": ["glassblower", "inventor"],
    "place of birth": "Lowmere",
    "date_of_birth": "1850-02-03",
    "date_of_death": "",
    "employer": "Lowmere Glassworks",
}


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Lowmere Glassworks", "  lowmere   glassworks "),
        ("date_of_birth", "date of birth"),
        ("Zoë Brönte", "zoe bronte"),
        ('"The Red Lantern"', "The Red Lantern"),
        ("O\u2019Neill", "ONeill"),
        ("1850-02-03T00:00:00Z", "1850-02-03"),
        ("+1850-02-03", "1850-02-03"),
        ("Lowmere.", "Lowmere"),
    ],
)
def test_normalize_ignores_surface_differences(left, right):
    assert normalize(left) == normalize(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Lowmere Glassworks", "Lowmere Glass Works"),
        ("1850-02-03", "3 February 1850"),
        ("glassblower", "glass blower"),
        ("-0764-01-01", "0764-01-01"),
    ],
)
def test_normalize_keeps_real_differences(left, right):
    assert normalize(left) != normalize(right)


def test_entity_record_drops_blanks_and_splits_lists():
    entity = entity_from_record(ADA)
    assert entity.id == "Q101" and entity.name == "Ada Quill"
    assert entity.properties["occupation"] == ["glassblower", "inventor"]
    assert entity.properties["date of birth"] == ["1850-02-03"]
    assert "date of death" not in entity.properties  # the blank date says nothing
    assert entity.types == ["human"]
    assert len(entity.triples()) == 7  # name + 6 values
    assert entity.render().startswith(
        "{qid: Q101, name: Ada Quill, instance of: human, "
        "occupation: glassblower, occupation: inventor"
    )


def test_entity_record_needs_an_id():
    with pytest.raises(GraphError, match="without a 'qid'"):
        entity_from_record({"name": "Nobody"})


def test_graph_membership_is_normalised_and_needs_all_three_parts():
    graph = KnowledgeGraph([entity_from_record(ADA)])
    assert Triple(entity="Q101", property="employer", value="lowmere glassworks") in graph
    assert Triple(entity="q101", property="date_of_birth", value="1850-02-03") in graph
    assert Triple(entity="Q101", property="name", value="Ada Quill") in graph
    assert Triple(entity="Q102", property="employer", value="Lowmere Glassworks") not in graph
    assert Triple(entity="Q101", property="employer", value="Lowmere Glass Works") not in graph
    assert Triple(entity="Q101", property="", value="Lowmere") not in graph


def test_name_index_finds_namesakes_in_load_order():
    other = Entity(id="Q201", name="ada quill", properties={"occupation": ["astronomer"]})
    graph = KnowledgeGraph([entity_from_record(ADA), other])
    assert [e.id for e in graph.find("ADA QUILL")] == ["Q101", "Q201"]
    assert graph.find("Ada") == []
    # A second record for an id merges into the first.
    graph.add(Entity(id="Q101", name="Ada Quill", properties={"award received": ["Silver Lens"]}))
    assert len(graph) == 2
    assert graph.get("Q101").properties["award received"] == ["Silver Lens"]
    assert Triple(entity="Q101", property="award received", value="Silver Lens") in graph


def test_without_removes_exactly_the_given_triples():
    graph = KnowledgeGraph([entity_from_record(ADA)])
    gone = [
        Triple(entity="Q101", property="Occupation", value="Inventor"),
        Triple(entity="Q101", property="employer", value="lowmere glassworks"),
    ]
    reduced = graph.without(gone)
    assert reduced.get("Q101").properties["occupation"] == ["glassblower"]
    assert "employer" not in reduced.get("Q101").properties
    assert all(t not in reduced for t in gone)
    assert len(reduced.triples()) == len(graph.triples()) - 2
    assert len(graph.triples()) == 7  # the original is untouched


def test_biokalma_shaped_rows_merge_their_knowledge_lists(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [
        {"id": 0, "question_complex": "Q?", "knowledge": [ADA]},
        {"id": 1, "question_complex": "Q?", "knowledge": []},
        {
            "id": 2,
            "question_complex": "Q?",
            "knowledge": [{"qid": "Q102", "name": "Bram Quill", "child": "Ada Quill"}, ADA],
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graph = load_graph(path)
    assert [e.id for e in graph.entities] == ["Q101", "Q102"]
    assert graph.render().splitlines()[1] == "{qid: Q102, name: Bram Quill, child: Ada Quill}"


def test_triple_files_in_both_column_forms(tmp_path):
    jsonl = tmp_path / "triples.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"subject": "E1", "predicate": "name", "object": "Ada Quill"},
                {"subject": "E1", "predicate": "occupation", "object": "glassblower"},
                {"subject": "E1", "predicate": "occupation", "object": "inventor"},
                {"subject": "E2", "predicate": "place_of_birth", "object": "Lowmere"},
            ]
        )
    )
    graph = load_graph(jsonl)
    assert graph.get("E1").name == "Ada Quill"
    assert graph.get("E1").properties == {"occupation": ["glassblower", "inventor"]}
    assert graph.get("E2").name == "E2"  # no name triple: the id names it
    assert Triple(entity="E2", property="place of birth", value="Lowmere") in graph

    csv_file = tmp_path / "triples.csv"
    csv_file.write_text("qid,property,value\nQ9,name,Bram Quill\nQ9,occupation,ferryman\n")
    graph = load_graph(csv_file)
    assert [e.name for e in graph.find("bram quill")] == ["Bram Quill"]
    assert Triple(entity="Q9", property="occupation", value="Ferryman") in graph


def test_bad_graph_files_say_where(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "Q1", "name": "A"}\nnot json\n')
    with pytest.raises(GraphError, match="line 2"):
        load_graph(bad)
    with pytest.raises(GraphError, match="no graph file"):
        load_graph(tmp_path / "missing.jsonl")
    triples = tmp_path / "t.csv"
    triples.write_text("subject,predicate,object\n,occupation,x\n")
    with pytest.raises(GraphError, match="row 1: empty subject"):
        load_graph(triples)
