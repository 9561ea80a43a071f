"""Test sets from documents: reading, chunking, planning, the checks, and whole runs on a
scripted judge whose answers follow from the texts (so each expected value is worked out by
reading the documents below)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ragmeter.budget import BudgetExhausted
from ragmeter.cli.main import app
from ragmeter.data import DatasetError, load_samples
from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.meta.testset import Query, copies, people_questions, recall_at_k
from ragmeter.meta.testset import testset_report as report_of  # not collected as a test
from ragmeter.session import JudgeSession
from ragmeter.testset import (
    DECLINE,
    Document,
    QualityOptions,
    chunk_document,
    deduplicate,
    generate_testset,
    read_documents,
    unanswerable,
)
from ragmeter.testset.chunking import Chunk, document_title
from ragmeter.testset.follow_ups import as_follow_up
from ragmeter.testset.quality import REFERS_TO_SOURCE, Draft, Rejected, check
from ragmeter.testset.queries import (
    KINDS,
    STYLES,
    fact_sentence,
    fact_sentences,
    misspell,
    parse_mix,
    quotas,
    writing_prompt,
)
from ragmeter.testset.runner import output_paths

from .conftest import yes_no

# --- a judge that reads the texts ----------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "is",
        "are",
        "was",
        "were",
        "to",
        "in",
        "and",
        "what",
        "how",
        "why",
        "which",
        "does",
        "do",
        "it",
        "its",
    ]
)
_FRAME = frozenset({"where", "which", "related"})
"""Words of a question's frame, not of what it asks about."""


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _topic(question: str) -> set[str]:
    """What a question asks about: its words of five letters or more, but the frame's."""
    return {w for w in _WORD.findall(question.lower()) if len(w) >= 5} - _FRAME


def _tag(text: str, name: str) -> str:
    found = re.search(rf"<{re.escape(name)}>\n(.*?)\n</{re.escape(name)}>", text, re.S)
    return found.group(1) if found else ""


def _first_sentence(passage: str) -> str:
    prose = re.sub(r"^#.*$", "", passage, flags=re.M).strip()
    return re.split(r"(?<=\.)\s", prose, maxsplit=1)[0]


_ANSWERING = re.compile(r"^In answer to the question '.*?': ")


def reader(request: ChatRequest) -> str | ChatResponse:
    """Writes from the fact it is given ("Zorbium melts at 40 degrees." becomes "What is true
    of Zorbium melts?", a pair of facts "How are Zorbium melts and Quellite glows related?"),
    else from the passage's first sentence ("How does Zorbium melts work?"), that sentence
    being the answer. Answers Yes/No by word overlap: supported when every word of the
    statement is in the context; a question with "it" is not understood alone. A
    conversation's second question is "Where is Zorbium melts found?", which the run turns
    into "Where are they found?". An unanswerable question is "Who sells Zorbium melts in
    Antarctica?", expecting "Zorbium melts is sold in Antarctica by Penguin Traders.". Asked
    to answer from passages that hold every word of five letters or more of the question, it
    gives the sentence that holds most of them, else "Not in the passages.". It knows nothing
    closed-book."""
    system, user = request.messages[0].content, request.messages[-1].content
    if request.max_tokens == 1 or request.max_tokens == 3:
        if "supported by a context" in system:
            # A short claim comes as the answer to its question: the claim's own words count.
            claim = _ANSWERING.sub("", _tag(user, "statement"))
            ok = _words(claim) <= _words(_tag(user, "context"))
        elif "taken out of its conversation" in system:
            ok = "it" not in _WORD.findall(_tag(user, "question").lower())
        else:  # stands alone
            ok = True
        return yes_no(0.9 if ok else 0.1)
    if "own knowledge" in system:
        return json.dumps({"answer": "I do not know."})
    if "using only the passages" in system:
        topic, passages = _topic(_tag(user, "question")), _tag(user, "passages")
        if not topic <= _words(passages):
            return json.dumps({"answer": "Not in the passages."})
        sentences = re.split(r"(?<=\.)\s+|\n+", passages)
        return json.dumps({"answer": max(sentences, key=lambda s: len(topic & _words(s)))})
    first = _first_sentence(_tag(user, "passage") or _tag(user, "passage 1"))
    fact = _tag(user, "fact") or _tag(user, "fact 1")
    subject = " ".join((fact or first).split()[:2]).strip(".")
    if "test conversations" in system:
        return json.dumps(
            {
                "first_question": f"What is true of {subject}?",
                "first_answer": first,
                "question": f"Where is {subject} found?",
                "answer": first,
            }
        )
    if "does NOT answer" in system:
        return json.dumps(
            {
                "question": f"Who sells {subject} in Antarctica?",
                "expected_answer": f"{subject} is sold in Antarctica by Penguin Traders.",
            }
        )
    if "two passages" in system:
        second = _tag(user, "fact 2")
        other = " ".join(second.split()[:2]).strip(".")
        return json.dumps(
            {"question": f"How are {subject} and {other} related?", "answer": f"{fact} {second}"}
        )
    if fact:
        return json.dumps({"question": f"What is true of {subject}?", "answer": fact})
    return json.dumps({"question": f"How does {subject} work?", "answer": first})


