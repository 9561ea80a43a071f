"""LlamaIndex: a query engine's ``Response`` as a ``Sample``, and an engine evaluated over
questions.

``pip install 'ragmeter[llamaindex]'`` (llama-index-core). The contexts are the text of the
response's ``source_nodes``, in the order retrieved, without the node metadata that LlamaIndex
also shows the LLM (file names and the like): the passages are what an answer must be faithful
to. A ``StreamingResponse`` is read to its end first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.data import DatasetError
from ragmeter.evaluate import evaluate
from ragmeter.integrations import importing, samples_from_records, type_name
from ragmeter.metrics import Metric
from ragmeter.result import Result
from ragmeter.sample import Sample


def _framework() -> tuple[type, type]:
    with importing("LlamaIndex", "llama-index-core", extra="llamaindex"):
        from llama_index.core.base.response.schema import Response, StreamingResponse
    return Response, StreamingResponse


def sample_from_response(question: str, response: object, *, row: int = 1) -> Sample:
    """The ``Sample`` of ``question`` and the query engine's ``response`` to it.

    Raises:
        DatasetError: naming the row and field when the response is not a ``Response`` or holds
            no answer.
    """
    return samples_from_records([_record(question, response, row)], first_row=row)[0]


def run_query_engine(engine: Any, questions: Sequence[str]) -> list[Sample]:
    """Ask ``engine`` each question (``engine.query``), one at a time; errors name the
    questions as rows, counted from 1."""
    records = [
        _record(question, engine.query(question), row) for row, question in enumerate(questions, 1)
    ]
    return samples_from_records(records)


def evaluate_query_engine(
    engine: Any,
    questions: Sequence[str],
    metrics: Sequence[str | Metric] | None = None,
    **evaluate_options: Any,
) -> Result:
    """Run ``engine`` over ``questions`` (see ``run_query_engine``) and score the answers with
    ``ragmeter.evaluate``, which takes ``evaluate_options`` (``judge``, ``out_dir``, ...)."""
    return evaluate(run_query_engine(engine, questions), metrics, **evaluate_options)


def _record(question: str, response: Any, row: int) -> dict[str, Any]:
    complete, streaming = _framework()
    if isinstance(response, streaming):
        response = response.get_response()
    if not isinstance(response, complete):
        raise DatasetError(
            row, "<row>", f"expected a LlamaIndex Response, got {type_name(response)}"
        )
    answer = response.response
    if answer is None:
        raise DatasetError(row, "answer", "the query engine's response holds no answer (None)")
    contexts = [source.node.get_content() for source in response.source_nodes]
    return {"question": question, "contexts": contexts, "answer": answer}
