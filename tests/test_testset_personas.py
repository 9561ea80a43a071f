"""Personas written by the judge from the documents (``--personas N``): the excerpts shown, the
screening of what it writes, the repair of an unusable reply, and their part in the candidates'
keys, on the scripted judge of ``test_testset`` (its writing and checks read the texts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge, HashingEmbedder
from ragmeter.testset.personas import excerpts, personas_prompt
from ragmeter.testset.planning import Corpus

from .test_testset import FACTS, _generate, reader

DEALER = "A mineral dealer who wants to know which stones sell for high prices at fairs."
BUILDER = "a bridge builder who wants stones that do not crack in frost"


def facts_folder(tmp_path: Path) -> Path:
    """The three documents of ``test_testset``, one source chunk each, in ``tmp_path/docs``."""
    (tmp_path / "docs").mkdir()
    for name, text in FACTS.items():
        (tmp_path / "docs" / name).write_text(text)
    return tmp_path / "docs"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return facts_folder(tmp_path)


def writing(*replies: list[str]):
    """The scripted judge, whose personas are ``replies`` in turn (the last one repeated)."""
    left = list(replies)

    def respond(request: ChatRequest) -> str | ChatResponse:
        if "describe the people" in request.messages[0].content:
            written = left.pop(0) if len(left) > 1 else left[0]
            return json.dumps({"personas": written})
        return reader(request)

    return FakeJudge(responder=respond, model="personas")


def persona_requests(judge: FakeJudge) -> list[ChatRequest]:
    return [r for r in judge.history if "describe the people" in r.messages[0].content]


def test_written_personas_are_screened_and_drawn_beside_the_given_ones(docs, tmp_path):
    judge = writing(
        [
            DEALER,
            DEALER.rstrip("."),  # the same words: a near-copy of the one kept before it
            "A bridge builder who wants stones that do not crack in frost.",  # the given one
            "Someone.",
            "A student who wants to understand what the excerpt says about caves.",
        ]
    )
    generated = _generate(
        docs, 3, tmp_path / "ts.jsonl", judge, mix="specific=1", personas=[BUILDER],
        derive_personas=5, seed=3,
    )  # fmt: skip
    derived = generated.summary.derived_personas
    assert derived is not None and derived.asked == 5 and derived.failed is None
    assert derived.personas == [DEALER]
    assert derived.dropped == [
        {"persona": DEALER.rstrip("."), "reason": f"near-copy (cosine 1.000) of {DEALER!r}"},
        {
            "persona": "A bridge builder who wants stones that do not crack in frost.",
            "reason": f"near-copy (cosine 1.000) of {BUILDER!r}",
        },
        {"persona": "Someone.", "reason": "too short to say who the person is (1 words)"},
        {
            "persona": "A student who wants to understand what the excerpt says about caves.",
            "reason": "refers to the excerpts, not to a person",
        },
    ]
    # Three documents of one source chunk each: one excerpt of each, shown whole.
    [asked] = persona_requests(judge)
    shown = asked.messages[-1].content
    assert all(f"{name.split('.')[0].capitalize()}" in shown for name in ("zorbium", "quellite"))
    assert sorted(e["document"] for e in derived.excerpts) == [
        "brastone.html",
        "quellite.txt",
        "zorbium.md",
    ]
    assert derived.usage.model_calls == 1
    # Drawn per candidate from [given, derived]: random.Random("3:0"), ("3:1") and ("3:2"),
    # after drawing the style, choose the first, the first and the second; each reaches its
    # writing prompt.
    written = [r for r in judge.history if "You write test" in r.messages[0].content]
    assert [_persona_of(r) for r in written] == [BUILDER, BUILDER, DEALER]
    assert sorted(r["metadata"]["persona"] for r in generated.samples) == [
        DEALER,
        BUILDER,
        BUILDER,
    ]
    saved = json.loads((tmp_path / "ts.summary.json").read_text())["derived_personas"]
    assert saved["personas"] == [DEALER]
    assert json.loads((tmp_path / "ts.personas.json").read_text())["personas"] == [DEALER]


def _persona_of(request: ChatRequest) -> str:
    text = request.messages[-1].content
    return text.split("<persona>\n", 1)[1].split("\n</persona>", 1)[0]


def test_a_reply_with_no_usable_persona_is_repaired_or_dropped_with_the_reason(docs):
    judge = writing(["the passage says so", "Nobody."], [DEALER, "A geologist who studies caves."])
    generated = _generate(docs, 1, None, judge, mix="specific=1", derive_personas=2)
    derived = generated.summary.derived_personas
    _, repair = persona_requests(judge)
    assert "no usable persona" in repair.messages[-1].content  # shown its mistake
    assert derived.personas == [DEALER, "A geologist who studies caves."]
    assert generated.samples[0]["metadata"]["persona"] in derived.personas

    hopeless = writing(["Nobody.", "the passage"])  # every reply unusable, after the repair too
    generated = _generate(docs, 1, None, hopeless, mix="specific=1", derive_personas=2)
    derived = generated.summary.derived_personas
    assert derived.personas == [] and len(persona_requests(hopeless)) == 2
    assert derived.failed.startswith("testset.personas: unreadable reply: no usable persona")
    assert derived.failed.endswith("(after 2 attempts)")
    # The run went on without personas.
    assert generated.summary.status == "complete"
    assert generated.samples[0]["metadata"]["persona"] is None


def test_a_reply_with_another_count_is_sent_back(docs):
    judge = writing([DEALER], [DEALER, "A geologist who studies caves."])
    derived = _generate(docs, 1, None, judge, mix="specific=1", derive_personas=2).summary
    assert "List should have at least 2 items" in persona_requests(judge)[1].messages[-1].content
    assert derived.derived_personas.personas == [DEALER, "A geologist who studies caves."]


def test_a_rerun_reuses_the_personas_and_other_personas_change_every_key(docs, tmp_path):
    out = tmp_path / "ts.jsonl"
    first = _generate(docs, 2, out, writing([DEALER]), mix="specific=1", derive_personas=1)
    again = FakeJudge(model="personas")  # no responder: any call would fail
    rerun = _generate(docs, 2, out, again, mix="specific=1", derive_personas=1).summary
    assert again.history == [] and rerun.derived_personas.resumed
    assert rerun.resumed == rerun.candidates == first.summary.candidates
    # Other personas (the file gone, the judge writing another) make every candidate new.
    (tmp_path / "ts.personas.json").unlink()
    other = "A geologist who wants to know where rare minerals were first found."
    changed = _generate(docs, 2, out, writing([other]), mix="specific=1", derive_personas=1)
    assert changed.summary.derived_personas.personas == [other]
    assert changed.summary.resumed == 0
    assert {r["metadata"]["persona"] for r in changed.samples} == {other}


def test_the_budget_can_stop_the_run_after_the_personas(docs, tmp_path):
    stopped = _generate(
        docs, 1, tmp_path / "ts.jsonl", writing([DEALER]), mix="specific=1", derive_personas=1,
        max_calls=2,
    )  # fmt: skip
    summary = stopped.summary
    # One call writes the personas, the first candidate's writing is the second, and its
    # first check finds the budget spent.
    assert summary.derived_personas.personas == [DEALER]
    assert (summary.status, summary.accepted, summary.candidates) == ("stopped", 0, 0)


def test_excerpts_are_spread_over_the_documents(tmp_path):
    def section(name: str) -> str:  # 40 words of its own: no two sections are near-copies
        return " ".join(f"{name}w{j}" for j in range(40)) + "."

    (tmp_path / "many.md").write_text(
        "".join(f"# Part {i}\n\n{section(f'p{i}')}\n\n" for i in range(10))
    )
    (tmp_path / "one.md").write_text(section("lone"))
    corpus = Corpus.read(tmp_path, HashingEmbedder(), 1200, 200, 25, False)
    assert len(corpus.sources) == 11
    chosen = excerpts(corpus, seed=0)
    documents = [corpus.chunks[i].document for i in chosen]
    # Six excerpts, taking one of each document in turn: the lone chunk of one.md is shown.
    assert sorted(documents) == ["many.md"] * 5 + ["one.md"]
    assert len(set(chosen)) == 6 and excerpts(corpus, seed=0) == chosen


def test_the_count_is_bounded_and_the_schema_fixes_it():
    schema = personas_prompt(3).schema["properties"]["personas"]
    assert (schema["minItems"], schema["maxItems"]) == (3, 3)
    with pytest.raises(ValueError, match="1 to 8"):
        personas_prompt(9)


def test_the_command_refuses_more_personas_than_a_prompt_writes(docs, no_user_cache):
    result = CliRunner().invoke(app, ["generate", str(docs), "--personas", "9", "--dry-run"])
    assert result.exit_code == 2
    assert "--personas" in result.output


def test_a_persona_count_out_of_bounds_is_a_clear_error(docs):
    with pytest.raises(ValueError, match="derive_personas must be 0 to 8, not -1"):
        _generate(docs, 1, None, derive_personas=-1)


def test_the_dry_run_counts_the_call_that_writes_the_personas(docs, no_user_cache):
    command = ["generate", str(docs), "--n", "2", "--mix", "specific=1", "--embedder", "fake"]
    result = CliRunner().invoke(app, [*command, "--no-entities", "--dry-run", "--personas", "2"])
    assert result.exit_code == 0, result.output
    # One call, two personas of 30 tokens each; the candidates' 28 calls as without personas.
    assert re.search(r"personas\s+│\s+1\s+│\s+1\s+│\s+[\d,]+\s+│\s+60\s+│", result.output)
    assert re.search(r"total\s+│\s+│\s+29\s+│", result.output)
