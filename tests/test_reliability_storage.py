"""What the disk and other runs can do to a results folder and the call cache: a full disk while
scores are committed (a real tmpfs, filled on cue), a damaged or truncated ``scores.sqlite``, a
damaged call cache, and two runs on one folder. Each ends in a clear error or goes on safely;
nothing saved is lost, nothing wrong is served, and a rerun once the cause is gone completes the
run with the scores of an undisturbed one.

The judge is scripted: every Yes/No reply's probability is fixed by a hash of its prompt, so
each item has a value of its own and a score served from the wrong place, or from a damaged
row, shows as a difference from the undisturbed run.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import warnings
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli.main import app
from ragmeter.data import write_jsonl
from ragmeter.judges.base import ChatRequest
from ragmeter.judges.cache import CacheWarning, CallCache
from ragmeter.result import Result
from ragmeter.store import FolderBusy, FolderLock, StoreDamageWarning, StoreError

from .fault_server import marked_samples
from .storage_faults import DiskUnavailable, fill, flip, judge, scores, small_disk, stored

SAMPLES = marked_samples(6)
"""6 samples x 3 metrics = 18 items, judged sample by sample (workers=1)."""


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Result:
    """The undisturbed run."""
    return evaluate(SAMPLES, judge=judge(), cache=False, out_dir=tmp_path_factory.mktemp("ref"))


@pytest.fixture(scope="module")
def calls() -> dict[str, int]:
    """The judge's calls for each sample in the undisturbed run."""
    asked = judge()
    evaluate(SAMPLES, judge=asked, cache=False)
    found = {s.id: 0 for s in SAMPLES}
    for request in asked.history:
        (sample,) = [s for s in found if s in request.messages[-1].content]
        found[sample] += 1
    return found


# --- a full disk ----------------------------------------------------------------------------------


@pytest.fixture
def disk(tmp_path):
    """A 4 MiB tmpfs: a disk that really fills up."""
    try:
        with small_disk(tmp_path / "disk") as mount:
            yield mount
    except DiskUnavailable as exc:
        pytest.skip(str(exc))


def fill_at(disk: Path, sample_id: str):
    """An ``on_request`` that fills the disk at the first request about ``sample_id``."""
    filled: list[Path] = []

    def on_request(request: ChatRequest) -> None:
        if not filled and sample_id in request.messages[-1].content:
            filled.append(fill(disk))

    return on_request, filled


def test_a_full_disk_stops_the_run_with_a_clear_error_and_loses_nothing(disk, reference):
    out = disk / "out"
    on_request, filled = fill_at(disk, "item-0003")
    with pytest.raises(StoreError) as raised:
        evaluate(SAMPLES, judge=judge(on_request=on_request), cache=False, out_dir=out)
    # The disk filled during sample 3's first item (faithfulness), whose commit then failed:
    # samples 0-2, 9 items, were saved before.
    message = str(raised.value)
    assert message.startswith("cannot save the score of item-0003 (faithfulness): the disk ")
    assert "is full (database or disk is full)" in message
    assert "free some space and run the same command again" in message
    filled[0].unlink()
    saved = stored(out)
    assert len(saved) == 9
    by_key = {json.loads(p)["sample_id"] + json.loads(p)["metric"]: p for p in saved.values()}
    for score in reference.scores[:9]:  # each saved score is the undisturbed run's
        payload = json.loads(by_key[score.sample_id + score.metric])
        assert (payload["value"], payload["explanation"]) == (score.value, score.explanation)

    rerun = evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)
    assert scores(rerun) == scores(reference)
    assert (rerun.run.counts.resumed, rerun.run.counts.judged) == (9, 9)
    assert saved.items() <= stored(out).items()  # nothing saved was lost or rewritten


def test_a_full_disk_under_the_call_cache_costs_calls_not_the_run(tmp_path, disk, reference, calls):
    cache = disk / "calls.sqlite"
    on_request, filled = fill_at(disk, "item-0002")
    with pytest.warns(CacheWarning, match="cannot write to the call cache .*disk is full"):
        result = evaluate(
            SAMPLES, judge=judge(on_request=on_request), cache=cache, out_dir=tmp_path / "out"
        )
    assert filled and scores(result) == scores(reference)
    filled[0].unlink()
    # The calls of samples 0 and 1 were cached before the disk filled; no later one was. A run
    # in another folder takes those from the cache and asks the model the rest.
    again = judge()
    rerun = evaluate(SAMPLES, judge=again, cache=cache, out_dir=tmp_path / "again")
    assert scores(rerun) == scores(reference)
    before = calls["item-0000"] + calls["item-0001"]
    assert rerun.run.counts.cached_calls == before
    assert len(again.history) == sum(calls.values()) - before


# --- a damaged scores.sqlite ----------------------------------------------------------------------


