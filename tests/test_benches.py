"""Every benchmark the documentation quotes, run on the scripted judge and small data, so that
none breaks unseen: each is run as its command runs (``bench/NAME.py ARGS``, in this process) or,
where the real thing needs what no test has (the offline model, ragas), through its own functions
with stand-ins, and a figure it prints or writes is checked against one worked out by hand.

The judge is named on each bench's command line as ``bench:SCRIPT``, a provider registered for
these tests through the real registry (``scripted`` below). Samples are written here or read
from ``tests/data``; the human-rated sets of ``../shared/data`` are read in place where a bench
is about them, and those tests skip without them.

Two run beside what they measure: ``bench_criteria.py`` in ``tests/test_criteria.py`` and
``bench_context_screen.py`` in ``tests/test_context_screen.py``.

Left out here, each for its reason:

- ``bench_ray.py`` runs in ``tests/test_ray.py``, on that module's Ray head node (a head of its
  own costs 20 s); ``kill_resume.py --ray`` is the run below with a Ray address, and killing a
  Ray driver is ``test_ray``'s ``test_killing_the_driver_loses_nothing_and_judges_nothing_twice``.
- ``bench_server.py``: both of its sides are the real offline judge, in this process and behind
  llama-cpp-python's server (the marked ``local_model`` tests start that server).
- ``bench_traces.py --phoenix URL`` needs a running Phoenix server; without it, as below, the
  traces are an OTLP file.
- ``ragas_peer.py`` and ``ragas_testset_peer.py`` run only in ragas 0.4.3's own virtualenv
  (``bench/ragas_peer.requirements.txt``); ragas is never installed beside ragmeter, so their
  test skips. What their drivers read from them is checked through stand-ins that print the
  same records (``bench_vs_ragas``, ``bench_testset_vs_ragas``).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import runpy
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter import plugins
from ragmeter.arena.agreement import measure_agreement
from ragmeter.attribution.benchmark import load_benchmark
from ragmeter.claims import SUPPORTED
from ragmeter.cli.main import app
from ragmeter.heads import curve as curve_module
from ragmeter.heads.curve import bought
from ragmeter.heads.fitting import Design, Verdicts
from ragmeter.heads.verifier import TRAINING_FILE, LabelledClaims, Recipe, TrainingSet
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.judges.heads import Heads
from ragmeter.meta.attribution import load_attribution, statement_for, verify_claims

from .conftest import routed, yes_no
from .fault_server import AnsweringJudge
from .test_attribution_experiments import ADA, BRAM
from .test_attribution_experiments import respond as kalma_reply
from .test_evaluate import REPLIES, SAMPLES
from .test_testset import reader

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SHARED = ROOT.parent / "shared" / "data"
HARBOUR = ROOT / "tests" / "data" / "harbour"


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the shared development data)")
    return path


# --- the scripted judges, by name ----------------------------------------------------------------


def answering(request: ChatRequest) -> ChatResponse:
    """Every metric prompt answered from the request by word overlap (``fault_server``)."""
    return AnsweringJudge().complete(request)


def routed_or_floor(request: ChatRequest) -> str | ChatResponse:
    """``REPLIES`` by prompt; bench_core's floor (one user message, no instruction) P 0.5."""
    if request.messages[0].role == "user":
        return yes_no(0.5)
    return routed(REPLIES)(request)


LABELS: dict[str, bool] = {}
"""People's label of each claim by its words run together (``_letters``), for the ``labels``
and ``learning`` scripts (set by the test that uses them)."""
STATE_NAMES = ("l_out-8", "l_out-12", "l_out-16", "l_out-20", "l_out-24", "result_norm")


def _letters(text: str) -> str:
    """The text's words run together: what a prompt keeps of it, whatever tags it escaped."""
    return "".join(re.findall(r"\w+", text))


def _statement(request: ChatRequest) -> str:
    return request.messages[-1].content.split("<statement>\n", 1)[1].split("\n</statement>")[0]


def labelled(request: ChatRequest, states: tuple[str, ...] = STATE_NAMES) -> ChatResponse:
    """A verifier that cannot tell (P(Yes) 0.5) but whose hidden ``states`` hold people's
    label: the first number of each is +1 for a supported claim and -1 for another (the
    statement shown is the claim as ``meta attribution`` shows it)."""
    statement = _statement(request)
    state = [1.0 if LABELS[_letters(statement)] else -1.0, (len(statement) % 7) / 100]
    return yes_no(0.5, dict.fromkeys(states, state))


class Killed(BaseException):
    """The process reading claims killed mid-block: nothing in the bench may catch it."""


KILL_AT: list[int] = []
"""The call at which the ``learning`` judge is killed (empty: never; set by its test)."""


def learning(request: ChatRequest) -> ChatResponse:
    """A verifier that cannot tell (P(Yes) 0.5) whose hidden state ``l_out-16`` holds people's
    label: (+1, 0) for a supported claim, (-1, 0) for another; killed at call ``KILL_AT``."""
    if KILL_AT and len(MADE[-1].history) >= KILL_AT[0]:
        raise Killed
    label = LABELS[_letters(_statement(request))]
    return yes_no(0.5, {"l_out-16": [1.0 if label else -1.0, 0.0]})


def _tagged(request: ChatRequest, tag: str) -> str:
    return request.messages[-1].content.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def longer(request: ChatRequest) -> str:
    """The arena's pairwise judge preferring the longer answer, in either order."""
    first, second = _tagged(request, "answer 1"), _tagged(request, "answer 2")
    rating = 1 if len(first.split()) > len(second.split()) else 2
    return json.dumps({"reasoning": "The longer one.", "rating": rating})


def knowing(request: ChatRequest) -> ChatResponse:
    """A verifier that knows: P(Yes) 0.8 for a statement that says it holds, else 0.3."""
    return yes_no(0.8 if "holds" in _statement(request) else 0.3)


SCRIPTS: dict[str, Callable[[ChatRequest], str | ChatResponse]] = {
    "routed": routed_or_floor,
    "answering": answering,
    "labels": labelled,
    "learning": learning,
    "reader": reader,
    "kalma": kalma_reply,
    "longer": longer,
    "knowing": knowing,
}
MADE: list[FakeJudge] = []
"""Every judge ``scripted`` made, last last: their ``history`` is what reached the model."""


