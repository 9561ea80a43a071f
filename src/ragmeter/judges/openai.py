"""Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio, TGI.

Options come as keywords (``--judge-option NAME=VALUE``), checked by ``OpenAIJudgeOptions`` /
``OpenAIEmbedderOptions``. The endpoint is ``base_url``, else ``RAGMETER_BASE_URL``, else
``OPENAI_BASE_URL``, else OpenAI's; the key is read from ``OPENAI_API_KEY`` (or the variable named
by ``api_key_env``). Calls go through ``HttpClient`` (see ``ragmeter.judges.transport`` for how
they are retried and bounded), which keeps the key out of every name and error.
"""

from __future__ import annotations

import json
import threading
import warnings
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    JudgeError,
    ModelIdentity,
    RequestRefused,
    TokenLogprobs,
)
from ragmeter.judges.transport import HttpClient, TransportOptions, base_url_from_env

DEFAULT_BASE_URL = "https://api.openai.com/v1"

JsonMode = Literal["auto", "schema", "object_schema", "object", "none"]

JSON_MODES: tuple[JsonMode, ...] = ("schema", "object_schema", "object", "none")
"""How JSON can be asked for, best first (``json_mode=auto`` walks down it as a server refuses):

- ``schema``: ``response_format: json_schema``, the reply constrained to the schema (OpenAI,
  vLLM, Ollama, LM Studio, llama.cpp's C++ server);
- ``object_schema``: ``json_object`` with the schema beside it, which llama.cpp's servers (the
  Python one has no ``json_schema``) turn into a grammar;
- ``object``: ``json_object``, any JSON; the schema is written into the prompt;
- ``none``: no ``response_format``; the schema is written into the prompt.
"""


class OpenAIEmbedderOptions(TransportOptions):
    """Options of the ``openai`` embedder: the endpoint, where its key is read from, and the
    transport's limits."""

    api_key_env: str | None = Field(
        "OPENAI_API_KEY", description="The environment variable the API key is read from."
    )
    base_url: str | None = Field(
        None,
        description="The API root (.../v1); RAGMETER_BASE_URL, else OPENAI_BASE_URL, else "
        "OpenAI's when unset.",
    )


class OpenAIJudgeOptions(OpenAIEmbedderOptions):
    """Options of the ``openai`` judge: the embedder's, and how JSON is asked for and the seed."""

    json_mode: JsonMode = Field(
        "auto",
        description="How to ask for JSON: 'auto' starts with a JSON schema and falls back, "
        "once per run, as the server refuses (schema, object_schema, object, none); any other "
        "value is used as it is.",
    )
    logprobs: bool | None = Field(
        None,
        description="Ask for log-probabilities (Yes/No questions are then read as "
        "probabilities): unset asks and stops asking if the server refuses; false never asks "
        "(the word is read instead).",
    )
    seed: int | None = Field(
        None, description="Sent with every request, for endpoints that sample reproducibly."
    )


def _client(options: OpenAIEmbedderOptions, client: HttpClient | None) -> HttpClient:
    """``client`` if given (then the endpoint and limits are its own, and setting them here too
    is refused rather than ignored), else a new one for ``options``."""
    if client is None:
        url = base_url_from_env(
            options.base_url, "RAGMETER_BASE_URL", "OPENAI_BASE_URL", default=DEFAULT_BASE_URL
        )
        return HttpClient(url, options)
    clash = sorted(options.model_fields_set & {"base_url", *TransportOptions.model_fields})
    if clash:
        raise ValueError(f"option {clash[0]!r} belongs to the client given; set it there")
    return client


class _Endpoint:
    """What the judge and the embedder share: a model name at an endpoint, typed options, and an
    identity made of the model, the endpoint actually called (without credentials or query
    string) and the options that change outputs; the transport's limits and the key stay out."""

    role: ClassVar[str]
    example: ClassVar[str]
    options_model: ClassVar[type[OpenAIEmbedderOptions]]

    def __init__(
        self,
        model: str,
        options: OpenAIEmbedderOptions | None = None,
        *,
        client: HttpClient | None = None,
        **values: Any,
    ) -> None:
        """Name the model; nothing is sent until the first call.

        Args:
            model: the model name the endpoint knows.
            options: the options; otherwise they are checked from ``values``.
            client: a configured client (one with a fake transport in tests, or one shared by
                a judge and an embedder); it then decides the endpoint and the limits.
            values: options as keywords, e.g. ``base_url=..., timeout=30``.
        """
        if not model:
            raise ValueError(f"the openai {self.role} needs a model name, e.g. {self.example}")
        if options is not None and values:
            raise TypeError(
                f"give the options as {self.options_model.__name__} or as keywords, not both"
            )
        self.model = model
        self.options = options or self.options_model.parse(values, f"the openai {self.role}")
        self.client = _client(self.options, client)
        settings = {**self.options.identity(), "base_url": self.client.display_url}
        self._identity = ModelIdentity(provider="openai", model=model, settings=settings)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def identity(self) -> ModelIdentity:
        return self._identity


