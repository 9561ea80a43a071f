"""Deterministic stand-ins for a judge and an embedder, shipped for tests and dry runs.

They go through the same registry and pipeline as real providers, so a test on the fake exercises
the real prompts, parsing, caching and scoring code.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from pydantic import Field

from ragmeter.judges.base import ChatRequest, ChatResponse, JudgeError, ModelIdentity
from ragmeter.options import Options
from ragmeter.text import WORD

Responder = Callable[[ChatRequest], "str | ChatResponse"]


class FakeJudge:
    """A judge that replies from a script.

    Replies come from a queue (``enqueue``) or, when the queue is empty, from ``responder``, a
    function of the request. A reply that is an exception instance is raised, to script failures.
    Every request is kept in ``history``.

    A script in memory cannot be hashed, so the fake is known by its ``model`` name (and, made
    from ``fake:FILE``, by the file's hash): fakes with different scripts that share a call cache
    need names of their own, or they are served each other's replies.
    """

    def __init__(
        self,
        replies: Iterable[str | ChatResponse | Exception] = (),
        *,
        responder: Responder | None = None,
        model: str = "scripted",
        window: int | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self._queue: deque[str | ChatResponse | Exception] = deque(replies)
        self._responder = responder
        self._model = model
        self.settings: dict[str, str] = {}
        """What else determines the replies (the script file's hash, for ``fake:FILE``)."""
        self.history: list[ChatRequest] = []
        self.window = window
        """The context window in tokens the fake claims to have (``window_of``), for tests of
        what does not fit; None, as for a judge that does not say."""
        self.count_tokens = count_tokens
        """How it counts a text's tokens (``token_counter``); None, as for a judge that
        cannot."""

    @property
    def name(self) -> str:
        return f"fake:{self._model}"

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="fake", model=self._model, settings=self.settings)

    def enqueue(self, *replies: str | ChatResponse | Exception) -> None:
        self._queue.extend(replies)

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.history.append(request)
        if self._queue:
            reply: str | ChatResponse | Exception = self._queue.popleft()
        elif self._responder is not None:
            reply = self._responder(request)
        else:
            raise JudgeError("fake judge has no scripted reply left")
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        return ChatResponse(
            text=reply,
            prompt_tokens=sum(len(m.content.split()) for m in request.messages),
            completion_tokens=len(reply.split()),
            finish_reason="stop",
        )


class FakeOptions(Options):
    """The fakes are deterministic; ``seed`` is accepted (and ignored) so that a run that passes
    one to any judge also runs on a fake."""

    seed: int | None = Field(None, description="Ignored: the fake replies from its script.")


def create_judge(model: str = "", **options: object) -> FakeJudge:
    """``fake`` replies from nothing (every call fails); ``fake:FILE`` replays one JSON string
    per line of FILE, in order."""
    FakeOptions.parse(options, "the fake judge")
    if not model:
        return FakeJudge()
    text = Path(model).read_text()
    replies = [json.loads(line) for line in text.splitlines() if line.strip()]
    judge = FakeJudge(replies, model=model)
    judge.settings = {"script_sha256": hashlib.sha256(text.encode()).hexdigest()}
    return judge


class HashingEmbedder:
    """Bag-of-words embeddings by feature hashing: texts sharing words get a high cosine.

    Deterministic across processes (sha256, not Python's salted ``hash``).
    """

    def __init__(self, dim: int = 4096) -> None:
        self.dim = dim

    @property
    def name(self) -> str:
        return f"fake:hashing-{self.dim}"

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="fake", model=f"hashing-{self.dim}")

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                digest = hashlib.sha256(word.encode()).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
        return out


def create_embedder(model: str = "", **options: object) -> HashingEmbedder:
    FakeOptions.parse(options, "the fake embedder")
    return HashingEmbedder(int(model) if model else 4096)
