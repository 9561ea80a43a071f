"""The pace ``ragmeter evaluate`` reports at the end of a run: samples a minute over what the
run judged, beside what the store served; the run's clock set by hand, never read."""

from __future__ import annotations

import importlib
import json

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.manifest import Counts, RunRecord
from ragmeter.report import throughput
from ragmeter.result import Result
from ragmeter.sample import Sample

METRICS = ["faithfulness", "answer_relevance", "context_relevance"]


def finished(samples: int, seconds: float, **counts: int) -> Result:
    record = RunRecord(judge="fake", samples=samples, seconds=seconds, counts=Counts(**counts))
    return Result(samples=[], metrics=METRICS, scores=[], run=record)


@pytest.mark.parametrize(
    ("result", "said"),
    [
        # 12 samples x 3 metrics judged in 184 s: 12 / (184 / 60) = 3.91 a minute.
        (finished(12, 184.0, items=36, judged=36), "12 samples in 3 min 4 s: 3.9 samples a minute"),
        # Two samples' items from the store: the rate is over the 10 judged, 10 / (184 / 60).
        (
            finished(12, 184.0, items=36, judged=30, resumed=6),
            "12 samples in 3 min 4 s: 10 judged, 3.3 samples a minute; 2 from the store",
        ),
        # One unscored item judged again: a third of a sample in 5 s, 4 samples a minute.
        (
            finished(12, 5.0, items=36, judged=1, resumed=35),
            "12 samples in 5.0 s: 1 of 36 items judged, 4.0 samples a minute; 35 items from the "
            "store",
        ),
        # A budget stopped the run after 4 samples: 4 / (3000 / 60) = 0.08 a minute.
        (
            finished(12, 3000.0, items=36, judged=12, pending=24),
            "12 samples in 50 min 0 s: 4 judged, 0.08 samples a minute; 8 not judged",
        ),
        (
            finished(1000, 36000.0, items=3000, judged=3000),
            "1,000 samples in 10 h 0 min: 1.7 samples a minute",
        ),
        (
            finished(12, 0.4, items=36, resumed=36),
            "12 samples in 0.4 s: all from the store, none judged",
        ),
        (finished(1, 30.0, items=3, judged=3), "1 sample in 30.0 s: 2.0 samples a minute"),
    ],
)
def test_the_pace_counts_only_what_the_run_judged(result, said):
    assert throughput(result) == said


def test_a_record_without_counts_or_time_has_no_pace():
    record = RunRecord(judge="fake", samples=2)
    assert throughput(Result(samples=[], metrics=METRICS, scores=[], run=record)) is None


class Clock:
    """``time`` for ``ragmeter.evaluate``: each reading 92 s after the one before, so that a
    run, read at its start and at its end, takes 92 s."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        self.now += 92.0
        return self.now


def test_evaluate_prints_the_pace_of_each_run(tmp_path, monkeypatch, no_user_cache):
    samples = [
        Sample(id=f"s{n}", question=f"Where is town {n}?", contexts=[f"Town {n} is inland."],
               answer=f"Town {n} is inland.")
        for n in range(4)
    ]  # fmt: skip
    data = tmp_path / "data.jsonl"
    script = tmp_path / "replies.jsonl"
    script.write_text('"Yes"\n' * 4)  # one statement a sample, each checked once
    out = tmp_path / "out"
    command = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", f"fake:{script}",
               "--out", str(out), "--no-cache", "--no-show-samples"]  # fmt: skip

    def run(count: int) -> str:
        data.write_text("".join(s.model_dump_json() + "\n" for s in samples[:count]))
        monkeypatch.setattr(importlib.import_module("ragmeter.evaluate"), "time", Clock())
        done = CliRunner().invoke(app, command)
        assert done.exit_code == 0, done.output
        assert json.loads((out / "run.json").read_text())["seconds"] == 92.0
        return done.output

    # Two samples judged in 92 s: 2 / (92 / 60) = 1.30 a minute.
    assert "2 samples in 1 min 32 s: 1.3 samples a minute\n" in run(2)
    # Two more: the first two come from the store, the rate is over the two judged.
    assert "4 samples in 1 min 32 s: 2 judged, 1.3 samples a minute; 2 from the store\n" in run(4)
    assert "4 samples in 1 min 32 s: all from the store, none judged\n" in run(4)