FACTS = {
    "zorbium.md": "# Zorbium\n\nZorbium melts at forty degrees in sealed jars. "
    "Zorbium was first found in Patagonia during the long dry winter of 1931, by miners "
    "looking for copper and silver in the hills near the coast.\n",
    "quellite.txt": "Quellite glows green under ultraviolet light in dark rooms. "
    "Quellite crystals grow slowly in caves, about one millimetre a year, which is why large "
    "specimens are rare and sell for high prices at mineral fairs across Europe.\n",
    "brastone.html": "<html><head><style>p {color: red}</style></head><body><h1>Brastone</h1>"
    "<p>Brastone weighs twice as much as granite of the same size. Builders in the "
    "northern valleys used brastone for bridges because it does not crack in frost and "
    "keeps its shape for centuries.</p><script>alert(1)</script></body></html>",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in FACTS.items():
        (folder / name).write_text(text)
    return folder


def _generate(docs: Path, n: int, out: Path | None, judge: FakeJudge | None = None, **kw):
    return generate_testset(
        docs,
        n,
        out=out,
        judge=judge or FakeJudge(responder=reader, model="reader"),
        embedder=HashingEmbedder(),
        cache=False,
        entities=False,
        **kw,
    )


# --- documents ---------------------------------------------------------------------------------


def test_a_folder_is_read_by_kind_and_html_loses_its_scripts(docs):
    corpus = read_documents(docs)
    names = [d.name for d in corpus.documents]
    assert names == ["brastone.html", "quellite.txt", "zorbium.md"]
    html = corpus.documents[0].text
    assert html.startswith("# Brastone\n")
    assert "alert" not in html and "color" not in html
    assert corpus.skipped == []


def test_hostile_files_are_skipped_with_their_reason(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "only-symbols.md").write_text("--- *** ---\n")
    corpus = read_documents(tmp_path)
    assert corpus.documents == []
    assert {s.name: s.reason.split(" (")[0] for s in corpus.skipped} == {
        "binary.txt": "binary file",
        "empty.txt": "no text",
        "latin1.txt": "not UTF-8 text",
        "only-symbols.md": "no text",
    }


def test_langchain_and_llamaindex_objects_are_read_by_their_attributes():
    lang = SimpleNamespace(page_content="Alpha text.", metadata={"source": "a.pdf", "page": 2})
    llama = SimpleNamespace(get_content=lambda: "Beta text.", metadata={"file_name": "b.md"})
    twin = SimpleNamespace(page_content="Gamma text.", metadata={"source": "a.pdf"})
    corpus = read_documents([lang, llama, twin, "Plain text given as a string."])
    assert [(d.name, d.text) for d in corpus.documents] == [
        ("a.pdf", "Alpha text."),
        ("b.md", "Beta text."),
        ("a.pdf#2", "Gamma text."),
        ("document 4", "Plain text given as a string."),
    ]
    assert corpus.documents[0].metadata == {"source": "a.pdf", "page": 2}
    with pytest.raises(TypeError, match="document 1: expected a path"):
        read_documents([42])


def test_a_pdf_without_pypdf_says_which_extra_to_install(tmp_path):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-1.4\n%%EOF\n")
    try:
        import pypdf  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"ragmeter\[pdf\]"):
            read_documents(pdf)
    else:  # an empty PDF gives no text, or cannot be read: either way skipped, no crash
        corpus = read_documents(pdf)
        assert corpus.documents == [] and corpus.skipped[0].name == "a.pdf"


# --- chunks ------------------------------------------------------------------------------------


def test_chunks_cut_at_headings_keep_exact_offsets():
    text = "# One\n\n" + "Alpha beta gamma. " * 5 + "\n\n# Two\n\nDelta epsilon zeta eta.\n"
    chunks = chunk_document(Document("d.md", text), max_chars=120, min_chars=50)
    assert [c.heading for c in chunks] == ["One", "Two"]
    assert (
        chunks[0].text
        == text[: chunks[0].end]
        == "# One\n\n" + "Alpha beta gamma. " * 4 + ("Alpha beta gamma.")
    )
    assert chunks[1].text == "# Two\n\nDelta epsilon zeta eta."
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_a_long_line_is_cut_at_sentences_then_spaces_under_the_limit():
    sentence = "Word " * 30  # 150 characters, one sentence with no full stop
    text = sentence + "\nShort one. Another short one."
    chunks = chunk_document(Document("d", text), max_chars=100, min_chars=10)
    assert all(len(c.text) <= 100 for c in chunks)
    assert " ".join(text[c.start : c.end] for c in chunks).split() == text.split()


def test_a_ten_thousand_line_file_and_a_table_and_code_are_chunked():
    lines = "\n".join(f"Line {i} says the value {i} is stored." for i in range(10_000))
    table = "| year | event |\n|---|---|\n" + "\n".join(f"| {y} | rain |" for y in range(300))
    code = "def f(x):\n    return x * 2\n" * 200
    for text in (lines, table, code):
        chunks = chunk_document(Document("d", text))
        assert chunks and all(len(c.text) <= 1200 for c in chunks)
        assert all(text[c.start : c.end] == c.text for c in chunks)
    assert sum(len(c.text) for c in chunk_document(Document("d", lines))) > 0.99 * len(lines)


def test_near_identical_chunks_are_kept_once():
    chunks = [
        Chunk("a", 0, 20, "The Cat sat, on the mat."),
        Chunk("b", 0, 20, "the cat sat on the MAT"),  # same words: the hash finds it
        Chunk("c", 0, 20, "Dogs bark at night."),
        Chunk("d", 0, 20, "Dogs bark at night loudly."),  # cosine 4/sqrt(4*5) = 0.894
    ]
    kept, dropped = deduplicate(chunks, HashingEmbedder(), threshold=0.89)
    assert [c.document for c in kept] == ["a", "c"]
    assert [(a.document, b.document) for a, b in dropped] == [("b", "a"), ("d", "c")]
    kept, _ = deduplicate(chunks, HashingEmbedder(), threshold=0.9)
    assert [c.document for c in kept] == ["a", "c", "d"]


# --- kinds, shares, styles ---------------------------------------------------------------------


