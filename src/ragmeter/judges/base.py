"""The contracts every model provider implements: a generative judge and an embedder.

A provider is one file exposing ``create_judge(model, **options)`` and/or
``create_embedder(model, **options)``, registered under the ``ragmeter.judges`` /
``ragmeter.embedders`` entry points (built-ins use the same hook as plugins).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """What a metric asks of a judge. Everything that changes the reply is in here, so the
    request (with the judge's identity) is a complete cache key."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    json_schema: dict[str, Any] | None = None
    """Constrain the reply to JSON of this shape where the backend can."""
    max_tokens: int = 512
    temperature: float = 0.0
    top_logprobs: int = 0
    """Return this many alternatives with their log-probabilities for each generated token."""
    draw: int = 0
    """Which of several replies drawn at a temperature above 0 this is: the same prompt drawn
    again is another request (and another cache entry). 0, the default, stays out of keys."""

    def key(self) -> str:
        """The request as the cache keys it: ``draw`` only where it is set, so a request that
        draws nothing keys as it did before there were draws."""
        return self.model_dump_json(exclude={"draw"} if self.draw == 0 else None)


class TokenLogprobs(BaseModel):
    """One generated token and the most likely alternatives at its position."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)

    def probabilities(self, option_of: Callable[[str], str | None]) -> dict[str, float]:
        """Probability summed per option over this position's alternatives (\"Yes\" and \" yes\"
        both count for one option); ``option_of`` names the option an alternative spells, or
        None. An option that no alternative spells is absent.

        A log-probability that is not finite or is above 0 is impossible; a faulty server can
        still send one, so it is ignored rather than allowed to turn a score into NaN.
        """
        mass: dict[str, float] = {}
        for alternative, logprob in self.top.items():
            option = option_of(alternative)
            if option is None or not math.isfinite(logprob) or logprob > 1e-6:
                continue
            mass[option] = mass.get(option, 0.0) + math.exp(min(logprob, 0.0))
        return mass


class ChatResponse(BaseModel):
    text: str
    logprobs: list[TokenLogprobs] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    cached: bool = False
    states: dict[str, str] | None = None
    """The judge's hidden states where the reply's first token was chosen, by name, each
    packed by ``pack_state``; only a judge that can show them (the local one) gives them, and
    verdict heads read them (``ragmeter.judges.heads``)."""


def pack_state(vector: np.ndarray) -> str:
    """A hidden state as text for JSON records: float16, little-endian, base64 (a 1,536-wide
    state takes 4 KB; float16's precision is far below what a linear head can tell apart)."""
    return base64.b64encode(np.asarray(vector, dtype="<f2").tobytes()).decode()


def unpack_state(packed: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(packed), dtype="<f2").astype(np.float32)


class ModelIdentity(BaseModel):
    """Everything that determines a model's outputs: the call cache and the score store key on
    it, so that pointing a name at another server or swapping the weights under the same file
    name is a new model, never a source of stale replies.

    ``settings`` holds the rest of what changes outputs: the endpoint, the weights' SHA-256, the
    options that change replies (seed, JSON mode). Options that do not (timeouts, retries,
    concurrency, where the key is read from) stay out, so changing them reuses everything.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @cached_property
    def digest(self) -> str:
        material = json.dumps(self.model_dump(mode="json"), sort_keys=True, default=str)
        return hashlib.sha256(material.encode()).hexdigest()[:16]


def identity_of(model: Judge | Embedder) -> ModelIdentity:
    """The model's ``identity``; a plugin that declares none is known by its name alone."""
    identity = getattr(model, "identity", None)
    if isinstance(identity, ModelIdentity):
        return identity
    provider, _, name = model.name.partition(":")
    return ModelIdentity(provider=provider, model=name)


Reply = ChatResponse | Exception
"""What a batch gives back for each request: the response, or what stopped it (a
``JudgeError`` for a failed call, ``BudgetExhausted`` for one the budget did not allow)."""


def states_of(judge: Any) -> tuple[str, ...]:
    """The hidden states the judge's Yes/No probes carry (see ``ChatResponse.states``); none
    for a judge that cannot show them."""
    return tuple(getattr(judge, "states", ()))


def heads_of(judge: Any) -> Any:
    """The verdict heads that read the judge's Yes/No replies (``ragmeter.judges.heads.Heads``), or
    None: the zero-shot read."""
    return getattr(judge, "heads", None)


def window_of(judge: Any) -> int | None:
    """The judge's context window in tokens, where it says (the local judge does); None where
    it is not known, and a request too long for it fails at the server."""
    window = getattr(judge, "window", None)
    return int(window) if window else None


def token_counter(judge: Any) -> Callable[[str], int] | None:
    """How many of the judge's tokens a text takes, where the judge can say (the local judge
    reads its own tokenizer); None where it cannot."""
    count = getattr(judge, "count_tokens", None)
    return count if callable(count) else None


def is_probe(request: ChatRequest) -> bool:
    """A Yes/No question: one token back, read from its log-probabilities."""
    return request.max_tokens == 1 and request.top_logprobs > 0


def answers_batches(judge: Any) -> bool:
    """Whether ``judge`` answers a batch of requests better than one at a time, as the local
    judge does by reading their shared prefix once; wrappers answer for what they wrap."""
    return bool(getattr(judge, "answers_batches", False))


def complete_each(
    judge: Judge, requests: Sequence[ChatRequest], concurrency: int = 1
) -> list[Reply]:
    """Every request answered, in order: by the judge's ``complete_batch`` where it has one,
    else by ``complete``, up to ``concurrency`` at once (a plugin needs nothing more)."""
    batch = getattr(judge, "complete_batch", None)
    if batch is not None:
        replies: list[Reply] = batch(requests, concurrency)
        return replies
    return answer_each(judge.complete, requests, concurrency)


def answer_each(
    complete: Callable[[ChatRequest], ChatResponse],
    requests: Sequence[ChatRequest],
    concurrency: int,
) -> list[Reply]:
    """``complete`` for each request, up to ``concurrency`` at once; what a call raises is its
    reply, so that one failure does not lose the others' answers."""

    def one(request: ChatRequest) -> Reply:
        try:
            return complete(request)
        except Exception as exc:
            return exc

    if concurrency <= 1 or len(requests) <= 1:
        return [one(request) for request in requests]
    with ThreadPoolExecutor(min(concurrency, len(requests))) as pool:
        return list(pool.map(one, requests))


class Wrapper:
    """Base of a model wrapped for the pipeline (the call cache, the budget meter): it answers
    to the wrapped model's name and identity, so keys and records see through it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def answers_batches(self) -> bool:
        return answers_batches(self.inner)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def identity(self) -> ModelIdentity:
        return identity_of(self.inner)

    @property
    def states(self) -> tuple[str, ...]:
        return states_of(self.inner)

    @property
    def heads(self) -> Any:
        return heads_of(self.inner)

    @property
    def window(self) -> int | None:
        return window_of(self.inner)

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        return token_counter(self.inner)


class InFlightLimit(Wrapper):
    """A judge that has at most ``limit`` calls in flight, however many threads ask it: the
    items judged at once and the questions each asks at once share one limit."""

    def __init__(self, inner: Judge, limit: int) -> None:
        super().__init__(inner)
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self._slots:
            response: ChatResponse = self.inner.complete(request)
        return response

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        """A judge that reads batches gets the whole batch as one call; any other, each request
        as a call of its own under the limit."""
        if not answers_batches(self.inner):
            return answer_each(self.complete, requests, concurrency)
        with self._slots:
            return complete_each(self.inner, requests, concurrency)


class JudgeError(RuntimeError):
    """A call to the model failed (transport, server or runtime error)."""


class RequestRefused(JudgeError):
    """The server refused the request itself, so sending it again cannot succeed: a 4xx other
    than a timeout, conflict or rate limit, or a 5xx whose body says the request did not
    validate. ``detail`` is the server's reply (credentials cut out), for a provider that can
    change the request instead (drop a field the server does not know, say)."""

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


@runtime_checkable
class Judge(Protocol):
    """A generative model: chat messages in, text (optionally JSON and log-probabilities) out."""

    @property
    def name(self) -> str:
        """``provider:model``, for people; an optional ``identity`` (``ModelIdentity``) says
        what else determines the replies, and keys hash that (see ``identity_of``)."""
        ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...

    # Optional, for a judge that answers many requests at once better than one by one:
    #   answers_batches: bool
    #   def complete_batch(self, requests, concurrency) -> list[ChatResponse | Exception]
    # ``complete_each`` uses them where they exist.


class NoJudge:
    """The judge of a run whose metrics ask none (the retrieval metrics of ids): it starts no
    model, and a question put to it is an error."""

    name = "none"
    identity = ModelIdentity(provider="none", model="")

    def complete(self, request: ChatRequest) -> ChatResponse:
        raise JudgeError("no judge was started: the run's metrics ask none")


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one row per text (float32); rows need not be normalised."""
        ...


def cosine_similarity(vectors: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``vectors`` with ``target``; zero vectors give 0."""
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(target)
    dots = vectors @ target
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / norms, 0.0)
