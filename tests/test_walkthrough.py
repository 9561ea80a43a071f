"""The walk-through of docs/from-documents.md, from documents to a verdict, on the shipped
handbook: a test set written by a scripted judge, answered by the example's LangChain chain (a
hashing retriever and a scripted generator), scored by the reference metrics and drawn as a
report. Every expected value is worked out by reading the handbook."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli.main import app
from ragmeter.data import DatasetError
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.testset import generate_testset, read_documents
from ragmeter.testset.chunking import chunk_corpus

from .test_testset import _tag, reader

ROOT = Path(__file__).parent.parent
HANDBOOK = ROOT / "examples" / "handbook"


def _example():
    """examples/answer_with_langchain.py, imported as the script it is (examples is no package)."""
    path = ROOT / "examples" / "answer_with_langchain.py"
    spec = importlib.util.spec_from_file_location("answer_with_langchain", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


walk = _example()

# What the judge writes from each chunk of repairs.md (found by its heading). Each reference is
# a sentence of its chunk, so the scripted checks find it supported.
WRITTEN = {
    "Repairs and servicing at Brightline Bikes": (
        "When does a Brightline bike get a free full service?",
        "Every Brightline bike gets a free full service every six months.",
    ),
    "Reporting a fault": (
        "When is a flat tyre on a Brightline bike fixed?",
        "A flat tyre is fixed at the customer's address within 24 hours on weekdays.",
    ),
    "Batteries": (
        "How long does a full charge of a Brightline battery take?",
        "A full charge takes four and a half hours with the supplied 4 amp charger.",
    ),
}


def writer(request: ChatRequest) -> str | ChatResponse:
    """Writes the question of ``WRITTEN`` for the passage it is shown; answers every check as
    ``reader`` does (supported when every word of the statement is in the context)."""
    if "own knowledge" in request.messages[0].content or request.max_tokens in (1, 3):
        return reader(request)
    passage = _tag(request.messages[-1].content, "passage")
    heading = re.match(r"#+ (.*)", passage)
    assert heading is not None, passage
    question, reference = WRITTEN[heading.group(1)]
    return json.dumps({"question": question, "answer": reference})


# The system under test answers the first question right, gets the second one's number wrong
# (12 hours, not 24) and states the third as the handbook does.
ANSWERS = {
    WRITTEN["Repairs and servicing at Brightline Bikes"][0]: "Every Brightline bike gets a free "
    "full service every six months.",
    WRITTEN["Reporting a fault"][0]: "A flat tyre is fixed within 12 hours.",
    WRITTEN["Batteries"][0]: "A full charge takes four and a half hours.",
}


def test_documents_to_a_verdict(tmp_path, no_user_cache):
    # 1. ragmeter generate: one specific question from each of repairs.md's three chunks.
    testset = tmp_path / "testset.jsonl"
    generated = generate_testset(
        HANDBOOK / "repairs.md",
        3,
        out=testset,
        judge=FakeJudge(responder=writer, model="writer"),
        embedder=HashingEmbedder(),
        cache=False,
        entities=False,
        mix="specific=1",
    )
    assert generated.summary.accepted == 3 and generated.summary.rejected == {}
    rows = [json.loads(line) for line in testset.read_text().splitlines()]
    assert {r["question"] for r in rows} == set(ANSWERS)

    # 2. The example's chain answers them: its scripted generator replies in the test set's
    # order, its retriever ranks the handbook's 13 chunks by hashed bag-of-words.
    script = tmp_path / "answers.jsonl"
    script.write_text("".join(json.dumps(ANSWERS[r["question"]]) + "\n" for r in rows))
    answered_path = tmp_path / "answered.jsonl"
    options = ["--judge", f"fake:{script}", "--embedder", "fake", "--k", "2"]
    walk.main([str(testset), str(HANDBOOK), "--out", str(answered_path), *options])
    answered = [json.loads(line) for line in answered_path.read_text().splitlines()]
    chunks = {c.text for c in chunk_corpus(read_documents(HANDBOOK).documents)}
    assert len(chunks) == 13
    for row, before in zip(answered, rows, strict=True):
        # Everything the test set holds is kept: the reference metrics need reference and
        # reference_contexts, and the id ties the scores back to the test set.
        assert {k: row[k] for k in before} == before
        assert row["answer"] == ANSWERS[row["question"]]
        # Each question shares its rarest words (service, tyre, charge) with its source chunk
        # alone, so the source comes first; the second chunk is another of the handbook's.
        assert len(row["contexts"]) == 2 and set(row["contexts"]) <= chunks
        assert row["contexts"][0] == row["reference_contexts"][0]
        assert row["contexts"][1] != row["contexts"][0]

    # 3. ragmeter evaluate with the reference metrics; the judge says "supported" (P = 0.9)
    # when every word of a claim is in the text it is checked against, else 0.1.
    metrics = ["answer_correctness", "context_recall", "context_precision", "faithfulness"]
    result = evaluate(
        answered_path,
        metrics,
        judge=FakeJudge(responder=reader, model="reader"),
        embedder=HashingEmbedder(),
        cache=False,
        out_dir=tmp_path / "run",
    )
    by_question = {
        sample.question: {m: result.scores_for(m)[i].value for m in metrics}
        for i, sample in enumerate(result.samples)
    }
    # Each text is one claim. A right answer: precision and recall 0.9, so F1 0.9; the wrong
    # number: neither claim holds the other (12 vs 24, "customer's address"), 0.1 and 0.1.
    # The third answer's words are all in the reference (precision 0.9), but the reference's
    # "supplied 4 amp charger" is not in the answer (recall 0.1): F1 = 2 x 0.09 / 1.0 = 0.18.
    # The source chunk, ranked first, holds the reference (0.9) and the second chunk does not
    # (0.1): average precision (0.9 x 0.9 + 0.5 x 0.1) / 1.0 = 0.86. Faithfulness: the wrong
    # number is in no chunk.
    service, tyre, charge = (WRITTEN[h][0] for h in WRITTEN)
    expected = {
        service: {
            "answer_correctness": 0.9,
            "context_recall": 0.9,
            "context_precision": 0.86,
            "faithfulness": 0.9,
        },
        tyre: {
            "answer_correctness": 0.1,
            "context_recall": 0.9,
            "context_precision": 0.86,
            "faithfulness": 0.1,
        },
        charge: {
            "answer_correctness": 0.18,
            "context_recall": 0.9,
            "context_precision": 0.86,
            "faithfulness": 0.9,
        },
    }
    assert by_question == {
        q: {m: pytest.approx(v, abs=1e-6) for m, v in values.items()}
        for q, values in expected.items()
    }

    # 4. ragmeter report: the run as one HTML page.
    html = tmp_path / "report.html"
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(html)])
    assert report.exit_code == 0, report.output
    data = re.search(r'id="ragmeter-data">([^<]*)<', html.read_text())
    assert data is not None
    page = json.loads(gzip.decompress(base64.b64decode(data.group(1))))
    shown = json.dumps(page)
    assert "context_precision" in shown and "A flat tyre is fixed within 12 hours." in shown


def test_a_follow_up_is_asked_after_its_conversation():
    generator = FakeJudge(["Within 24 hours on weekdays."], model="generator")
    retriever = walk.build_retriever(HANDBOOK, HashingEmbedder(), 1)
    chain = walk.build_chain(retriever, walk.as_chat_model(generator))
    history = [
        {"role": "user", "content": "How do I report a flat tyre?"},
        {"role": "assistant", "content": "Choose Report a problem in the Brightline app."},
    ]
    row = {"question": "And how long does that take?", "history": history, "reference": "24 h."}
    [answered] = walk.answer_rows(chain, [(1, row)])
    # Alone, "And how long does that take?" finds the Batteries chunk ("takes", "that"); after
    # the first turn, "flat tyre" and "report" find the chunk that answers it.
    assert retriever.invoke(row["question"])[0].page_content.startswith("## Batteries")
    assert answered["contexts"][0].startswith("## Reporting a fault\n\nTo report a fault")
    assert answered["answer"] == "Within 24 hours on weekdays."
    assert answered["reference"] == "24 h." and answered["history"] == history
    [request] = generator.history
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert [m.content for m in request.messages[1:3]] == [t["content"] for t in history]
    assert request.messages[3].content.startswith("Passages:\n[1] ## Reporting a fault")
    assert request.messages[3].content.endswith("Question: And how long does that take?")


def test_a_bad_row_is_named_by_its_line_and_field(tmp_path, capsys):
    testset = tmp_path / "testset.jsonl"
    testset.write_text('{"question": "Q?"}\n\n{"reference": "A."}\n')
    with pytest.raises(DatasetError, match=r"row 3, field 'question': missing"):
        walk.read_testset(testset)
    with pytest.raises(SystemExit) as stopped:
        walk.main([str(testset), str(HANDBOOK), "--judge", "fake", "--embedder", "fake"])
    assert stopped.value.code == 2
    assert "row 3, field 'question': missing" in capsys.readouterr().err
    chain = walk.RunnableLambda(lambda inputs: {"context": [], "reply": "A."})
    with pytest.raises(DatasetError, match=r"row 7, field 'answer': the chain's output has none"):
        walk.answer_rows(chain, [(7, {"question": "Q?"})])
    with pytest.raises(DatasetError, match=r"row 2, field 'history': turn 1"):
        walk.answer_rows(chain, [(2, {"question": "Q?", "history": ["hello"]})])
