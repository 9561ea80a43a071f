"""A small RAG application traced as a team traces one, the servers it reports to, and the
scripted judge that scores it.

The application is a LangChain pipeline: a keyword retriever over passages held in memory, a
prompt, and a scripted chat model that answers most questions right and some wrong. It runs
under OpenInference's LangChain instrumentation (spans sent over OTLP to Phoenix, and written to
an OTLP JSON file) or under MLflow's LangChain autologging. Beside the 20 good requests it makes
the traces that cannot be scored: one without retrieval, one whose retriever fails, and one cut
short. Phoenix and MLflow run as their own servers (``phoenix serve``, ``mlflow server`` on
SQLite) on free loopback ports.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from ragmeter.judges.base import ChatRequest, ChatResponse

from .conftest import prompt_name, yes_no

COUNTRIES = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
    ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Poland", "Warsaw"), ("Greece", "Athens"),
    ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"),
    ("Denmark", "Copenhagen"), ("Ireland", "Dublin"), ("Belgium", "Brussels"),
    ("Hungary", "Budapest"), ("Romania", "Bucharest"), ("Bulgaria", "Sofia"),
    ("Croatia", "Zagreb"), ("Latvia", "Riga"), ("Estonia", "Tallinn"),
]  # fmt: skip
PASSAGES = [f"{city} is the capital of {country}." for country, city in COUNTRIES]
QUESTIONS = [f"What is the capital of {country}?" for country, _ in COUNTRIES]
WRONG = {4: "Madrid.", 9: "Oslo.", 14: "Vienna.", 19: "Riga."}
"""The requests (by position) the application answers wrong: with another country's capital."""
ANSWERS = [WRONG.get(i, f"{city}.") for i, (_, city) in enumerate(COUNTRIES)]
GOOD = len(QUESTIONS)
BAD_REASONS = ("no retrieval", "error", "cut short")
"""What each bad request is reported as, in the order :func:`run_bad_requests` makes them."""
METRICS = ["faithfulness", "answer_relevance", "context_relevance"]
WORD = re.compile(r"\w+")


# --- the application ------------------------------------------------------------------------


def build_chain(answers: Sequence[str], *, fail_retrieval: bool = False, hold: Any = None) -> Any:
    """question -> answer: the two passages sharing most words with the question, given to a
    chat model that replies with ``answers`` in turn. ``fail_retrieval``: the retriever raises;
    ``hold``: an event the chat model waits for before it answers."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class KeywordRetriever(BaseRetriever):
        passages: list[str]
        k: int = 2
        fail: bool = False

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            if self.fail:
                raise ConnectionError("the passage index is unreachable")
            words = set(WORD.findall(query.lower()))
            ranked = sorted(self.passages, key=lambda p: -len(words & set(WORD.findall(p.lower()))))
            return [Document(page_content=p) for p in ranked[: self.k]]

    class HeldChatModel(FakeListChatModel):
        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> str:
            if hold is not None:
                hold.wait(timeout=600)
            return super()._call(messages, stop, run_manager, **kw)

    retriever = KeywordRetriever(passages=PASSAGES, fail=fail_retrieval)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), ("human", "{question}")]
    )
    llm = HeldChatModel(responses=list(answers))

    def joined(documents: list[Any]) -> str:
        return "\n".join(d.page_content for d in documents)

    return (
        {"context": retriever | joined, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )


def build_chat_only(answers: Sequence[str]) -> Any:
    """question -> answer with no retrieval at all."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
    return prompt | FakeListChatModel(responses=list(answers)) | StrOutputParser()


def run_good_requests() -> list[str]:
    chain = build_chain(ANSWERS)
    return [chain.invoke(question) for question in QUESTIONS]


def run_bad_requests(*, cut_short: str) -> threading.Thread | None:
    """A request without retrieval, one whose retriever fails, and one cut short: ``"held"``
    leaves a request waiting in the chat model (its root span never ends; the returned thread
    finishes once ``HOLD`` is set), ``"stream"`` stops reading a streamed answer after its first
    chunk."""
    build_chat_only(["Greetings."]).invoke("Hello?")
    with suppress(ConnectionError):
        build_chain(["never said"], fail_retrieval=True).invoke("What is the capital of Malta?")
    if cut_short == "stream":
        stream = build_chain(["Valletta is the capital of Malta."]).stream(
            "What is the capital of Malta?"
        )
        next(stream)
        stream.close()
        return None
    chain = build_chain(["Valletta."], hold=HOLD)
    thread = threading.Thread(target=chain.invoke, args=("What is the capital of Malta?",))
    thread.start()
    time.sleep(1.0)  # the retriever's spans are sent; the chat model waits
    return thread


