"""The LangChain and LlamaIndex adapters, on the frameworks' own offline fakes, scored by the
scripted judge. No test may reach the network: every socket connection fails."""

from __future__ import annotations

import socket
import sys
from operator import itemgetter

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode

from ragmeter.data import DatasetError
from ragmeter.integrations.langchain import evaluate_chain, run_chain, sample_from_chain
from ragmeter.integrations.llamaindex import (
    evaluate_query_engine,
    run_query_engine,
    sample_from_response,
)
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.sample import Sample

from .conftest import routed

# One statement, supported with P = 0.75; the answer addresses the question with P = 0.6; each
# context is one sentence, needed with P = 0.9.
REPLIES = {
    "statements": {"statements": ["The answer makes one claim."]},
    "supported": 0.75,
    "complete": 0.6,
    "noncommittal": {"noncommittal": False},
    "needed": 0.9,
}
# faithfulness: 0.75 / 1 statement; answer relevance: P(complete); context relevance: the one
# sentence reaches 0.5, so 1 / 1.
EXPECTED = {"faithfulness": 0.75, "answer_relevance": 0.6, "context_relevance": 1.0}


def judged(result) -> dict[str, list[float | None]]:
    return {metric: [s.value for s in result.scores_for(metric)] for metric in result.metrics}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Fail any attempt to open a connection (a tokenizer or corpus download, telemetry)."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# --- LangChain ------------------------------------------------------------------------------

PASSAGES = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Rome is the capital of Italy.",
]
# The fake embedding knows no meaning: a text is nearest to itself (the same vector, cosine 1)
# and unrelated to the rest. So each question is asked in the words of the passage it must find.
QUESTIONS = PASSAGES[:2]
ANSWERS = ["Paris.", "Berlin."]


