"""Passages of at most 100 words, BM25 retrieval, and answer generation on the scripted judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragmeter.arena.data import NO_ANSWER, Document, is_no_answer, load_corpus, load_questions
from ragmeter.arena.generate import ANSWER_COT, GeneratedAnswer, answers_log, generate_answers
from ragmeter.arena.passages import build_passages, split_passages
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge
from ragmeter.records import RecordLogWarning

from .conftest import LearningJudge

EXAMPLE = Path(__file__).parent.parent / "examples" / "arena"


def words(n: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(n))


def test_passages_pack_whole_sentences_and_never_exceed_100_words():
    sentences = [words(30, f"s{k}x") + "." for k in range(8)]  # 8 sentences of 30 words
    document = Document(id="doc", text=" ".join(sentences))
    passages = split_passages(document)
    # Three 30-word sentences fit in 100 words, a fourth would not: 90, 90, 60.
    assert [len(p.text.split()) for p in passages] == [90, 90, 60]
    assert [p.id for p in passages] == ["doc#1", "doc#2", "doc#3"]
    assert " ".join(p.text for p in passages).split() == document.text.split()


def test_a_sentence_longer_than_a_passage_is_cut():
    document = Document(id="long", text=words(230) + ". Short tail here.")
    sizes = [len(p.text.split()) for p in split_passages(document)]
    assert sizes == [100, 100, 33]  # 30 left of the long sentence + the 3-word tail
    assert max(len(p.text.split()) for p in split_passages(document, max_words=7)) == 7


def test_the_example_corpus_splits_within_the_limit():
    passages = build_passages(load_corpus(EXAMPLE / "corpus.jsonl"))
    assert len(passages) > 5  # some documents need two passages
    assert all(0 < len(p.text.split()) <= 100 for p in passages)


def test_bm25_finds_the_obviously_relevant_passage():
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    from ragmeter.arena.retrieval import BM25Retriever

    retriever = BM25Retriever(build_passages(load_corpus(EXAMPLE / "corpus.jsonl")))
    hits = retriever.search("how often should I feed a sourdough starter kept in the fridge", k=3)
    assert hits[0].passage.doc_id == "sourdough-starter"
    assert "once a week" in hits[0].passage.text
    assert hits[0].score > hits[-1].score > 0
    tide = retriever.search("can I take sea stars home from tide pools", k=10)
    assert tide[0].passage.doc_id == "tide-pool-etiquette"
    assert len(tide) <= 10
    assert retriever.search("quantum chromodynamics lattice", k=5) == []  # no shared term


@pytest.mark.parametrize(
    ("text", "declines"),
    [
        (NO_ANSWER, True),
        ("i couldn\u2019t find an answer", True),  # a typographic apostrophe
        ('"I could not find an answer in the passages."', True),
        ("I couldn't find an answer. However, the passages mention fridges.", True),
        ("Feed it weekly. I couldn't find an answer about jars.", False),
        ("", False),
        (None, False),
    ],
)
def test_no_answer_detection(text, declines):
    assert is_no_answer(text) is declines


def generator(request: ChatRequest) -> str:
    """Answers with the first line of the first passage, or declines when there is none."""
    text = request.messages[-1].content
    passage = re.search(r"<passage 1>\n(.*?)\n</passage 1>", text, re.S)
    answer = passage[1].split(".")[0] + "." if passage else NO_ANSWER
    return json.dumps({"thinking": "Passage 1 answers it.", "answer": answer})


def answer_example(
    out: Path, n: int, judge: FakeJudge | None = None, **settings: object
) -> list[GeneratedAnswer]:
    """The first ``n`` example questions answered into ``out`` as system "s", by ``judge`` (the
    scripted generator by default)."""
    return generate_answers(
        load_questions(EXAMPLE / "questions.jsonl")[:n],
        load_corpus(EXAMPLE / "corpus.jsonl"),
        generator=judge or FakeJudge(responder=generator),
        system="s",
        out_path=out,
        cache=False,
        **settings,
    )


def test_generation_shows_tagged_passages_and_strips_the_thinking(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    questions = load_questions(EXAMPLE / "questions.jsonl")
    documents = load_corpus(EXAMPLE / "corpus.jsonl")
    out = tmp_path / "answers.jsonl"
    judge = FakeJudge(responder=generator)
    answers = generate_answers(
        questions[:2],
        documents,
        generator=judge,
        system="bm25-fake",
        out_path=out,
        k=5,
        cache=False,
    )
    request = judge.history[0]
    assert 'respond "I couldn\'t find an answer."' in request.messages[0].content
    assert "shorter than 50 words" in request.messages[0].content
    user = request.messages[-1].content
    assert user.count("<passage ") == 5 and user.rstrip().endswith("</query>")
    assert request.json_schema == ANSWER_COT.schema
    first = answers[0]
    assert first.system == "bm25-fake" and first.domain == "lifestyle"
    assert first.thinking == "Passage 1 answers it." and "Passage 1" not in first.answer
    assert first.passages[0].startswith("compost-basics#")
    assert [a.id for a in answers_log(out)] == ["compost-moisture", "starter-fridge"]

    # Resume: the two answered questions are not asked again; only the new one is.
    again = FakeJudge(responder=generator)
    more = generate_answers(
        questions[:3], documents, generator=again, system="bm25-fake", out_path=out, cache=False
    )
    assert len(again.history) == 1 and more[:2] == answers
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [q.id for q in questions[:3]]


def test_generation_without_cot_and_with_nothing_retrieved(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    from ragmeter.arena.data import Question

    question = Question(id="off-topic", question="What is quantum chromodynamics?")
    judge = FakeJudge([json.dumps({"answer": NO_ANSWER})])
    [answer] = generate_answers(
        [question],
        load_corpus(EXAMPLE / "corpus.jsonl"),
        generator=judge,
        out_path=tmp_path / "a.jsonl",
        cot=False,
        cache=False,
    )
    assert answer.passages == [] and "<passage" not in judge.history[0].messages[-1].content
    assert "think step by step" not in judge.history[0].messages[0].content
    assert answer.no_answer and answer.thinking is None
    assert answer.system == "fake:scripted@k5"


def test_an_unusable_generation_is_recorded_as_missing_and_retried_later(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    questions = load_questions(EXAMPLE / "questions.jsonl")[:1]
    documents = load_corpus(EXAMPLE / "corpus.jsonl")
    out = tmp_path / "answers.jsonl"
    [failed] = generate_answers(
        questions,
        documents,
        generator=FakeJudge(["nope"] * 3),
        system="s",
        out_path=out,
        retries=2,
        cache=False,
    )
    assert failed.answer is None and "unreadable reply" in failed.unscored_reason
    assert not failed.no_answer  # a failure is not a declined answer
    [fixed] = generate_answers(
        questions,
        documents,
        generator=FakeJudge(responder=generator),
        system="s",
        out_path=out,
        cache=False,
    )
    assert fixed.answer and len(out.read_text().splitlines()) == 1


def test_an_answers_file_holds_one_system(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    questions = load_questions(EXAMPLE / "questions.jsonl")[:1]
    documents = load_corpus(EXAMPLE / "corpus.jsonl")
    out = tmp_path / "answers.jsonl"
    generate_answers(
        questions,
        documents,
        generator=FakeJudge(responder=generator),
        system="a",
        out_path=out,
        cache=False,
    )
    with pytest.raises(ValueError, match="one file per system"):
        generate_answers(
            questions, documents, generator=FakeJudge(), system="b", out_path=out, cache=False
        )


def test_a_corrupted_answers_file_resumes_and_redoes_only_the_bad_line(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    questions = load_questions(EXAMPLE / "questions.jsonl")[:3]
    out = tmp_path / "answers.jsonl"
    first = answer_example(out, 3)
    lines = out.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]  # the second answer's line, cut in half
    out.write_text("\n".join(lines) + "\n")

    with pytest.warns(RecordLogWarning) as caught:
        assert [a.id for a in answers_log(out)] == [questions[0].id, questions[2].id]
    assert f"{out}: skipped 1 unreadable line," in str(caught[0].message)
    assert "(first: line 2: Invalid JSON: EOF while parsing" in str(caught[0].message)

    again = FakeJudge(responder=generator)
    with pytest.warns(RecordLogWarning, match="first: line 2: Invalid JSON") as caught:
        resumed = answer_example(out, 3, again)
    assert len(caught) == 1
    assert len(again.history) == 1  # only the question whose line was bad is asked again
    assert f"<query>\n{questions[1].question}\n</query>" in again.history[0].messages[-1].content
    assert resumed == first  # the generator is deterministic
    # Compacted: one readable line per question, in question order.
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
        q.id for q in questions
    ]


def test_a_torn_last_answer_is_redone(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    out = tmp_path / "answers.jsonl"
    first = answer_example(out, 2)
    text = out.read_text()
    out.write_text(text[: len(text) - 10])  # killed while writing the last answer
    again = FakeJudge(responder=generator)
    with pytest.warns(RecordLogWarning, match="line 2: the last line is incomplete"):
        assert answer_example(out, 2, again) == first
    assert len(again.history) == 1
    assert out.read_text() == text


def test_answers_made_by_another_model_or_setting_are_made_again(tmp_path):
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    out = tmp_path / "answers.jsonl"

    def answer(model: str, **settings: object) -> FakeJudge:
        judge = FakeJudge(responder=generator, model=model)
        answer_example(out, 2, judge, **settings)
        return judge

    assert len(answer("m1", k=3).history) == 2
    assert len(answer("m1", k=3).history) == 0  # the same model and settings: reused
    assert len(answer("m2", k=3).history) == 2  # the same system name, another model
    assert len(answer("m2", k=4).history) == 2  # another number of passages
    assert len(answer("m2", k=4, max_tokens=100).history) == 2
    assert len(out.read_text().splitlines()) == 2


def test_answers_are_stamped_with_the_identity_they_were_made_with(tmp_path):
    """A generator that learns during its first call to ask its server another way made every
    answer as that other model: a rerun that asks that way from the start reuses them all."""
    pytest.importorskip("bm25s", reason="BM25 retrieval needs the 'arena' extra")
    out = tmp_path / "answers.jsonl"
    first = LearningJudge(generator)
    answer_example(out, 2, first)
    assert len(first.history) == 2
    again = LearningJudge(generator, learned=True)
    assert len(answer_example(out, 2, again)) == 2 and len(again.history) == 0
