"""A small OpenAI-compatible server that answers deterministically and injects faults on demand.

Replies are derived from the request, so that the metrics get valid, meaningful answers: the
statements of an answer are its sentences; a statement is supported, a context sentence needed or
an answer complete with a probability given by word overlap; embeddings hash words. The same
request always gets the same reply, so a run through faults must end with exactly the scores of a
clean run.

Faults are drawn per request from a hash of (seed, the request's logical prompt, attempt number),
so they are deterministic, and a retry (a later attempt) draws again and can succeed. The logical
prompt ignores a session's repair turn and ``max_tokens``, so a repaired or finished request
counts as another attempt of the same prompt. Kinds:

- ``429``: Too Many Requests with ``Retry-After``;        - ``500``: Internal Server Error;
- ``stall``: nothing for ``stall`` seconds;               - ``trickle``: the reply one byte at
  a time (only a wall-clock limit ends it);               - ``drop``: the connection is reset;
- ``garbage``: a 200 whose body is cut-off JSON;          - ``malformed``: a 200 whose message is
  not what the prompt asked for (the session's repair is exercised).

Requests containing one of ``permanent`` always fail with a 500: the items that must end unscored.
Requests using a way of asking named in ``refuse`` are refused (``refused``), like a server that
does not know it.
Start it with ``with FaultServer(Faults(...)) as server:`` and point a client at ``server.url``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import sqlite3
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ragmeter.judges.base import ChatRequest, ChatResponse, ModelIdentity, TokenLogprobs
from ragmeter.metrics import ContextRelevance, Faithfulness, Metric
from ragmeter.sample import Sample

FAULT_KINDS = ("429", "500", "stall", "trickle", "drop", "garbage", "malformed")
REPAIR_PREFIX = "That reply was not usable"
EMBEDDING_DIM = 64

PROMPT_KINDS = (
    ("create one or more statements", "statements", "faithfulness"),
    ("determine whether each statement", "verdicts", "faithfulness"),
    ("whether a statement is supported", "supported", "faithfulness"),
    ("questions that the given answer answers", "questions", "answer_relevance"),
    ("whether an answer addresses its question", "complete", "answer_relevance"),
    ("whether the given answer is noncommittal", "noncommittal", "answer_relevance"),
    ("You judge an answer against the context", "against_context", "answer_relevance"),
    ("Extract the sentences", "extract", "context_relevance"),
    ("which sentences of a retrieved context are needed", "needed", "context_relevance"),
    ("whether one sentence taken from a retrieved context", "sentence", "context_relevance"),
    ("adds information needed to answer", "new_information", "context_relevance"),
    ("against one criterion at a time", "criterion", "criterion"),
    ("You check a text's answer to a question", "gives_answer", "answer_correctness"),
)

JSON_KINDS = frozenset({"statements", "verdicts", "questions", "noncommittal", "extract"})
"""Prompts answered in JSON, also when the request carries no ``response_format``."""


@dataclass(frozen=True)
class Faults:
    """What to inject. ``rate`` is the chance that one attempt fails, its kind drawn evenly
    from ``kinds``; ``max_per_prompt`` caps the faults one logical prompt gets (None: no cap),
    so that a test can guarantee that retries succeed."""

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    seed: int = 0
    retry_after: float = 0.01
    stall: float = 1.0
    trickle_interval: float = 0.05
    max_per_prompt: int | None = None
    permanent: frozenset[str] = frozenset()
    echo_headers: bool = False
    """Error bodies repeat the request headers, as some proxies do (clients must redact)."""
    latency: float = 0.0
    """Seconds every request waits before its reply, as a busy model server does."""
    refuse: frozenset[str] = frozenset()
    """Ways of asking this server does not accept, refused as llama-cpp-python's server
    refuses them (HTTP 500 whose body is a validation error): ``json_schema`` (that
    ``response_format`` type), ``json_object``, ``response_format`` (any), ``logprobs``."""


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    number: int
    path: str
    item: str | None
    kind: str
    metric: str
    prompt: str
    attempt: int
    fault: str | None
    response_format: dict[str, Any] | None = None
    logprobs: bool = False
    system: str = ""
    """The request's system message (where a schema is written for a server without
    ``response_format``)."""


# --- deterministic replies -----------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_TAGGED = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4}


def overlap(part: str, whole: str) -> float:
    """Share of the words of ``part`` found in ``whole``."""
    mine = words(part)
    return len(mine & words(whole)) / len(mine) if mine else 0.0


def probability(part: str, whole: str) -> float:
    return round(min(0.95, max(0.05, overlap(part, whole))), 2)


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def prompt_kind(system: str) -> tuple[str, str]:
    for marker, kind, metric in PROMPT_KINDS:
        if marker in system:
            return kind, metric
    return "other", "other"


def logical_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt without a session's repair turn (the bad reply and the request to fix it)."""
    if len(messages) >= 3 and str(messages[-1].get("content", "")).startswith(REPAIR_PREFIX):
        return messages[:-2]
    return messages