def retrieval_chain():
    """What ``create_retrieval_chain`` builds, in LCEL: {input} -> {input, context, answer}."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_texts(PASSAGES)
    retriever = store.as_retriever(search_kwargs={"k": 1})
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {input}")
    llm = FakeListChatModel(responses=ANSWERS)
    return RunnablePassthrough.assign(context=itemgetter("input") | retriever).assign(
        answer=prompt | llm | StrOutputParser()
    )


def test_a_retrieval_chain_runs_into_samples():
    samples = run_chain(retrieval_chain(), QUESTIONS)
    assert samples == [
        Sample(question=PASSAGES[0], contexts=[PASSAGES[0]], answer="Paris."),
        Sample(question=PASSAGES[1], contexts=[PASSAGES[1]], answer="Berlin."),
    ]


def test_a_chain_that_starts_from_the_bare_question():
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_texts(PASSAGES)
    answer = ChatPromptTemplate.from_template("{context} {question}") | FakeListChatModel(
        responses=["Rome."]
    )
    chain = {
        "context": store.as_retriever(search_kwargs={"k": 1}),
        "question": RunnablePassthrough(),
    } | RunnablePassthrough.assign(answer=answer)  # an AIMessage: no output parser
    samples = run_chain(chain, [PASSAGES[2]], input_key=None)
    assert samples == [Sample(question=PASSAGES[2], contexts=[PASSAGES[2]], answer="Rome.")]


def test_a_chain_is_evaluated_with_the_judge():
    result = evaluate_chain(
        retrieval_chain(),
        QUESTIONS,
        judge=FakeJudge(responder=routed(REPLIES)),
        embedder=HashingEmbedder(),
        cache=False,
    )
    assert [s.answer for s in result.samples] == ANSWERS
    assert judged(result) == {metric: [value, value] for metric, value in EXPECTED.items()}


@pytest.mark.parametrize(
    "output",
    [
        # create_retrieval_chain
        {"input": "Q?", "context": [Document("One."), Document("Two.")], "answer": "A."},
        # RetrievalQA with return_source_documents=True
        {"query": "Q?", "source_documents": [Document("One."), "Two."], "result": "A."},
        # a hand-made chain: a question key, an AIMessage for the answer
        {"question": "Q?", "context": ("One.", "Two."), "answer": AIMessage("A.")},
    ],
    ids=["create_retrieval_chain", "RetrievalQA", "question-and-message"],
)
def test_the_common_output_keys_are_read(output):
    assert sample_from_chain(output) == Sample(
        question="Q?", contexts=["One.", "Two."], answer="A."
    )


def test_contexts_formatted_into_one_text_are_one_context():
    output = {"input": "Q?", "context": "One. Two.", "answer": "A."}
    assert sample_from_chain(output).contexts == ["One. Two."]


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("Paris.", r"row 2, field '<row>': expected the chain to return a dict, got a str"),
        (
            {"input": "Q?", "context": []},
            r"row 2, field 'answer': the chain's output has none of the keys 'answer', 'result' "
            r"\(its keys: 'input', 'context'\)",
        ),
        (
            {"input": "Q?", "context": [Document("One."), {"text": "Two."}], "answer": "A."},
            r"row 2, field 'contexts': item 2 of 'context' is a dict, expected a Document or a "
            r"string",
        ),
        (
            {"input": "Q?", "source_documents": None, "answer": "A."},
            r"row 2, field 'contexts': 'source_documents' is None, expected a list of Documents",
        ),
        (
            {"input": "Q?", "context": [], "answer": {"text": "A."}},
            r"row 2, field 'answer': expected a string, got dict",
        ),
    ],
    ids=["not-a-dict", "no-answer", "bad-document", "no-documents", "answer-not-text"],
)
def test_a_bad_output_is_named_by_row_and_field(output, message):
    good = {"input": "Q?", "context": [], "answer": "A."}
    outputs = iter([good, output])
    chain = RunnableLambda(lambda _: next(outputs))
    with pytest.raises(DatasetError, match=message):
        run_chain(chain, ["Q?", "Q?"])


def test_a_blank_question_is_named_by_its_row():
    chain = RunnableLambda(lambda given: {"context": [], "answer": "A."})
    with pytest.raises(DatasetError, match=r"row 2, field 'question': .*question is blank"):
        run_chain(chain, ["Q?", "  "])


def test_without_langchain_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain_core.documents", None)
    with pytest.raises(ImportError, match=r"pip install 'ragmeter\[langchain\]'"):
        sample_from_chain({"input": "Q?", "context": [], "answer": "A."})


# --- LlamaIndex -----------------------------------------------------------------------------


@pytest.fixture
def query_engine(monkeypatch):
    """One passage in a vector index with constant mock embeddings, answered by the mock LLM
    (``max_tokens=2``: it answers "text text"). Token counting uses whitespace words rather
    than tiktoken's files, and the index is built from a node, so no sentence splitter (and no
    NLTK data) is needed."""
    import llama_index.core

    monkeypatch.setattr(llama_index.core, "global_tokenizer", str.split)
    node = TextNode(text="Paris is the capital of France.", id_="paris")
    index = VectorStoreIndex([node], embed_model=MockEmbedding(embed_dim=8))
    return index.as_query_engine(llm=MockLLM(max_tokens=2), similarity_top_k=1)


def test_a_query_engine_runs_into_samples(query_engine):
    question = "What is the capital of France?"
    assert run_query_engine(query_engine, [question]) == [
        Sample(question=question, contexts=["Paris is the capital of France."], answer="text text")
    ]


def test_a_query_engine_is_evaluated_with_the_judge(query_engine):
    questions = ["What is the capital of France?", "Which city is the French capital?"]
    result = evaluate_query_engine(
        query_engine,
        questions,
        judge=FakeJudge(responder=routed(REPLIES)),
        embedder=HashingEmbedder(),
        cache=False,
    )
    assert [s.question for s in result.samples] == questions
    # The mock LLM answers "text text", which shares no word with the question or the passage:
    # answer relevance's off-topic gate scores it 0 before the judge is asked.
    expected = {**EXPECTED, "answer_relevance": 0.0}
    assert judged(result) == {metric: [value, value] for metric, value in expected.items()}


def sources(*texts: str) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=t), score=1.0 - i / 10) for i, t in enumerate(texts)]


def test_a_response_keeps_its_sources_in_order():
    response = Response("Paris.", source_nodes=sources("Two.", "One."))
    assert sample_from_response("Q?", response) == Sample(
        question="Q?", contexts=["Two.", "One."], answer="Paris."
    )


def test_a_streaming_response_is_read_to_its_end():
    response = StreamingResponse(response_gen=iter(["Par", "is."]), source_nodes=sources("One."))
    assert sample_from_response("Q?", response).answer == "Paris."


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (Response(None), r"row 3, field 'answer': the query engine's response holds no answer"),
        ("Paris.", r"row 3, field '<row>': expected a LlamaIndex Response, got a str"),
    ],
)
def test_a_bad_response_is_named_by_row_and_field(response, message):
    with pytest.raises(DatasetError, match=message):
        sample_from_response("Q?", response, row=3)


def test_without_llamaindex_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_index.core.base.response.schema", None)
    with pytest.raises(ImportError, match=r"pip install 'ragmeter\[llamaindex\]'"):
        sample_from_response("Q?", object())