def finished_run(out: Path) -> bytes:
    """A complete run in ``out``, its database checkpointed into one file; that file's bytes."""
    evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)
    assert not (out / "scores.sqlite-wal").exists()  # the last connection checkpointed it
    return (out / "scores.sqlite").read_bytes()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated to half", "cut by one page", "zeroed page"],
)
def test_a_damaged_store_is_refused_before_judging_and_left_as_it_is(tmp_path, reference, damage):
    out = tmp_path / "out"
    data = finished_run(out)
    assert len(data) > 5 * 4096
    damaged = {
        "garbage": b"this is not a database\n" * 200,
        "truncated to half": data[: len(data) // 2],
        "cut by one page": data[:-4096],
        "zeroed page": data[:4096] + b"\0" * 4096 + data[8192:],
    }[damage]
    (out / "scores.sqlite").write_bytes(damaged)
    asked = judge()
    with pytest.raises(StoreError, match=r"scores.sqlite is damaged \(.*\); it was left as it is"):
        evaluate(SAMPLES, judge=asked, cache=False, out_dir=out)
    assert asked.history == []  # nothing judged
    assert (out / "scores.sqlite").read_bytes() == damaged
    # once it is moved away, the run is judged afresh, right
    (out / "scores.sqlite").rename(tmp_path / "damaged.sqlite")
    assert scores(evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)) == scores(reference)


def test_the_command_line_says_the_store_is_damaged(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "scores.sqlite").write_bytes(b"\x00garbage" * 1000)
    data = tmp_path / "data.jsonl"
    write_jsonl(SAMPLES[:1], data)
    result = CliRunner().invoke(
        app, ["evaluate", str(data), "--judge", "fake", "--out", str(out), "--no-cache"]
    )
    assert result.exit_code == 2
    assert "error:" in result.output and "is damaged (file is not a database)" in result.output
    assert "Traceback" not in result.output


def test_a_damaged_byte_in_a_stored_score_is_not_served(tmp_path, reference):
    out = tmp_path / "out"
    finished_run(out)
    target = reference.scores[4]  # sample 1's answer relevance
    value = json.dumps(target.value).encode()
    assert len(value) > 3
    changed = value[:2] + (b"9" if value[2:3] != b"9" else b"8") + value[3:]
    flip(out / "scores.sqlite", b'"value":' + value, b'"value":' + changed)
    asked = judge()
    with pytest.warns(StoreDamageWarning, match="does not match its digest"):
        result = evaluate(SAMPLES, judge=asked, cache=False, out_dir=out)
    assert scores(result) == scores(reference)
    assert (result.run.counts.resumed, result.run.counts.judged) == (17, 1)
    assert all("item-0001" in r.messages[-1].content for r in asked.history)
    # the row was replaced: the next run reuses everything
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)
    assert again.run.counts.resumed == 18


def test_rows_written_before_digests_are_still_reused(tmp_path, reference):
    out = tmp_path / "out"
    finished_run(out)
    with sqlite3.connect(out / "scores.sqlite") as db:  # the layout of earlier versions
        db.execute("ALTER TABLE scores DROP COLUMN digest")
    result = evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)
    assert result.run.counts.resumed == 18 and scores(result) == scores(reference)


def test_a_cut_write_ahead_log_loses_only_its_cut_commits(tmp_path, reference):
    # A run killed without its last connection closing keeps its recent commits in the log;
    # a log cut short loses the commits in its cut tail, which are judged again, and nothing
    # half-written is served.
    out = tmp_path / "out"
    out.mkdir()
    script = (
        "import os, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from ragmeter import evaluate\n"
        "from tests.fault_server import marked_samples\n"
        "from tests.storage_faults import judge\n"
        "SAMPLES = marked_samples(6)\n"
        "def kill(score):\n"
        "    if score.sample_id == 'item-0005' and score.metric == 'context_relevance':\n"
        "        os.kill(os.getpid(), 9)\n"
        "evaluate(SAMPLES, judge=judge(), cache=False, out_dir=sys.argv[1], on_score=kill)\n"
    )
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-c", script, str(out), str(root)], check=False)
    assert done.returncode == -signal.SIGKILL
    log = out / "scores.sqlite-wal"
    size = log.stat().st_size
    assert size > 8 * 4096  # the commits are in the log, not yet in the database
    with log.open("r+b") as handle:  # cut the log in the middle of its last frames
        handle.truncate(size - 3 * 4096 - 100)
    (out / "scores.sqlite-shm").unlink()
    kept = stored(out)
    assert 0 < len(kept) < 18
    result = evaluate(SAMPLES, judge=judge(), cache=False, out_dir=out)
    assert scores(result) == scores(reference)
    assert (result.run.counts.resumed, result.run.counts.judged) == (len(kept), 18 - len(kept))


# --- a damaged call cache -------------------------------------------------------------------------