def scripted(model: str = "", states: str = "", **_options: object) -> FakeJudge:
    """``bench:SCRIPT``: a judge that replies by ``SCRIPTS[SCRIPT]``. ``states`` names the hidden
    states ``labels`` shows, as the local judge's option of that name does."""
    respond = SCRIPTS[model]
    if model == "labels" and states:
        respond = partial(labelled, states=tuple(states.split(",")))
    judge = FakeJudge(responder=respond, model=f"bench-{model}")
    MADE.append(judge)
    return judge


# --- running a bench ---------------------------------------------------------------------------


@pytest.fixture
def bench(tmp_path, monkeypatch, capsys, no_user_cache) -> Callable[..., str]:
    """Run ``bench/NAME.py ARGS`` as its command does, in this process; what it printed. Its
    scratch folders are under the test's own."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.syspath_prepend(str(BENCH))  # as for a script: its folder first
    monkeypatch.setitem(plugins.BUILTINS["judge"], "bench", f"{__name__}:scripted")
    MADE.clear()

    def run(name: str, *args: object) -> str:
        monkeypatch.setattr(sys, "argv", [str(BENCH / f"{name}.py"), *map(str, args)])
        capsys.readouterr()
        runpy.run_path(str(BENCH / f"{name}.py"), run_name="__main__")
        return capsys.readouterr().out

    return run


def module(name: str) -> Any:
    """A bench's functions (its folder is on the path: ``bench`` fixture)."""
    return importlib.import_module(name)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def table_rows(output: str, pattern: str) -> list[tuple[str, ...]]:
    return [m.groups() for m in re.finditer(pattern, output, re.MULTILINE)]


# --- the RAGAS metrics: time, calls, the cached rerun ------------------------------------------


def test_bench_core_times_each_metric_and_its_cached_rerun_asks_nothing(bench, tmp_path):
    data = write_jsonl(tmp_path / "samples.jsonl", [s.model_dump() for s in SAMPLES])
    out = bench("bench_core", "--judge", "bench:routed", "--embedder", "fake", "--data", data)
    # Per sample (test_evaluate): faithfulness asks about its one answer sentence; answer
    # relevance whether the answer commits, then whether it is complete; context relevance
    # about each of the two context sentences.
    calls = table_rows(out, r"^([ab])\s+(\w+)\s+[\d.]+\s+(\d+)\s+\d+\s+\d+$")
    assert calls == [
        (sample, metric, n)
        for sample in "ab"
        for metric, n in (("faithfulness", "1"), ("answer_relevance", "2"),
                          ("context_relevance", "2"))
    ]  # fmt: skip
    assert "; 0 unscored" in out
    assert "cached rerun: 0 model calls, 10 cached," in out and "identical scores: True" in out
    # A floor request per sample, then the 10 calls of the first run; the rerun asks nothing.
    assert len(MADE[-1].history) == 2 + 10


def test_bench_core_on_wikieval_reads_its_scores_while_the_runs_exist(bench):
    """The documented command, which once stopped at the first run's scores, read from a
    results folder already removed."""
    wikieval = shared("wikieval", "wikieval_dev.jsonl")
    out = bench(
        "bench_core", "--wikieval", wikieval, "--limit", "2", "--judge", "bench:answering",
        "--embedder", "fake",
    )  # fmt: skip
    first = sum(int(n) for (n,) in table_rows(out, r"^\S+\s+\w+\s+[\d.]+\s+(\d+)\s+\d+\s+\d+$"))
    assert "judge fake:bench-answering, embedder" in out and ", 2 samples" in out
    assert f"cached rerun: 0 model calls, {first} cached," in out
    assert "identical scores: True" in out
    assert len(MADE[-1].history) == 2 + first  # the two floors, then the first run's calls


# --- reliability: long runs, faults, storage, kills, overhead ----------------------------------


def test_bench_soak_reports_each_stretch_and_the_rerun_judges_nothing(bench):
    out = bench("bench_soak", "--samples", "6", "--every", "3")
    stretches = table_rows(out, r"^\s+(\d+) samples\s+[\d.]+ items/s")
    assert stretches == [("3",), ("6",)]
    assert re.search(r"done in [\d.]+ s: 18 scored, 0 unscored, \d+ model calls, 0 cached", out)
    assert "rerun on the same folder: 18 resumed, 0 judged" in out


def test_bench_traces_reads_judges_and_writes_back_every_verdict(bench):
    out = bench("bench_traces", "--traces", "4")
    assert "4 traces (an OTLP file, no server), 3 metrics, scripted judge" in out
    assert re.search(r"write\s+[\d.]+ s\s+\(12 verdicts\)", out)  # 4 traces x 3 metrics
    assert "overhead (read + write) / judge = " in out


def test_bench_overhead_times_the_same_work_in_each_set_up(bench):
    out = bench("bench_overhead", "--samples", "2", "--repeat", "1")
    rows = table_rows(out, r"^(in-process|in-process \+ call cache|http \(client \+ server\))"
                           r"\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+$")  # fmt: skip
    assert [name for name, _, _ in rows] == [
        "in-process", "in-process + call cache", "http (client + server)"
    ]  # fmt: skip
    assert {(items, calls) for _, items, calls in rows} == {("6", rows[0][2])}  # 2 x 3 items
    assert set(json.loads(out.strip().splitlines()[-1])) == {name for name, _, _ in rows}


def test_bench_concurrency_keeps_as_many_requests_in_flight_as_workers(bench):
    out = bench("bench_concurrency", "--latency", "0.01", "--samples", "2", "--workers", "1,2")
    rows = table_rows(out, r"^workers\s+(\d+):.* (\d+) requests, at most (\d+) judge requests "
                           r"at once\).*unscored (\d+)$")  # fmt: skip
    assert [(w, most, unscored) for w, _, most, unscored in rows] == [
        ("1", "1", "0"), ("2", rows[1][2], "0")
    ]  # fmt: skip
    assert int(rows[1][2]) <= 2 and rows[0][1] == rows[1][1]  # the same requests either way


