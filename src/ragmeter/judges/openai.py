"""Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio, TGI.

Configuration comes from arguments or the environment: ``RAGMETER_BASE_URL`` (else
``OPENAI_BASE_URL``, else OpenAI's) and the key from ``OPENAI_API_KEY`` (or the variable named by
``api_key_env``). The key is sent in a header and never stored, logged or put in a name; it is
also cut out of any error text, in case a server echoes the request back.

At scale, transport faults are the normal case, so every call is bounded in three ways:

- ``max_retries`` further attempts after a timeout, a dropped connection, a 429 or a 5xx, with
  exponential backoff and jitter, or exactly the wait a 429/503 asks for in ``Retry-After``;
- ``timeout``: the wall-clock limit of one attempt, from connecting to the last byte of the
  reply. It is enforced on every socket operation, so a server that stalls or trickles bytes
  ends the attempt (and is retried) instead of hanging it;
- ``deadline``: the wall-clock limit of the whole call, retries and waits included.

``max_concurrency`` caps the requests in flight, whatever the number of evaluation workers.
"""

from __future__ import annotations

import email.utils
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx
import numpy as np

from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError, TokenLogprobs

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

JsonMode = Literal["schema", "object", "none"]


def _base_url(base_url: str | None) -> str:
    return (
        base_url
        or os.environ.get("RAGMETER_BASE_URL")
        or os.environ.get("OPENAI_BASE_URL")
        or DEFAULT_BASE_URL
    ).rstrip("/")


def public_url(url: str) -> str:
    """The URL without user, password or query string, which may hold credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _retry_after(response: httpx.Response) -> float | None:
    """The wait the server asks for: ``retry-after-ms`` (OpenAI, Azure), else ``Retry-After``
    in seconds or as an HTTP date."""
    milliseconds = response.headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


# --- the per-attempt wall-clock limit, enforced on every socket operation ---------------------


class _AttemptDeadline(threading.local):
    at: float | None = None


_ATTEMPT = _AttemptDeadline()


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """The timeout for one socket operation: the configured one cut to what is left of the
    attempt, so no sequence of slow operations (a trickle) can outlive the attempt."""
    at = _ATTEMPT.at
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the attempt ran out of time")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.connect_tcp(host, port, bounded, local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _deadline_transport() -> httpx.BaseTransport:
    """httpx's own transport, with its connections wrapped to honour the attempt's deadline.

    httpx has no option for this, so the pool's backend is swapped; on a layout we do not know
    the plain transport is kept (per-operation timeouts only) rather than failing.
    """
    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]
    return transport


class _Transient(Exception):
    """An attempt that failed in a way another attempt may not."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Fatal(Exception):
    """An attempt that failed in a way retrying cannot fix (e.g. HTTP 401, 404)."""


