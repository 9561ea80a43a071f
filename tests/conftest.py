from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from ragmeter.judges.base import ChatRequest, ChatResponse, TokenLogprobs, pack_state
from ragmeter.judges.fake import FakeJudge

from .fault_server import prompt_kind

# Property tests check behaviour, not speed: a loaded machine must not fail them.
settings.register_profile("ragmeter", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ragmeter")


def prompt_name(request: ChatRequest) -> str:
    """Which metric prompt a request renders, read from its system instruction (the markers of
    ``fault_server.PROMPT_KINDS``); both per-sentence Yes/No prompts are ``needed``."""
    system = request.messages[0].content
    kind, _ = prompt_kind(system)
    if kind == "other":
        raise AssertionError(f"unrecognised prompt: {system[:80]}")
    return "needed" if kind == "sentence" else kind


def yes_no(p_yes: float, states: dict[str, list[float]] | None = None) -> ChatResponse:
    """A one-token reply whose alternatives give P(yes) = p_yes, as a local judge returns it,
    with the hidden ``states`` it shows (packed as the local judge packs them)."""
    top = {
        "Yes": math.log(p_yes) if p_yes else -100.0,
        "No": math.log(1 - p_yes) if p_yes < 1 else -100.0,
    }
    first = max(top, key=top.__getitem__)
    return ChatResponse(
        text=first,
        logprobs=[TokenLogprobs(token=first, logprob=top[first], top=top)],
        prompt_tokens=10,
        completion_tokens=1,
        states={k: pack_state(np.array(v)) for k, v in states.items()} if states else None,
    )


def routed(replies: dict[str, object]) -> Callable[[ChatRequest], str | ChatResponse]:
    """A responder that answers each prompt kind with a fixed reply: JSON for structured
    prompts, a probability of yes for yes/no prompts."""

    def respond(request: ChatRequest) -> str | ChatResponse:
        reply = replies[prompt_name(request)]
        return yes_no(reply) if isinstance(reply, float) else json.dumps(reply)

    return respond


@pytest.fixture
def no_user_cache(tmp_path, monkeypatch):
    """Keep tests away from the user's cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path


@pytest.fixture
def fake_judge() -> FakeJudge:
    return FakeJudge()


class LearningJudge(FakeJudge):
    """A scripted judge that learns during its first call to ask its server another way, as
    ``OpenAIJudge`` falls back to another JSON mode: its identity changes in the middle of that
    call. ``learned=True`` is the same judge once it has learned (a rerun that asks that way)."""

    def __init__(self, responder: Callable[[ChatRequest], str | ChatResponse], *, learned=False):
        super().__init__(responder=responder, model="learning")
        self.settings = {"json_mode": "object" if learned else "schema"}

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.settings = {"json_mode": "object"}
        return super().complete(request)