class ServerFallbackWarning(UserWarning):
    """The server refused a way of asking (a JSON schema, log-probabilities); the judge asks
    another way from now on, which can change its replies (and so its identity)."""


class OpenAIJudge(_Endpoint):
    """A chat model behind an OpenAI-compatible ``/chat/completions``.

    Servers differ in what they accept: llama-cpp-python's refuses ``json_schema``, some refuse
    log-probabilities. With ``json_mode=auto`` and ``logprobs`` unset, the judge finds out from
    the first refusal and asks the next best way for the rest of the run (``JSON_MODES``;
    without log-probabilities a Yes/No question is read from the word). Each fallback is
    warned about once, recorded by ``describe()`` and part of the identity, so cached replies
    and stored scores are keyed by how they were really asked for. Until a way of asking is
    known to work, requests that use it go one at a time, so a refusal is met once, not once
    per worker.
    """

    role = "judge"
    example = "openai:gpt-4o-mini"
    options_model = OpenAIJudgeOptions
    options: OpenAIJudgeOptions

    def __init__(
        self, model: str, options: OpenAIJudgeOptions | None = None, **kwargs: Any
    ) -> None:
        super().__init__(model, options, **kwargs)
        self._served: set[str] = set()
        self._fingerprints: set[str] = set()
        mode = self.options.json_mode
        self.json_mode: JsonMode = JSON_MODES[0] if mode == "auto" else mode
        self.asks_logprobs = self.options.logprobs is not False
        self._json_known = mode != "auto"
        self._logprobs_known = self.options.logprobs is not None
        self.fallbacks: list[str] = []
        self._negotiating = threading.Lock()
        self._identity = self._current_identity()

    def _current_identity(self) -> ModelIdentity:
        settings = {
            **self.options.identity(),
            "base_url": self.client.display_url,
            "json_mode": self.json_mode,
        }
        # Absent while asked for, so the keys of a server that gives them are unchanged.
        settings.pop("logprobs", None)
        if not self.asks_logprobs:
            settings["logprobs"] = False
        return ModelIdentity(provider="openai", model=self.model, settings=settings)

    def describe(self) -> dict[str, Any]:
        """What the run record needs to say which model answered: the endpoint, how JSON and
        log-probabilities were asked for (and which ways the server refused), and the model
        snapshots and system fingerprints the server reported (an alias such as
        ``gpt-4o-mini`` moves between snapshots over time)."""
        return {
            "base_url": self.client.display_url,
            "json_mode": self.json_mode,
            "logprobs": self.asks_logprobs,
            "fallbacks": list(self.fallbacks),
            "served_models": sorted(self._served),
            "system_fingerprints": sorted(self._fingerprints),
            "seed": self.options.seed,
        }

    def complete(self, request: ChatRequest) -> ChatResponse:
        if self._settled(request):
            return self._send(request)
        with self._negotiating:
            return self._send(request)

    def _settled(self, request: ChatRequest) -> bool:
        """Whether every way of asking this request uses is known to work."""
        json_open = request.json_schema is not None and not self._json_known
        logprobs_open = bool(request.top_logprobs) and self.asks_logprobs
        return not json_open and not (logprobs_open and not self._logprobs_known)

    def _send(self, request: ChatRequest) -> ChatResponse:
        while True:
            payload = self._payload(request)
            try:
                body = self.client.post("/chat/completions", payload)
            except RequestRefused as exc:
                if self._fall_back(payload, exc):
                    continue
                raise
            break
        if request.json_schema is not None:
            self._json_known = True
        if "logprobs" in payload:
            self._logprobs_known = True
        try:
            return self._read(body)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            # A server of unknown quality: any shape we cannot read is a failed call.
            shown = self.client.redact(str(body)[:200])
            raise JudgeError(f"unexpected response shape ({exc}): {shown}") from None

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        messages = [m.model_dump() for m in request.messages]
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        schema = request.json_schema
        if schema is not None and self.json_mode == "schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema},
            }
        elif schema is not None and self.json_mode == "object_schema":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None:
            if self.json_mode == "object":
                payload["response_format"] = {"type": "json_object"}
            payload["messages"] = _with_schema(messages, schema)
        if request.top_logprobs and self.asks_logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        if self.options.seed is not None:  # a draw of its own: another seed, another reply
            payload["seed"] = self.options.seed + request.draw
        return payload

    def _fall_back(self, payload: dict[str, Any], refusal: RequestRefused) -> bool:
        """Ask the next best way if the refusal names a way of asking that may still be given
        up (``json_mode=auto``, ``logprobs`` unset); True if the request should be sent again."""
        detail = refusal.detail.lower()
        if (
            "response_format" in payload
            and not self._json_known
            and any(word in detail for word in ("response_format", "json_schema", "json_object"))
        ):
            refused = self.json_mode
            self.json_mode = JSON_MODES[JSON_MODES.index(refused) + 1]
            self._announce(f"response_format {refused!r}", f"json_mode {self.json_mode!r}", refusal)
            return True
        if "logprobs" in payload and not self._logprobs_known and "logprobs" in detail:
            self.asks_logprobs = False
            self._announce("logprobs", "Yes/No read from the word", refusal)
            return True
        return False

    def _announce(self, refused: str, instead: str, refusal: RequestRefused) -> None:
        status = f"HTTP {refusal.status}" if refusal.status else "refused"
        message = (
            f"{self.client.display_url} refused {refused} ({status}); asking with {instead} "
            "for the rest of the run"
        )
        self.fallbacks.append(message)
        self._identity = self._current_identity()
        warnings.warn(message, ServerFallbackWarning, stacklevel=2)

    def _read(self, body: dict[str, Any]) -> ChatResponse:
        choice = body["choices"][0]
        text = choice["message"]["content"] or ""
        if not isinstance(text, str):
            raise TypeError("message content is not text")
        if isinstance(body.get("model"), str):
            self._served.add(body["model"])
        if isinstance(body.get("system_fingerprint"), str):
            self._fingerprints.add(body["system_fingerprint"])
        usage = body.get("usage") or {}
        return ChatResponse(
            text=text,
            logprobs=_read_logprobs(choice.get("logprobs")),
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            finish_reason=choice.get("finish_reason"),
        )


