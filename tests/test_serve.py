"""``python -m ragmeter.judges.serve``: llama-cpp-python's server, the local judge's defaults."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ragmeter.judges import serve


@pytest.fixture
def started(monkeypatch):
    """The arguments the server would have been started with (it is not started)."""
    import llama_cpp.server.__main__ as server_main

    seen: list[list[str]] = []
    monkeypatch.setattr(server_main, "main", lambda: seen.append(sys.argv[1:]))
    monkeypatch.setattr(serve, "ensure_weights", lambda: Path("/models/bundled.gguf"))
    monkeypatch.setattr(sys, "argv", ["serve"])
    return seen


def test_the_bundled_judge_is_served_on_every_core_and_its_context_by_default(started, monkeypatch):
    monkeypatch.setenv("RAGMETER_THREADS", "3")
    serve.main(["--port", "8031"])
    bundled = ["--model", "/models/bundled.gguf", "--port", "8031", "--model_alias", "qwen"]
    assert started == [[*bundled, "--n_threads", "3", "--n_ctx", "8192"]]


def test_options_given_are_kept(started):
    serve.main(["--model", "/m.gguf", "--n_threads=1", "--n_ctx", "4096"])
    assert started == [["--model", "/m.gguf", "--n_threads=1", "--n_ctx", "4096"]]
