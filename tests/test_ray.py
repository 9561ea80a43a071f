"""Judging spread over a real Ray cluster: a head node on this machine, started by the tests as a
user starts one, with two workers of the deterministic answering judge.

Every run is compared with the same run in one process: spreading the work must change nothing
but where it runs. Workers are killed for real (SIGKILL of the worker process), and so is the
driver (SIGKILL of ``ragmeter evaluate``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.arena.data import load_answers, load_questions
from ragmeter.arena.designs import design_pairs
from ragmeter.arena.judge import judge_pairs
from ragmeter.budget import Budget, is_pending
from ragmeter.cli.main import app
from ragmeter.criteria import Criterion, CriterionMetric
from ragmeter.data import write_jsonl
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.judges.openai import OpenAIEmbedder, OpenAIJudge
from ragmeter.meta.attribution import Claim, verify_claims
from ragmeter.meta.wikieval import load_wikieval, run_wikieval

from .fault_server import AnsweringJudge, FaultServer, Seen, committed, marked_samples
from .test_arena_claims import PASSAGE, A, B, C, D, E, checker, pair
from .test_arena_cli import EXAMPLE, SYSTEMS, respond
from .test_meta_wikieval import ROW, judge_for_wikieval

ray = pytest.importorskip("ray", reason="needs the 'ray' extra")

from ragmeter.cluster import RayExecutor  # noqa: E402

from .ray_cluster import local_head  # noqa: E402

BASIC = Path(__file__).parent.parent / "examples" / "basic.jsonl"
SAMPLES = marked_samples(12)
ITEMS = len(SAMPLES) * 3


@pytest.fixture(scope="module")
def cluster() -> str:
    with local_head(cpus=4) as address:
        yield address


def outcomes(result) -> list[tuple[str, str, float | None, dict]]:
    return [(s.sample_id, s.metric, s.value, s.explanation) for s in result.scores]


@pytest.fixture(scope="module")
def reference():
    """The same samples judged in this process."""
    return evaluate(SAMPLES, judge=AnsweringJudge(), embedder=HashingEmbedder(), cache=False)


def on_ray(cluster: str, judge=None, **kwargs):
    return evaluate(
        SAMPLES,
        judge=judge or AnsweringJudge(),
        embedder=HashingEmbedder(),
        cache=False,
        executor=RayExecutor(address=cluster, actors=2),
        **kwargs,
    )


def test_scores_on_ray_equal_one_process_and_stream_back(cluster, reference, tmp_path):
    seen = []
    result = on_ray(cluster, out_dir=tmp_path, on_score=seen.append)
    assert outcomes(result) == outcomes(reference)
    assert all(s.scored for s in result.scores)
    assert len(seen) == ITEMS  # each reported to the driver as it came back
    counts = result.run.counts
    assert (counts.judged, counts.resumed, counts.unscored) == (ITEMS, 0, 0)
    assert counts.model_calls == reference.run.counts.model_calls
    executor = json.loads((tmp_path / "run.json").read_text())["parameters"]["executor"]
    assert executor == {"ray": cluster, "actors": 2, "actor_cpus": 1.0, "workers": 1}
    with sqlite3.connect(tmp_path / "scores.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == ITEMS

    again = on_ray(cluster, out_dir=tmp_path)
    assert (again.run.counts.resumed, again.run.counts.judged) == (ITEMS, 0)
    assert again.run.counts.model_calls == 0
    assert outcomes(again) == outcomes(reference)


def test_a_criterion_on_ray_equals_one_process(cluster):
    criterion = CriterionMetric(
        Criterion(name="grounded", question="Does the context say it?"), reading="per_sentence"
    )
    samples = [  # every third answer says nothing its context says
        s if i % 3 else s.model_copy(update={"answer": f"Nobody knows ({s.id})."})
        for i, s in enumerate(SAMPLES)
    ]
    here = evaluate(samples, [criterion], judge=AnsweringJudge(), cache=False)
    there = evaluate(
        samples,
        [criterion],
        judge=AnsweringJudge(),
        cache=False,
        executor=RayExecutor(address=cluster, actors=2),
    )
    assert outcomes(there) == outcomes(here)
    assert len({s.value for s in here.scores}) == 2


class DyingJudge(AnsweringJudge):
    """Kills its own worker process (SIGKILL, as the kernel's OOM killer would) when asked
    about ``item``: once, the first time (``marker`` records it), or every time."""

    def __init__(self, item: str, marker: Path, every_time: bool = False) -> None:
        super().__init__()
        self.item, self.marker, self.every_time = item, marker, every_time

    def complete(self, request: ChatRequest) -> ChatResponse:
        if self.item in request.messages[-1].content:
            deaths = int(self.marker.read_text()) if self.marker.exists() else 0
            if self.every_time or deaths == 0:
                self.marker.write_text(str(deaths + 1))
                os.kill(os.getpid(), signal.SIGKILL)
        return super().complete(request)


def test_a_killed_worker_has_its_items_judged_by_another(cluster, reference, tmp_path):
    marker = tmp_path / "deaths"
    result = on_ray(cluster, judge=DyingJudge("item-0005", marker), out_dir=tmp_path / "out")
    assert marker.read_text() == "1"  # a worker did die mid-item
    assert outcomes(result) == outcomes(reference)
    assert result.run.counts.judged == ITEMS


def test_an_item_that_kills_every_worker_is_unscored_with_the_reason(cluster, tmp_path):
    marker = tmp_path / "deaths"
    judge = DyingJudge("item-0003", marker, every_time=True)
    result = on_ray(cluster, judge=judge, metrics=["answer_relevance"])
    assert marker.read_text() == "3"
    lost = [s for s in result.scores if not s.scored]
    assert [s.sample_id for s in lost] == ["item-0003"]
    assert lost[0].unscored_reason.startswith("the Ray worker judging it died 3 times")
    assert not is_pending(lost[0])  # a failure, not an item the budget left for later
    assert result.run.counts.internal_errors == 1
    assert sum(s.scored for s in result.scores) == len(SAMPLES) - 1


def test_the_budget_is_shared_by_every_worker(cluster, reference, tmp_path):
    with pytest.warns(UserWarning, match="stopped at the budget"):
        stopped = on_ray(cluster, out_dir=tmp_path, budget=Budget(max_calls=20))
    assert stopped.run.status == "stopped"
    assert stopped.run.budget["calls"] == 20
    assert stopped.run.counts.model_calls == 20  # what the workers made, all together
    saved = [s for s in stopped.scores if s.scored]
    assert saved and stopped.run.counts.pending == ITEMS - len(saved)
    resumed = on_ray(cluster, out_dir=tmp_path)
    assert resumed.run.counts.resumed == len(saved)
    assert outcomes(resumed) == outcomes(reference)


def test_arena_judging_on_ray_equals_one_process(cluster, tmp_path):
    answers = [load_answers(EXAMPLE / "answers" / f"{s}.jsonl") for s in SYSTEMS]
    pairs = design_pairs(load_questions(EXAMPLE / "questions.jsonl"), answers, "reference").pairs
    judge = FakeJudge(responder=respond, model="example-quality")
    here = judge_pairs(pairs, judge=judge, out_dir=tmp_path / "here", cache=False)
    spread = judge_pairs(
        pairs,
        judge=judge,
        out_dir=tmp_path / "ray",
        cache=False,
        executor=RayExecutor(address=cluster, actors=2),
    )
    fields = ("pair_id", "verdict", "flipped", "unscored_reason")
    assert [[getattr(b, f) for f in fields] for b in spread] == [
        [getattr(b, f) for f in fields] for b in here
    ]
    assert len(here) == len(pairs) and all(b.scored for b in spread)
    run = json.loads((tmp_path / "ray" / "arena_run.json").read_text())
    assert run["executor"]["actors"] == 2 and run["scored"] == len(pairs)


def test_arena_claims_method_on_ray_equals_one_process(cluster, tmp_path):
    pairs = [pair("ab", A, B), pair("ca", C, A), pair("de", D, E, [PASSAGE])]
    claims = {"judge": checker(0.0), "method": "claims", "cache": False}
    here = judge_pairs(pairs, out_dir=tmp_path / "here", **claims)
    spread = judge_pairs(
        pairs, out_dir=tmp_path / "ray", executor=RayExecutor(address=cluster, actors=2), **claims
    )
    assert [(b.pair_id, b.verdict, b.claims) for b in spread] == [
        (b.pair_id, b.verdict, b.claims) for b in here
    ]
    assert [b.verdict for b in spread] == [0, 1, -1]
    # A is in two pairs and checked once: 4 + 3 + 3 + 6 + 6 checks, as in one process.
    run = json.loads((tmp_path / "ray" / "arena_run.json").read_text())
    assert run["usage_this_run"]["model_calls"] == 22 and run["method"] == "claims"


def test_meta_wikieval_on_ray_equals_one_process(cluster, tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW | {"id": 8}) + "\n")
    pairs = load_wikieval(path)
    judge = FakeJudge(responder=judge_for_wikieval)
    common = {"embedder": HashingEmbedder(), "cache": False}
    here = run_wikieval(pairs, judge=judge, out_dir=tmp_path / "here", **common)
    spread = run_wikieval(
        pairs,
        judge=judge,
        out_dir=tmp_path / "ray",
        executor=RayExecutor(address=cluster, actors=2),
        **common,
    )
    assert [a.model_dump() for a in spread.agreements] == [a.model_dump() for a in here.agreements]
    assert {a.method for a in spread.agreements} == {"ragmeter", "GPT Score", "GPT Ranking"}
    assert spread.outcomes == here.outcomes


def test_attribution_on_ray_equals_one_process(cluster, tmp_path):
    claims = [
        Claim(
            id=str(i),
            question=f"q {i}",
            claim=f"City {i} has an old bridge.",
            references=[f"City {i} has an old {'bridge' if i % 3 else 'castle'}."],
            label=bool(i % 3),
        )
        for i in range(12)
    ]
    here = verify_claims(claims, AnsweringJudge(), out_dir=tmp_path / "here", cache=False)
    seen = []
    spread = verify_claims(
        claims,
        AnsweringJudge(),
        out_dir=tmp_path / "ray",
        cache=False,
        on_verdict=seen.append,
        executor=RayExecutor(address=cluster, actors=2),
    )

    # the same verdicts, each with the time its own judging took
    def timeless(verdicts):
        return [v.model_copy(update={"seconds": 0.0}) for v in verdicts]

    assert timeless(spread) == timeless(here) and len(seen) == len(claims)
    # Word overlap of "In answer to the question 'q 3': City 3 has an old bridge." with the
    # reference: "city" and "bridge" of its 4 words of 4 letters or more, or "city" alone.
    assert {v.p_supported for v in here} == {0.5, 0.25}
    # The same judge by identity, with no reply to give: only what the driver committed serves.
    silent = FakeJudge(model="answering")
    again = verify_claims(claims, silent, out_dir=tmp_path / "ray", cache=False)
    assert again == spread  # read back with the times they were judged in


def test_a_judge_that_cannot_travel_is_named(cluster):
    class Unpicklable(AnsweringJudge):
        def __init__(self) -> None:
            super().__init__()
            self.lock = threading.Lock()

    with pytest.raises(ValueError, match=r"cannot be sent to Ray workers.*by spec"):
        on_ray(cluster, judge=Unpicklable())


# --- the command line, and a killed driver ------------------------------------------------------


def test_ray_actors_needs_ray():
    result = CliRunner().invoke(app, ["evaluate", str(BASIC), "--ray-actors", "2"])
    assert result.exit_code == 2 and "--ray-actors needs --ray" in result.output


def test_arena_and_meta_commands_judge_on_ray(cluster, tmp_path):
    """The commands' wiring: every worker builds the judge from the spec. A script of one
    reply repeated answers alike in any order, so it can be split between workers: the judge
    always prefers the answer it reads first, so every pair flips to a tie, and every claim
    is supported."""
    script = tmp_path / "first.jsonl"
    reply = json.dumps('{"reasoning": "r", "rating": 1}')
    script.write_text("".join(reply + "\n" for _ in range(400)))
    ray_args = ["--ray", cluster, "--ray-actors", "2", "--no-cache"]
    answers = [a for s in SYSTEMS for a in ("--answers", str(EXAMPLE / "answers" / f"{s}.jsonl"))]
    out = tmp_path / "arena"
    arena = CliRunner().invoke(
        app,
        ["arena", "judge", str(EXAMPLE / "questions.jsonl"), *answers, "--judge",
         f"fake:{script}", "--out", str(out), "--rounds", "50", *ray_args],
    )  # fmt: skip
    assert arena.exit_code == 0, arena.output
    battles = [json.loads(line) for line in (out / "battles.jsonl").read_text().splitlines()]
    assert battles and all(b["verdict"] == 0 and b["flipped"] for b in battles)
    assert json.loads((out / "arena_run.json").read_text())["executor"]["actors"] == 2

    yes = tmp_path / "yes.jsonl"
    yes.write_text("".join(json.dumps("Yes") + "\n" for _ in range(100)))
    claims = tmp_path / "claims.jsonl"
    rows = [
        {"id": str(i), "question": "q", "claim": f"c {i}", "references": ["r"],
         "attribution_label": "attributable"}
        for i in range(6)
    ]  # fmt: skip
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = CliRunner().invoke(
        app,
        ["meta", "attribution", str(claims), "--judge", f"fake:{yes}",
         "--out", str(tmp_path / "meta"), *ray_args],
    )  # fmt: skip
    assert meta.exit_code == 0, meta.output
    verdicts = (tmp_path / "meta" / "verdicts.jsonl").read_text().splitlines()
    assert [json.loads(v)["p_supported"] for v in verdicts] == [1.0] * 6


def test_killing_the_driver_loses_nothing_and_judges_nothing_twice(cluster, tmp_path):
    """``ragmeter evaluate --ray`` killed twice mid-run, then run to the end: every item
    committed before a kill is there after it, unchanged, and gets no further request. The
    workers reach the server the driver was pointed at (its variables travel with the recipe)."""
    data = tmp_path / "data.jsonl"
    write_jsonl(SAMPLES, data)
    out = tmp_path / "out"
    with FaultServer() as server:
        reference = evaluate(
            SAMPLES,
            judge=OpenAIJudge("fault", base_url=server.url),
            embedder=OpenAIEmbedder("fault", base_url=server.url),
            cache=False,
        )
        server.clear()
        command = [
            sys.executable, "-c", "from ragmeter.cli.main import app; app()", "evaluate",
            str(data), "--judge", "openai:fault", "--embedder", "openai:fault", "--no-cache",
            "--out", str(out), "--no-show-samples", "--ray", cluster, "--ray-actors", "2",
        ]  # fmt: skip
        env = os.environ | {"RAGMETER_BASE_URL": server.url, "OPENAI_API_KEY": "sk-ray-test"}
        saved: dict[tuple[str, str], str] = {}
        lost, rejudged = [], set()
        for kill_at in (20, 25, None):  # chat requests into the run; None: let it finish
            driver = subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            server.on_request = _killer(driver, kill_at)
            output = driver.communicate(timeout=300)[0].decode()
            assert driver.returncode == (0 if kill_at is None else -signal.SIGKILL), output
            now = committed(out)
            lost += [key for key, payload in saved.items() if now.get(key) != payload]
            rejudged |= {(s.item, s.metric) for s in server.seen} & saved.keys()
            assert len(now) > len(saved), "nothing was committed between two kills"
            saved = now
            server.clear()
    assert (lost, rejudged) == ([], set())
    assert len(saved) == ITEMS
    final = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [(s["sample_id"], s["metric"], s["value"]) for s in final] == [
        (s.sample_id, s.metric, s.value) for s in reference.scores
    ]


def _killer(driver: subprocess.Popen[bytes], at: int | None):
    chat = [0]

    def on_request(seen: Seen) -> None:
        if seen.path.endswith("/chat/completions") and at is not None:
            chat[0] += 1
            if chat[0] == at:
                os.kill(driver.pid, signal.SIGKILL)

    return on_request


def test_the_ray_bench_scores_on_the_cluster_as_in_one_process(cluster, capsys, monkeypatch):
    """``bench/bench_ray.py`` on this module's head node (its own command starts one): each
    run's scores are read while its folder exists and equal a run in one process."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent.parent / "bench"))
    bench_ray = importlib.import_module("bench_ray")
    bench_ray.run(argparse.Namespace(items=6, latency=0.0, actors="1", workers=2), cluster)
    out = capsys.readouterr().out
    assert out.startswith("6 items (2 samples x 3 metrics), ")
    [row] = [line.split() for line in out.splitlines() if line.lstrip().startswith("1 ")]
    assert row[0] == "1" and row[-1] == "yes"