def _inputs(messages: list[dict[str, Any]]) -> tuple[dict[str, str], str]:
    last = str(messages[-1].get("content", ""))
    return dict(_TAGGED.findall(last)), last


def _declines(answer: str) -> bool:
    answer = answer.lower()
    return "don't know" in answer or "not sure" in answer


def _json_reply(kind: str, system: str, data: dict[str, str]) -> dict[str, Any]:
    if kind == "statements":
        return {"statements": sentences(data.get("answer", ""))[:24]}
    if kind == "questions":
        n = int(re.search(r"Write (\d+) different", system).group(1))  # type: ignore[union-attr]
        topics = sorted(words(data.get("answer", "")))[:n]
        topics += ["this"] * (n - len(topics))
        return {
            "questions": [f"What does the text say about {t}?" for t in topics],
            "noncommittal": _declines(data.get("answer", "")),
        }
    if kind == "noncommittal":
        return {"noncommittal": _declines(data.get("answer", ""))}
    if kind == "verdicts":
        listed = re.findall(r"^\d+\. (.*)$", data.get("statements", ""), re.MULTILINE)
        context = data.get("context", "")
        return {
            "verdicts": [
                {
                    "statement": s,
                    "reason": "word overlap",
                    "verdict": "yes" if overlap(s, context) >= 0.5 else "no",
                }
                for s in listed
            ]
        }
    if kind == "extract":
        lines = re.findall(r"^\[(\d+)\] (.*)$", data.get("context", ""), re.MULTILINE)
        question = data.get("question", "")
        return {"sentences": [int(n) for n, s in lines if overlap(question, s) >= 0.3]}
    return {}


def _yes_probability(kind: str, data: dict[str, str], last: str) -> float:
    if kind == "supported":
        return probability(data.get("statement", ""), data.get("context", ""))
    if kind == "complete":
        return probability(data.get("question", ""), data.get("answer", ""))
    if kind == "against_context":  # does the context hold it; does the answer give the context
        if "answer" in data:
            return probability(data.get("context", ""), data.get("answer", ""))
        return probability(data.get("question", ""), data.get("context", ""))
    if kind == "needed":
        number = re.search(r"sentence \[(\d+)\] needed", last)
        lines = dict(re.findall(r"^\[(\d+)\] (.*)$", data.get("context", ""), re.MULTILINE))
        sentence = lines.get(number.group(1), "") if number else ""
        return probability(data.get("question", ""), sentence)
    if kind == "sentence":
        return probability(data.get("question", ""), data.get("sentence", ""))
    if kind == "criterion":  # met as far as the sentence judged says what the context says
        return probability(data.get("sentence", data.get("response", "")), data.get("context", ""))
    if kind == "new_information":  # new when its words are not already in the earlier ones
        return round(
            1.0 - probability(data.get("sentence", ""), data.get("earlier sentences", "")), 2
        )
    return 0.5