def test_quotas_round_by_largest_remainder():
    mix = parse_mix(
        "specific=3,abstract=2,multi_hop=1.5,comparison=1,follow_up=1.5,unanswerable=1",
        ("specific", "abstract", "multi_hop", "comparison", "follow_up", "unanswerable"),
        "kind",
    )
    # 10 x shares: 3, 2, 1.5, 1, 1.5, 1 -> 9 whole, one left to the first of the two halves.
    assert quotas(mix, 10) == {
        "specific": 3,
        "abstract": 2,
        "multi_hop": 2,
        "comparison": 1,
        "follow_up": 1,
        "unanswerable": 1,
    }
    with pytest.raises(ValueError, match="unknown kind bogus"):
        parse_mix("bogus=1", ("specific",), "kind")
    with pytest.raises(ValueError, match="not a number"):
        parse_mix("specific=lots", ("specific",), "kind")


def test_misspelling_swaps_two_letters_and_repeats_for_a_seed():
    question = "Where is the telescope launched from?"
    wrong = misspell(question, "7")
    assert wrong == misspell(question, "7") and wrong != question
    diffs = [i for i, (a, b) in enumerate(zip(question, wrong, strict=True)) if a != b]
    assert len(diffs) == 2 and diffs[1] == diffs[0] + 1
    assert wrong[diffs[0]] == question[diffs[1]] and wrong[diffs[1]] == question[diffs[0]]


def test_keyword_prompts_ask_for_a_query_and_full_ones_for_a_sentence():
    assert "keywords" in writing_prompt("specific", "keywords").instruction
    assert "complete sentence" in writing_prompt("specific", "full").instruction
    with pytest.raises(ValueError, match="unknown question style"):
        writing_prompt("specific", "shouty")


# --- the checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "points"),
    [
        ("According to the passage, when did Zorbium melt?", True),
        ("What does this excerpt say about rain?", True),
        ("In the given text, who is named?", True),
        ("What is the difference between the two passages?", True),
        ("Which documents are needed in the application?", False),
        ("What is the text of Article 5 of the treaty?", False),
        ("How did the queries in the previous part differ from the exercise?", True),
        ("What does the next section of the Tax Code cover?", True),
        ("Which part of the engine wears first?", False),
    ],
)
def test_questions_that_point_at_their_source_are_found(question, points):
    assert bool(REFERS_TO_SOURCE.search(question)) is points


def _check(draft: Draft, search=lambda q, k: [], **options: float) -> dict:
    session = JudgeSession(FakeJudge(responder=reader, model="reader"))
    checks: dict = {}
    check(draft, session, QualityOptions(**options), search, checks)
    return checks


ZORB = "Zorbium melts at forty degrees. Zorbium was found in Patagonia."
QUELL = "Quellite glows green. Quellite grows in caves."


def test_a_supported_answerable_question_passes_every_check():
    checks = _check(
        Draft("specific", "Where was Zorbium found?", "Zorbium was found in Patagonia.", [ZORB])
    )
    assert "answerable" not in checks and checks["stands_alone"] == 0.9
    assert checks["supported"] == {
        "claims": ["Zorbium was found in Patagonia."],
        "p": [0.9],
        "all": True,
    }
    assert checks["closed_book"] == {"answer": "I do not know.", "recall": 0.0}


def test_an_invented_claim_rejects_the_reference():
    draft = Draft(
        "specific",
        "Where was Zorbium found?",
        "Zorbium was found in Patagonia. Zorbium is toxic.",
        [ZORB],
    )
    with pytest.raises(Rejected, match="Zorbium is toxic") as raised:
        _check(draft)
    assert raised.value.reason == "reference not supported by its chunks"


def test_a_two_chunk_question_that_one_chunk_answers_is_rejected():
    draft = Draft(
        "multi_hop", "Where was Zorbium found?", "Zorbium was found in Patagonia.", [ZORB, QUELL]
    )
    with pytest.raises(Rejected) as raised:
        _check(draft)
    assert (raised.value.reason, raised.value.detail) == (
        "one chunk suffices",
        "chunk 1 supports every claim",
    )
    both = Draft(
        "multi_hop",
        "Where was Zorbium found and where does Quellite glow?",
        "Zorbium was found in Patagonia. Quellite grows in caves.",
        [ZORB, QUELL],
    )
    # Each chunk alone lacks one claim: chunk 1 the second, chunk 2 the first.
    assert _check(both)["needs_both_chunks"] == {
        "p_alone": [[0.9, 0.1], [0.1, 0.9]],
        "chunk_supports_all": [False, False],
    }


def test_a_question_the_judge_answers_closed_book_is_rejected():
    def knows(request: ChatRequest) -> str | ChatResponse:
        if "own knowledge" in request.messages[0].content:
            return json.dumps({"answer": "Zorbium was found in Patagonia."})
        return reader(request)

    session = JudgeSession(FakeJudge(responder=knows, model="knows"))
    draft = Draft("specific", "Where was Zorbium found?", "Zorbium was found in Patagonia.", [ZORB])
    checks: dict = {}
    with pytest.raises(Rejected, match="answerable without the documents"):
        check(draft, session, QualityOptions(), lambda q, k: [], checks)
    assert checks["closed_book"]["recall"] == 1.0


def test_a_follow_up_understood_alone_and_a_pointing_question_are_rejected():
    history = [
        {"role": "user", "content": "Where was Zorbium found?"},
        {"role": "assistant", "content": "In Patagonia."},
    ]
    alone = Draft(
        "follow_up",
        "At what heat does Zorbium melt?",
        "Zorbium melts at forty degrees.",
        [ZORB],
        history,
    )
    # The judge is asked only when the option is below 1 (off by default).
    assert "understood_alone" not in _check(alone)
    with pytest.raises(Rejected, match="follow-up does not need the first turn"):
        _check(alone, understood_alone=0.5)
    needs = Draft("follow_up", "At what heat does it melt?", alone.reference, [ZORB], history)
    assert _check(needs, understood_alone=0.5)["understood_alone"] == 0.1
    pointing = Draft("specific", "According to the passage, where was Zorbium found?", "x", [])
    with pytest.raises(Rejected, match="refers to its source"):
        _check(pointing)


