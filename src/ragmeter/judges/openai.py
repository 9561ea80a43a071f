"""Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio, TGI.

Configuration comes from arguments or the environment: ``RAGMETER_BASE_URL`` (else
``OPENAI_BASE_URL``, else OpenAI's) and the key from ``OPENAI_API_KEY`` (or the variable named by
``api_key_env``). The key is sent in a header and never stored, logged or put in a name.
"""

from __future__ import annotations

import email.utils
import os
import random
import threading
import time
from typing import Any, Literal

import httpx
import numpy as np

from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError, TokenLogprobs

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}

JsonMode = Literal["schema", "object", "none"]


def _base_url(base_url: str | None) -> str:
    return (
        base_url
        or os.environ.get("RAGMETER_BASE_URL")
        or os.environ.get("OPENAI_BASE_URL")
        or DEFAULT_BASE_URL
    ).rstrip("/")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


class OpenAIClient:
    """HTTP transport with bounded retries, exponential backoff with jitter, and a concurrency
    limit. Every call has a deadline, so nothing waits forever."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_concurrency: int = 8,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = _base_url(base_url)
        headers = {}
        api_key = os.environ.get(api_key_env)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._rng = random.Random(0)

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        last_error = ""
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                with self._slots:
                    response = self._http.post(path, json=payload)
                if response.status_code < 400:
                    return dict(response.json())
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRYABLE_STATUS:
                    break
                wait = _retry_after(response)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            except ValueError as exc:  # a 2xx body that is not JSON
                last_error = f"unreadable response body: {exc}"
            if attempt < self.max_retries:
                if wait is None:
                    wait = min(self.max_backoff, self.backoff * 2**attempt)
                    wait *= 0.5 + self._rng.random() / 2
                time.sleep(min(wait, self.max_backoff))
        raise JudgeError(f"{self.base_url}{path}: {last_error}")


class OpenAIJudge:
    def __init__(
        self,
        model: str,
        *,
        json_mode: JsonMode = "schema",
        client: OpenAIClient | None = None,
        **client_options: Any,
    ) -> None:
        if not model:
            raise ValueError("the openai judge needs a model name, e.g. openai:gpt-4o-mini")
        self.model = model
        self.json_mode = json_mode
        self.client = client or OpenAIClient(**client_options)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def complete(self, request: ChatRequest) -> ChatResponse:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.json_schema is not None and self.json_mode == "schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema},
            }
        elif request.json_schema is not None and self.json_mode == "object":
            payload["response_format"] = {"type": "json_object"}
        if request.top_logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        body = self.client.post("/chat/completions", payload)
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise JudgeError(f"unexpected response shape: {str(body)[:200]}") from exc
        usage = body.get("usage") or {}
        return ChatResponse(
            text=text,
            logprobs=_read_logprobs(choice.get("logprobs")),
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
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


class OpenAIEmbedder:
    def __init__(self, model: str, *, client: OpenAIClient | None = None, **options: Any) -> None:
        if not model:
            raise ValueError(
                "the openai embedder needs a model name, e.g. openai:text-embedding-3-small"
            )
        self.model = model
        self.client = client or OpenAIClient(**options)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def embed(self, texts: list[str]) -> np.ndarray:
        body = self.client.post("/embeddings", {"model": self.model, "input": texts})
        try:
            rows = sorted(body["data"], key=lambda item: item["index"])
            return np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError) as exc:
            raise JudgeError(f"unexpected embeddings response: {str(body)[:200]}") from exc


def create_judge(model: str = "", **options: Any) -> OpenAIJudge:
    return OpenAIJudge(model, **options)


def create_embedder(model: str = "", **options: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder(model, **options)
