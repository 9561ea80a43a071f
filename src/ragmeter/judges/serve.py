"""Serve a GGUF judge over HTTP with llama-cpp-python's OpenAI-compatible server.

    python -m ragmeter.judges.serve [--model PATH] [--port 8031] [other llama_cpp.server options]

It is ``python -m llama_cpp.server`` with the local judge's defaults: ``--model`` is the bundled
judge (served as ``qwen`` unless ``--model_alias`` says otherwise), ``--n_threads`` every core
(``RAGMETER_THREADS`` if set; the server's own default is half of them, 1.18 times slower on a
2-core machine), and the model is loaded without llama.cpp's AMX weight buffers, on which
the server crashes at its first prompt on CPUs with AMX (see ``without_amx_buffers``). Point
ragmeter at it with ``--judge openai:qwen`` and ``RAGMETER_BASE_URL=http://127.0.0.1:8031/v1``.

Needs ``pip install 'llama-cpp-python[server]'``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import httpx

from ragmeter.judges.local import LocalJudgeOptions, default_threads, without_amx_buffers
from ragmeter.judges.weights import ensure_weights

DEFAULT_ALIAS = "qwen"


@contextmanager
def served(*arguments: str, log: Path | None = None, startup: float = 300.0) -> Iterator[str]:
    """Run the server in a child process on a free port of 127.0.0.1 and yield its API root
    (``http://127.0.0.1:PORT/v1``) once it answers; stop it on leaving.

    Args:
        arguments: further server options, e.g. ``"--n_threads", "2"``.
        log: where the server's output goes (discarded when None).
        startup: seconds to wait for the model to load.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", __name__, "--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}/v1"
    with open(log, "wb") if log else nullcontext(subprocess.DEVNULL) as output:
        process = subprocess.Popen([*command, *arguments], stdout=output, stderr=output)
        try:
            _wait_until_up(process, url, startup)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(process: subprocess.Popen[bytes], url: str, startup: float) -> None:
    deadline = time.monotonic() + startup
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {startup:g}s")


def main(argv: list[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    named = {a.split("=", 1)[0] for a in arguments if a.startswith("--")}
    if "--model" not in named:
        arguments = ["--model", str(ensure_weights()), *arguments]
        if "--model_alias" not in named:
            arguments += ["--model_alias", DEFAULT_ALIAS]
    if "--n_threads" not in named:
        arguments += ["--n_threads", str(default_threads())]
    if "--n_ctx" not in named:
        # llama-cpp-python's 2048 cuts off prompts the in-process judge reads whole.
        arguments += ["--n_ctx", str(LocalJudgeOptions().n_ctx)]
    try:
        from llama_cpp.server.__main__ import main as serve
    except ImportError as exc:
        raise SystemExit(
            f"the server needs llama-cpp-python's server extra: pip install "
            f"'llama-cpp-python[server]' ({exc})"
        ) from None
    sys.argv = ["python -m llama_cpp.server", *arguments]
    with without_amx_buffers():
        serve()


if __name__ == "__main__":
    main()