def test_a_question_that_copies_five_words_of_its_chunk_is_rejected_when_asked():
    copied = Draft(
        "specific",
        "Is it true that Zorbium was found in Patagonia?",
        "Zorbium was found in Patagonia.",
        [ZORB],
    )
    with pytest.raises(Rejected, match="copies its source"):
        _check(copied, copy_run=5)  # "zorbium was found in patagonia": 5 words of ZORB in a row
    assert "copies_source" not in _check(copied)  # off by default: not checked, not recorded
    assert _check(copied, copy_run=6)["copies_source"] is False  # the question holds no 6 in a row
    four = Draft("specific", "Where was Zorbium found, in Patagonia?", "x", [ZORB])
    assert not copies(four.question, four.chunks)  # "found in patagonia": three in a row


def _near(question: str, k: int) -> list[str]:
    """The corpus's nearest chunks, as a fixed list: QUELL, then ZORB."""
    return [QUELL, ZORB][:k]


def test_an_unanswerable_question_whose_expected_answer_a_near_chunk_supports_is_rejected():
    answered = Draft(
        "unanswerable", "Where was Zorbium found?", DECLINE, [], expected="Zorbium was found in "
        "Patagonia."
    )  # fmt: skip
    with pytest.raises(Rejected) as raised:
        _check(answered, search=_near)
    # Every word of the claim is in ZORB (0.9), not in QUELL (0.1): the best is 0.9 >= 0.5.
    assert raised.value.reason == "answered by the documents"
    assert "claim 'Zorbium was found in Patagonia.' of the expected answer" in raised.value.detail
    # With one near chunk (QUELL) the claim is not found, and the chunk's answer declines.
    alone = _check(answered, search=_near, search_k=1)["not_answered"]
    assert (alone["nearest"], alone["expected_p"], alone["answer_claims"]) == (1, [0.1], [])


def test_an_unanswerable_question_the_near_chunks_answer_otherwise_is_rejected():
    # The expected answer is wrong (Peru), so no chunk supports it; but asked from the near
    # chunks, the judge answers with ZORB's sentence, which ZORB supports.
    contradicted = Draft(
        "unanswerable", "Where was Zorbium found?", DECLINE, [], expected="Zorbium was found in "
        "Peru."
    )  # fmt: skip
    checks: dict = {}
    with pytest.raises(Rejected) as raised:
        check(
            contradicted,
            JudgeSession(FakeJudge(responder=reader, model="reader")),
            QualityOptions(),
            _near,
            checks,
        )
    assert raised.value.detail == (
        "a near chunk supports the claim 'Zorbium was found in Patagonia.' of the answer the "
        "near chunks give: P(supported) 0.90"
    )
    assert checks["not_answered"]["expected_p"] == [0.1]
    assert checks["not_answered"]["answer_p"] == [0.9]


def test_an_unanswerable_question_passes_when_no_claim_is_found_near():
    draft = Draft(
        "unanswerable", "Who sells Zorbium in Antarctica?", DECLINE, [],
        expected="Zorbium is sold in Antarctica by Penguin Traders.",
    )  # fmt: skip
    assert _check(draft, search=_near)["not_answered"] == {
        "nearest": 2,
        "expected_answer": "Zorbium is sold in Antarctica by Penguin Traders.",
        "expected_claims": ["Zorbium is sold in Antarctica by Penguin Traders."],
        "expected_p": [0.1],
        "answer_from_passages": "Not in the passages.",
        "answer_claims": [],
        "answer_p": [],
    }
    blank = Draft("unanswerable", draft.question, DECLINE, [], expected="...")
    with pytest.raises(Rejected, match="expected answer has no claim"):
        _check(blank, search=_near)


@pytest.mark.parametrize(
    ("sentence", "declines"),
    [
        ("Not in the passages.", True),
        ("The passages do not say how tall the tower is.", True),
        ("There is no information about prices in the documents.", True),
        ("The passage doesn't mention it.", True),
        ("A single ticket costs 3 euros for children under twelve.", False),
        ("The ferry does not run on Sundays.", False),  # a claim, though negative
    ],
)
def test_an_answer_that_says_the_passages_lack_it_holds_no_claim(sentence, declines):
    assert unanswerable.declines(sentence) is declines


@pytest.mark.parametrize(
    ("first", "second", "follow_up"),
    [
        # The shared name becomes "it"; the determiner goes with it.
        (
            "When was the Hubble Space Telescope launched?",
            "Which shuttle carried the Hubble Space Telescope into orbit?",
            "Which shuttle carried it into orbit?",
        ),
        # A plural after an auxiliary is "they"; the shared "are" is not part of the subject.
        ("What are contingency fees?", "How are contingency fees calculated?",
         "How are they calculated?"),
        # "is" agrees with a plural subject.
        ("How many sprites does Relay use?", "Why is the sprites stored?",
         "Why are they stored?"),
        # Part of a longer name: no follow-up, rather than "Why is it folder large?".
        ("How many sprites does Relay use?", "Why is the sprites folder large?", None),
        ("What is a Kubernetes namespace?", "Who owns the new Kubernetes namespace?", None),
        ("What hazards can delay a mission?", "What are some hazards on Mars?", None),
        # A possessive becomes "its"; a name ending in s is singular.
        ("What is the Hubble Space Telescope?", "How wide is the Hubble Space Telescope's mirror?",
         "How wide is its mirror?"),
        ("What does Kubernetes schedule?", "Which regions does Kubernetes support?",
         "Which regions does it support?"),
        # After a preposition, the object form.
        ("Who can use the law libraries?", "What are the opening hours of the law libraries?",
         "What are the opening hours of them?"),
        # Only a generic word in common ("purpose"): no shared subject.
        ("What is the purpose of Relay?", "What is the purpose of Hubble?", None),
        # Nothing but the subject would be left.
        ("What is a Roth IRA?", "What is the Roth IRA?", None),
    ],
)  # fmt: skip
def test_a_second_question_becomes_a_follow_up_by_its_shared_subject(first, second, follow_up):
    assert as_follow_up(first, second) == follow_up


