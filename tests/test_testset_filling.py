"""A run that finishes its job: a kind the documents cannot give is made as the other kinds
of the mix, the summary and the command say which and why, and a run ends short only when no
kind can give more. On the scripted reader of ``test_testset``, whose three documents have
two fact sentences each."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli.main import app
from ragmeter.judges.base import ChatRequest, ChatResponse
from ragmeter.judges.fake import FakeJudge
from ragmeter.testset.filling import KindQuotas
from ragmeter.testset.queries import DEFAULT_MIX

from .test_testset import FACTS, _generate, _tag, reader

NO_PAIR = "the documents give no two chunks to pair, each with a fact sentence to ask about"


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in names:
        (folder / name).write_text(FACTS[name])
    return folder


def test_what_a_stopped_kind_lacks_goes_to_the_others_by_their_shares():
    kinds = KindQuotas(DEFAULT_MIX, 20, 4)
    # 20 x (0.30, 0.20, 0.15, 0.10, 0.15, 0.10): 6, 4, 3, 2, 3, 2.
    assert kinds.wanted == {
        "specific": 6, "abstract": 4, "multi_hop": 3, "comparison": 2, "follow_up": 3,
        "unanswerable": 2,
    }  # fmt: skip
    kinds.stop("multi_hop", "no pair")
    kinds.stop("comparison", "no pair")
    kinds.substitute(Counter(), Counter())
    # The open shares 0.30, 0.20, 0.15, 0.10 (of 0.75) split multi_hop's 3 as 1.2, 0.8, 0.6,
    # 0.4: 1 whole to specific, then abstract and follow_up by their remainders; comparison's
    # 2 as 0.8, 0.53, 0.4, 0.27: specific and abstract.
    assert kinds.wanted == {
        "specific": 8, "abstract": 6, "multi_hop": 0, "comparison": 0, "follow_up": 4,
        "unanswerable": 2,
    }  # fmt: skip
    assert kinds.substitutions["multi_hop"].made_as == {
        "specific": 1,
        "abstract": 1,
        "follow_up": 1,
    }
    assert kinds.substitutions["comparison"].made_as == {"specific": 1, "abstract": 1}
    # A stopped kind's candidates still being judged count as if they pass; if one fails,
    # what it leaves goes on at the next turn, to the same record.
    kinds.stop("unanswerable", "every chunk was tried")
    kinds.substitute(Counter(), Counter({"unanswerable": 2}))
    assert kinds.wanted["unanswerable"] == 2 and "unanswerable" not in kinds.substitutions
    kinds.substitute(Counter({"unanswerable": 1}), Counter())
    assert kinds.wanted["unanswerable"] == 1
    assert kinds.substitutions["unanswerable"].made_as == {"specific": 1}
    assert not kinds.share_used("specific", 35) and kinds.share_used("specific", 36)  # 4 x 9


def test_two_chunk_questions_from_one_short_document_are_made_as_specific_ones(tmp_path):
    generated = _generate(_folder(tmp_path, "zorbium.md"), 3, None)
    summary = generated.summary
    # 3 of the default mix: specific, abstract and multi_hop 1 each (the largest remainders,
    # 0.9, 0.6 and 0.45, multi_hop listed before follow_up). The one chunk has no partner, so
    # multi_hop stops at its first turn and its 1 goes to specific, the largest share left;
    # the chunk has two fact sentences, one specific question each.
    assert (summary.status, summary.accepted, summary.candidates) == ("complete", 3, 3)
    assert [s.model_dump() for s in summary.substitutions] == [
        {"kind": "multi_hop", "count": 1, "made_as": {"specific": 1}, "reason": NO_PAIR}
    ]
    assert {k: v["accepted"] for k, v in summary.kinds.items() if v["accepted"]} == {
        "specific": 2,
        "abstract": 1,
    }
    assert summary.kinds["specific"]["quota"] == 1  # what the mix asked; the substitution says why
    assert [r["question"] for r in generated.samples] == [
        "What is true of Zorbium was?",  # its first fact (with a number), then its second
        "How does Zorbium melts work?",
        "What is true of Zorbium melts?",
    ]


def _one_fact(request: ChatRequest) -> str | ChatResponse:
    """The reader, but a two-chunk question asks about the first fact only (as the offline
    judge often does): one chunk supports its reference."""
    system, user = request.messages[0].content, request.messages[-1].content
    if "two passages" in system and request.max_tokens > 3:
        fact = _tag(user, "fact 1")
        subject = " ".join(fact.split()[:2])
        return json.dumps({"question": f"What is true of {subject}?", "answer": fact})
    return reader(request)


def test_a_kind_that_keeps_failing_gives_way_after_its_share_of_the_candidates(tmp_path):
    judge = FakeJudge(responder=_one_fact, model="one fact")
    generated = _generate(_folder(tmp_path, "zorbium.md", "quellite.txt"), 3, None, judge)
    summary = generated.summary
    # multi_hop's 1 sample may use 4 candidates (4 x N in all): the two chunks' first facts,
    # each way round, then their second facts; every one "one chunk suffices". Its 1 goes to
    # specific, which the second document's first fact fills.
    assert (summary.status, summary.accepted, summary.candidates) == ("complete", 3, 7)
    assert summary.rejected == {"one chunk suffices": 4}
    [substitution] = summary.substitutions
    assert (substitution.kind, substitution.made_as) == ("multi_hop", {"specific": 1})
    assert substitution.reason == (
        "its share of the candidates (4 per sample) was used: 4 candidates, 0 accepted"
    )


def test_a_run_ends_short_only_when_no_kind_can_give_more(tmp_path):
    docs = _folder(tmp_path, "zorbium.md")
    summary = _generate(docs, 10, None).summary
    # One chunk with two facts gives 2 specific, 1 abstract, 1 follow-up, 1 unanswerable.
    assert (summary.status, summary.accepted, summary.candidates) == ("short", 5, 5)
    assert summary.short_because is not None
    assert summary.short_because.startswith(
        f"no kind of the mix can give more (multi_hop: {NO_PAIR}"
    )
    assert "specific: every fact sentence of every chunk was tried (2 candidates, 2 accepted)" in (
        summary.short_because
    )
    capped = _generate(docs, 10, None, max_candidates=2)
    assert capped.summary.short_because == "the cap of 2 candidates (--max-candidates) was reached"


def test_the_command_says_what_it_substituted_and_why(tmp_path, no_user_cache):
    replies = []
    for question, answer in [
        ("Where was Zorbium first found?", "Zorbium was first found in Patagonia."),
        ("At what heat does Zorbium melt?", "Zorbium melts at forty degrees."),
    ]:
        replies += [
            json.dumps({"question": question, "answer": answer}),
            "Yes",  # it stands alone
            "Yes",  # the one claim is supported
            json.dumps({"answer": "I do not know."}),
            "No",  # the closed-book answer does not support the claim
        ]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in replies))
    docs = _folder(tmp_path, "zorbium.md")
    out = tmp_path / "ts.jsonl"
    command = ["generate", str(docs), "--n", "2", "--mix", "specific=1,multi_hop=1"]
    command += ["--judge", f"fake:{script}", "--embedder", "fake", "--no-entities"]
    result = CliRunner().invoke(app, [*command, "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert f"substituted 1 multi_hop with 1 specific: {NO_PAIR}" in said
    assert "2 of 2 accepted from 2 candidates" in said
    summary = json.loads(out.with_name("ts.summary.json").read_text())
    assert summary["substitutions"] == [
        {"kind": "multi_hop", "count": 1, "made_as": {"specific": 1}, "reason": NO_PAIR}
    ]

    short = CliRunner().invoke(app, [*command[:3], "5", *command[4:], "--out", str(out)])
    assert short.exit_code == 4
    assert "Short of N: no kind of the mix can give more" in " ".join(short.output.split())