def test_bench_faults_loses_nothing_and_scores_as_a_clean_run(bench):
    out = bench("bench_faults", "--samples", "3", "--rate", "0.2", "--workers", "2")
    assert "3 samples x 3 metrics = 9 items, 2 workers, fault rate 20%" in out
    assert "lost: 0 (stored 9 of 9); scored 9, unscored 0" in out
    assert table_rows(out, r"^  (\w+): (\d+) of (\d+) scored items identical") == [
        (metric, "3", "3") for metric in ("faithfulness", "answer_relevance", "context_relevance")
    ]


def test_bench_storage_loses_no_score_and_serves_no_wrong_one(bench):
    out = bench("bench_storage", "--samples", "3")
    assert "3 samples x 3 metrics = 9 items, scripted judge" in out
    cases = table_rows(out, r"lost (\d+), wrong served (\d+), .*rerun complete (\w+)")
    skipped = out.count(": skipped (")
    assert len(cases) + skipped == 11 and len(cases) >= 8  # the full-disk cases need root
    assert set(cases) == {("0", "0", "True")}
    assert out.strip().endswith("total: lost 0, wrong served 0")


def test_kill_resume_loses_nothing_and_ends_as_an_uninterrupted_run(bench):
    out = bench("kill_resume", "--samples", "2", "--kills", "1")
    assert re.search(r"^kills: 1 \(", out, re.MULTILINE)
    assert "lost: 0\n" in out and "re-judged: 0\n" in out
    assert "identical to the uninterrupted run: yes" in out


def test_bench_bradley_terry_recovers_the_generating_order(bench):
    out = bench("bench_bradley_terry", "--battles", "2000", "--systems", "4", "--rounds", "20")
    assert "true order recovered exactly: True" in out
    fitted = table_rows(out, r"^(system-\d\d)\s+(\d+)\s+[\d.]+")
    # Elo gaps of 40 between neighbours around 1000, strongest first.
    assert fitted == [("system-00", "1060"), ("system-01", "1020"), ("system-02", "980"),
                      ("system-03", "940")]  # fmt: skip


# --- the reference metrics ---------------------------------------------------------------------


def test_bench_reference_asks_no_check_twice(bench):
    ragchecker = shared("ragchecker", "ragchecker_dev.jsonl")
    mtrag = shared("mtrag", "mtrag_dev.jsonl")
    out = bench(
        "bench_reference", "--judge", "bench:answering", "--ragchecker", ragchecker,
        "--mtrag", mtrag, "--limit", "1",
    )  # fmt: skip
    assert "RAGChecker: 1 instances, metrics answer_correctness" in out  # its two answers
    assert "MTRAG: 1 answers, metrics " in out
    reached = [int(n) for (n,) in table_rows(out, r"requests that reached the model (\d+)")]
    assert table_rows(out, r"asked twice (\d+)") == [("0",), ("0",)]
    assert table_rows(out, r"^  unscored (\d+)$") == [("0",), ("0",)]
    assert sum(reached) == len(MADE[-1].history) > 0


# --- the arena ---------------------------------------------------------------------------------


def counted_calls(monkeypatch) -> list[ChatRequest]:
    """Every request any scripted judge receives from now on, also those a bench makes its
    own judge for."""
    asked: list[ChatRequest] = []
    complete = FakeJudge.complete

    def counting(self: FakeJudge, request: ChatRequest) -> ChatResponse:
        asked.append(request)
        return complete(self, request)

    monkeypatch.setattr(FakeJudge, "complete", counting)
    return asked


def test_bench_length_control_pads_the_answers_and_resumes(bench, tmp_path, monkeypatch):
    shared("ragchecker", "ragchecker_dev.jsonl")
    asked = counted_calls(monkeypatch)
    out_dir = tmp_path / "lc"
    args = ("--limit", "4", "--rounds", "20", "--out", out_dir)
    out = bench("bench_length_control", *args)
    assert "4 pairs and 4 padded ones judged by fake (both orders, combined by agree)" in out
    assert len(asked) == 8 * 2  # eight pairs, each in both orders
    report = json.loads((out_dir / "length_control_bench.json").read_text())
    assert (report["pairs"], report["padded_pairs"], report["unscored"]) == (4, 4, 0)
    [system] = report["systems"]
    assert system["words_after"] >= 2 * system["words_before"]  # padded to twice the words
    again = bench("bench_length_control", *args)
    assert len(asked) == 16  # every judgement from the folder
    rerun = json.loads((out_dir / "length_control_bench.json").read_text())
    assert rerun["systems"] == report["systems"]
    assert again.splitlines()[1:] == out.splitlines()[1:]


# Six labelled pairs (-1: people preferred A); the longer answer is A in pairs 0, 1 and 4.
ARENA_PAIRS = [
    ("one two three", "one", -1),
    ("one two three four", "one two", -1),
    ("one", "one two three", 1),
    ("one two", "one two three four", 1),
    ("one two three", "one two", 1),
    ("one two", "one two three", -1),
]


def test_arena_kappa_ci_measures_each_rule_beside_the_longer_answer(bench, tmp_path):
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": f"p{n}", "question": f"question {n}", "answer_a": a, "answer_b": b,
         "overall_preference": label}
        for n, (a, b, label) in enumerate(ARENA_PAIRS)
    ])  # fmt: skip
    judge = FakeJudge(responder=longer)
    measure_agreement(pairs, judge=judge, out_dir=tmp_path / "run", cache=False)
    assert len(judge.history) == 12  # both orders of each pair
    out = bench("arena_kappa_ci", tmp_path / "run", pairs, "--rounds", "50")
    assert "6 labelled rows, 6 distinct pairs, 50 rounds" in out
    # Longer answer: A, A, B, B, A, B; people: A, A, B, B, B, A. Agreement 4/6, chance
    # (3 x 3 + 3 x 3) / 36 = 1/2: kappa (4/6 - 1/2) / (1/2) = 1/3. Every rule picks as the
    # longer answer does, in each order: the same kappa, and no difference in any draw.
    kappas = table_rows(out, r"^(agree|sum|confidence|longer answer)\s+kappa ([-\d.]+)")
    assert kappas == [(rule, "0.333") for rule in ("agree", "sum", "confidence", "longer answer")]
    differences = table_rows(out, r"^(\w+) - longer answer\s+95% CI \[([-\d.]+), ([-\d.]+)\]")
    assert differences == [(rule, "0.000", "0.000") for rule in ("agree", "sum", "confidence")]