def test_a_specific_question_asks_about_a_statement_with_a_name_or_number():
    passage = (
        "# Zorbium\n"
        "Zorbium is a soft grey metal that miners prize.\n"  # no name or number after word 1
        "Zorbium was found in Patagonia by miners in the winter of 1931.\n"
        "Where else was it found by the miners of that winter season?\n"  # a question
        "See https://example.org/zorbium for the full list of known deposits today.\n"
        "Zorbium melts."  # too short
    )
    assert fact_sentence(passage) == (
        "Zorbium was found in Patagonia by miners in the winter of 1931."
    )
    # Without a name or number, any statement of the right length; none: None.
    assert fact_sentence("Zorbium is a soft grey metal that miners prize.") == (
        "Zorbium is a soft grey metal that miners prize."
    )
    assert (
        fact_sentence("# Zorbium\nZorbium melts.\nWhere is it found by the miners today?") is None
    )


def test_a_chunks_facts_come_named_first_and_each_in_turn():
    named = [
        "Zorbium was found in Patagonia by miners in the winter of 1931.",
        "Zorbium melts at 40 degrees in the sealed jars of the museum.",
    ]
    plain = "Zorbium is a soft grey metal that miners prize."
    passage = " ".join([plain, *named, "Zorbium melts."])  # the last is too short
    facts = fact_sentences(passage)
    # The two with a number first, in the order a hash of the passage starts them, then the
    # one without; the first is the one a first question asks about.
    assert sorted(facts[:2]) == sorted(named) and facts[2] == plain and len(facts) == 3
    assert [fact_sentence(passage, turn) for turn in range(4)] == [*facts, None]


def test_a_document_title_is_its_metadata_heading_or_short_first_line():
    assert document_title(Document("a.md", "# Zorbium\n\nZorbium melts.")) == "Zorbium"
    assert document_title(Document("b.txt", "\nRelay: A Laser Game | NASA\n\nIn this game")) == (
        "Relay: A Laser Game | NASA"
    )
    # A first line that is a sentence, or too long, is no title; a file name is never used.
    assert document_title(Document("c.txt", "Zorbium melts at forty degrees.\nMore.")) is None
    assert document_title(Document("d.txt", " ".join(["word"] * 21))) is None
    given = Document("e.pdf", "Zorbium melts.", {"title": "The  Zorbium\nGuide"})
    assert document_title(given) == "The Zorbium Guide"
    chunks = chunk_document(Document("a.md", "# Zorbium\n\n" + "Zorbium melts. " * 20))
    assert {c.title for c in chunks} == {"Zorbium"}
    # Every chunk carries the document's title, not its own section's heading, with or
    # without headings.
    sections = "# Zorbium\n\n" + "Zorbium melts. " * 20 + "\n\n## Uses\n\n" + "It glows. " * 30
    chunks = chunk_document(Document("b.md", sections))
    assert [c.heading for c in chunks] == ["Zorbium", "Uses"]
    assert [c.title for c in chunks] == ["Zorbium", "Zorbium"]
    plain = "Relay: A Laser Game | NASA\n\n" + "In this game you send data home. " * 10
    assert {c.title for c in chunk_document(Document("c.txt", plain))} == {
        "Relay: A Laser Game | NASA"
    }


# --- whole runs --------------------------------------------------------------------------------