def test_a_call_cache_that_is_not_a_database_is_left_aside_with_a_warning(tmp_path, reference):
    cache = tmp_path / "calls.sqlite"
    cache.write_bytes(b"not a cache\n" * 500)
    with pytest.warns(CacheWarning, match=r"calls.sqlite cannot be used .*running without it"):
        result = evaluate(SAMPLES, judge=judge(), cache=cache, out_dir=tmp_path / "out")
    assert scores(result) == scores(reference) and result.run.counts.cached_calls == 0
    assert cache.read_bytes() == b"not a cache\n" * 500
    with pytest.warns(CacheWarning), pytest.raises(OSError, match="move it away"):
        CallCache(cache).entries()
    shown = CliRunner().invoke(app, ["cache", "info", "--path", str(cache)])  # the command says so
    assert shown.exit_code == 2 and "Traceback" not in shown.output
    assert f"error: the call cache {cache} cannot be used (file is not a database): move it" in (
        " ".join(shown.output.split())
    )


def test_a_damaged_cache_entry_is_asked_again(tmp_path, reference, calls):
    cache = tmp_path / "calls.sqlite"
    evaluate(SAMPLES, judge=judge(), cache=cache, out_dir=tmp_path / "first")
    # three Yes/No replies are turned into "Nes" or "Mo", a damaged byte each
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT key, response FROM replies").fetchall()
    targets = [(key, text) for key, text in rows if json.loads(text)["text"] in ("Yes", "No")]
    with closing(sqlite3.connect(cache)) as db:  # everything into the database file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = cache.read_bytes()
    damaged = 0
    for _, text in targets:
        needle = text.encode()
        if damaged < 3 and data.count(needle) == 1:  # stored whole on one page
            swapped = needle.replace(b'"text":"Yes"', b'"text":"Nes"').replace(
                b'"text":"No"', b'"text":"Mo"'
            )
            data = data.replace(needle, swapped)
            damaged += 1
    assert damaged == 3
    cache.write_bytes(data)
    asked = judge()
    with pytest.warns(CacheWarning, match="a damaged entry was skipped and asked again"):
        result = evaluate(SAMPLES, judge=asked, cache=cache, out_dir=tmp_path / "second")
    assert scores(result) == scores(reference)
    assert len(asked.history) == 3
    assert result.run.counts.cached_calls == sum(calls.values()) - 3


# --- two runs on one folder -----------------------------------------------------------------------

HOLD = (
    "import sys, time\n"
    "sys.path.insert(0, sys.argv[2])\n"
    "from pathlib import Path\n"
    "from ragmeter import evaluate\n"
    "from tests.fault_server import marked_samples\n"
    "from tests.storage_faults import judge\n"
    "SAMPLES = marked_samples(6)\n"
    "go = Path(sys.argv[1]) / 'go'\n"
    "def wait(request):\n"
    "    print('judging', flush=True)\n"
    "    while not go.exists():\n"
    "        time.sleep(0.02)\n"
    "out = Path(sys.argv[1]) / 'out'\n"
    "evaluate(SAMPLES, judge=judge(on_request=wait), cache=False, out_dir=out)\n"
)


def holder(tmp_path: Path) -> subprocess.Popen[str]:
    """Another process, running ``evaluate`` on ``tmp_path/out``, stopped at its first call
    until ``tmp_path/go`` exists."""
    root = Path(__file__).parent.parent
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path), str(root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "judging\n"
    return process


def test_a_second_run_on_a_folder_in_use_stops_at_once_and_resumes_later(tmp_path, reference):
    out = tmp_path / "out"
    first = holder(tmp_path)
    asked = judge()
    with pytest.raises(
        FolderBusy,
        match=f"another ragmeter run is writing {out} \\(process "
        f"{first.pid}\\); wait for it to finish",
    ):
        evaluate(SAMPLES, judge=asked, cache=False, out_dir=out)
    assert asked.history == []
    (tmp_path / "go").touch()
    assert first.wait(timeout=60) == 0
    rerun = evaluate(SAMPLES, judge=asked, cache=False, out_dir=out)
    assert asked.history == [] and rerun.run.counts.resumed == 18
    assert scores(rerun) == scores(reference)


def test_the_command_line_refuses_a_folder_in_use(tmp_path):
    first = holder(tmp_path)
    data = tmp_path / "data.jsonl"
    write_jsonl(SAMPLES[:1], data)
    try:
        result = CliRunner().invoke(
            app,
            [
                "evaluate",
                str(data),
                "--judge",
                "fake",
                "--out",
                str(tmp_path / "out"),
                "--no-cache",
            ],
        )
    finally:
        (tmp_path / "go").touch()
        first.wait(timeout=60)
    assert result.exit_code == 2
    assert f"error: another ragmeter run is writing {tmp_path / 'out'} (process {first.pid})" in (
        " ".join(result.output.split())
    )


def test_a_killed_run_leaves_no_lock_behind(tmp_path, reference):
    first = holder(tmp_path)
    first.kill()
    first.wait(timeout=60)
    result = evaluate(SAMPLES, judge=judge(), cache=False, out_dir=tmp_path / "out")
    assert scores(result) == scores(reference)


def test_the_lock_is_taken_again_in_the_same_thread(tmp_path):
    with FolderLock(tmp_path), FolderLock(tmp_path):
        evaluate(SAMPLES[:1], judge=judge(), cache=False, out_dir=tmp_path)
    with FolderLock(tmp_path):  # released: free again
        pass
