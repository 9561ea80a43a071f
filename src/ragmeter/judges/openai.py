"""Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio, TGI.

Options come as keywords (``--judge-option NAME=VALUE``), checked by ``OpenAIJudgeOptions`` /
``OpenAIEmbedderOptions``. The endpoint is ``base_url``, else ``RAGMETER_BASE_URL``, else
``OPENAI_BASE_URL``, else OpenAI's; the key is read from ``OPENAI_API_KEY`` (or the variable named
by ``api_key_env``). Calls go through ``HttpClient`` (see ``ragmeter.judges.transport`` for how
they are retried and bounded), which keeps the key out of every name and error.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    JudgeError,
    ModelIdentity,
    TokenLogprobs,
)
from ragmeter.judges.transport import HttpClient, TransportOptions, base_url_from_env

DEFAULT_BASE_URL = "https://api.openai.com/v1"

JsonMode = Literal["schema", "object", "none"]


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
        "schema",
        description="How to ask for JSON: a JSON schema, any JSON object, or nothing (for "
        "servers that reject response_format).",
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


class OpenAIJudge(_Endpoint):
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

    def describe(self) -> dict[str, Any]:
        """What the run record needs to say which model answered: the endpoint, and the model
        snapshots and system fingerprints the server reported (an alias such as
        ``gpt-4o-mini`` moves between snapshots over time)."""
        return {
            "base_url": self.client.display_url,
            "served_models": sorted(self._served),
            "system_fingerprints": sorted(self._fingerprints),
            "seed": self.options.seed,
        }

    def complete(self, request: ChatRequest) -> ChatResponse:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.json_schema is not None and self.options.json_mode == "schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema},
            }
        elif request.json_schema is not None and self.options.json_mode == "object":
            payload["response_format"] = {"type": "json_object"}
        if request.top_logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        if self.options.seed is not None:
            payload["seed"] = self.options.seed
        body = self.client.post("/chat/completions", payload)
        try:
            return self._read(body)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            # A server of unknown quality: any shape we cannot read is a failed call.
            shown = self.client.redact(str(body)[:200])
            raise JudgeError(f"unexpected response shape ({exc}): {shown}") from None

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