def test_a_run_writes_n_checked_samples_that_load_into_evaluate(docs, tmp_path):
    out = tmp_path / "ts.jsonl"
    mix = "specific=1,multi_hop=1,follow_up=1,unanswerable=1"
    generated = _generate(docs, 4, out, mix=mix)
    summary = generated.summary
    assert summary.status == "complete" and summary.accepted == 4
    assert {k: v["accepted"] for k, v in summary.kinds.items()} == dict.fromkeys(
        ["specific", "multi_hop", "follow_up", "unanswerable"], 1
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == generated.samples
    by_kind = {r["metadata"]["kind"]: r for r in rows}
    specific = by_kind["specific"]
    source = specific["metadata"]["sources"][0]
    document = read_documents(docs).documents
    text = next(d.text for d in document if d.name == source["document"])
    assert specific["reference_contexts"] == [text[source["start"] : source["end"]]]
    assert specific["user_input"] == specific["question"]
    assert specific["reference"] == fact_sentence(specific["reference_contexts"][0])
    assert by_kind["unanswerable"]["reference"] == DECLINE
    assert by_kind["unanswerable"]["reference_contexts"] == []
    assert len(by_kind["multi_hop"]["reference_contexts"]) == 2
    assert by_kind["follow_up"]["history"][0]["role"] == "user"
    with pytest.raises(DatasetError, match="field 'answer': missing"):
        load_samples(out)
    answered = [{**r, "answer": r["reference"], "contexts": r["reference_contexts"]} for r in rows]
    samples = load_samples(answered).samples
    follow = next(s for s in samples if s.metadata["kind"] == "follow_up")
    assert [t.role for t in follow.history] == ["user", "assistant"]
    assert all(s.reference for s in samples)
    assert follow.metadata["reference_contexts"] == by_kind["follow_up"]["reference_contexts"]
    paths = output_paths(out)
    assert json.loads(paths["summary"].read_text())["accepted"] == 4
    rejected = [json.loads(line) for line in paths["rejected"].read_text().splitlines()]
    assert len(rejected) == summary.candidates - 4
    assert sum(summary.rejected.values()) == len(rejected)


def test_a_rerun_asks_nothing_and_writes_the_same_set(docs, tmp_path):
    out = tmp_path / "ts.jsonl"
    _generate(docs, 3, out, mix="specific=1,abstract=1,comparison=1")
    first = out.read_text()
    again = FakeJudge(model="reader")  # no responder: any call would fail
    summary = _generate(docs, 3, out, again, mix="specific=1,abstract=1,comparison=1").summary
    assert again.history == [] and summary.resumed == summary.candidates
    assert out.read_text() == first


def test_candidates_judged_under_other_check_rules_are_judged_again(docs, tmp_path, monkeypatch):
    from ragmeter.testset import quality

    out, mix = tmp_path / "ts.jsonl", "specific=1,multi_hop=1,follow_up=1,unanswerable=1"
    judge = FakeJudge(responder=reader, model="reader")
    first = _generate(docs, 4, out, judge, mix=mix).summary
    # Every prompt asked is one whose version is in the settings key.
    known = [*quality.CHECK_PROMPTS, *(writing_prompt(k, s) for k in KINDS for s in STYLES)]
    systems = {r.messages[0].content for r in judge.history}
    named = {system: {p.name for p in known if p.instruction in system} for system in systems}
    assert all(named.values()), [s[:60] for s, names in named.items() if not names]
    asked = set().union(*named.values())
    assert {"testset.stands_alone", "faithfulness.supported", "testset.closed_book"} <= asked
    assert "testset.from_passages" in asked  # the unanswerable question's near chunks' answer
    again = _generate(docs, 4, out, FakeJudge(model="reader"), mix=mix).summary
    assert again.resumed == again.candidates == first.candidates  # the same rules: read back
    monkeypatch.setattr(quality, "CHECK_RULES", quality.CHECK_RULES + ", and one more")
    judge = FakeJudge(responder=reader, model="reader")
    changed = _generate(docs, 4, out, judge, mix=mix).summary
    assert changed.resumed == 0 and len(judge.history) > 0


def test_the_seed_fixes_the_set_and_another_seed_changes_it(docs, tmp_path):
    a = _generate(docs, 2, None, mix="specific=1", seed=1).samples
    b = _generate(docs, 2, None, mix="specific=1", seed=1).samples
    c = _generate(docs, 2, None, mix="specific=1", seed=5).samples
    assert a == b
    assert [r["question"] for r in a] != [r["question"] for r in c]


def test_an_unusable_reply_rejects_its_candidate_and_the_run_goes_on(docs, tmp_path):
    broken = {"count": 0}

    def first_is_garbage(request: ChatRequest) -> str | ChatResponse:
        if "test questions" in request.messages[0].content and broken["count"] < 2:
            broken["count"] += 1  # the reply and its repair are both unusable
            return "Sure! Here is a question: what is Zorbium"
        return reader(request)

    judge = FakeJudge(responder=first_is_garbage, model="garbage")
    generated = _generate(docs, 2, None, judge, mix="specific=1")
    assert generated.summary.accepted == 2
    assert generated.rejected[0]["reason"] == "unusable reply"
    assert "no JSON object" in generated.rejected[0]["detail"]


def test_failed_calls_reject_a_candidate_without_ending_the_run(docs):
    calls = {"n": 0}

    def flaky(request: ChatRequest) -> str | ChatResponse:
        calls["n"] += 1
        if calls["n"] <= 3:
            raise JudgeError("connection reset")
        return reader(request)

    generated = _generate(
        docs, 1, None, FakeJudge(responder=flaky, model="flaky"), mix="specific=1"
    )
    assert generated.summary.accepted == 1
    assert "connection reset" in generated.rejected[0]["detail"]


def test_the_budget_stops_the_run_and_a_rerun_goes_on(docs, tmp_path):
    out = tmp_path / "ts.jsonl"
    stopped = _generate(docs, 2, out, mix="specific=1", max_calls=8)
    # An accepted candidate asks 6 calls (write, answerable, stands alone, its one claim,
    # the closed-book answer, the claim against it): the second stops at its 2nd call.
    assert stopped.summary.status == "stopped" and stopped.summary.accepted == 1
    finished = _generate(docs, 2, out, mix="specific=1")
    assert finished.summary.status == "complete" and finished.summary.resumed == 1


def test_a_corpus_of_hostile_files_gives_a_set_or_says_why_not(tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "empty.md").write_text("")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 10)
    (folder / "table.md").write_text(
        "| mineral | colour |\n|---|---|\n" + "".join(f"| m{i} | c{i} |\n" for i in range(50))
    )
    (folder / "code.md").write_text("```python\n" + "x = compute(y) + 1\n" * 300 + "```\n")
    (folder / "long.txt").write_text(
        "\n".join(f"Mineral number {i} melts at {i} degrees in sealed jars." for i in range(10_000))
    )
    generated = _generate(folder, 3, tmp_path / "ts.jsonl", mix="specific=1,unanswerable=1")
    summary = generated.summary
    assert summary.skipped_documents == {
        "binary.txt": "binary file (NUL bytes)",
        "empty.md": "no text",
    }
    assert summary.documents == 3 and summary.status in {"complete", "short"}
    assert summary.accepted + sum(summary.rejected.values()) == summary.candidates


def test_no_usable_chunk_is_a_clear_error(tmp_path):
    (tmp_path / "tiny.md").write_text("# Title\n\nToo short.\n")
    with pytest.raises(ValueError, match="no chunk of at least 25 words"):
        _generate(tmp_path, 1, None)


# --- the command -------------------------------------------------------------------------------