# --- people's ratings, reports -----------------------------------------------------------------


def test_bench_ppi_never_narrows_the_interval_with_a_judge_that_knows_nothing(bench, tmp_path):
    mtrag = shared("mtrag", "mtrag_dev.jsonl")
    shared("ragchecker", "ragchecker_dev.jsonl")
    shared("attributionbench", "dev_all_subset_balanced.jsonl")
    figures = tmp_path / "ppi.json"
    bench("bench_ppi", "--rounds", "20", "--sizes", "25", "--json", figures)
    rows = json.loads(figures.read_text())
    assert {row["set"] for row in rows} == {
        "MTRAG faithfulness", "MTRAG completeness", "MTRAG faithfulness: Llama-405B - GPT-4o",
        "RAGChecker correctness, 2nd - 1st", "RAGChecker completeness, 2nd - 1st",
        "RAGChecker overall, 2nd - 1st", "AttributionBench attributable",
    }  # fmt: skip
    # A constant judge gets no weight: the interval is the ratings-only one.
    constant = [row for row in rows if row["judge"].startswith("constant")]
    assert len(constant) == 7
    assert {(row["lambda"], row["width_ratio"], row["n"]) for row in constant} == {(0.0, 1.0, 25)}
    # The truth is the mean of every answer's people's rating.
    people = [json.loads(line)["human_mean"]["faithfulness"] for line in mtrag.open()]
    (truth,) = {row["truth"] for row in rows if row["set"] == "MTRAG faithfulness"}
    assert truth == pytest.approx(sum(people) / len(people))


def test_bench_report_writes_the_report_and_compares_two_runs(bench):
    out = bench("bench_report", "--samples", "5", "--compare", "40", "--rounds", "50",
                "--no-render")  # fmt: skip
    assert "5 samples x 3 metrics, with explanations and exchanges:" in out
    assert re.search(r"report written in [\d.]+ s \(open the folder \+ render\), [\d.]+ MB", out)
    assert "compare, 40 samples x 3 metrics, 50 bootstrap rounds:" in out
    pairs = dict(table_rows(out, r"^  (\w+): [-+\d.]+ \[.*\], p [\d.]+, pairs (\d+)$"))
    # Only faithfulness has unscored items in the synthetic runs.
    assert pairs["answer_relevance"] == pairs["context_relevance"] == "40"
    assert int(pairs["faithfulness"]) <= 40


# --- test sets -----------------------------------------------------------------------------------


def test_bench_testset_example_writes_the_set_and_asks_nothing_the_second_time(bench, tmp_path):
    out = bench("bench_testset_example", "--judge", "bench:reader", "--out", tmp_path / "one")
    found = re.search(r"accepted (\d+) / 3 asked, .*; (\d+) model calls, (\d+) cached calls", out)
    assert found is not None, out
    accepted, calls, cached = map(int, found.groups())
    written = [json.loads(line) for line in (tmp_path / "one" / "testset.jsonl").open()]
    assert len(written) == accepted and calls > 0
    assert [q for (q,) in table_rows(out, r"^accepted \(\w+\): (.*)$")] == [
        row["question"] for row in written
    ]
    again = bench("bench_testset_example", "--judge", "bench:reader", "--out", tmp_path / "two")
    assert f"accepted {accepted} / 3 asked" in again
    assert f"; 0 model calls, {calls + cached} cached calls" in again  # the cache answers all


