"""HTTP transport for model providers that call a JSON API: retries, limits and key handling.

A provider builds one ``HttpClient`` and says only which error replies are worth another attempt
(``retryable``); the retrying itself is done here, the same way for every provider.

At scale, transport faults are the normal case, so every call is bounded in three ways:

- ``max_retries`` further attempts after a timeout, a dropped connection, a 429 or a 5xx, with
  exponential backoff and jitter, or exactly the wait a 429/503 asks for in ``Retry-After``;
  a refusal of the request itself (a 4xx, or a 5xx whose body is a validation error) is not
  retried: it raises ``RequestRefused`` at once;
- ``timeout``: the wall-clock limit of one attempt, from connecting to the last byte of the
  reply. It is enforced on every socket operation, so a server that stalls or trickles bytes
  ends the attempt (and is retried) instead of hanging it;
- ``deadline``: the wall-clock limit of the whole call, retries and waits included.

``max_concurrency`` caps the requests in flight, whatever the number of evaluation workers; unset,
the workers alone decide, so that ``--workers N`` keeps N requests in flight.

The API key is read from the environment variable named by ``api_key_env`` and sent in a header;
it is never stored in options, logged or put in a name, and it is cut out of any error text, in
case a server echoes the request back.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx
from pydantic import Field

from ragmeter.judges.base import JudgeError, RequestRefused
from ragmeter.options import Options

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""Error statuses that another attempt may fix: timeouts, conflicts, rate limits, server errors."""

# Servers built on pydantic (llama-cpp-python's, among others) answer a request they cannot
# parse with a 500 whose body is the validation error: a server error in name, a refusal in fact.
_VALIDATION_ERROR = re.compile(r"\bvalidation errors?\b|\bInput should be\b")


def retryable_status(response: httpx.Response) -> bool:
    """The default ``retryable`` hook: the status is one of ``RETRYABLE_STATUS``, and the body
    of a 5xx is not a request validation error (sending the same request again cannot fix
    that)."""
    if response.status_code not in RETRYABLE_STATUS:
        return False
    return response.status_code < 500 or not _VALIDATION_ERROR.search(response.text)


class TransportOptions(Options):
    """How calls to an HTTP API are bounded (``--judge-option NAME=VALUE``). None of them changes
    a reply, so none is part of a model's identity: changing them reuses cached calls and scores.
    """

    operational = frozenset(
        {
            "api_key_env",
            "timeout",
            "deadline",
            "max_retries",
            "backoff",
            "max_backoff",
            "max_concurrency",
        }
    )

    api_key_env: str | None = Field(
        None,
        description="The environment variable the API key is read from; none is sent when unset "
        "(a provider names its own, so that no key goes to an endpoint it was not meant for).",
    )
    timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds one attempt may take, from connecting to the last byte of the reply.",
    )
    deadline: float = Field(
        600.0, gt=0, description="Seconds one call may take, all attempts and waits together."
    )
    max_retries: int = Field(
        4, ge=0, description="Further attempts after a failure that another attempt may fix."
    )
    backoff: float = Field(
        1.0,
        ge=0,
        description="The first wait between attempts, in seconds; it doubles each time, up to "
        "max_backoff, and is multiplied by a random factor in [0.5, 1) so that clients do not "
        "retry in lockstep.",
    )
    max_backoff: float = Field(
        30.0,
        ge=0,
        description="The longest wait the backoff computes (a Retry-After is honoured as given, "
        "as long as it ends before the deadline).",
    )
    max_concurrency: int | None = Field(
        None,
        ge=1,
        description="Requests in flight at once per client (a server's or a plan's limit); "
        "unset, as many as the evaluation's workers send.",
    )