def test_the_command_estimates_without_calling_a_judge(docs, no_user_cache):
    result = CliRunner().invoke(
        app,
        [
            "generate",
            str(docs),
            "--n",
            "2",
            "--mix",
            "specific=1",
            "--embedder",
            "fake",
            "--no-entities",
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    # 2 / 0.5 = 4 candidates wanted: the three chunks' first facts, then quellite.txt's second
    # (each chunk has two, and the round goes on in the seed's order). Each: write, stands
    # alone, 2 claims against the chunk, closed book, 2 claims against its answer = 7 calls.
    assert re.search(r"specific\s+│\s+4\s+│\s+28\s+│", result.output)
    assert "No judge was called" in result.output


ONE_ACCEPTED = [
    json.dumps(
        {
            "question": "Where was Zorbium first found?",
            "answer": "Zorbium was first found in Patagonia.",
        }
    ),
    "Yes",  # it stands alone
    "Yes",  # the one claim is supported
    json.dumps({"answer": "I do not know."}),
    "No",  # the closed-book answer does not support the claim
]
"""A ``fake:FILE`` script (one reply a line) that writes one candidate and accepts it."""


def test_the_command_writes_a_set_from_a_scripted_judge(docs, tmp_path, no_user_cache):
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in ONE_ACCEPTED))
    out = tmp_path / "ts.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "generate",
            str(docs / "zorbium.md"),
            "--n",
            "1",
            "--mix",
            "specific=1",
            "--judge",
            f"fake:{script}",
            "--embedder",
            "fake",
            "--no-entities",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())
    assert row["question"] == "Where was Zorbium first found?"
    assert row["metadata"]["checks"]["closed_book"]["recall"] == 0.0
    assert "1 of 1 accepted from 1 candidates" in " ".join(result.output.split())


def test_budget_exhausted_is_not_a_judge_error():
    # The run relies on this: a budget stop ends the candidate instead of being retried.
    assert not issubclass(BudgetExhausted, JudgeError)


# --- meta testset ------------------------------------------------------------------------------


def test_copying_needs_five_consecutive_words_of_a_source():
    source = "Zorbium melts at forty degrees in sealed jars."
    assert copies("Does zorbium melt at forty degrees in sealed jars?", [source])  # 5: at..jars
    assert not copies("Does Zorbium melt at forty degrees?", [source])  # 3 in a row at most
    assert not copies("Melts at forty", [source])  # shorter than the run


def test_recall_counts_the_share_of_sources_in_the_top_five():
    chunks = [Chunk("a", 0, 10, "x"), Chunk("a", 10, 20, "y"), Chunk("b", 0, 10, "z")]
    chunks += [Chunk(f"n{i}", 0, 10, "noise") for i in range(5)]
    two_sources = Query("q", frozenset({"a", "b"}), (("a", 12, 18), ("b", 0, 10)))
    one_source = Query("q", frozenset({"b"}), (("b", 0, 10),))
    # The ranking puts chunk 1 (a:10-20) first, then noise: only the first query's first
    # source is found at the chunk level (1/2), the second query's none (0): mean 0.25.
    ranked = lambda text: [1, 3, 4, 5, 6, 2]  # noqa: E731 - chunk 2 (b) is sixth, out of the top 5
    assert recall_at_k([two_sources, one_source], chunks, ranked, "chunk") == 0.25
    assert recall_at_k([two_sources, one_source], chunks, ranked, "document") == 0.25


def test_people_questions_are_first_turns_and_follow_ups_with_their_history(tmp_path):
    def row(task: str, users: list[str], gold: list[str], model: str = "reference") -> str:
        turns = []
        for text in users:
            turns += [{"speaker": "user", "text": text}, {"speaker": "agent", "text": "ok"}]
        contexts = [{"document_id": d, "title": None, "text": f"text of {d}"} for d in gold]
        return json.dumps(
            {"task_id": task, "model_id": model, "conversation": turns[:-1], "contexts": contexts}
        )

    path = tmp_path / "mtrag.jsonl"
    path.write_text(
        "\n".join(
            [
                row("t1", ["Who sells Zorbium?"], ["p1"]),
                row("t1", ["Who sells Zorbium?"], ["p1"], model="gpt-4o"),  # same task
                row("t2", ["Who sells Zorbium?", "And where?"], ["p1", "p2"]),
                row("t3", ["No gold here?"], []),
            ]
        )
    )
    corpus, groups, sources = people_questions(path)
    assert [d.name for d in corpus] == ["p1.txt", "p2.txt"]
    assert groups["first turns"] == [Query("Who sells Zorbium?", frozenset({"p1.txt"}))]
    assert groups["follow-ups"] == [
        Query("Who sells Zorbium? And where?", frozenset({"p1.txt", "p2.txt"}))
    ]
    assert groups["follow-ups alone"][0].text == "And where?"
    assert sources["And where?"] == ["text of p1", "text of p2"]


def test_meta_testset_reports_a_generated_set(docs, tmp_path, no_user_cache):
    out = tmp_path / "ts.jsonl"
    _generate(docs, 2, out, mix="specific=1,unanswerable=1")
    report = report_of(out, docs, embedder=HashingEmbedder())
    assert report.samples == 2 and report.acceptance == round(2 / report.candidates, 4)
    assert report.supported_accepted == 1.0
    # The scripted judge asks "What is true of Zorbium melts?" of "Zorbium melts at ...": two
    # words of the source in a row, not five.
    assert report.copying == 0.0
    assert report.kinds == {
        "specific": {"asked": 0.5, "accepted": 0.5},
        "unanswerable": {"asked": 0.5, "accepted": 0.5},
    }
    assert report.recall["generated (source chunk)"].questions == 1
    result = CliRunner().invoke(
        app, ["meta", "testset", str(out), "--corpus", str(docs), "--embedder", "fake"]
    )
    assert result.exit_code == 0, result.output
    assert "recall@5 of the source" in result.output


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (Helvetica), with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def test_a_pdf_is_read_page_by_page_and_a_broken_one_skipped(tmp_path):
    pytest.importorskip("pypdf", reason="the 'pdf' extra (pypdf) is not installed")
    (tmp_path / "good.pdf").write_bytes(_pdf("Zorbium melts at forty degrees."))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really\n")
    corpus = read_documents(tmp_path)
    assert [(d.name, d.text.strip()) for d in corpus.documents] == [
        ("good.pdf", "Zorbium melts at forty degrees.")
    ]
    assert [s.name for s in corpus.skipped] == ["broken.pdf"]
    assert corpus.skipped[0].reason.startswith("unreadable PDF")