def _with_schema(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages with the reply's JSON schema written into the system message, for a server
    that cannot be given it as a ``response_format``."""
    shape = f"The JSON object must follow this JSON schema: {json.dumps(schema)}"
    if messages and messages[0]["role"] == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n{shape}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": shape}, *messages]


def _read_logprobs(block: dict[str, Any] | None) -> list[TokenLogprobs] | None:
    if not block or not block.get("content"):
        return None
    return [
        TokenLogprobs(
            token=item["token"],
            logprob=item["logprob"],
            top={alt["token"]: alt["logprob"] for alt in item.get("top_logprobs") or []},
        )
        for item in block["content"]
    ]


class OpenAIEmbedder(_Endpoint):
    role = "embedder"
    example = "openai:text-embedding-3-small"
    options_model = OpenAIEmbedderOptions
    options: OpenAIEmbedderOptions

    def describe(self) -> dict[str, Any]:
        return {"base_url": self.client.display_url}

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        body = self.client.post("/embeddings", {"model": self.model, "input": texts})
        try:
            rows = sorted(body["data"], key=lambda item: item["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            shown = self.client.redact(str(body)[:200])
            raise JudgeError(f"unexpected embeddings response ({exc}): {shown}") from None
        if vectors.ndim != 2 or len(vectors) != len(texts) or not np.isfinite(vectors).all():
            raise JudgeError(
                f"the embeddings response has {len(vectors)} finite rows for {len(texts)} texts"
            )
        return vectors


def create_judge(model: str = "", **options: Any) -> OpenAIJudge:
    return OpenAIJudge(model, OpenAIJudgeOptions.parse(options, "the openai judge"))


def create_embedder(model: str = "", **options: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder(model, OpenAIEmbedderOptions.parse(options, "the openai embedder"))