HOLD = threading.Event()


# --- tracing it -----------------------------------------------------------------------------


class OtlpJsonFile:
    """An OpenTelemetry span exporter that appends each batch to a file as one line of OTLP JSON,
    as the OpenTelemetry Collector's file exporter writes it (ids in hex)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Any) -> Any:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        request = MessageToDict(encode_spans(spans))
        for resource in request.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
        with self.path.open("a") as out:
            out.write(json.dumps(request) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@contextmanager
def openinference_tracing(endpoint: str, project: str, file: Path) -> Iterator[None]:
    """LangChain instrumented by OpenInference, its spans sent to ``endpoint`` (OTLP over
    HTTP) under ``project`` and written to ``file``."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFile(file)))  # type: ignore[arg-type]
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


@contextmanager
def mlflow_tracing(tracking_uri: str, experiment: str) -> Iterator[str]:
    """LangChain autologged by MLflow into ``experiment``; yields the experiment's id."""
    import mlflow

    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(tracking_uri)
    try:
        found = mlflow.set_experiment(experiment)
        mlflow.langchain.autolog()
        try:
            yield found.experiment_id
        finally:
            mlflow.langchain.autolog(disable=True)
            mlflow.flush_trace_async_logging()
    finally:
        mlflow.set_tracking_uri(before)


# --- the servers ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


QUIET = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
}


@contextmanager
def server(command: list[str], health: str, log: Path, env: dict[str, str]) -> Iterator[None]:
    """Run ``command`` until the block ends, once ``health`` answers 200."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **QUIET, **env}
        )
    try:
        deadline = time.monotonic() + 900  # a loaded machine starts a server slowly
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def phoenix_server(folder: Path) -> Iterator[str]:
    port, grpc = free_port(), free_port()
    env = {
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
    }
    phoenix = Path(sys.executable).with_name("phoenix")
    url = f"http://127.0.0.1:{port}"
    with server([str(phoenix), "serve"], f"{url}/healthz", folder / "phoenix.log", env):
        yield url


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    port = free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    command = [
        str(mlflow), "server",
        "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination", str(folder / "artifacts"),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with server(command, f"{url}/health", folder / "mlflow.log", {}):
        yield url


# --- the scripted judge ---------------------------------------------------------------------

_TAGGED = re.compile(r"<([\w ]+)>\n(.*?)\n</\1>", re.DOTALL)
SUPPORTED, UNSUPPORTED = 0.9, 0.2


def judge_traces(request: ChatRequest) -> str | ChatResponse:
    """The scripted judge's replies: a statement is supported (P = 0.9) when the city it names is
    in the context, else not (P = 0.2); every answer addresses its question (P = 0.8) and none
    is noncommittal; a context sentence is needed (P = 0.9) when it names the question's
    country, else not (P = 0.1)."""
    kind = prompt_name(request)
    tagged = dict(_TAGGED.findall(request.messages[-1].content))
    if kind == "supported":
        city = tagged["statement"].rsplit(":", 1)[-1].strip(" .")
        return yes_no(SUPPORTED if city in tagged["context"] else UNSUPPORTED)
    if kind == "noncommittal":
        return json.dumps({"noncommittal": False})
    if kind == "complete":
        return yes_no(0.8)
    if kind == "needed":
        country = tagged["question"].rsplit(" ", 1)[-1].strip("?")
        return yes_no(0.9 if country in tagged["sentence"] else 0.1)
    if kind == "new_information":
        return yes_no(0.1)
    raise AssertionError(f"unexpected prompt {kind}")


def expected_faithfulness(question: str, answer: str) -> float:
    """What the scripted judge makes of an answer: supported where its city is among the two
    passages the retriever finds for the question."""
    words = set(WORD.findall(question.lower()))
    ranked = sorted(PASSAGES, key=lambda p: -len(words & set(WORD.findall(p.lower()))))
    city = answer.strip(" .")
    return SUPPORTED if any(city in passage for passage in ranked[:2]) else UNSUPPORTED
