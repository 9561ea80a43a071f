"""LangChain: a retrieval chain's output as a ``Sample``, and a chain evaluated over questions.

``pip install 'ragmeter[langchain]'`` (langchain-core). A retrieval chain returns a dict holding
the question, the retrieved documents and the answer, under names that differ between chain
builders; the common ones are recognised, first match wins:

=========  ===============================  ==========================================
field      keys                             made by
=========  ===============================  ==========================================
question   ``input``, ``question``,         ``create_retrieval_chain``: ``input``,
           ``query``                        ``context``, ``answer``; ``RetrievalQA``:
contexts   ``context``, ``source_documents``  ``query``, ``source_documents``, ``result``
answer     ``answer``, ``result``
=========  ===============================  ==========================================

Contexts are a list of ``Document`` (their ``page_content``) or strings; an answer is a string
or a chat message (a chain without an output parser returns the model's ``AIMessage``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.data import DatasetError
from ragmeter.evaluate import evaluate
from ragmeter.integrations import importing, samples_from_records, type_name
from ragmeter.metrics import Metric
from ragmeter.result import Result
from ragmeter.sample import Sample

QUESTION_KEYS = ("input", "question", "query")
CONTEXT_KEYS = ("context", "source_documents")
ANSWER_KEYS = ("answer", "result")


def _framework() -> tuple[type, type]:
    with importing("LangChain", "langchain-core", extra="langchain"):
        from langchain_core.documents import Document
        from langchain_core.messages import BaseMessage
    return Document, BaseMessage


def sample_from_chain(output: object, *, question: str | None = None, row: int = 1) -> Sample:
    """The ``Sample`` a retrieval chain's output describes.

    Args:
        output: what ``chain.invoke`` returned: a dict with the question (unless given), the
            retrieved documents and the answer.
        question: the question asked, when the output does not repeat it (it wins if it does).
        row: the row number that errors name.

    Raises:
        DatasetError: naming the row and field when the output lacks a field or holds a value of
            the wrong type.
    """
    return samples_from_records([_record(output, question, row)], first_row=row)[0]


def run_chain(
    chain: Any, questions: Sequence[str], *, input_key: str | None = "input"
) -> list[Sample]:
    """Ask ``chain`` each question, one at a time, and turn each output into a ``Sample``.

    Args:
        chain: any runnable whose output is a dict as described in this module's docstring.
        questions: the questions to ask; errors name them as rows, counted from 1.
        input_key: the chain's input is ``{input_key: question}`` (``"input"`` for
            ``create_retrieval_chain``, ``"query"`` for ``RetrievalQA``), or the bare question
            when None (an LCEL chain that starts from the question).
    """
    records = []
    for row, question in enumerate(questions, 1):
        output = chain.invoke(question if input_key is None else {input_key: question})
        records.append(_record(output, question, row))
    return samples_from_records(records)


def evaluate_chain(
    chain: Any,
    questions: Sequence[str],
    metrics: Sequence[str | Metric] | None = None,
    *,
    input_key: str | None = "input",
    **evaluate_options: Any,
) -> Result:
    """Run ``chain`` over ``questions`` (see ``run_chain``) and score the answers with
    ``ragmeter.evaluate``, which takes ``evaluate_options`` (``judge``, ``out_dir``, ...)."""
    return evaluate(run_chain(chain, questions, input_key=input_key), metrics, **evaluate_options)


def _record(output: Any, question: str | None, row: int) -> dict[str, Any]:
    """The question, contexts and answer in a chain's output, as plain values."""
    document, message = _framework()
    if not isinstance(output, Mapping):
        raise DatasetError(
            row, "<row>", f"expected the chain to return a dict, got {type_name(output)}"
        )
    if question is None:
        question = _value(output, QUESTION_KEYS, "question", row)[1]
    key, documents = _value(output, CONTEXT_KEYS, "contexts", row)
    answer = _value(output, ANSWER_KEYS, "answer", row)[1]
    if isinstance(answer, message) and isinstance(answer.content, str):
        answer = answer.content
    return {
        "question": question,
        "contexts": _texts(documents, key, document, row),
        "answer": answer,
    }


def _value(output: Mapping[Any, Any], keys: Sequence[str], field: str, row: int) -> tuple[str, Any]:
    """The first of ``keys`` in ``output``, and its value."""
    for key in keys:
        if key in output:
            return key, output[key]
    raise DatasetError(
        row,
        field,
        f"the chain's output has none of the keys {', '.join(map(repr, keys))} "
        f"(its keys: {', '.join(map(repr, output)) or 'none'})",
    )


def _texts(documents: Any, key: str, document: type, row: int) -> list[str]:
    """The text of each retrieved document, in the order retrieved."""
    if isinstance(documents, str):  # the documents already formatted into one text
        return [documents]
    if not isinstance(documents, list | tuple):
        raise DatasetError(
            row, "contexts", f"{key!r} is {type_name(documents)}, expected a list of Documents"
        )
    texts = []
    for number, item in enumerate(documents, 1):
        if isinstance(item, document):
            texts.append(item.page_content)
        elif isinstance(item, str):
            texts.append(item)
        else:
            raise DatasetError(
                row,
                "contexts",
                f"item {number} of {key!r} is {type_name(item)}, expected a Document or a string",
            )
    return texts