def peer_keys(name: str, marker: str) -> set[str]:
    """The keys of the record a ragas peer prints (the dict literal with ``marker``)."""
    tree = ast.parse((BENCH / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys):
            keys = {k.value for k in node.keys}  # type: ignore[union-attr]
            if marker in keys:
                return keys
    raise AssertionError(f"no record with {marker!r} in {name}")


TESTSET_PEER = """\
import json, sys
def record(config, seconds, calls, accepted, **more):
    return {"config": config, "accepted": accepted, "requested": 2, "seconds": seconds,
            "calls": calls, "prompt_tokens": 10 * calls, "completion_tokens": calls,
            "error": None, "where": None, "failed_jobs": [], "questions": ["Q?"] * accepted,
            **more}
configs = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--config=")] or ["simple"]
print(json.dumps(record(f"knowledge graph ({configs[0]})", 10.0, 4, 0, nodes=2,
                        relationships=1)))
for config in configs:
    print(json.dumps(record(config, 5.0, 2, 1)))
"""


def test_bench_testset_vs_ragas_measures_ragmeter_and_reads_the_peers_records(
    bench, tmp_path, monkeypatch
):
    docs = tmp_path / "docs"  # the bench takes .txt documents
    docs.mkdir()
    for page in HARBOUR.glob("*.md"):
        (docs / f"{page.stem}.txt").write_text(page.read_text())
    out = bench("bench_testset_vs_ragas", "--docs", docs, "--no-ragas", "--n", "1",
                "--judge", "bench:reader")  # fmt: skip
    assert out.startswith("2 documents; the same GGUF for all;")
    [row] = table_rows(out, r"^ragmeter bench:reader\s+(\d) / 1 .*\s+(\d+)  (\S+)$")
    assert row[2] == "ok" and int(row[1]) == len(MADE[-1].history)
    # The peer's records, as ragas_testset_peer.py prints them: the graph's cost is added to
    # each configuration's, since each needs the graph.
    peer = tmp_path / "peer.py"
    peer.write_text(TESTSET_PEER)
    printed = subprocess.run([sys.executable, peer], capture_output=True, text=True, check=True)
    records = [json.loads(line) for line in printed.stdout.splitlines()]
    assert set(records[0]) == peer_keys("ragas_testset_peer.py", "config") | {
        "nodes", "relationships"
    }  # fmt: skip
    driver = module("bench_testset_vs_ragas")
    monkeypatch.setattr(driver, "PEER", peer)
    graph, *configs = driver.ragas_outcomes(
        sys.executable, docs, 2, "http://127.0.0.1:9/v1", 60, ["llm_factory", "simple"]
    )
    assert graph.system == "ragas knowledge graph (llm_factory)"
    assert [(o.system, o.accepted, o.seconds, o.calls) for o in configs] == [
        ("ragas llm_factory", 1, 15.0, 6), ("ragas simple", 1, 15.0, 6)
    ]  # fmt: skip


@pytest.mark.usefixtures("bench")
def test_bench_testset_vs_ragas_takes_the_first_mtrag_passages(tmp_path):
    mtrag = shared("mtrag", "mtrag_dev.jsonl")
    driver = module("bench_testset_vs_ragas")
    every = driver.write_mtrag_documents(mtrag, tmp_path / "all")
    some = driver.write_mtrag_documents(mtrag, tmp_path / "some", 3)
    assert len(every) == len(set(every)) == 30 and some == every[:3]
    assert sorted(p.stem for p in (tmp_path / "some").glob("*.txt")) == sorted(some)


# --- beside ragas ------------------------------------------------------------------------------

RAGAS_PEER = """\
import json, sys
for line in open(sys.argv[1]):
    sample = json.loads(line)
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        print(json.dumps({"id": sample["id"], "metric": metric, "seconds": 2.0, "value": 0.5,
                          "error": None, "calls": 3, "prompt_tokens": 100,
                          "completion_tokens": 10}))
"""


def test_bench_vs_ragas_measures_ragmeter_and_reads_the_peers_records(
    bench, tmp_path, monkeypatch, capsys
):
    driver = module("bench_vs_ragas")
    monkeypatch.setattr(driver, "get_embedder", lambda spec: HashingEmbedder())
    remote = driver.ragmeter_measures(SAMPLES, scripted("routed"), tmp_path, "remote")
    paper = driver.ragmeter_measures(
        SAMPLES, scripted("routed"), tmp_path, "paper", driver.PAPER_MODES
    )
    samples = tmp_path / "samples.jsonl"
    write_jsonl(samples, [{"id": s.key, "question": s.question, "contexts": s.contexts,
                           "answer": s.answer} for s in SAMPLES])  # fmt: skip
    peer = tmp_path / "peer.py"
    peer.write_text(RAGAS_PEER)
    monkeypatch.setattr(driver, "PEER", peer)
    ragas = driver.ragas_measures(sys.executable, samples, "http://127.0.0.1:9/v1")
    printed = subprocess.run([sys.executable, peer, samples], capture_output=True, text=True)
    assert set(json.loads(printed.stdout.splitlines()[0])) == peer_keys("ragas_peer.py", "metric")
    capsys.readouterr()
    driver.report({"ragmeter remote": remote, "ragmeter paper": paper, "ragas": ragas}, SAMPLES)
    out = capsys.readouterr().out
    # Calls per sample (test_evaluate): one per answer sentence, two for answer relevance, one
    # per context sentence; the paper's modes write the statements, then all their verdicts
    # in one reply, and pick the needed sentences in one reply.
    calls = table_rows(out, r"^(ragmeter remote|ragmeter paper|ragas)\s+(\w+)\s+[\d.]+\s+"
                            r"([\d.]+)\s+\d+\s+\d+\s+(\d+)$")  # fmt: skip
    assert calls == [
        ("ragmeter remote", "faithfulness", "1.0", "0"),
        ("ragmeter remote", "answer_relevance", "2.0", "0"),
        ("ragmeter remote", "context_relevance", "2.0", "0"),
        ("ragmeter remote", "all", "5.0", "0"),
        ("ragmeter paper", "faithfulness", "2.0", "0"),
        ("ragmeter paper", "answer_relevance", "2.0", "0"),
        ("ragmeter paper", "context_relevance", "1.0", "0"),
        ("ragmeter paper", "all", "5.0", "0"),
        ("ragas", "faithfulness", "3.0", "0"),
        ("ragas", "answer_relevance", "3.0", "0"),
        ("ragas", "context_relevance", "3.0", "0"),
        ("ragas", "all", "9.0", "0"),
    ]
    # The peer's 2 s a metric: 6 s a sample.
    assert re.search(r"^ragas\s+all\s+6\.0\s", out, re.MULTILINE)
    # Statement "x is one." supported, "y is two." not: 0.5 written; sentence 1 of 2 picked.
    values = table_rows(out, r"^  (\w+)\s+(\w+)\s+(.*)$")
    assert values == [
        (sample, metric, value)
        for sample in "ab"
        for metric, value in (("faithfulness", "0.75 | 0.50 | 0.50"),
                              ("answer_relevance", "1.00 | 1.00 | 0.50"),
                              ("context_relevance", "0.00 | 0.50 | 0.50"))
    ]  # fmt: skip


def test_the_ragas_peers_start_in_ragas_virtualenv(bench):
    pytest.importorskip(
        "ragas", reason="ragas 0.4.3 lives in its own virtualenv (bench/ragas_peer.requirements"
        ".txt), never beside ragmeter"
    )  # fmt: skip
    for peer in ("ragas_peer", "ragas_testset_peer"):
        with pytest.raises(SystemExit) as done:
            bench(peer, "--help")
        assert done.value.code == 0


# --- KaLMA -------------------------------------------------------------------------------------


def test_kalma_report_evolves_answers_and_judges_and_resumes(bench, tmp_path):
    rows = [
        {"id": n, "question_complex": f"Who was {entity.name}?", "question_simple": "?",
         "knowledge": [entity.to_record()]}
        for n, entity in enumerate((ADA, BRAM), 1)
    ]  # fmt: skip
    data = write_jsonl(tmp_path / "biokalma.jsonl", rows)
    out_dir = tmp_path / "kalma"
    args = ("--judge", "bench:kalma", "--n", "2", "--rounds", "3", "--data", data, "--out",
            out_dir, "--experiment", "main")  # fmt: skip
    out = bench("kalma_report", *args)
    # Per question (test_attribution_experiments): the seed paragraph, then a sentence and a
    # question for each of the two injections.
    assert re.search(r"evolution: 2 questions, 2 usable, 0 stopped early; [\d.]+ s, 5\.0 calls",
                     out)  # fmt: skip
    items = load_benchmark(out_dir / "benchmark.jsonl")
    assert sorted(i.id for i in items) == ["biokalma-1", "biokalma-2"]
    [main] = json.loads((out_dir / "summary.json").read_text())
    assert (main["condition"], main["questions"], main["answered"]) == ("main", 2, 2)
    # G-Eval's grade read from the rating's probabilities: 4 with 0.75, 5 with 0.25.
    assert main["quality"] == dict.fromkeys(("coherence", "consistency", "fluency", "relevance"),
                                            4.25)  # fmt: skip
    asked = len(MADE[-1].history)
    bench("kalma_report", *args)
    assert len(MADE[-1].history) == 0 and asked > 0  # every step resumed from the folder
    assert json.loads((out_dir / "summary.json").read_text()) == [main]


# --- verdict heads: the verifier's sample, its run, the heads fitted on it ----------------------


def collapsed(values: list[str]) -> list[str]:
    """``values`` with each run of equal neighbours kept once."""
    return [v for n, v in enumerate(values) if n == 0 or values[n - 1] != v]


@pytest.fixture
def one_blas_thread() -> Iterator[None]:
    """Heads are fitted by scipy (the ``tune`` extra) as many small problems of a millisecond:
    on a busy machine BLAS's threads waiting for a core cost ten times the arithmetic, so they
    are held to one (threadpoolctl comes with the dev extra's MLflow; without it the fits take
    longer, with the same results). Only libraries already loaded are held: scipy's first."""
    pytest.importorskip("scipy.optimize", reason="fitting heads needs the 'tune' extra")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def verifier_run(bench, tmp_path, monkeypatch, one_blas_thread) -> Path:
    """The documented path on a few rounds of the sample: ``verifier_sample.py``, then ``meta
    attribution`` on its first three rounds by a judge whose hidden states hold the label."""
    for name in ("attributionbench", "verifier"):
        shared(name)
    sample = tmp_path / "sample.jsonl"
    out = bench("verifier_sample", sample, "--per-round", "1")
    rows = [json.loads(line) for line in sample.open()]
    # Each round takes one group of every source, the sources in the same order: a read
    # stopped at any point holds every source.
    order = collapsed([row["src_dataset"] for row in rows])
    sources = order.index(order[0], 1)
    assert f"{len(rows)} rows of {sources} sources in rounds of 1" in out
    assert order[: 3 * sources] == order[:sources] * 3
    # Three rounds of six sources (AttributionBench's four among them): fitting a head for
    # each source left out takes seconds a source.
    rounds, first = 0, []
    for row in rows:
        rounds += not first or row["src_dataset"] == order[0] != first[-1]["src_dataset"]
        if rounds > 3:
            break
        first.append(row)
    first = [row for row in first if row["src_dataset"] in order[:6]]
    path = write_jsonl(tmp_path / "claims.jsonl", first)
    labels = {_letters(statement_for(c, True)): c.label for c in load_attribution(path)}
    monkeypatch.setattr(sys.modules[__name__], "LABELS", labels)
    read = CliRunner().invoke(app, [
        "meta", "attribution", str(path), "--out", str(tmp_path / "read"), "--judge",
        "bench:labels", "--judge-option", "heads=none", "--judge-option",
        f"states={','.join(STATE_NAMES)}", "--no-cache",
    ])  # fmt: skip
    assert read.exit_code == 0, read.output
    assert len(MADE[-1].history) == len(first)  # one verdict a claim
    return tmp_path / "read"


def test_bench_verifier_fits_heads_that_read_what_the_states_hold(bench, verifier_run, tmp_path):
    written = tmp_path / "bundled.json"
    out = bench("bench_verifier", "--run", verifier_run, "--write", written)
    claims = len((tmp_path / "claims.jsonl").read_text().splitlines())
    [(read, _)] = table_rows(out, r"^\| \*\*all\*\* \| (\d+) \| (\d+) \|")
    assert int(read) == claims  # every claim of the run read
    # P(Yes) is 0.5 for every claim: the zero-shot read ranks nothing (AUC 0.5); the state
    # says the label, and a head reading it ranks every claim right.
    designs = table_rows(out, r"^\| (.*?) \| ([\d.]+) \| ([\d.]+) \| ([-+\d.]+) \| .* \| \d+ \|$")
    assert designs and {zero for _, zero, _, _ in designs} == {"0.500"}
    assert next(head for name, _, head, _ in designs if "l_out-16" in name) == "1.000"
    assert list(Heads.load(written).heads) == ["faithfulness.supported"]
    assert (tmp_path / TRAINING_FILE).is_file()  # beside it, what refits it


# --- what N labels of a team's own claims buy: the learning curve --------------------------------


def learning_data(root: Path) -> dict[str, bool]:
    """``../shared/data``'s layout, small: AttributionBench's dev file holds 8 questions of
    "Gamma" (four claims each, two supported) and 3 of "Tiny"; the verifier's folder 12
    documents of "Alpha" (four summaries each, two supported) and 20 claims of "Beta". People's
    label of each claim, by the words the judge is shown (``_letters``)."""
    (root / "attributionbench").mkdir(parents=True)
    (root / "verifier").mkdir()

    def rows(source: str, groups: int, per_group: int, question: bool) -> list[dict[str, Any]]:
        return [
            {"id": f"{source}-{g}-{k}", "claim": f"{source} claim {g} {k} holds.",
             "question": f"What about {source} {g}?" if question else "",
             "references": [f"The {source} evidence {g}."], "src_dataset": source,
             "attribution_label": "attributable" if k % 2 == 0 else "not attributable"}
            | ({} if question else {"group": f"{source}-doc{g}"})
            for g in range(groups) for k in range(per_group)
        ]  # fmt: skip

    dev = rows("Gamma", 8, 4, True) + rows("Tiny", 3, 2, True)
    write_jsonl(root / "attributionbench" / "dev_all_subset_balanced.jsonl", dev)
    write_jsonl(root / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl", [])
    write_jsonl(root / "verifier" / "alpha.jsonl", rows("Alpha", 12, 4, False))
    write_jsonl(root / "verifier" / "beta.jsonl", rows("Beta", 5, 4, False))
    claims = [claim for path in root.rglob("*.jsonl") for claim in load_attribution(path)]
    return {_letters(statement_for(c, True)): c.label for c in claims}


def uninformative_training(path: Path) -> Path:
    """Shipped-like training claims of three sources whose states and P(Yes) tell nothing of
    the label: within each label, half the claims have +1 in the state's first number and half
    -1. Heads fitted on them alone read every claim alike."""
    parts = []
    for number, source in enumerate(["T1", "T2", "T3"]):
        truth = np.arange(40) % 2 == 0
        first = np.where(np.arange(40) % 4 < 2, 1.0, -1.0)
        second = ((np.arange(40) * 7 + number) % 11) / 10
        zero = 0.3 + 0.4 * ((np.arange(40) * 3 + number) % 5) / 4
        parts.append(
            LabelledClaims(
                Verdicts(zero, {"l_out-16": np.column_stack([first, second])}),
                truth,
                np.array([source] * 40, dtype=object),
                np.array([f"{source}-{i // 4}" for i in range(40)], dtype=object),
                [f"{source}-{i}" for i in range(40)],
            )
        )
    design = Design(SUPPORTED.name, SUPPORTED.version, ("l_out-16",), "", components=2)
    recipe = Recipe(design, "both", (0.1, 1.0))
    TrainingSet.build(LabelledClaims.join(parts), recipe, SUPPORTED.version).save(path)
    return path


def test_bench_learning_curve_reads_resumably_and_says_what_n_labels_buy(
    bench, tmp_path, monkeypatch, one_blas_thread
):
    data = tmp_path / "data"
    monkeypatch.setattr(sys.modules[__name__], "LABELS", learning_data(data))
    monkeypatch.setattr(sys.modules[__name__], "KILL_AT", [25])
    out = tmp_path / "learning"
    reading = ("read", "--out", out, "--judge", "bench:learning", "--no-cache", "--data", data,
               "--min-read", "30", "--per-round", "4", "--block", "10")  # fmt: skip
    # Killed at the 25th claim: the two shards of ten written before it are kept, the 21st to
    # 24th claims (the third shard, never written) are lost.
    with pytest.raises(Killed):
        bench("bench_learning_curve", *reading)
    assert len(list((out / "shards").glob("*.npz"))) == 2
    training = uninformative_training(tmp_path / "t.npz")
    curving = ("curve", "--out", out, "--training", training, "--sizes", "4,20", "--draws", "3",
               "--min-read", "30", "--min-rest", "12")  # fmt: skip
    early = bench("bench_learning_curve", *curving)
    # Rounds of four claims (one group) of each source, AB-Gamma first: 12 + 8 read; neither
    # source has 30 yet. Beta (20) and AB-Tiny (6) are never read.
    assert table_rows(early, r"^\| (\S+) \| (\d+) \| \d+ \| \d+ \| 0 \| not yet") == [
        ("AB-Gamma", "12"), ("Alpha", "8")
    ]  # fmt: skip
    assert "| AB-Tiny | 0 | | | | never: 6 claims in all |" in early
    assert "not yet measured (fewer than 30 claims read): AB-Gamma (12), Alpha (8)" in early
    assert json.loads((out / "curve.json").read_text())["mean"] == {}

    KILL_AT.clear()
    resumed = bench("bench_learning_curve", *reading)
    assert "Beta: 20 claims in all, fewer than 30: not read" in resumed
    assert "20 of 80 claims already read; reading 60" in resumed
    # The 60 claims not kept were asked, each once, and no claim kept before.
    asked = [_letters(_statement(r)) for r in MADE[-1].history]
    assert len(asked) == len(set(asked)) == 60
    again = bench("bench_learning_curve", *reading)
    assert "80 of 80 claims already read; reading 0" in again and MADE[-1].history == []

    out_text = bench("bench_learning_curve", *curving, "--chart", tmp_path / "curve.svg")
    drawn = (tmp_path / "curve.svg").read_text()
    assert drawn.startswith("<svg") and ">What a team's own claim labels buy<" in drawn
    # P(Yes) is 0.5 for every claim: the zero-shot read ranks nothing (ROC AUC 0.5) and says
    # Yes to all (balanced accuracy 0.5). The shipped-like claims teach nothing, the team's
    # state says the label: a head fitted on any of them ranks the rest right and cuts it at
    # 0.5 right, a gain of +0.5 in both, every draw. tune writes it only from ten claims of
    # five groups up, so with 4 labels (one group) every draw is refused and the team keeps the
    # zero-shot read (no gain); with 20 (five groups) the out-of-fold gain is +0.5 in every
    # resample.
    half = "+0.500 [+0.500, +0.500]"
    none = "+0.000 [+0.000, +0.000]"
    rows = table_rows(out_text, r"^\| (AB-Gamma|Alpha) \| (\d+) \| (\d+) \| ([\d.]+) \| (.*?) \| "
                                r"(.*?) \| (.*?) \| (.*?) \| (.*?) \|$")  # fmt: skip
    assert rows == [
        # Gamma: the rest after 4 labels (one question) is 28 claims, after 20 (five) 12.
        ("AB-Gamma", "4", "28", "0.500", half, "0 of 3 (3 refused)", none, half, none),
        ("AB-Gamma", "20", "12", "0.500", half, "3 of 3", half, half, half),
        ("Alpha", "4", "44", "0.500", half, "0 of 3 (3 refused)", none, half, none),
        ("Alpha", "20", "28", "0.500", half, "3 of 3", half, half, half),
    ]
    assert table_rows(out_text, r"^\| (\d+) \| 2 \| (\d+ of \d+) \| (.*?) \| (.*?) \|") == [
        ("4", "0 of 6", half, none), ("20", "6 of 6", half, half)
    ]  # fmt: skip
    # Each source left out, a head fitted on the other's claims (their states say the label)
    # ranks it right: +0.5 on both, which meets the rule for a default head.
    left_out = r"^\| (AB-Gamma|Alpha) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| (\S+) \|$"
    assert table_rows(out_text, left_out) == [
        ("AB-Gamma", "32", "0.500", "1.000", "+0.500"), ("Alpha", "48", "0.500", "1.000", "+0.500")
    ]  # fmt: skip
    assert "mean gain +0.500, worst +0.500: meets the rule for a default head" in out_text
    written = json.loads((out / "curve.json").read_text())
    assert written["out_of_source"]["meets_default_rule"] is True
    assert set(written["sources"]) == {"AB-Gamma", "Alpha"} and written["not_measured"] == {}
    assert written["mean"]["20"]["auc_gain_tuned"] == {"mean": 0.5, "low": 0.5, "high": 0.5}
    # Every draw is kept: a rerun on what was read refits nothing.
    kept = (out / "draws.jsonl").read_text()
    assert len(kept.splitlines()) == 2 * 2 * 3
    bench("bench_learning_curve", *curving)
    assert (out / "draws.jsonl").read_text() == kept
    # tune, given the curve, says what a team's count of labels bought: its 30 claims, the
    # figures of the largest N measured not above it (20).
    said = bought(written, 30, "curve.json")
    assert said is not None and said.startswith(
        f"what 30 labelled claims bought elsewhere (curve.json): with 20 labels of their own, "
        f"the 2 sources measured gained {half} ROC AUC and {half} balanced accuracy on the rest "
        "of their claims, as tune decides (it wrote the head in 6 of 6 draws"
    )
    assert bought(written, 5, "curve.json").startswith(  # type: ignore[union-attr]
        "what 5 labelled claims bought elsewhere (curve.json): with 4 labels of their own"
    )
    # And so it says, where a team refits the verifier on its own 48 claims (Alpha's, read
    # again); with no curve given and none shipped, it says nothing of the kind.
    shipped = TrainingSet.load(training)
    monkeypatch.setattr("ragmeter.cli.tune.shipped_training_set", lambda: shipped)
    team = data / "verifier" / "alpha.jsonl"
    judge = FakeJudge(responder=learning, model="team")
    MADE.append(judge)
    verify_claims(load_attribution(team), judge, out_dir=tmp_path / "team", cache=False)
    tune = ["tune", str(tmp_path / "team"), str(team), "--out", str(tmp_path / "h.json")]
    told = CliRunner().invoke(app, [*tune, "--curve", str(out / "curve.json")])
    assert told.exit_code == 0, told.output
    told_once = said.replace("what 30", "what 48").replace("(curve.json)", f"({out}/curve.json)")
    assert told_once in " ".join(told.output.split())
    monkeypatch.setitem(curve_module.SHIPPED, curve_module.FORMAT, "no_curve_shipped.json")
    plain = CliRunner().invoke(app, tune)
    assert plain.exit_code == 0 and "bought elsewhere" not in plain.output


def test_a_read_up_to_n_takes_every_source_to_n_whole_groups_first(bench):
    from ragmeter.meta.attribution import Claim

    def claim(number: int, source: str, group: str) -> Claim:
        return Claim(id=str(number), question="", claim="c", references=["r"], label=True,
                     source=source, group=group)  # fmt: skip

    todo = [claim(1, "a", "a1"), claim(2, "a", "a1"), claim(3, "b", "b1"), claim(4, "a", "a2"),
            claim(5, "b", "b2"), claim(6, "b", "b2"), claim(7, "b", "b3")]  # fmt: skip
    # "a" has 2 read, "b" none: to 3, "a" takes a1 (to 4: a group begun is read whole) and
    # nothing of a2; "b" takes b1 and b2 (to 3), and not b3.
    kept = module("bench_learning_curve").up_to(todo, Counter({"a": 2}), 3)
    assert [c.id for c in kept] == ["1", "2", "3", "5", "6"]


def test_the_shipped_learning_curve_is_read_when_none_is_given():
    from ragmeter.heads.curve import bought, load_curve

    found = load_curve(None)
    assert found is not None and found[1] == "the curve shipped with ragmeter"
    curve, source = found
    said = bought(curve, 100, source)
    assert said is not None and said.startswith(
        "what 100 labelled claims bought elsewhere (the curve shipped with ragmeter): with "
    )


def test_bench_languages_reports_each_language_by_questions_and_resumes(bench, tmp_path):
    folder = tmp_path / "memerag"
    folder.mkdir()
    for language in ("en", "de", "es", "fr", "hi"):
        rows = [
            {
                "question": f"q{group}",
                "claim": f"{language} claim {group} {'holds' if label else 'fails'}",
                "references": ["A passage."],
                "attribution_label": "attributable" if label else "not attributable",
                "id": f"{language}-{group}-{label}",
                "group": f"{language}-{group}",
                "src_dataset": f"MEMERAG-{language}",
                "language": language,
            }
            for group in (1, 2)
            for label in (True, False)
        ]
        write_jsonl(folder / f"{language}_dev.jsonl", rows)
    out = tmp_path / "out"
    printed = bench("bench_languages", folder, "--out", out, "--judge", "bench:knowing")
    # every supported claim at 0.8, every other at 0.3: each language ranked and split perfectly
    table = json.loads((out / "languages.json").read_text())
    assert set(table) == {f"{x} MEMERAG-{x}" for x in ("en", "de", "es", "fr", "hi")} | {
        "en",
        "de",
        "es",
        "fr",
        "hi",
    }
    assert {
        (t["rows"], t["questions"], t["roc_auc"], t["balanced_accuracy"]) for t in table.values()
    } == {(4, 2, 1.0, 1.0)}
    assert printed.splitlines()[1].startswith("en                     4     2  1.000")
    assert len(MADE[-1].history) == 20
    # a second run reads every verdict from the folder
    bench("bench_languages", folder, "--out", out, "--judge", "bench:knowing")
    assert MADE[-1].history == []
