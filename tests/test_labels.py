"""``ragmeter label``: the append-only log of people's labels (two writers, a killed writer,
undo), Cohen's kappa worked out by hand, the session's order and resumption, the server's
address and token rule, and the labels read by calibrate, tune and report, directly and through
exported files."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.arena.agreement import cohen_kappa as arena_kappa
from ragmeter.cli.main import app
from ragmeter.heads.ratings import read_labels
from ragmeter.heads.tuning import read_claim_labels
from ragmeter.judges.fake import FakeJudge
from ragmeter.labels import LABELS_FILE, ItemKey, LabelSession, LabelStore, fold, run_ratings
from ragmeter.labels.agreement import pair_agreement
from ragmeter.labels.server import LabelServer, check_binding
from ragmeter.labels.store import Event
from ragmeter.report import write_outputs
from ragmeter.stats import cohen_kappa
from ragmeter.viewer import open_run

from .conftest import prompt_name, yes_no
from .test_tune import KnowingJudge
from .test_tune import _samples as tune_samples

runner = CliRunner()
STATEMENT = re.compile(r"<statement>\n(.*?)\n</statement>", re.S)
SRC = Path(__file__).parent.parent / "src"


def p_of(statement: str) -> float:
    """The scripted judge's P(supported): fixed by the statement's text."""
    return 0.05 + 0.9 * int(hashlib.sha256(statement.encode()).hexdigest()[:6], 16) / 0xFFFFFF


def scripted_run(
    out: Path,
    n: int = 12,
    answers: dict[str, str] | None = None,
    metrics: tuple[str, ...] = ("faithfulness",),
):
    """An evaluate run of ``metrics`` over samples s00... (one sentence each): faithfulness
    scored ``p_of`` its sentence; answer_relevance's answers are not noncommittal, and complete
    with P 0.8."""

    def reply(request):
        if prompt_name(request) == "noncommittal":
            return json.dumps({"noncommittal": False})
        statement = STATEMENT.search(request.messages[-1].content)
        return yes_no(p_of(statement.group(1)) if statement else 0.8)

    answers = answers or {f"s{k:02d}": f"The tower was finished in {1880 + k}." for k in range(n)}
    judge = FakeJudge(responder=reply, model="label-script")
    samples = [
        {
            "id": key,
            "question": f"When was tower {key} finished?",
            "contexts": ["The tower stands in Paris. It was finished in 1889 by Eiffel."],
            "answer": answer,
        }
        for key, answer in answers.items()
    ]
    result = evaluate(samples, list(metrics), judge=judge, out_dir=out, cache=False)
    write_outputs(result, out)
    return result


# -- kappa ------------------------------------------------------------------------------------


def test_kappa_worked_out_by_hand():
    # Ten items: the raters agree on 8 (5 yes-yes, 3 no-no). Each says yes 6 times in 10, so
    # chance agreement is .6 * .6 + .4 * .4 = .52 and kappa = (.8 - .52) / (1 - .52) = 7 / 12.
    a = ["y"] * 6 + ["n"] * 4
    b = ["y"] * 5 + ["n"] + ["n"] * 3 + ["y"]
    assert cohen_kappa(a, b) == pytest.approx(7 / 12)
    # Three levels, 6 items: agreement 4/6; A gives 1,1,2,2,3,3, B gives 1,1,2,3,3,2, so
    # chance = 3 * (2/6 * 2/6) = 1/3 and kappa = (2/3 - 1/3) / (2/3) = 1/2.
    assert cohen_kappa([1, 1, 2, 2, 3, 3], [1, 1, 2, 3, 3, 2]) == pytest.approx(0.5)
    # Perfect disagreement on two labels used equally: observed 0, chance .5, kappa -1.
    assert cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)
    # One label throughout on both sides: chance is 1, kappa undefined.
    assert cohen_kappa(["y", "y"], ["y", "y"]) is None and cohen_kappa([], []) is None
    # The arena's kappa on its three labels is the same function.
    assert arena_kappa([-1, 0, 1, 1], [-1, 1, 1, 0]) == pytest.approx(
        cohen_kappa([-1, 0, 1, 1], [-1, 1, 1, 0])
    )


def test_pair_agreement_counts_only_items_both_labelled():
    mine = {"a": "y", "b": "y", "c": "n", "d": "n", "e": "y"}
    theirs = {"a": "y", "b": "n", "c": "n", "d": "n", "z": "y"}  # e and z: one side only
    found = pair_agreement("bob", mine, theirs)
    # a..d: 3 of 4 agree; mine y,y,n,n (1/2 yes), theirs y,n,n,n (1/4 yes): chance
    # .5 * .25 + .5 * .75 = .5, kappa (.75 - .5) / .5 = .5.
    assert (found.items, found.agreement) == (4, 0.75)
    assert found.kappa == pytest.approx(0.5)
    assert pair_agreement("bob", mine, {}).agreement is None


# -- the log --------------------------------------------------------------------------------


def item(k: int) -> ItemKey:
    return ItemKey("rating", f"s{k:02d}", "faithfulness")


def test_undo_takes_back_the_latest_action_and_the_log_keeps_everything(tmp_path):
    with LabelStore(tmp_path / LABELS_FILE) as store:
        store.add(item(0), "ann", 4, note="clear", scale="1-5", order="random, seed 0")
        store.add(item(1), "ann", 2, scale="1-5")
        store.skip(item(2), "ann")
        store.add(item(1), "bob", 5, scale="1-5")
        assert store.undo("ann", "rating", "faithfulness").item == item(2)  # the skip
        assert store.undo("ann", "rating", "faithfulness").item == item(1)  # not bob's
        store.add(item(1), "ann", 3, scale="1-5")
        folded = fold(store.events())
        assert {k.sample_id: e.value for k, e in folded.of("ann").items()} == {"s00": 4, "s01": 3}
        assert folded.of("bob")[item(1)].value == 5
        assert not folded.skips
        assert folded.of("ann")[item(0)].note == "clear"
        assert len(store.events()) == 7  # every action is a row, undos included
        # Nothing is ever changed or deleted.
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            store._db.execute("UPDATE events SET value = 1")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            store._db.execute("DELETE FROM events")
        # Undo in another scope touches nothing here; with nothing left, nothing is undone.
        assert store.undo("ann", "claim", "faithfulness") is None
        store.undo("ann", "rating", "faithfulness")
        store.undo("ann", "rating", "faithfulness")
        assert store.undo("ann", "rating", "faithfulness") is None
        assert fold(store.events()).of("ann") == {}


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {src!r})
    from ragmeter.labels import ItemKey, LabelStore
    store = LabelStore(sys.argv[1])
    who, count = sys.argv[2], int(sys.argv[3])
    for k in range(count if count else 10**9):
        event = store.add(ItemKey("rating", f"s{{k}}", "faithfulness"), who, k % 5 + 1, scale="1-5")
        print(event.seq, flush=True)
    """
)