def chat_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The reply a well-behaved judge would give, as a function of the request alone."""
    messages = logical_messages(body["messages"])
    system = str(messages[0].get("content", ""))
    kind, _ = prompt_kind(system)
    data, last = _inputs(messages)
    logprobs = None
    if body.get("response_format") is not None or kind in JSON_KINDS:
        text = json.dumps(_json_reply(kind, system, data))
    else:
        p = _yes_probability(kind, data, last)
        text = "Yes" if p >= 0.5 else "No"
        if body.get("logprobs"):
            top = [
                {"token": "Yes", "logprob": math.log(p)},
                {"token": "No", "logprob": math.log(1 - p)},
            ]
            chosen = top[0] if text == "Yes" else top[1]
            logprobs = {"content": [{**chosen, "top_logprobs": top}]}
    return _envelope(body, text, logprobs)


class AnsweringJudge:
    """A judge object that answers as the server does, in this process, after ``latency``
    seconds: the fake for work spread over processes (it pickles, and a worker that imports
    this module answers exactly as the driver would). Counts its calls and the seconds it
    spent answering, in the process that asked."""

    def __init__(self, latency: float = 0.0, model: str = "answering") -> None:
        self.latency = latency
        self.model = model
        self.calls = 0
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return f"fake:{self.model}"

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="fake", model=self.model)

    def complete(self, request: ChatRequest) -> ChatResponse:
        started = time.perf_counter()
        if self.latency:
            time.sleep(self.latency)
        body = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "response_format": {} if request.json_schema is not None else None,
            "logprobs": request.top_logprobs > 0,
        }
        reply = chat_reply(body)
        choice = reply["choices"][0]
        block = choice["logprobs"]
        logprobs = None
        if block:
            item = block["content"][0]
            top = {alt["token"]: alt["logprob"] for alt in item["top_logprobs"]}
            logprobs = [TokenLogprobs(token=item["token"], logprob=item["logprob"], top=top)]
        self.calls += 1
        self.seconds += time.perf_counter() - started
        return ChatResponse(
            text=choice["message"]["content"],
            logprobs=logprobs,
            prompt_tokens=reply["usage"]["prompt_tokens"],
            completion_tokens=reply["usage"]["completion_tokens"],
            finish_reason="stop",
        )


def malformed_reply(body: dict[str, Any]) -> dict[str, Any]:
    """A reply in the right envelope that does not answer the prompt's question."""
    if body.get("response_format") is not None:
        return _envelope(body, 'Sure! Here is the JSON you asked for: {"statem', None)
    return _envelope(body, "Perhaps.", None)


def _envelope(body: dict[str, Any], text: str, logprobs: Any) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body["messages"])
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "model": f"{body.get('model', 'fault')}-2025-01-01",
        "system_fingerprint": "fp_fault",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": logprobs,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": math.ceil(prompt_chars / 4),
            "completion_tokens": max(1, math.ceil(len(text) / 4)),
        },
    }


def embedding(text: str) -> list[float]:
    vector = [0.0] * EMBEDDING_DIM
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % EMBEDDING_DIM] += 1.0
    return vector


