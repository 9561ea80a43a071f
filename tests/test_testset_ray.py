"""``generate`` spread over a real Ray cluster (a head node started here, as ``test_ray`` starts
one): two workers, each with its own scripted judge, must write the set a run in one process
writes with the same batch (two candidates at once), ask the judge as often, share one budget,
and on a rerun ask nothing.

The workers' judges live in other processes, so each writes a line per request to a file: the
count over every worker."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder

from .test_testset import ONE_ACCEPTED, _generate, reader
from .test_testset_personas import facts_folder

ray = pytest.importorskip("ray", reason="needs the 'ray' extra")

from ragmeter.cluster import WORKER_DIED, ModelRecipe, RayExecutor  # noqa: E402

from .ray_cluster import local_head  # noqa: E402

MIX = "specific=1,multi_hop=1,follow_up=1,unanswerable=1"
PERSONA = "A mineral collector who wants to know where rare stones come from and what they do."


@dataclass
class Logged:
    """The scripted reader of ``test_testset``, writing ``PERSONA`` when asked for personas,
    and a line to ``calls`` for every request (from whichever process it runs in)."""

    calls: Path | None = None

    def __call__(self, request: ChatRequest) -> str | ChatResponse:
        if self.calls is not None:
            with self.calls.open("a") as log:
                log.write(request.messages[0].content[:40].replace("\n", " ") + "\n")
        if "describe the people" in request.messages[0].content:
            return json.dumps({"personas": [PERSONA]})
        return reader(request)


def asked(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


@pytest.fixture(scope="module")
def cluster() -> str:
    with local_head(cpus=2) as address:
        yield address


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return facts_folder(tmp_path)


def on_ray(cluster: str, docs: Path, out: Path, calls: Path, **kwargs):
    judge = FakeJudge(responder=Logged(calls), model="reader")
    return _generate(
        docs, 4, out, judge, mix=MIX, executor=RayExecutor(address=cluster, actors=2), **kwargs
    )


def test_ray_writes_the_set_of_a_thread_run_and_a_rerun_asks_nothing(cluster, docs, tmp_path):
    here = FakeJudge(responder=Logged(), model="reader")
    threads = _generate(
        docs, 4, tmp_path / "threads.jsonl", here, mix=MIX, styles="full=1,misspelt=1",
        workers=2, derive_personas=1,
    )  # fmt: skip
    calls, out = tmp_path / "calls.log", tmp_path / "ray.jsonl"
    spread = on_ray(cluster, docs, out, calls, styles="full=1,misspelt=1", derive_personas=1)
    assert spread.samples == threads.samples  # ids, questions, references, sources, checks
    fields = ("status", "reason", "detail", "kind", "style", "persona", "question")
    assert [{f: r[f] for f in fields} for r in spread.rejected] == [
        {f: r[f] for f in fields} for r in threads.rejected
    ]
    mine, theirs = spread.summary, threads.summary
    # One of each kind accepted at its first candidate: the scripted judge checks the
    # references' claims, which a typo in the question does not touch.
    assert (mine.accepted, mine.candidates, mine.rejected) == (4, 4, {})
    assert (mine.candidates, mine.rejected, mine.kinds) == (
        theirs.candidates,
        theirs.rejected,
        theirs.kinds,
    )
    assert mine.derived_personas.personas == theirs.derived_personas.personas == [PERSONA]
    assert asked(calls) == len(here.history) == mine.usage.model_calls
    assert mine.settings["executor"] == {
        "ray": cluster,
        "actors": 2,
        "actor_cpus": 1.0,
        "workers": 1,
    }
    logged = out.with_name("ray.candidates.jsonl").read_text().splitlines()
    assert len(logged) == mine.candidates  # written by this process, one line each

    before = asked(calls)
    again = on_ray(cluster, docs, out, calls, styles="full=1,misspelt=1", derive_personas=1)
    assert asked(calls) == before  # no worker was asked anything
    assert again.summary.resumed == again.summary.candidates == mine.candidates
    assert again.summary.derived_personas.resumed
    assert again.samples == spread.samples


def test_every_worker_draws_on_one_budget(cluster, docs, tmp_path):
    calls = tmp_path / "calls.log"
    stopped = on_ray(cluster, docs, tmp_path / "ts.jsonl", calls, max_calls=8).summary
    # Two candidates judged at once want 6 calls or more each; the one budget lets 8 through
    # in all (a budget per worker would let 12).
    assert asked(calls) == 8
    assert stopped.status == "stopped"


@dataclass
class Dying:
    """The scripted reader, but asked anything about Brastone it kills its worker (SIGKILL,
    as the kernel's OOM killer would), counting the deaths in ``marker``."""

    marker: Path

    def __call__(self, request: ChatRequest) -> str | ChatResponse:
        if "Brastone" in request.messages[-1].content:
            deaths = int(self.marker.read_text()) if self.marker.exists() else 0
            self.marker.write_text(str(deaths + 1))
            os.kill(os.getpid(), signal.SIGKILL)
        return reader(request)


def test_a_candidate_that_kills_every_worker_is_rejected_and_left_for_a_rerun(
    cluster, docs, tmp_path
):
    marker, out = tmp_path / "deaths", tmp_path / "ts.jsonl"
    judge = FakeJudge(responder=Dying(marker), model="reader")
    generated = _generate(
        docs, 3, out, judge, mix="specific=1", executor=RayExecutor(address=cluster, actors=2),
        max_candidates=3,  # the three chunks' first facts; their second ones could fill N
    )  # fmt: skip
    assert marker.read_text() == "3"  # sent to a fresh worker twice, then given up
    [lost] = generated.rejected
    assert (lost["reason"], lost["sources"][0]["document"]) == (WORKER_DIED, "brastone.html")
    assert lost["detail"].startswith("the Ray worker judging it died 3 times")
    summary = generated.summary
    assert (summary.status, summary.accepted, summary.candidates) == ("short", 2, 3)
    logged = [json.loads(line) for line in out.with_name("ts.candidates.jsonl").open()]
    # Logged as they came back (in either order), the lost one left out.
    assert sorted(r["sources"][0]["document"] for r in logged) == ["quellite.txt", "zorbium.md"]


def test_the_command_judges_on_the_ray_workers_it_is_given(cluster, docs, tmp_path):
    script = tmp_path / "script.jsonl"  # each worker replays it: one candidate, accepted
    script.write_text("".join(json.dumps(r) + "\n" for r in ONE_ACCEPTED))
    out = tmp_path / "ts.jsonl"
    command = ["generate", str(docs / "zorbium.md"), "--n", "1", "--mix", "specific=1"]
    command += ["--judge", f"fake:{script}", "--embedder", "fake", "--no-entities", "--no-cache"]
    command += ["--out", str(out), "--ray", cluster, "--ray-actors", "1"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["question"] == "Where was Zorbium first found?"
    executor = json.loads(out.with_name("ts.summary.json").read_text())["settings"]["executor"]
    assert executor == {"ray": cluster, "actors": 1, "actor_cpus": 1.0, "workers": 1}

    alone = CliRunner().invoke(app, [*command[:-4], "--ray-actors", "2"])
    assert alone.exit_code == 2 and "--ray-actors needs --ray ADDRESS" in alone.output


@dataclass(frozen=True)
class Begun:
    """A job that writes a line to ``begun`` whenever a worker makes it from its models."""

    begun: Path

    def __call__(self, judge: object, embedder: object) -> Callable[[int], int]:
        with self.begun.open("a") as log:
            log.write("begun\n")
        return lambda x: 2 * x


def test_a_job_mapped_batch_after_batch_is_sent_and_begun_once(cluster, tmp_path):
    recipe = ModelRecipe(FakeJudge(model="idle"), HashingEmbedder(), cache=False)
    begun = tmp_path / "begun"
    job = Begun(begun)
    with RayExecutor(address=cluster, actors=2).open(recipe) as pool:
        first, second = sorted(pool.map(job, [(1,), (2,)])), list(pool.map(job, [(3,)]))
        assert (first, second) == ([(0, 2), (1, 4)], [(0, 6)])
        assert asked(begun) == 2  # once on each worker, not once a batch
        assert list(pool.map(Begun(begun), [(4,)])) == [(0, 8)]
        assert asked(begun) == 4  # another job is begun on each worker
