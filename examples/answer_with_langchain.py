"""Answer a generated test set with a LangChain retrieval chain, ready for ``ragmeter evaluate``.

    ragmeter generate examples/handbook --n 6 --mix specific=4,abstract=2 --out testset.jsonl
    python examples/answer_with_langchain.py testset.jsonl examples/handbook   # answered.jsonl
    ragmeter evaluate answered.jsonl --metrics diagnosis --html report.html

The chain here is a stand-in for yours, built from what runs offline: the retriever is the
documents cut into the same chunks ``ragmeter generate`` cuts, embedded by ragmeter's MiniLM in
LangChain's ``InMemoryVectorStore``; the generator is the bundled offline judge model (the only
LLM here without a network), wrapped as a LangChain runnable. It is a small model, so expect
modest answers: what matters is that the evaluation says which part failed. To evaluate your
own system, replace ``build_chain`` with your chain; reading the test set, the adapter
(``sample_from_chain``) and writing the answered rows stay as they are. A LlamaIndex query
engine goes through its adapter the same way: ``sample_from_response(question,
engine.query(question))`` gives the sample whose ``answer`` and ``contexts`` a row takes.

Each row of the test set is asked as ``{"input": question, "chat_history": earlier turns}`` (a
follow-up has its first turn in ``history``). The chain's output goes through ragmeter's
LangChain adapter, which reads the answer and the retrieved documents (and names the row and
field of an output it cannot read); the row is written back with ``answer`` and ``contexts``
added and everything else kept: ``reference`` and ``reference_contexts`` are what the reference
metrics compare with.

Needs ``pip install 'ragmeter[local,langchain]'``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever

from ragmeter.data import DatasetError, read_rows
from ragmeter.integrations.langchain import sample_from_chain
from ragmeter.judges.base import ChatRequest, Embedder, Judge, Message
from ragmeter.judges.registry import resolve_models
from ragmeter.sample import parse_turns
from ragmeter.testset import DECLINE, read_documents
from ragmeter.testset.chunking import chunk_corpus

INSTRUCTION = (
    "You answer questions about a company from the numbered passages of its documents. Use "
    "only what the passages state, in one to three sentences. If the passages do not contain "
    f'the answer, reply exactly: "{DECLINE}"'
)
PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", INSTRUCTION),
        MessagesPlaceholder("chat_history"),
        ("user", "Passages:\n{passages}\n\nQuestion: {input}"),
    ]
)
ROLES = {"system": "system", "human": "user", "ai": "assistant"}
"""LangChain's message types as the roles of ragmeter's chat requests."""
MAX_TOKENS = 200


class EmbedderEmbeddings(Embeddings):
    """A ragmeter embedder (MiniLM by default) behind LangChain's ``Embeddings`` interface."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def build_retriever(docs: str | Path, embedder: Embedder, k: int) -> VectorStoreRetriever:
    """The ``k`` chunks nearest to a query, over ``docs`` cut as ``ragmeter generate`` cuts them
    (so a retrieved chunk is a test set's source chunk when the retriever finds it)."""
    chunks = chunk_corpus(read_documents(docs).documents)
    store = InMemoryVectorStore(EmbedderEmbeddings(embedder))
    store.add_documents(
        [
            Document(c.text, metadata={"source": c.document, "start": c.start, "end": c.end})
            for c in chunks
        ]
    )
    return store.as_retriever(search_kwargs={"k": k})


def as_chat_model(judge: Judge) -> Runnable[PromptValue, str]:
    """``judge`` as the chain's LLM: a prompt's messages in, the reply's text out (greedy)."""

    def reply(prompt: PromptValue) -> str:
        messages = tuple(
            Message(role=ROLES[m.type], content=str(m.content)) for m in prompt.to_messages()
        )
        return judge.complete(ChatRequest(messages=messages, max_tokens=MAX_TOKENS)).text

    return RunnableLambda(reply)


def search_query(inputs: dict[str, Any]) -> str:
    """What the retriever is asked: the user's earlier turns and the question, so that a
    follow-up ("And how long does that take?") still finds its subject."""
    asked = [text for role, text in inputs["chat_history"] if role == "user"]
    return " ".join([*asked, inputs["input"]])


def numbered(documents: Sequence[Document]) -> str:
    return "\n\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(documents, 1))


def build_chain(retriever: Runnable[str, list[Document]], llm: Runnable[Any, Any]) -> Runnable:
    """{input, chat_history} -> {input, chat_history, context, answer}, the shape
    ``create_retrieval_chain`` returns."""
    answer = (
        RunnablePassthrough.assign(passages=itemgetter("context") | RunnableLambda(numbered))
        | PROMPT
        | llm
        | StrOutputParser()
    )
    return RunnablePassthrough.assign(context=RunnableLambda(search_query) | retriever).assign(
        answer=answer
    )


def read_testset(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The test set's rows with their line numbers.

    Raises:
        DatasetError: naming the line and field of a row that is not a JSON object or has no
            question.
    """
    rows = []
    for line, row in read_rows(Path(path)):
        if isinstance(row, DatasetError):
            raise row
        if not isinstance(row, dict):
            raise DatasetError(line, "<row>", f"expected an object, got {type(row).__name__}")
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            raise DatasetError(line, "question", "missing or not a text")
        rows.append((line, row))
    return rows


def answer_rows(
    chain: Runnable, rows: Iterable[tuple[int, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Each row asked of ``chain``, with the chain's ``answer`` and ``contexts`` added.

    Raises:
        DatasetError: naming the line and field of a row whose history cannot be read, or whose
            chain output the adapter cannot read.
    """
    answered = []
    for line, row in rows:
        try:
            history = parse_turns(row.get("history"))
        except ValueError as error:
            raise DatasetError(line, "history", str(error)) from None
        output = chain.invoke(
            {"input": row["question"], "chat_history": [(t.role, t.text) for t in history]}
        )
        sample = sample_from_chain(output, question=row["question"], row=line)
        answered.append({**row, "answer": sample.answer, "contexts": sample.contexts})
    return answered


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("testset", type=Path, help="A test set written by ragmeter generate.")
    parser.add_argument("docs", type=Path, help="The documents the test set was written from.")
    parser.add_argument("--out", type=Path, default=Path("answered.jsonl"))
    parser.add_argument("--judge", default="local", help="The generator's model (a judge spec).")
    parser.add_argument("--embedder", default="minilm", help="The retriever's embedder.")
    parser.add_argument("--k", type=int, default=3, help="Chunks retrieved per question.")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        rows = read_testset(args.testset)
        # Behind ragmeter's call cache: running this again answers from the cache.
        judge, embedder = resolve_models(args.judge, args.embedder)
        assert embedder is not None
        chain = build_chain(build_retriever(args.docs, embedder, args.k), as_chat_model(judge))
        answered = answer_rows(chain, rows)
    except (DatasetError, FileNotFoundError) as error:
        parser.exit(2, f"{args.testset}: {error}\n")
    with args.out.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in answered)
    seconds = time.perf_counter() - started
    print(f"{len(answered)} questions answered in {seconds:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
