from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ragmeter.judges.base import ChatRequest
from ragmeter.judges.fake import FakeJudge


def prompt_name(request: ChatRequest) -> str:
    """Which metric prompt a request renders, read from its system instruction."""
    system = request.messages[0].content
    for marker, name in [
        ("create one or more statements", "statements"),
        ("determine whether each statement", "verdicts"),
        ("questions that the given answer answers", "questions"),
        ("Extract the sentences", "extract"),
    ]:
        if marker in system:
            return name
    raise AssertionError(f"unrecognised prompt: {system[:80]}")


def routed(replies: dict[str, object]) -> Callable[[ChatRequest], str]:
    """A responder that answers each prompt kind with a fixed JSON reply."""

    def respond(request: ChatRequest) -> str:
        return json.dumps(replies[prompt_name(request)])

    return respond


@pytest.fixture
def no_user_cache(tmp_path, monkeypatch):
    """Keep tests away from the user's cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path


@pytest.fixture
def fake_judge() -> FakeJudge:
    return FakeJudge()
