"""``ragmeter evaluate`` killed with SIGKILL mid-run, again and again, then run to the end.

The fault server kills the process while it waits for a reply (the worst moment: a call is in
flight, an item half judged). After each kill, and at the end: no committed item is lost or
changed, no committed item gets another request, every call is made once except the one in
flight at each kill, and the final scores equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from ragmeter import evaluate
from ragmeter.data import write_jsonl
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge

from .fault_server import FaultServer, Seen, marked_samples

CHAT = "/v1/chat/completions"
KILL_AT = (1, 11, 17)
"""Chat requests into each killed process: its very first call, then two mid-item calls."""
COMMITTED_AFTER = (0, 4, 11, 24)
"""Items saved after each run. A sample takes 7 calls: faithfulness 2 (one per answer sentence),
answer relevance 2, context relevance 3 sentences. Run 2 finishes sample 0 (7 calls) and
faithfulness(1) (2) and is killed on answer_relevance(1)'s 2nd call (its 11th); run 3 re-sends
that call (the first comes from the cache), finishes samples 1 and 2 and faithfulness(3) and
answer_relevance(3), and is killed on context_relevance(3)'s 2nd call (its 17th)."""


def committed(out: Path) -> dict[tuple[str, str], str]:
    """What the store holds: (sample id, metric) -> the stored score, as SQLite commits it."""
    path = out / "scores.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT sample_id, metric, payload FROM scores").fetchall()
    return {(sample, metric): payload for sample, metric, payload in rows}


def command(data: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from ragmeter.cli.main import app; app()",
        "evaluate",
        str(data),
        "--judge",
        "openai:fault-judge",
        "--embedder",
        "openai:fault-embed",
        "--out",
        str(out),
        "--no-show-samples",
    ]


class Killer:
    """Kills the current process when it sends its N-th chat request, before the reply."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.at: int | None = None
        self.chat = 0

    def start(self, cmd: list[str], env: dict[str, str], at: int | None) -> int:
        self.at, self.chat = at, 0
        self.process = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        output, _ = self.process.communicate(timeout=120)
        assert self.process.returncode in (0, -signal.SIGKILL), output.decode()
        return self.process.returncode

    def __call__(self, seen: Seen) -> None:
        if seen.path != CHAT:
            return
        self.chat += 1
        if self.chat == self.at and self.process is not None:
            os.kill(self.process.pid, signal.SIGKILL)


def test_sigkill_at_any_call_loses_nothing_and_judges_nothing_twice(tmp_path):
    samples = marked_samples(8)
    data = tmp_path / "data.jsonl"
    write_jsonl(samples, data)
    killer = Killer()
    with FaultServer(on_request=killer) as server:
        reference = evaluate(
            samples,
            judge=OpenAIJudge("fault-judge", base_url=server.url),
            embedder=OpenAIEmbedder("fault-embed", base_url=server.url),
            cache=False,
        )
        reference_calls = sum(1 for s in server.seen if s.path == CHAT)
        server.clear()

        env = os.environ | {
            "RAGMETER_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-resume-test",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }
        out = tmp_path / "out"
        before: dict[tuple[str, str], str] = {}
        calls = 0
        for at, expected in zip((*KILL_AT, None), COMMITTED_AFTER, strict=True):
            code = killer.start(command(data, out), env, at)
            assert code == (-signal.SIGKILL if at else 0)
            now = committed(out)
            assert len(now) == expected
            assert before.items() <= now.items()  # nothing lost, nothing rewritten
            asked = {(s.item, s.metric) for s in server.seen}
            assert not asked & before.keys()  # no committed item asked about again
            calls += sum(1 for s in server.seen if s.path == CHAT)
            before = now
            server.clear()

    # Each kill cost exactly one repeated call: the one in flight, whose reply never arrived.
    assert calls == reference_calls + len(KILL_AT)
    final = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [(s["sample_id"], s["metric"], s["value"], s["explanation"]) for s in final] == [
        (s.sample_id, s.metric, s.value, s.explanation) for s in reference.scores
    ]
    history = [json.loads(line)["status"] for line in (out / "runs.jsonl").read_text().splitlines()]
    assert history == ["running"] * 4 + ["complete"]  # three killed runs left their mark
