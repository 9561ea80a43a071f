"""``ragmeter label`` in a real browser (headless Chromium): thirty samples rated by keyboard
through a killed and restarted server and a closed tab, with skip and undo; a second person and
the agreement both pages show; claims beside their evidence; and texts holding markup shown as
text, never run. The server runs as the command runs, in a process of its own."""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ragmeter.labels import LABELS_FILE, LabelStore, fold
from ragmeter.stats import cohen_kappa

from .browser import ARTIFACTS, chromium
from .test_labels import scripted_run

SCRIPT = "<script>window.pwned = 1</script>"
IMAGE = '<img src="x" onerror="window.pwned = 2">'
COMMAND = "from ragmeter.cli.main import app; app(prog_name='ragmeter')"


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


class Server:
    """``ragmeter label RUN --no-open`` in its own process, on the port it printed."""

    def __init__(self, run: Path, *options: str, port: int = 0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", COMMAND, "label", str(run), "--no-open", "--port", str(port),
             *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        printed = []
        while True:
            line = self.process.stdout.readline()
            printed.append(line)
            found = re.search(r" at (http://\S+) \(Ctrl\+C", line)
            if found:
                self.url = found.group(1)
                break
            if not line:
                pytest.fail("the label server did not start:\n" + "".join(printed))
        self.port = urlsplit(self.url).port

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def open_page(browser, url: str):
    """The page in a fresh tab; every console error and page error is collected."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=20_000)
    return page


def current(page) -> str:
    return page.locator("#item").get_attribute("data-key") or ""


def press_and_wait(page, key: str) -> float:
    """Press ``key`` and wait until the item shown changes; the page's own time from the
    keystroke to the next item shown, in ms."""
    before = current(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "key => document.querySelector('#item').dataset.key !== key", arg=before, timeout=10_000
    )
    return float(page.locator("body").get_attribute("data-latency-ms"))


def rating(sample_id: str) -> int:
    return 1 + int(sample_id[1:]) % 5


def test_thirty_samples_by_keyboard_through_a_restart_and_a_second_person(browser, tmp_path):
    run = tmp_path / "run"
    answers = {f"s{k:02d}": f"The tower was finished in {1880 + k}." for k in range(30)}
    answers["s07"] = SCRIPT + " The tower was finished in 1887."
    scripted_run(run, answers=answers)
    server = Server(run, "--scale", "1-5", "--seed", "4")
    page = open_page(browser, server.url + "?annotator=alice")
    assert "Random order (seed 4)" in page.locator("#order-note").inner_text()
    assert page.locator("#progress-text").inner_text() == "0 of 30 labelled"
    assert page.locator("#revealed .yours").count() == 0  # nothing to reveal yet
    latencies, order, skipped = [], [], None
    try:
        while key := current(page):
            sample = json.loads(key)[1]
            done = int(page.locator("#progress").get_attribute("value") or 0)
            if skipped is None and done == 5:
                skipped = key
                press_and_wait(page, "s")
                continue
            if key == skipped:  # skipped items come back after the rest, marked
                assert page.locator("#item .again").count() == 1
            if sample == "s07":  # markup in the answer is shown as text and never runs
                assert SCRIPT in page.locator("#item").inner_text()
                assert page.evaluate("window.pwned") is None
            if done == 12 and not any(s == "killed" for s in order):
                # The server is killed: the keystroke is refused and said so, nothing is lost,
                # and the page reconnects by itself to the restarted server.
                server.kill()
                page.keyboard.press(str(rating(sample)))
                page.wait_for_selector("#status.error", timeout=10_000)
                assert "not saved" in page.locator("#status").inner_text()
                server = Server(run, "--scale", "1-5", "--seed", "4", port=server.port)
                page.wait_for_selector("body[data-connected=true]", timeout=15_000)
                assert current(page) == key
                assert (
                    page.locator("#progress-text").inner_text() == "12 of 30 labelled · 1 skipped"
                )
                order.append("killed")
            if done == 20 and not any(s == "closed" for s in order):
                # The tab is closed and opened again: it resumes at the first unlabelled item.
                page.close()
                page = open_page(browser, server.url + "?annotator=alice")
                assert current(page) == key
                order.append("closed")
            latencies.append(press_and_wait(page, str(rating(sample))))
            order.append(key)
            revealed = page.locator("#revealed")
            assert revealed.get_attribute("data-key") == key
            assert revealed.locator(".yours").inner_text() == str(rating(sample))
            assert "on 1-5" in revealed.locator(".judge").inner_text()
        assert page.locator("#progress-text").inner_text() == "30 of 30 labelled"
        assert "Every item is labelled" in page.locator("#item").inner_text()
        # u takes back the last answer and shows its item again; answered again, all done.
        last = order[-1]
        page.keyboard.press("u")
        page.wait_for_function(
            "key => document.querySelector('#item').dataset.key === key", arg=last
        )
        assert page.locator("#progress-text").inner_text() == "29 of 30 labelled · 1 skipped"
        press_and_wait(page, str(rating(json.loads(last)[1])))
        assert page.locator("#progress-text").inner_text() == "30 of 30 labelled"
        page.screenshot(path=str(ARTIFACTS / "label-ratings.png"))
        assert page.errors == []

        # Every label is in the run, as given, through the kill and the closed tab.
        with LabelStore(run / LABELS_FILE) as store:
            alice = fold(store.events()).of("alice")
        assert {k.sample_id: e.value for k, e in alice.items()} == {s: rating(s) for s in answers}

        # A second person labels the first ten in the same order, three of them otherwise.
        bob = open_page(browser, server.url + "?annotator=bob")
        given = {}
        for number in range(10):
            sample = json.loads(current(bob))[1]
            given[sample] = rating(sample) if number % 3 else rating(sample) % 5 + 1
            press_and_wait(bob, str(given[sample]))
        alice_said = [str(rating(s)) for s in given]
        bob_said = [str(v) for v in given.values()]
        kappa = cohen_kappa(alice_said, bob_said)
        row = bob.locator("#agreement tr[data-with=alice]")
        assert row.locator(".items").inner_text() == "10"
        assert row.locator(".agree").inner_text() == "60 %"  # 4 of 10 given otherwise
        assert row.locator(".kappa").inner_text() == f"{kappa:.2f}"
        page.reload()
        page.wait_for_selector("body[data-ready=true]", state="attached")
        assert page.locator("#agreement tr[data-with=bob] .kappa").inner_text() == f"{kappa:.2f}"
        bob.screenshot(path=str(ARTIFACTS / "label-agreement.png"))
        assert bob.errors == []
    finally:
        server.stop()
    print(
        f"\nnext item shown after a keystroke (the page's own time, {len(latencies)} keystrokes):"
        f" median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms"
    )
    assert max(latencies) < 5000  # generous: a loaded machine, an fsync per label


def test_claims_beside_their_evidence_with_markup_shown_as_text(browser, tmp_path):
    run = tmp_path / "run"
    scripted_run(
        run,
        answers={
            "c1": f"{SCRIPT} It was finished in 1889 by Eiffel.",
            "c2": f"It is 330 metres tall {IMAGE}.",
        },
    )
    server = Server(run, "--claims")
    try:
        page = open_page(browser, server.url + "?annotator=alice")
        assert "y supported · n not supported · c can't tell" in page.locator("#keys").inner_text()
        claims = []
        while current(page):
            claim = page.locator("#item .claim").inner_text()
            claims.append(claim)
            # The judge's verdict is nowhere on the page before the answer.
            assert "P(supported)" not in page.locator("#item").inner_text()
            if "1889" in claim:
                marked = page.locator("#item .sentence.marked").all_inner_texts()
                assert marked == ["It was finished in 1889 by Eiffel."]
                page.screenshot(path=str(ARTIFACTS / "label-claim.png"))
            press_and_wait(page, "y" if "1889" in claim else "c")
            revealed = page.locator("#revealed")
            assert "P(supported)" in revealed.locator(".judge").inner_text()
            assert revealed.locator(".yours").inner_text() in ("supported", "can't tell")
        assert any(SCRIPT in claim for claim in claims) and any(IMAGE in claim for claim in claims)
        assert page.evaluate("window.pwned") is None
        assert page.locator("#item img, #revealed img, #item script").count() == 0
        assert page.errors == []
        page.screenshot(path=str(ARTIFACTS / "label-claims.png"))
    finally:
        server.stop()


def test_right_to_left_text_reads_from_the_right(browser, tmp_path):
    run = tmp_path / "run"
    scripted_run(run, answers={"a1": "صمم البرج مكتب غوستاف إيفل."})
    server = Server(run)
    try:
        page = open_page(browser, server.url + "?annotator=alice")
        answer = page.locator("#item p.text", has_text="صمم البرج").first
        # the paragraph runs right to left: it starts at the right edge, its end leaves room
        # on the left
        left, right = answer.evaluate(
            """p => { const range = document.createRange(); range.selectNodeContents(p);
            const text = range.getBoundingClientRect(); const own = p.getBoundingClientRect();
            return [text.left - own.left, own.right - text.right]; }"""
        )
        assert left > right
        assert page.errors == []
    finally:
        server.stop()
