"""A Ray head node on this machine, as a user starts one with ``ray start --head``, for the tests
and benchmarks of work spread over Ray.

It listens on 127.0.0.1 only, asks every client for a token of its own (Ray's token
authentication, the token in the environment rather than in ``~/.ray``), reports no usage
statistics, and runs in a process group of its own, so that stopping it ends its raylet, its
object store and every worker it started (and no other Ray on the machine). Its workers import
from the repository root, so the fakes in ``tests/`` answer there as they do in the driver.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def local_head(cpus: int = 4, timeout: float = 90.0) -> Iterator[str]:
    """Start a head node with ``cpus`` logical CPUs; yields its address (``127.0.0.1:PORT``).
    While it runs, this process's environment holds the token, so drivers started here or in
    child processes can join.

    The CPUs are Ray's accounting, not cores: a judge that waits on a server needs none, so a
    2-core machine can hold 4 workers of 1 CPU each."""
    port = _free_port()
    ray = Path(sys.executable).parent / "ray"
    access = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    saved = {name: os.environ.get(name) for name in access}
    os.environ.update(access)
    _reload_ray_auth()
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = os.environ | {"PYTHONPATH": os.pathsep.join(paths), "RAY_USAGE_STATS_ENABLED": "0"}
    log = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the head's whole life
    command = [
        str(ray), "start", "--head", "--block", f"--port={port}",
        "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--num-gpus=0",
        "--disable-usage-stats", "--include-dashboard=false",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"the Ray head did not start: {log.read().decode()[-3000:]}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(process)
        log.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _reload_ray_auth()


def _reload_ray_auth() -> None:
    """Ray reads its authentication settings once, when first imported: make a driver in this
    process that imported it already read them again."""
    if "ray" not in sys.modules:
        return
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # a Ray without token authentication: nothing to read again
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the head's process group (``--block`` then stops its processes), then SIGKILL
    whatever is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