def writer(path: Path, who: str, count: int) -> subprocess.Popen:
    script = WRITER.format(src=str(SRC))
    return subprocess.Popen(
        [sys.executable, "-c", script, str(path), who, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_write_the_same_labels_at_once(tmp_path):
    path = tmp_path / LABELS_FILE
    LabelStore(path).close()  # made before, as the server makes it when it starts
    writers = [writer(path, who, 60) for who in ("ann", "bob")]
    outputs = [w.communicate(timeout=120) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
    with LabelStore(path) as store:
        events = store.events()
    assert len(events) == 120 and len({e.seq for e in events}) == 120
    folded = fold(events)
    assert len(folded.of("ann")) == len(folded.of("bob")) == 60
    acknowledged = {int(line) for out, _ in outputs for line in out.split()}
    assert acknowledged == {e.seq for e in events}


def test_a_killed_writer_loses_no_label_it_acknowledged(tmp_path):
    path = tmp_path / LABELS_FILE
    running = writer(path, "ann", 0)  # writes until killed
    acknowledged = [int(running.stdout.readline()) for _ in range(40)]
    running.send_signal(signal.SIGKILL)
    running.wait(timeout=30)
    with LabelStore(path) as store:  # reopening recovers the write-ahead log
        assert [row[0] for row in store._db.execute("PRAGMA integrity_check")] == ["ok"]
        saved = {e.seq for e in store.events()}
    assert set(acknowledged) <= saved


# -- the session ----------------------------------------------------------------------------


def test_the_session_resumes_at_the_first_unlabelled_item_and_hides_the_judge(tmp_path):
    scripted_run(tmp_path / "run", n=6)
    session = LabelSession.open(tmp_path / "run", scale="1-5", seed=3, annotator="ann")
    order = [i.key.text() for i in session.items]
    first = session.state()
    assert first["item"]["key"] == order[0] and first["progress"]["labelled"] == 0
    # Nothing of the judge's is shown before the answer.
    assert "judge" not in json.dumps(first["item"]) and first["revealed"] is None
    answered = session.answer("ann", order[0], 4, "a note")
    assert answered["item"]["key"] == order[1]
    judge = session.by_key[ItemKey.parse(order[0])].judge
    assert answered["revealed"]["yours"] == "4"
    assert answered["revealed"]["judge"] == f"{judge:.2f} ({1 + 4 * judge:.1f} on 1-5)"
    session.skip("ann", order[1])
    session.answer("ann", order[2], 2)
    session.close()
    # Reopened (a restarted server): the first item neither answered nor skipped.
    again = LabelSession.open(tmp_path / "run", seed=3, annotator="ann")
    assert again.scale.text == "1-5"  # the scale the run's ratings are on
    state = again.state()
    assert state["item"]["key"] == order[3]
    assert state["progress"] == {"total": 6, "labelled": 2, "skipped": 1}
    # Undo takes back the last answer and shows its item again, then the skip's.
    assert again.undo("ann")["item"]["key"] == order[2]
    assert again.undo("ann")["item"]["key"] == order[1]
    for key in order[1:]:
        again.answer("ann", key, 3)
    assert again.state()["item"] is None
    with pytest.raises(ValueError, match="not one of the answers"):
        again.answer("ann", order[0], 7)
    with pytest.raises(ValueError, match="are on the scale 1-5, not binary"):
        LabelSession.open(tmp_path / "run", scale="binary")
    again.close()


def test_skipped_items_come_back_last(tmp_path):
    scripted_run(tmp_path / "run", n=3)
    with_session = LabelSession.open(tmp_path / "run", annotator="ann")
    keys = [i.key.text() for i in with_session.items]
    with_session.skip("ann", keys[0])
    with_session.answer("ann", keys[1], 5)
    state = with_session.answer("ann", keys[2], 5)
    assert state["item"]["key"] == keys[0] and state["item"]["skipped"] is True
    with_session.close()


def test_least_sure_order_comes_first_and_calibrate_says_it_biases(tmp_path):
    scripted_run(tmp_path / "run", n=8)
    session = LabelSession.open(tmp_path / "run", order="least-sure", annotator="ann")
    distances = [abs(i.judge - 0.5) for i in session.items]
    assert distances == sorted(distances)
    assert "NOT a random draw" in session.state()["setup"]["order_note"]
    for found in session.items[:4]:
        session.answer("ann", found.key.text(), 1 + round(4 * found.judge))
    session.close()
    done = runner.invoke(app, ["calibrate", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    assert "4 of the 4 ratings were given in least-sure order" in done.output


def test_agreement_of_two_people_and_of_the_judge(tmp_path):
    scripted_run(tmp_path / "run", n=4)
    session = LabelSession.open(tmp_path / "run", scale="binary")
    keys = [i.key for i in session.items]
    for key, ann, bob in zip(keys, [1, 1, 0, 0], [1, 0, 0, 0], strict=True):
        session.answer("ann", key.text(), ann)
        session.answer("bob", key.text(), bob)
    rows = {row["with"]: row for row in session.state("ann")["agreement"]}
    # 3 of 4 agree; ann says yes 2/4, bob 1/4: chance .5 * .25 + .5 * .75 = .5, kappa .5.
    assert rows["bob"]["items"] == 4 and rows["bob"]["agreement"] == 0.75
    assert rows["bob"]["kappa"] == pytest.approx(0.5)
    # The judge's score rounded to the nearest level of 0-1.
    judged = ["1 (yes)" if session.by_key[k].judge >= 0.5 else "0 (no)" for k in keys]
    same = sum(j == a for j, a in zip(judged, ["1 (yes)"] * 2 + ["0 (no)"] * 2, strict=True))
    assert rows["the judge"]["agreement"] == same / 4
    session.close()


# -- the server's address and token ----------------------------------------------------------


def test_other_addresses_need_a_token():
    check_binding("127.0.0.1", None)
    check_binding("::1", None)
    with pytest.raises(ValueError, match="give --token"):
        check_binding("0.0.0.0", None)
    with pytest.raises(ValueError, match="a token of 6 characters can be guessed"):
        check_binding("0.0.0.0", "s3cret")
    check_binding("0.0.0.0", "a-long-enough-secret")
    check_binding("127.0.0.1", "s3cret")  # this machine alone: any token adds a lock


def request(server, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    return response.status, response.read()


@pytest.fixture
def serving(tmp_path):
    """A server on 127.0.0.1 with a token, and one without, over a small run."""
    scripted_run(tmp_path / "run", n=2)
    servers = []

    def start(token):
        session = LabelSession.open(tmp_path / "run", annotator="ann")
        server = LabelServer(session, "127.0.0.1", 0, token)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
        server.session.close()


def test_with_a_token_every_request_must_carry_it(serving):
    server = serving("s3cret")
    assert request(server, "GET", "/")[0] == 403
    assert request(server, "GET", "/api/state")[0] == 403
    assert request(server, "GET", "/?token=wrong")[0] == 403
    status, page = request(server, "GET", "/?token=s3cret")
    assert status == 200 and b"ragmeter label" in page
    status, body = request(server, "GET", "/api/state", headers={"X-Ragmeter-Token": "s3cret"})
    assert status == 200 and json.loads(body)["progress"]["total"] == 2
    assert server.url.endswith("/?token=s3cret")
    # A token is sent back as the page reads it: quoted in the address it prints.
    odd = serving("a+b&c d")
    assert odd.url.endswith("/?token=a%2Bb%26c+d")
    query = odd.url.split("/", 3)[3]
    assert request(odd, "GET", "/api/state" + query)[0] == 200


def test_without_a_token_only_this_machine_and_its_own_page_are_answered(serving):
    server = serving(None)
    assert request(server, "GET", "/")[0] == 200
    # A name that is not this machine's (a page elsewhere rebinding its name to 127.0.0.1).
    assert request(server, "GET", "/api/state", headers={"Host": "evil.example"})[0] == 403
    state = json.loads(request(server, "GET", "/api/state")[1])
    answer = json.dumps({"annotator": "ann", "item": state["item"]["key"], "value": 3})
    # A form of another site cannot send JSON, nor claim to be this page.
    assert request(server, "POST", "/api/answer", answer, {"Content-Type": "text/plain"})[0] == 415
    other = {"Content-Type": "application/json", "Origin": "http://evil.example"}
    assert request(server, "POST", "/api/answer", answer, other)[0] == 403
    status, body = request(
        server, "POST", "/api/answer", answer, {"Content-Type": "application/json"}
    )
    assert status == 200 and json.loads(body)["progress"]["labelled"] == 1
    bad = json.dumps({"annotator": "ann", "item": state["item"]["key"], "value": 9})
    status, body = request(server, "POST", "/api/answer", bad, {"Content-Type": "application/json"})
    assert status == 400 and "not one of the answers" in json.loads(body)["error"]
    # Fields of the wrong type are a bad request that says why, not a fault of the server.
    for odd in ({"annotator": 7, "item": state["item"]["key"], "value": 3},
                {"annotator": "ann", "item": 7, "value": 3}):  # fmt: skip
        status, body = request(
            server, "POST", "/api/answer", json.dumps(odd), {"Content-Type": "application/json"}
        )
        assert status == 400 and json.loads(body)["error"] in (
            "an annotator's name is 1 to 80 characters",
            "not an item key: '7'",
        )
    # The page lets no script run but its own.
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    policy = connection.getresponse().getheader("Content-Security-Policy")
    assert "script-src 'nonce-" in policy and "unsafe-inline" not in policy


def test_a_refused_request_cannot_carry_another_in_its_body(serving):
    """A page elsewhere may POST plain text without asking first; written as a whole request
    (JSON, this server's Host, no Origin), that body would be read as the next request on a
    kept-alive connection. A refused request closes its connection instead."""
    server = serving(None)
    key = json.loads(request(server, "GET", "/api/state")[1])["item"]["key"]
    inner = json.dumps({"annotator": "mallory", "item": key, "value": 1})
    smuggled = (
        f"POST /api/answer HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(inner)}\r\n\r\n{inner}"
    )
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(
        "POST",
        "/api/answer",
        smuggled,
        {"Content-Type": "text/plain", "Origin": "http://evil.example"},
    )
    response = connection.getresponse()
    assert response.status == 415 and response.getheader("Connection") == "close"
    assert response.read() == b'{"error": "send JSON"}'  # and nothing after it
    connection.close()
    assert server.session.state("ann")["annotators"] == []


def test_the_command_refuses_another_address_without_a_token(tmp_path):
    scripted_run(tmp_path / "run", n=2)
    done = runner.invoke(app, ["label", str(tmp_path / "run"), "--host", "0.0.0.0", "--no-open"])
    assert done.exit_code == 2 and "give --token" in done.output
    assert not (tmp_path / "run" / LABELS_FILE).exists()
    # The token may come from the environment, out of the process list; a short one is refused.
    made = runner.invoke(app, ["label", str(tmp_path / "run"), "--host", "0.0.0.0", "--no-open"],
                         env={"RAGMETER_LABEL_TOKEN": "short"})  # fmt: skip
    assert made.exit_code == 2 and "a token of 5 characters can be guessed" in made.output


# -- calibrate, report and tune read the labels ------------------------------------------------


def test_ratings_export_round_trip_into_calibrates_reader(tmp_path):
    result = scripted_run(tmp_path / "run", n=12)
    run = tmp_path / "run"
    session = LabelSession.open(run, scale="1-5")
    for number, found in enumerate(session.items):
        session.answer("ann", found.key.text(), 1 + round(4 * found.judge))
        if number < 6:  # a second person rates the first six, one level higher where they can
            session.answer("bob", found.key.text(), min(5, 2 + round(4 * found.judge)))
    session.close()
    direct, notes = run_ratings(run, result)
    assert any("6 sample(s) rated by several people" in note for note in notes)
    for suffix in (".jsonl", ".csv"):
        exported = tmp_path / f"ratings{suffix}"
        done = runner.invoke(app, ["label", str(run), "--export", str(exported)])
        assert done.exit_code == 0 and "12 rows written" in done.output, done.output
        read = read_labels(exported, [s.key for s in result.samples], result.metrics)
        assert read.ratings == direct.ratings
    # calibrate RUN reads the run's labels; with the exported file it gives the same figures.
    from_run = runner.invoke(app, ["calibrate", str(run)])
    assert from_run.exit_code == 0, from_run.output
    written = json.loads((run / "calibration.json").read_text())
    assert written["labels"] == str(run / LABELS_FILE)
    assert written["metrics"][0]["scale"] == {"low": 1.0, "high": 5.0, "stated": True}
    assert written["metrics"][0]["result"]["rated"] == 12
    from_file = runner.invoke(
        app, ["calibrate", str(run), str(tmp_path / "ratings.jsonl"), "--scale", "1-5"]
    )
    assert from_file.exit_code == 0, from_file.output
    again = json.loads((run / "calibration.json").read_text())
    assert again["metrics"][0]["result"] == written["metrics"][0]["result"]
    # One person's ratings alone.
    bob = tmp_path / "bob.jsonl"
    runner.invoke(app, ["label", str(run), "--export", str(bob), "--annotator", "bob"])
    assert len(bob.read_text().splitlines()) == 6
    # report calibrates each run from its own labels.
    (run / "calibration.json").unlink()
    done = runner.invoke(app, ["report", str(run), "--html", str(tmp_path / "r.html")])
    assert done.exit_code == 0, done.output
    assert json.loads((run / "calibration.json").read_text())["metrics"][0]["result"]["rated"] == 12
    assert open_run(run).calibration is not None


def test_a_run_nobody_labelled_says_how_to_label_it(tmp_path):
    scripted_run(tmp_path / "run", n=2)
    done = runner.invoke(app, ["calibrate", str(tmp_path / "run")])
    assert done.exit_code == 2 and "ragmeter label" in done.output
    done = runner.invoke(
        app, ["label", str(tmp_path / "run"), "--export", str(tmp_path / "x.jsonl")]
    )
    assert done.exit_code == 2 and "no ratings" in done.output
    # A page that cannot open (a metric the run lacks) leaves no empty log behind.
    with pytest.raises(ValueError, match="tone"):
        LabelSession.open(tmp_path / "run", metric="tone")
    assert not (tmp_path / "run" / LABELS_FILE).exists()


def test_tune_reads_the_claims_labelled_in_the_run(tmp_path):
    samples, _ = tune_samples()
    out = tmp_path / "run"
    result = evaluate(samples, ["faithfulness"], judge=KnowingJudge(), cache=False, out_dir=out)
    session = LabelSession.open(out, claims=True, order="least-sure", annotator="ann")
    assert len(session.items) == 90
    for number, found in enumerate(session.items):
        value = None if number == 0 else float("right" in found.key.claim)  # one can't tell
        state = session.answer("ann", found.key.text(), value)
    assert state["item"] is None
    session.close()
    # Ratings on two scales cannot be read; tune fits on the claims and never reads them.
    with LabelStore(out / LABELS_FILE) as store:
        for who, value, scale in [("bob", 4.0, "1-5"), ("cy", 1.0, "binary")]:
            add_unchecked(store, ItemKey("rating", result.samples[0].key, "faithfulness"), who,
                          value, scale)  # fmt: skip
    done = runner.invoke(app, ["tune", str(out), "--out", str(tmp_path / "h.json")])
    assert done.exit_code == 0, done.output
    assert "the run's ratings are not used: heads are fitted on its claim labels" in done.output
    row = next(line for line in done.output.splitlines() if line.startswith("│ faithfulness"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[2:6] == ["claim labels", "89", "89", "ROC AUC"]
    assert "1 claim(s) nobody could tell: left out" in done.output
    # The exported file is the one tune reads, with the same rows.
    exported = tmp_path / "claims.jsonl"
    done = runner.invoke(app, ["label", str(out), "--claims", "--export", str(exported)])
    assert done.exit_code == 0 and "89 rows written" in done.output, done.output
    assert "1 claim(s) nobody could tell: left out" in done.output  # what export left out
    assert len(read_claim_labels(exported, result)) == 89


def test_passages_come_from_the_judges_prompts_or_from_the_data_file(tmp_path):
    scripted_run(tmp_path / "run", n=3)
    from_prompts = LabelSession.open(tmp_path / "run", claims=True)
    shown = from_prompts.state()["item"]
    assert [s["text"] for s in shown["evidence"][0]] == [
        "The tower stands in Paris.",
        "It was finished in 1889 by Eiffel.",
    ]
    from_prompts.close()
    data = tmp_path / "data.jsonl"
    rows = [
        {
            "id": f"s{k:02d}",
            "question": f"When was tower s{k:02d} finished?",
            "contexts": ["First passage.", "Second passage, as the file holds it."],
            "answer": f"The tower was finished in {1880 + k}.",
        }
        for k in range(3)
    ]
    unreadable = {"id": "s99", "question": "", "answer": "No question."}
    data.write_text("".join(json.dumps(row) + "\n" for row in [*rows, unreadable]))
    from_file = LabelSession.open(tmp_path / "run", data=data)
    assert from_file.state()["item"]["contexts"] == rows[0]["contexts"]
    # The passages differ from the scored ones: the file is not exactly what the run scored.
    assert any("not exactly the data the run scored" in note for note in from_file.notes)
    # A row that cannot be read is named with its field, not passed over unsaid.
    assert any(
        note.startswith(f"1 row(s) of {data} cannot be read and are not shown (row 4, field ")
        for note in from_file.notes
    ), from_file.notes
    from_file.close()
    rows[1]["answer"] = "Another answer."
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ValueError, match="sample 's01' answers otherwise than in the run"):
        LabelSession.open(tmp_path / "run", data=data)


# -- one scale per metric, the judge's level, the log's filters, the command's options -------


def add_unchecked(store: LabelStore, item: ItemKey, who: str, value: float, scale: str) -> None:
    """A rating written without the check of its scale against those that stand, as a log
    written before that check was made may hold one."""
    written = Event(0, item, who, "label", value, scale=scale, at="2026-01-01T00:00:00.000+00:00")
    store._transaction(lambda: store._insert(written), "the label")


def test_one_metric_s_ratings_share_one_scale_wherever_they_are_read(tmp_path):
    from ragmeter.heads.ratings import LabelsError
    from ragmeter.labels.pull import pull_labels
    from ragmeter.traces.human import HumanLabel

    run = tmp_path / "run"
    result = scripted_run(run, n=3)
    section = {"trace_ids": ["s00", "s01", "s02"]}
    found = [
        HumanLabel("s00", "faithfulness", "phoenix:cy", score=1.0),
        HumanLabel("s01", "faithfulness", "phoenix:cy", score=0.0),
    ]

    def pull():
        return pull_labels(run, result, section, found, source="phoenix:p")

    assert pull().scales == {"faithfulness": "binary"}  # read from the values: 1 and 0
    # The page's 0-1 is binary by another name: the same scale.
    session = LabelSession.open(run, scale="0-1", annotator="ann")
    assert session.scale.text == "0-1"
    session.answer("ann", session.items[0].key.text(), 1)
    session.close()
    assert run_ratings(run, result)[0].scales["faithfulness"].text == "0-1"
    # A 1-5 rating of the same metric is refused as it is written, by a page opened before
    # anyone rated as by any other writer: the check and the write are one transaction.
    bob = ItemKey("rating", "s02", "faithfulness")
    with LabelStore(run / LABELS_FILE) as store:
        with pytest.raises(ValueError, match="on the scale binary, not 1-5"):
            store.add(bob, "bob", 4.0, scale="1-5")
        assert len(store.events(metric="faithfulness")) == 3  # two pulled, one given
        # A log that holds two scales all the same: every reader refuses it.
        add_unchecked(store, bob, "bob", 4.0, "1-5")
    said = (
        "the run's labels of faithfulness are on several scales (1-5, binary): one metric's "
        "ratings share one scale"
    )
    with pytest.raises(ValueError, match=re.escape(said)):
        LabelSession.open(run)
    with pytest.raises(ValueError, match=re.escape(said)):
        pull()
    with pytest.raises(LabelsError, match=re.escape(f"{run / LABELS_FILE}: {said}")):
        run_ratings(run, result)
    done = runner.invoke(app, ["calibrate", str(run)])
    assert done.exit_code == 2 and said in done.output.replace("\n", " "), done.output
    # Undone, the 1-5 rating no longer counts.
    with LabelStore(run / LABELS_FILE) as store:
        store.undo("bob", "rating", "faithfulness")
    assert run_ratings(run, result)[0] is not None


def test_ratings_are_read_on_the_scale_they_were_given_on_or_refused(tmp_path):
    run = tmp_path / "run"
    scripted_run(run, n=4)
    session = LabelSession.open(run, scale="1-5", annotator="ann")
    for found, value in zip(session.items, [1, 2, 4, 5], strict=True):
        session.answer("ann", found.key.text(), value)
    session.close()
    # 1, 2, 4, 5 of 1-5 read as 0-10 would be low ratings (a mean of 3 of 0-10): refused.
    for scale in (["--scale", "0-10"], ["--scale", "faithfulness=0-10"]):
        done = runner.invoke(app, ["calibrate", str(run), *scale])
        assert done.exit_code == 2, done.output
        assert (
            "the run's labels of faithfulness are on the scale 1-5, not 0-10: one metric's "
            "ratings share one scale"
        ) in done.output.replace("\n", " ")
    done = runner.invoke(app, ["calibrate", str(run), "--scale", "faithfulness=1-5"])
    assert done.exit_code == 0, done.output
    ratings_only = json.loads((run / "calibration.json").read_text())["metrics"][0]["result"]
    assert ratings_only["labels_only"]["estimate"] == 3.0  # (1 + 2 + 4 + 5) / 4


def test_report_keeps_a_calibration_made_from_another_source_or_folds(tmp_path):
    run = tmp_path / "run"
    scripted_run(run, n=6)
    session = LabelSession.open(run, scale="1-5", annotator="ann")
    keys = [found.key.text() for found in session.items]
    for key, value in zip(keys, [1, 2, 4, 5], strict=False):  # four of the six
        session.answer("ann", key, value)
    calibration = run / "calibration.json"
    html = ["--html", str(tmp_path / "r.html")]

    def rated() -> int:
        return json.loads(calibration.read_text())["metrics"][0]["result"]["rated"]

    # Made from the run's labels with 3 folds: report keeps it, says so, and shows it.
    assert runner.invoke(app, ["calibrate", str(run), "--folds", "3"]).exit_code == 0
    made = calibration.read_text()
    assert json.loads(made)["source"] == "run" and json.loads(made)["folds"] == 3
    done = runner.invoke(app, ["report", str(run), *html])
    assert done.exit_code == 0, done.output
    assert calibration.read_text() == made
    assert (
        f"calibration.json was made from {run / LABELS_FILE} with 3 folds, seed 0: kept and "
        "shown, not made again from the run's labels"
    ) in done.output.replace("\n", " ")
    assert open_run(run).calibration["folds"] == 3
    # Made from a file: kept too.
    exported = tmp_path / "ratings.jsonl"
    assert runner.invoke(app, ["label", str(run), "--export", str(exported)]).exit_code == 0
    assert runner.invoke(app, ["calibrate", str(run), str(exported)]).exit_code == 0
    made = calibration.read_text()
    assert json.loads(made)["source"] == "file"
    done = runner.invoke(app, ["report", str(run), *html])
    assert done.exit_code == 0 and calibration.read_text() == made, done.output
    assert f"made from {exported} with 5 folds" in done.output.replace("\n", " ")
    # Made as report makes it (the run's labels, 5 folds, seed 0): made again with a fifth rating.
    assert runner.invoke(app, ["calibrate", str(run)]).exit_code == 0
    assert rated() == 4
    session.answer("ann", keys[4], 3)
    done = runner.invoke(app, ["report", str(run), *html])
    assert done.exit_code == 0 and "kept and shown" not in done.output, done.output
    assert rated() == 5
    # Written before its source was recorded: the run's labels.sqlite says it.
    legacy = json.loads(calibration.read_text())
    del legacy["source"]
    calibration.write_text(json.dumps(legacy))
    session.answer("ann", keys[5], 3)
    session.close()
    assert runner.invoke(app, ["report", str(run), *html]).exit_code == 0
    assert rated() == 6


def test_the_judge_s_value_is_put_on_the_nearest_level_a_half_up(tmp_path):
    from dataclasses import replace

    scripted_run(tmp_path / "run", n=1)
    session = LabelSession.open(tmp_path / "run", scale="1-5")
    item = session.items[0]
    # On 1-5 the judge's v is 1 + 4v: 0.375 is 2.5, 0.875 is 4.5, 0.125 is 1.5, 0.3 is 2.2.
    levels = {0.375: "3", 0.875: "5", 0.125: "2", 0.3: "2", 0.3749999999999999: "3"}
    for judge, level in levels.items():
        assert session.judge_category(replace(item, judge=judge)) == level, judge
    session.close()


def test_the_judge_s_half_is_yes_on_a_binary_scale(tmp_path):
    from dataclasses import replace

    scripted_run(tmp_path / "run", n=1)
    session = LabelSession.open(tmp_path / "run", scale="binary")
    item = session.items[0]
    # 0.5 on 0-1 is the half: up to 1, as a claim at the threshold 0.5 is supported.
    assert session.judge_category(replace(item, judge=0.5)) == "1 (yes)"
    assert session.judge_category(replace(item, judge=0.49)) == "0 (no)"
    session.close()


def test_the_log_is_read_by_kind_by_metric_or_both(tmp_path):
    with LabelStore(tmp_path / LABELS_FILE) as store:
        store.add(ItemKey("rating", "s0", "faithfulness"), "ann", 4.0, scale="1-5")
        store.add(ItemKey("claim", "s0", "faithfulness", "c"), "ann", 1.0, scale="claim")
        store.add(ItemKey("rating", "s0", "answer_relevance"), "ann", 2.0, scale="1-5")

        def seqs(**given):
            return [event.seq for event in store.events(**given)]

        assert seqs() == [1, 2, 3]
        assert seqs(kind="rating") == [1, 3]
        assert seqs(metric="faithfulness") == [1, 2]
        assert seqs(kind="rating", metric="faithfulness") == [1]
        assert seqs(kind="claim", metric="answer_relevance") == []


def test_each_use_of_the_command_refuses_the_options_it_does_not_take(tmp_path):
    run = tmp_path / "run"
    scripted_run(run, n=3, metrics=("faithfulness", "answer_relevance"))
    given = {
        "faithfulness": {"s00": 1, "s01": 2, "s02": 3},
        "answer_relevance": {"s00": 5, "s01": 4},
    }
    for metric, values in given.items():
        session = LabelSession.open(run, metric=metric, scale="1-5", annotator="ann")
        for found in session.items:
            if found.key.sample_id in values:
                session.answer("ann", found.key.text(), values[found.key.sample_id])
        session.close()
    out = tmp_path / "ratings.jsonl"

    def label(*args):
        done = runner.invoke(app, ["label", str(run), *args])
        return done.exit_code, done.output.replace("\n", " ")

    code, said = label("--export", str(out), "--scale", "1-5", "--data", "d.jsonl", "--order",
                       "least-sure", "--host", "0.0.0.0", "--no-open")  # fmt: skip
    assert code == 2 and not out.exists()
    assert (
        "--export writes the labels already given to a file: --scale, --data, --order, --host, "
        "--open/--no-open do not apply to it"
    ) in said
    code, said = label("--pull", "--metric", "faithfulness", "--annotator", "ann")
    assert code == 2
    assert (
        "--pull reads the labels people gave the run's traces into its labels: --metric, "
        "--annotator do not apply to it"
    ) in said
    code, said = label("--server", "http://127.0.0.1:6006", "--no-open")
    assert code == 2 and "--server is for --pull" in said
    # --metric is honoured by --export: that metric's ratings alone.
    assert label("--export", str(out)) == (0, f"3 rows written to {out} ")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0] == {"id": "s00", "faithfulness": 1.0, "answer_relevance": 5.0}
    assert label("--export", str(out), "--metric", "answer_relevance")[0] == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"id": "s00", "answer_relevance": 5.0},
        {"id": "s01", "answer_relevance": 4.0},
    ]
    code, said = label("--export", str(out), "--metric", "tone")
    assert code == 2 and "--metric tone: not a metric of the run (faithfulness, answer_rel" in said
    code, said = label("--claims", "--export", str(out), "--metric", "answer_relevance")
    assert code == 2 and "claims are faithfulness's; --metric answer_relevance rates" in said


def test_a_fault_in_an_action_is_answered_and_the_server_keeps_serving(serving, capsys):
    server = serving(None)
    key = json.loads(request(server, "GET", "/api/state")[1])["item"]["key"]

    def broken(*args, **kwargs):
        raise KeyError("lost")

    server.session.answer = broken
    answer = json.dumps({"annotator": "ann", "item": key, "value": 3})
    status, body = request(
        server, "POST", "/api/answer", answer, {"Content-Type": "application/json"}
    )
    assert status == 500
    assert json.loads(body) == {
        "error": "the labelling server failed (KeyError: 'lost'); it is still running, and the "
        "terminal that started it shows the details"
    }
    assert "Traceback" in capsys.readouterr().err
    assert request(server, "GET", "/api/state")[0] == 200  # still serving
