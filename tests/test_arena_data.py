"""Arena loaders: questions (ours and LFRQA), corpus, answers, pairs (generic and the experts')."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragmeter.arena.data import (
    load_answers,
    load_corpus,
    load_expert_pairwise,
    load_lfrqa,
    load_pairs,
    load_questions,
)
from ragmeter.data import DatasetError

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "arena"
SHARED = ROOT.parent / "shared" / "data"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_example_questions_and_answers_load():
    questions = load_questions(EXAMPLE / "questions.jsonl")
    assert len(questions) == 6 and Counter(q.domain for q in questions) == {
        "lifestyle": 3,
        "recreation": 3,
    }
    assert all(q.reference for q in questions)
    answers = load_answers(EXAMPLE / "answers" / "sloppy.jsonl")
    assert answers.name == "sloppy" and set(answers.answers) == {q.id for q in questions}


def test_lfrqa_format_joins_the_answer_lines_and_names_the_domain(tmp_path):
    folder = tmp_path / "lfrqa"
    folder.mkdir()
    write_jsonl(
        folder / "annotations_gardening_with_citation.jsonl",
        [
            {
                "qid": 7,
                "question": "when to prune roses?",
                "answer": "Prune in late winter.  \nCut above an outward bud.",
                "faithful_answer_w_citation": (
                    "Prune in late winter. [1]\nCut above an outward bud. [2]"
                ),
                "citation_numbers": [[1], [2]],
                "gold_doc_ids": [11, 12],
            },
        ],
    )
    write_jsonl(
        folder / "annotations_cooking_with_citation.jsonl",
        [
            {
                "qid": 7,
                "question": "why rest dough?",
                "answer": "Gluten relaxes.",
                "faithful_answer_w_citation": "Gluten relaxes. [1]",
                "citation_numbers": [[1]],
                "gold_doc_ids": [3],
            },
        ],
    )
    questions = load_questions(folder)
    assert [(q.id, q.domain) for q in questions] == [
        ("cooking-7", "cooking"),
        ("gardening-7", "gardening"),
    ]
    assert questions[1].reference == "Prune in late winter. Cut above an outward bud."
    assert "[1]" not in questions[1].reference
    assert load_lfrqa(folder, domains=["cooking"])[0].id == "cooking-7"
    one_file = load_questions(folder / "annotations_gardening_with_citation.jsonl")
    assert [q.id for q in one_file] == ["gardening-7"]


def test_shared_lfrqa_files_load_completely():
    if not (SHARED / "lfrqa").is_dir():
        pytest.skip(f"LFRQA data not found at {SHARED / 'lfrqa'}")
    questions = load_lfrqa(SHARED / "lfrqa")
    counts = Counter(q.domain for q in questions)
    assert counts == {
        "fiqa": 3570,
        "lifestyle": 2198,
        "recreation": 2090,
        "science": 1404,
        "technology": 2064,
        "writing": 2694,
    }
    assert len({q.id for q in questions}) == len(questions) == 14020
    assert questions[0].id == "fiqa-1093"
    assert "lifestyle-forum-test-279" in {q.id for q in questions}
    # Four lifestyle rows have an empty answer: no reference rather than an empty one.
    assert [q.domain for q in questions if q.reference is None] == ["lifestyle"] * 4
    assert all("\n" not in q.reference for q in questions if q.reference)


def test_generic_pairs_with_labels_systems_and_derived_ids(tmp_path):
    path = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            {
                "id": "p1",
                "question": "q",
                "answer_a": "a",
                "answer_b": "b",
                "label": -1,
                "domain": "d",
                "system_a": "x",
                "system_b": "y",
            },
            {"question": "q2", "answer_a": "a2", "answer_b": "b2"},
            {"question": "q3", "answer_a": "a3", "answer_b": "b3", "label": "0"},
        ],
    )
    pairs = load_pairs(path)
    assert (pairs[0].id, pairs[0].label, pairs[0].domain, pairs[0].system_a) == ("p1", -1, "d", "x")
    assert pairs[1].label is None and pairs[1].id.startswith("sha-")
    assert (pairs[1].system_a, pairs[1].system_b) == ("A", "B")
    assert pairs[2].label == 0
    assert load_pairs(path)[1].id == pairs[1].id  # stable across loads
    repeated = write_jsonl(
        tmp_path / "repeated.jsonl",
        [{"question": "q", "answer_a": "a", "answer_b": "b", "label": lab} for lab in (-1, 1, -1)],
    )
    ids = [p.id for p in load_pairs(repeated)]
    assert ids[1] == ids[0] + "-2" and ids[2] == ids[0] + "-3"


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"question": "q", "answer_a": "a", "answer_b": "b", "label": 2}, "label"),
        ({"question": "q", "answer_a": "a", "answer_b": "b", "label": True}, "label"),
        ({"question": "q", "answer_a": " ", "answer_b": "b"}, "answer_a"),
        ({"question": "q", "answer_a": "a"}, "answer_b"),
    ],
)
def test_a_bad_pair_row_names_its_row_and_field(tmp_path, row, field):
    path = write_jsonl(
        tmp_path / "pairs.jsonl", [{"question": "ok", "answer_a": "a", "answer_b": "b"}, row]
    )
    with pytest.raises(DatasetError) as error:
        load_pairs(path)
    assert (error.value.row, error.value.field) == (2, field)


def test_expert_pairwise_file_polarity_and_systems():
    path = SHARED / "lfqa_expert_pairwise" / "experts_pairwise_human_preferences.jsonl"
    if not path.is_file():
        pytest.skip(f"expert pairwise data not found at {path}")
    pairs = load_expert_pairwise(path)
    assert len(pairs) == 260
    assert Counter(p.label for p in pairs) == {-1: 140, 1: 120}  # SOURCE.md: 140 A / 120 B
    assert {p.system_a for p in pairs} | {p.system_b for p in pairs} == {"human", "machine"}
    first = json.loads(path.read_text().splitlines()[0])
    assert (pairs[0].answer_a, pairs[0].label) == (first["answer_a"], first["overall_preference"])
    # 140 pairs, most judged by two or three experts: one row (and id) per human judgement.
    assert len({p.id for p in pairs}) == 260
    assert len({(p.question, p.answer_a, p.answer_b) for p in pairs}) == 140
    assert load_expert_pairwise(path)[53].id == pairs[53].id  # the numbering is stable


def test_corpus_from_rows_or_a_folder(tmp_path):
    docs = load_corpus(EXAMPLE / "corpus.jsonl")
    assert len(docs) == 5 and docs[0].id == "compost-basics" and docs[0].title
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "b.txt").write_text("Bee text.")
    (folder / "a.md").write_text("Ant text.")
    (folder / "skip.json").write_text("{}")
    assert [(d.id, d.text) for d in load_corpus(folder)] == [("a", "Ant text."), ("b", "Bee text.")]


def test_answers_name_and_null_answers(tmp_path):
    path = write_jsonl(
        tmp_path / "sys.jsonl",
        [
            {"id": "1", "answer": "first try", "system": "m"},
            {"id": "2", "answer": None, "system": "m"},
            {"id": "1", "answer": "retried", "system": "m"},
        ],
    )
    answers = load_answers(path)
    assert answers.name == "m" and answers.answers == {"1": "retried", "2": None}
    assert load_answers(path, "renamed").name == "renamed"
    mixed = write_jsonl(
        tmp_path / "mixed.jsonl",
        [{"id": "1", "answer": "x", "system": "m"}, {"id": "2", "answer": "y", "system": "n"}],
    )
    with pytest.raises(ValueError, match="several systems"):
        load_answers(mixed)
