"""Helpers for the storage-fault tests and bench (``bench/bench_storage.py``): a scripted judge
whose every reply is fixed by its prompt, a real disk that fills up (a tmpfs), and ways to damage
a file as a bad sector would."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.result import Result

from .conftest import prompt_name, yes_no


class DiskUnavailable(RuntimeError):
    """No tmpfs can be mounted here (not root, or no permission)."""


def p_yes(text: str) -> float:
    """A probability fixed by the prompt's text, between 0.05 and 0.94."""
    return 0.05 + int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 90 / 100


def reply(request: ChatRequest) -> str | ChatResponse:
    if prompt_name(request) == "noncommittal":
        return json.dumps({"noncommittal": False})
    return yes_no(p_yes(request.messages[-1].content))


def judge(model: str = "hashed", on_request=None) -> FakeJudge:
    """The scripted judge; ``on_request`` sees each request before the reply is made."""

    def respond(request: ChatRequest) -> str | ChatResponse:
        if on_request is not None:
            on_request(request)
        return reply(request)

    return FakeJudge(responder=respond, model=model)


def scores(result: Result) -> list[tuple]:
    return [(s.sample_id, s.metric, s.value, s.explanation) for s in result.scores]


def stored(out: Path) -> dict[str, str]:
    """key -> payload, as SQLite holds them."""
    with closing(sqlite3.connect(out / "scores.sqlite")) as db:
        return dict(db.execute("SELECT key, payload FROM scores").fetchall())


@contextmanager
def small_disk(mount: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``mount`` (made if missing), unmounted afterwards;
    DiskUnavailable where it cannot be mounted."""
    mount.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise DiskUnavailable("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode:
        raise DiskUnavailable(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk`` with one file; removing it frees them."""
    path = disk / "filler"
    handle = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 1 << 12, 1):
            while True:
                try:
                    os.write(handle, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(handle)
    assert os.statvfs(disk).f_bavail == 0
    return path


def flip(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of ``old`` in the file by ``new``, of the same length, as a
    damaged sector would, unseen by SQLite."""
    data = path.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    path.write_bytes(data.replace(old, new))