def base_url_from_env(given: str | None, *variables: str, default: str) -> str:
    """The API root: ``given``, else the first of the environment ``variables`` that is set,
    else ``default``; without a trailing slash."""
    for candidate in (given, *(os.environ.get(name) for name in variables)):
        if candidate:
            return candidate.rstrip("/")
    return default.rstrip("/")


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

    def __init__(self, message: str, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class HttpClient:
    """JSON over HTTP with bounded retries, backoff with jitter, a concurrency limit, a
    per-attempt timeout and a per-call deadline. See the module docstring."""

    def __init__(
        self,
        base_url: str,
        options: TransportOptions | None = None,
        *,
        retryable: Callable[[httpx.Response], bool] = retryable_status,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Set the limits; nothing is sent until the first call.

        Args:
            base_url: the API root, e.g. ``https://api.openai.com/v1``.
            options: the limits and where the key is read from; the defaults when None.
            retryable: whether an error reply (status 400 or above) may succeed on another
                attempt; the provider's knowledge of its API. Timeouts and dropped connections
                are always retried, an unsupported URL scheme never.
            transport: an httpx transport to use instead of the network (tests).
            sleep: how to wait between attempts (tests record the waits instead).
        """
        self.options = options or TransportOptions()
        self.base_url = base_url.rstrip("/")
        self.display_url = public_url(self.base_url)
        headers = {}
        key_env = self.options.api_key_env
        self._secret = (os.environ.get(key_env) if key_env else None) or ""
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=self.options.timeout,
            transport=transport or _deadline_transport(),
        )
        self._retryable = retryable
        limit = self.options.max_concurrency
        self._slots = threading.BoundedSemaphore(limit) if limit else None
        self._rng = random.Random()
        self._sleep = sleep

    def redact(self, text: str) -> str:
        """``text`` with the API key cut out (a server may echo the request in an error)."""
        return text.replace(self._secret, "[redacted]") if len(self._secret) >= 4 else text

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` as JSON and return the JSON object replied, retrying within the
        limits; raises ``JudgeError`` saying what went wrong on the last attempt."""
        options = self.options
        started = time.monotonic()
        deadline = started + options.deadline
        problem, note, attempts = "", "", 0
        refusal: _Fatal | None = None
        for attempt in range(options.max_retries + 1):
            attempts += 1
            try:
                return self._attempt(path, payload, deadline)
            except _Fatal as exc:
                problem, refusal = str(exc), exc
                break
            except _Transient as exc:
                problem, wait = str(exc), exc.retry_after
            if attempt == options.max_retries:
                break
            if wait is None:
                wait = min(options.max_backoff, options.backoff * 2**attempt)
                wait *= 0.5 + self._rng.random() / 2
            if time.monotonic() + wait >= deadline:
                note = f"; waiting {wait:.3g}s more would pass the {options.deadline:g}s deadline"
                break
            self._sleep(wait)
        elapsed = time.monotonic() - started
        message = self.redact(
            f"{self.display_url}{path}: {problem} "
            f"({attempts} attempt{'s' * (attempts > 1)} in {elapsed:.3g}s{note})"
        )
        if refusal is not None:
            raise RequestRefused(message, status=refusal.status, detail=self.redact(refusal.detail))
        raise JudgeError(message)

    def _attempt(self, path: str, payload: dict[str, Any], deadline: float) -> dict[str, Any]:
        left = deadline - time.monotonic()
        slots = self._slots
        if left <= 0 or (slots is not None and not slots.acquire(timeout=left)):
            raise _Transient(f"no request slot free before the {self.options.deadline:g}s deadline")
        try:
            _ATTEMPT.at = min(deadline, time.monotonic() + self.options.timeout)
            response = self._http.post(path, json=payload)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out ({type(exc).__name__})") from None
        except httpx.UnsupportedProtocol as exc:
            raise _Fatal(f"{type(exc).__name__}: {exc}") from None
        except httpx.RequestError as exc:  # resets, refused connections, bad encodings
            raise _Transient(f"{type(exc).__name__}: {exc}") from None
        finally:
            _ATTEMPT.at = None
            if slots is not None:
                slots.release()
        if response.status_code >= 400:
            message = f"HTTP {response.status_code}: {response.text[:200]}"
            if self._retryable(response):
                raise _Transient(message, _retry_after(response))
            raise _Fatal(message, response.status_code, response.text[:2000])
        try:
            body = response.json()
        except ValueError as exc:
            raise _Transient(f"unreadable response body: {exc}") from None
        if not isinstance(body, dict):
            raise _Transient(f"response body is a JSON {type(body).__name__}, not an object")
        return body