def embeddings_reply(body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    return {
        "object": "list",
        "model": body.get("model", "fault"),
        "data": [
            {"object": "embedding", "index": i, "embedding": embedding(t)}
            for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": sum(len(t) for t in texts) // 4, "total_tokens": 0},
    }


# --- the server ----------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: FaultServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that give up or are killed mid-connection are the point here: stay quiet."""
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else a reply's header and body wait on a delayed ACK
    server: _Server
    in_flight = False

    def send_response(self, code: int, message: str | None = None) -> None:
        self.server.owner.leave(self)
        super().send_response(code, message)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the server's counters, not its log."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            self.server.owner.handle(self, raw)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the client gave up (deadline) or was killed

    def send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@dataclass
class FaultServer:
    """The server, its fault plan, and everything it saw (``seen``, in arrival order)."""

    faults: Faults = field(default_factory=Faults)
    item_pattern: str = r"item-\d+"
    on_request: Callable[[Seen], None] | None = None
    seen: list[Seen] = field(default_factory=list)
    authorizations: set[str] = field(default_factory=set)
    max_in_flight: int = 0
    """The most judge (chat) requests the server was handling at once. Embedding requests are
    not counted, as ``--workers`` does not limit them."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._attempts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._item = re.compile(self.item_pattern)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        # A short poll so that stopping the server takes milliseconds, not the default 0.5 s.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def requests_by_item(self, path: str = "/v1/chat/completions") -> Counter[tuple[str, str]]:
        """Requests per (item, metric) seen on ``path``."""
        with self._lock:
            return Counter((s.item or "", s.metric) for s in self.seen if s.path == path)

    def faults_injected(self) -> Counter[str]:
        with self._lock:
            return Counter(s.fault for s in self.seen if s.fault)

    def clear(self) -> None:
        """Forget what was seen (the fault plan's attempt counts are kept)."""
        with self._lock:
            self.seen.clear()

    # -- one request -----------------------------------------------------------------------------

    def handle(self, handler: _Handler, raw: bytes) -> None:
        if handler.path.endswith("/chat/completions"):
            with self._lock:
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
            handler.in_flight = True
        try:
            self._handle(handler, raw)
        finally:
            self.leave(handler)

    def leave(self, handler: _Handler) -> None:
        """A request stops counting as in flight once its reply starts: the client may send its
        next request as soon as the reply arrives, before this thread runs again."""
        with self._lock:
            if handler.in_flight:
                handler.in_flight = False
                self._in_flight -= 1

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        self.authorizations.add(handler.headers.get("Authorization", ""))
        body = json.loads(raw)
        seen = self._record(handler.path, body, text)
        if self.on_request is not None:
            self.on_request(seen)
        if self.faults.latency and self._stop.wait(self.faults.latency):
            return
        if seen.fault is None:
            reply = self._reply(handler.path, body)
            if reply is None:
                handler.send(404, b'{"error": {"message": "no such endpoint"}}')
            else:
                handler.send(200, json.dumps(reply).encode())
            return
        self._inject(seen.fault, handler, body)

    def _record(self, path: str, body: dict[str, Any], text: str) -> Seen:
        if path.endswith("/chat/completions"):
            messages = logical_messages(body.get("messages") or [{}])
            kind, metric = prompt_kind(str(messages[0].get("content", "")))
            key_material: Any = messages
        else:
            kind, metric, key_material = "embedding", "answer_relevance", body.get("input")
        prompt = hashlib.sha256(json.dumps([path, key_material]).encode()).hexdigest()[:16]
        item = self._item.search(text)
        with self._lock:
            attempt = self._attempts[prompt]
            self._attempts[prompt] += 1
            seen = Seen(
                number=len(self.seen) + 1,
                path=path,
                item=item.group(0) if item else None,
                kind=kind,
                metric=metric,
                prompt=prompt,
                attempt=attempt,
                fault=self._draw(text, prompt, attempt, path),
                response_format=body.get("response_format"),
                logprobs=bool(body.get("logprobs")),
                system=str((body.get("messages") or [{}])[0].get("content", "")),
            )
            self.seen.append(seen)
        return seen

    def _draw(self, text: str, prompt: str, attempt: int, path: str) -> str | None:
        plan = self.faults
        if _unknown_fields(text, plan.refuse):
            return "refused"
        if any(marker in text for marker in plan.permanent):
            return "permanent"
        if plan.rate <= 0 or (plan.max_per_prompt is not None and attempt >= plan.max_per_prompt):
            return None
        digest = hashlib.sha256(f"{plan.seed}:{prompt}:{attempt}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= plan.rate:
            return None
        kind = plan.kinds[int.from_bytes(digest[8:12], "big") % len(plan.kinds)]
        if kind == "malformed" and not path.endswith("/chat/completions"):
            return "garbage"
        return kind

    def _reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if path.endswith("/chat/completions"):
            return chat_reply(body)
        if path.endswith("/embeddings"):
            return embeddings_reply(body)
        return None

    def _inject(self, fault: str, handler: _Handler, body: dict[str, Any]) -> None:
        plan = self.faults
        if fault == "refused":
            field_name = _unknown_fields(json.dumps(body), plan.refuse)[0]
            message = (
                "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                f"'{field_name}'), 'msg': \"Input should be 'text'\"}}"
            )
            error = {"message": message, "type": "internal_server_error"}
            handler.send(500, json.dumps({"error": error}).encode())
        elif fault in ("permanent", "500"):
            error: dict[str, Any] = {}
            if plan.echo_headers:  # the credential first, where a client's excerpt will show it
                headers = dict(handler.headers.items())
                error["request_headers"] = {"Authorization": headers.pop("Authorization", "")}
                error["request_headers"] |= headers
            error["message"] = f"injected {fault} failure"
            handler.send(500, json.dumps({"error": error}).encode())
        elif fault == "429":
            handler.send(
                429,
                b'{"error": {"message": "rate limited"}}',
                {"Retry-After": f"{plan.retry_after:g}"},
            )
        elif fault == "drop":
            linger = struct.pack("ii", 1, 0)  # close with a reset, not a clean FIN
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            handler.connection.close()
            handler.close_connection = True
        elif fault == "garbage":
            handler.send(200, b'{"choices": [{"message": {"content": "unfinish')
        elif fault == "malformed":
            handler.send(200, json.dumps(malformed_reply(body)).encode())
        elif fault == "stall":
            if not self._stop.wait(plan.stall):
                handler.send(200, json.dumps(self._reply(handler.path, body)).encode())
        elif fault == "trickle":
            self._trickle(handler, json.dumps(self._reply(handler.path, body)).encode())

    def _trickle(self, handler: _Handler, payload: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.flush()
        for byte in payload:
            if self._stop.wait(self.faults.trickle_interval):
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()


def _unknown_fields(text: str, refused: frozenset[str]) -> list[str]:
    """The fields of the request body ``text`` that name a way of asking in ``refused``."""
    if not refused:
        return []
    body = json.loads(text)
    kind = (body.get("response_format") or {}).get("type")
    found = []
    if kind is not None and ({kind, "response_format"} & refused):
        found.append("response_format")
    if body.get("logprobs") and "logprobs" in refused:
        found.append("logprobs")
    return found


# --- data -----------------------------------------------------------------------------------------

_TOPICS = ("river", "harbour", "bridge", "mountain", "forest", "castle", "market", "railway")


def committed(out: Path) -> dict[tuple[str, str], str]:
    """The scores a results folder's store holds, by (sample, metric): what a kill must not
    lose."""
    path = out / "scores.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT sample_id, metric, payload FROM scores").fetchall()
    return {(sample, metric): payload for sample, metric, payload in rows}


def statement_writing_metrics() -> list[Metric]:
    """Faithfulness with statements written first, so each item's first request asks for a JSON
    reply (this server writes the answer's sentences), and context relevance."""
    return [Faithfulness(statements="generate"), ContextRelevance()]


def marked_samples(count: int, start: int = 0) -> list[Sample]:
    """Samples whose every field carries the marker ``item-NNNN``, so that the server can tell
    which item each request belongs to; their scores vary from item to item."""
    samples = []
    for i in range(start, start + count):
        tag = f"item-{i:04d}"
        has, seen, claims = _TOPICS[i % 8], _TOPICS[(3 * i + 1) % 8], _TOPICS[(5 * i + 2) % 8]
        samples.append(
            Sample(
                id=tag,
                question=f"Which sights does city {i} have ({tag})?",
                contexts=[
                    f"City {i} has an old {has} ({tag}). The {has} draws visitors.",
                    f"Tourists in city {i} also see the {seen}.",
                ],
                answer=f"City {i} has an old {has} ({tag}). It also has a famous {claims}.",
            )
        )
    return samples