def test_a_killed_run_resumes_without_asking_any_call_twice(docs, tmp_path):
    def counting(stop_at: int | None):
        calls = {"n": 0}

        def respond(request: ChatRequest) -> str | ChatResponse:
            calls["n"] += 1
            if calls["n"] == stop_at:
                raise KeyboardInterrupt  # killed while this call was in flight
            return reader(request)

        return calls, FakeJudge(responder=respond, model="reader")

    def run(judge: FakeJudge, out: Path, cache: Path | bool):
        return generate_testset(
            docs, 3, out=out, judge=judge, embedder=HashingEmbedder(), cache=cache,
            entities=False, mix="specific=1,multi_hop=1,unanswerable=1",
        )  # fmt: skip

    whole, judge = counting(None)
    expected = run(judge, tmp_path / "whole.jsonl", False)
    total = whole["n"]
    out, cache = tmp_path / "ts.jsonl", tmp_path / "cache"
    _, judge = counting(10)
    with pytest.raises(KeyboardInterrupt):
        run(judge, out, cache)
    # The candidates finished before the kill are already in the test set's file.
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written and written == expected.samples[: len(written)]
    after, judge = counting(None)
    resumed = run(judge, out, cache)
    # The 9 calls answered before the kill are not asked again; the 10th and the rest are.
    assert after["n"] == total - 9
    assert resumed.samples == expected.samples


def test_personas_reach_the_prompt_and_misspelt_questions_keep_their_reference(docs):
    judge = FakeJudge(responder=reader, model="reader")
    generated = _generate(
        docs, 1, None, judge, mix="specific=1", styles="misspelt=1", personas=["a geologist"]
    )
    row = generated.samples[0]
    assert row["metadata"]["persona"] == "a geologist" and row["metadata"]["style"] == "misspelt"
    assert "<persona>\na geologist\n</persona>" in judge.history[0].messages[-1].content
    written = json.loads(reader(judge.history[0]))["question"]  # what the judge wrote
    assert row["question"] == misspell(written, f"1:{written}") != written
    assert row["reference"] == json.loads(reader(judge.history[0]))["answer"]


def test_paired_chunks_prefer_a_shared_named_entity(tmp_path):
    from ragmeter.testset.entities import EntityFinder
    from ragmeter.testset.planning import Corpus

    if not EntityFinder().available:
        pytest.skip("spaCy's small English model (the 'attribution' extra) is not installed")
    texts = {
        "a.txt": "Ada Lovelace wrote notes on the engine in London. " * 3,
        "b.txt": "The engine notes were written by a mathematician in the city. " * 3,
        "c.txt": "Ada Lovelace was born in 1815 and died young. " * 3,
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    corpus = Corpus.read(tmp_path, HashingEmbedder(), 1200, 200, 10, entities=True)
    source = next(i for i, c in enumerate(corpus.chunks) if c.document == "a.txt")
    plain = Corpus.read(tmp_path, HashingEmbedder(), 1200, 200, 10, entities=False)
    # By words alone b shares the most with a; with entities, c shares "Ada Lovelace".
    assert plain.chunks[plain.partner(source, 0.92)[0]].document == "b.txt"
    other, pairing = corpus.partner(source, 0.92)
    assert corpus.chunks[other].document == "c.txt"
    assert "ada lovelace" in pairing["shared_entities"]


HOSTILE = {
    "empty.md": b"",
    "binary.txt": bytes(range(256)) * 10,
    "table.md": (
        "| mineral | colour |\n|---|---|\n" + "".join(f"| m{i} | c{i} |\n" for i in range(50))
    ).encode(),
    "code.md": ("```python\n" + "x = compute(y) + 1\n" * 300 + "```\n").encode(),
    "long.txt": "\n".join(f"Line {i} of a long file." for i in range(10_000)).encode(),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_file_beside_good_ones_leaves_a_complete_run(docs, tmp_path, name):
    (docs / name).write_bytes(HOSTILE[name])
    summary = _generate(docs, 2, tmp_path / "ts.jsonl", mix="specific=1").summary
    assert summary.status == "complete" and summary.accepted == 2
    skipped = name in {"empty.md", "binary.txt"}
    assert (name in summary.skipped_documents) is skipped
    assert summary.documents == 3 + (not skipped)


def test_the_schedule_gives_each_kind_its_share_evenly():
    from itertools import islice

    from ragmeter.testset.planning import schedule
    from ragmeter.testset.queries import DEFAULT_MIX

    first = list(islice(schedule(DEFAULT_MIX), 20))
    # 20 turns x (0.30, 0.20, 0.15, 0.10, 0.15, 0.10) = 6, 4, 3, 2, 3, 2.
    assert {k: first.count(k) for k in DEFAULT_MIX} == {
        "specific": 6, "abstract": 4, "multi_hop": 3, "comparison": 2, "follow_up": 3,
        "unanswerable": 2,
    }  # fmt: skip
    assert first[:2] == ["specific", "abstract"]  # the largest shares come first


def test_what_the_judge_writes_has_no_length_bounds_in_its_schema():
    # llama.cpp turns a maxLength into as many nested grammar rules and refuses past a limit
    # (a 1,500-character answer failed every candidate): lengths are checked after parsing.
    from ragmeter.testset.quality import CLOSED_BOOK
    from ragmeter.testset.queries import KINDS, STYLES

    schemas = [writing_prompt(k, s).schema for k in KINDS for s in STYLES] + [CLOSED_BOOK.schema]
    assert not any(re.search(r"(max|min)Length", json.dumps(s)) for s in schemas)
    with pytest.raises(ValueError, match="is blank"):
        writing_prompt("specific").parse('{"question": "  ", "answer": "Yes."}')