class OpenAIClient:
    """HTTP transport with bounded retries, backoff with jitter, a concurrency limit, a
    per-attempt timeout and a per-call deadline. See the module docstring."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        deadline: float = 600.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_concurrency: int = 8,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Set the limits; nothing is sent until the first call.

        Args:
            base_url: the API root (``.../v1``); from the environment when None.
            api_key_env: the environment variable holding the key.
            timeout: seconds one attempt may take, from connecting to the end of the reply.
            deadline: seconds one call may take, all attempts and waits together.
            max_retries: further attempts after a retryable failure.
            backoff: the first wait between attempts; it doubles each time, up to ``max_backoff``,
                and is multiplied by a random factor in [0.5, 1) so that clients do not retry in
                lockstep.
            max_backoff: the longest wait the backoff computes (a ``Retry-After`` is honoured as
                given, as long as it ends before the deadline).
            max_concurrency: requests in flight at once through this client.
            transport: an httpx transport to use instead of the network (tests).
            sleep: how to wait between attempts (tests record the waits instead).
        """
        if timeout <= 0 or deadline <= 0:
            raise ValueError("timeout and deadline must be positive")
        if max_retries < 0 or max_concurrency < 1:
            raise ValueError("max_retries must be >= 0 and max_concurrency >= 1")
        self.base_url = _base_url(base_url)
        self.display_url = public_url(self.base_url)
        headers = {}
        self._secret = os.environ.get(api_key_env) or ""
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport or _deadline_transport(),
        )
        self.timeout = timeout
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._rng = random.Random()
        self._sleep = sleep

    def redact(self, text: str) -> str:
        """``text`` with the API key cut out (a server may echo the request in an error)."""
        return text.replace(self._secret, "[redacted]") if len(self._secret) >= 4 else text

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` as JSON and return the JSON object replied, retrying within the
        limits; raises ``JudgeError`` saying what went wrong on the last attempt."""
        started = time.monotonic()
        deadline = started + self.deadline
        problem, note, attempts = "", "", 0
        for attempt in range(self.max_retries + 1):
            attempts += 1
            try:
                return self._attempt(path, payload, deadline)
            except _Fatal as exc:
                problem = str(exc)
                break
            except _Transient as exc:
                problem, wait = str(exc), exc.retry_after
            if attempt == self.max_retries:
                break
            if wait is None:
                wait = min(self.max_backoff, self.backoff * 2**attempt)
                wait *= 0.5 + self._rng.random() / 2
            if time.monotonic() + wait >= deadline:
                note = f"; waiting {wait:.3g}s more would pass the {self.deadline:g}s deadline"
                break
            self._sleep(wait)
        elapsed = time.monotonic() - started
        raise JudgeError(
            self.redact(
                f"{self.display_url}{path}: {problem} "
                f"({attempts} attempt{'s' * (attempts > 1)} in {elapsed:.3g}s{note})"
            )
        )

    def _attempt(self, path: str, payload: dict[str, Any], deadline: float) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0 or not self._slots.acquire(timeout=left):
            raise _Transient(f"no request slot free before the {self.deadline:g}s deadline")
        try:
            _ATTEMPT.at = min(deadline, time.monotonic() + self.timeout)
            response = self._http.post(path, json=payload)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out ({type(exc).__name__})") from None
        except httpx.UnsupportedProtocol as exc:
            raise _Fatal(f"{type(exc).__name__}: {exc}") from None
        except httpx.RequestError as exc:  # resets, refused connections, bad encodings
            raise _Transient(f"{type(exc).__name__}: {exc}") from None
        finally:
            _ATTEMPT.at = None
            self._slots.release()
        if response.status_code >= 400:
            message = f"HTTP {response.status_code}: {response.text[:200]}"
            if response.status_code in RETRYABLE_STATUS:
                raise _Transient(message, _retry_after(response))
            raise _Fatal(message)
        try:
            body = response.json()
        except ValueError as exc:
            raise _Transient(f"unreadable response body: {exc}") from None
        if not isinstance(body, dict):
            raise _Transient(f"response body is a JSON {type(body).__name__}, not an object")
        return body


class OpenAIJudge:
    def __init__(
        self,
        model: str,
        *,
        json_mode: JsonMode = "schema",
        seed: int | None = None,
        client: OpenAIClient | None = None,
        **client_options: Any,
    ) -> None:
        """Name the model; nothing is sent until the first call.

        Args:
            model: the model name the endpoint knows.
            json_mode: how to ask for JSON: a JSON schema, any JSON object, or nothing (for
                servers that reject ``response_format``).
            seed: sent with every request, for endpoints that sample reproducibly with it.
            client: a configured client; otherwise one is made from ``client_options``.
        """
        if not model:
            raise ValueError("the openai judge needs a model name, e.g. openai:gpt-4o-mini")
        self.model = model
        self.json_mode = json_mode
        self.seed = seed
        self.client = client or OpenAIClient(**client_options)
        self._served: set[str] = set()
        self._fingerprints: set[str] = set()

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def describe(self) -> dict[str, Any]:
        """What the run record needs to say which model answered: the endpoint, and the model
        snapshots and system fingerprints the server reported (an alias such as
        ``gpt-4o-mini`` moves between snapshots over time)."""
        return {
            "base_url": self.client.display_url,
            "served_models": sorted(self._served),
            "system_fingerprints": sorted(self._fingerprints),
            "seed": self.seed,
        }

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
        if self.seed is not None:
            payload["seed"] = self.seed
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
    return OpenAIJudge(model, **options)


def create_embedder(model: str = "", **options: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder(model, **options)
