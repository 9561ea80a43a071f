"""SIGKILL ``ragmeter evaluate`` at 10 random moments of a run, resuming after each.

    python bench/kill_resume.py [--samples 40] [--kills 10] [--seed 0] [--ray]

With ``--ray`` the runs judge on two Ray workers of a head node started on this machine
(``--ray ADDRESS --ray-actors 2``), and what is killed is the driver: the process the user
started, which holds the store.

The judge is the fault server (no faults) on 127.0.0.1, reached through the ``openai``
provider by a real ``ragmeter evaluate`` subprocess with the default call cache. Kill moments are
drawn (seeded) among the run's chat requests, spread over the whole run; for each, a coin decides
whether the kill lands while that request is in flight (before the server replies) or a few
milliseconds after the reply (while the client parses it, commits the item, or starts the next).

After each kill the store is read back and compared with the previous one, and the next run's
requests are matched against the items already saved. Prints:

- lost: items saved before a kill and missing (or changed) after it, or missing at the end;
- re-judged: items saved before a kill that received any request after it;
- repeated calls: requests sent twice in all (calls cut off by a kill, redone on resume);
- identical: whether the final scores equal an uninterrupted run's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_server import FaultServer, Seen, committed, marked_samples
from tests.ray_cluster import local_head

from ragmeter import evaluate
from ragmeter.data import write_jsonl
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge

CHAT = "/v1/chat/completions"


class Killer:
    """Kills the running process at the planned global chat-request numbers."""

    def __init__(self, plan: list[tuple[int, bool, float]]) -> None:
        self.plan = list(plan)  # (request number, in flight?, delay after the reply)
        self.process: subprocess.Popen[bytes] | None = None
        self.chat = 0
        self.doomed: int | None = None
        self.lock = threading.Lock()

    def __call__(self, seen: Seen) -> None:
        if seen.path != CHAT:
            return
        with self.lock:
            self.chat += 1
            if not self.plan or self.chat < self.plan[0][0] or self.process is None:
                return
            # One kill per process: two moments a few requests apart would otherwise both
            # aim at the run the first has already doomed, and count as one kill.
            if self.process.pid == self.doomed:
                return
            _, in_flight, delay = self.plan.pop(0)
            pid = self.doomed = self.process.pid
        if in_flight:
            kill(pid)
        else:
            threading.Timer(delay, kill, (pid,)).start()


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it may have finished first
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ray", action="store_true", help="judge on a local Ray cluster")
    args = parser.parse_args()
    with local_head() if args.ray else contextlib.nullcontext() as address:
        run(args, address)


def run(args: argparse.Namespace, ray_address: str | None) -> None:
    rng = random.Random(args.seed)
    samples = marked_samples(args.samples)
    folder = Path(tempfile.mkdtemp(prefix="kill-resume-"))
    data = folder / "data.jsonl"
    write_jsonl(samples, data)

    with FaultServer() as server:
        reference = evaluate(
            samples,
            judge=OpenAIJudge("fault-judge", base_url=server.url),
            embedder=OpenAIEmbedder("fault-embed", base_url=server.url),
            cache=False,
        )
        total = sum(1 for s in server.seen if s.path == CHAT)
        server.clear()
        moments = sorted(rng.sample(range(1, total), args.kills))
        plan = [(n, rng.random() < 0.5, rng.uniform(0.0, 0.02)) for n in moments]
        killer = Killer(plan)
        server.on_request = killer
        env = os.environ | {
            "RAGMETER_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-kill-resume",
            "XDG_CACHE_HOME": str(folder / "cache"),
        }
        command = [
            sys.executable, "-c", "from ragmeter.cli.main import app; app()", "evaluate",
            str(data), "--judge", "openai:fault-judge", "--embedder", "openai:fault-embed",
            "--out", str(folder / "out"), "--no-show-samples",
        ]  # fmt: skip
        if ray_address is not None:
            command += ["--ray", ray_address, "--ray-actors", "2"]
        before: dict[tuple[str, str], str] = {}
        lost = rejudged = kills = runs = 0
        prompts: list[str] = []
        started = time.perf_counter()
        while True:
            runs += 1
            killer.process = subprocess.Popen(
                command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            _, errors = killer.process.communicate(timeout=600)
            code = killer.process.returncode
            now = committed(folder / "out")
            lost += sum(1 for key, payload in before.items() if now.get(key) != payload)
            asked = {(s.item, s.metric) for s in server.seen}
            rejudged += len(asked & before.keys())
            prompts += [s.prompt for s in server.seen if s.path == CHAT]
            server.clear()
            before = now
            if code == 0:
                break
            if code != -signal.SIGKILL:
                raise SystemExit(f"run {runs} failed ({code}): {errors.decode()[-2000:]}")
            kills += 1
        seconds = time.perf_counter() - started

    final = [json.loads(x) for x in (folder / "out" / "scores.jsonl").read_text().splitlines()]
    shutil.rmtree(folder)
    lost += len(reference.scores) - len(before)
    identical = [(s["sample_id"], s["metric"], s["value"], s["explanation"]) for s in final] == [
        (s.sample_id, s.metric, s.value, s.explanation) for s in reference.scores
    ]
    in_flight = sum(1 for _, flying, _ in plan if flying)
    print(
        f"{args.samples} samples x 3 metrics = {len(reference.scores)} items, {total} chat "
        f"calls uninterrupted; seed {args.seed}"
        + (f"; judged on 2 Ray workers at {ray_address}" if ray_address else "")
    )
    print(
        f"kills: {kills} ({in_flight} with a call in flight, {kills - in_flight} just after a "
        f"reply), at chat calls {[n for n, _, _ in plan]}; {runs} runs in {seconds:.1f} s"
    )
    print(f"lost: {lost}")
    print(f"re-judged: {rejudged}")
    print(f"repeated calls: {len(prompts) - len(set(prompts))} of {len(prompts)}")
    print(f"identical to the uninterrupted run: {'yes' if identical else 'NO'}")


if __name__ == "__main__":
    main()
