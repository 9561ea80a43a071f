"""Evolutionary question generation on a scripted judge: rounds, minimum sets, repairs."""

from __future__ import annotations

import json
import random

from ragmeter.attribution.benchmark import BenchmarkItem, evolve_item
from ragmeter.attribution.evolve import (
    evolve,
    knowledge_line,
    mentions_value,
    pick_triples,
    seed_paragraph,
)
from ragmeter.attribution.graph import Entity, Triple
from ragmeter.judges.fake import FakeJudge
from ragmeter.session import JudgeSession

# Fictional people, written for these tests.
ADA = Entity(
    id="Q101",
    name="Ada Quill",
    properties={
        "instance of": ["human"],
        "occupation": ["glassblower"],
        "country of citizenship": ["Vesland"],
        "father": ["Bram Quill"],
        "employer": ["Lowmere Glassworks"],
        "date of birth": ["1850-02-03"],
        "award received": ["Silver Lens"],
        "cause of death": ["Q84955445"],
        "date of death": ["fe85645a47f98ce71181560eee106ded"],
        "topic's main category": ["Category:Ada Quill"],
    },
)
BRAM = Entity(
    id="Q102",
    name="Bram Quill",
    properties={
        "instance of": ["human"],
        "occupation": ["ferryman"],
        "place of death": ["Lowmere"],
    },
)
NAMES = {"Q101": "Ada Quill", "Q102": "Bram Quill"}


def t(entity: str, prop: str, value: str) -> Triple:
    return Triple(entity=entity, property=prop, value=value)


FATHER = t("Q101", "father", "Bram Quill")
EMPLOYER = t("Q101", "employer", "Lowmere Glassworks")
FERRY = t("Q102", "occupation", "ferryman")
BIRTH = t("Q101", "date of birth", "1850-02-03")


def reply(**fields: str) -> str:
    return json.dumps(fields)


def test_each_round_adds_its_triple_to_the_minimum_set():
    judge = FakeJudge(
        [
            reply(question="Who was Ada Quill?"),
            reply(sentence="Her father was Bram Quill."),
            reply(question="Who was Ada Quill's father?"),
            reply(sentence="She worked at Lowmere Glassworks."),
            reply(question="Who was Ada Quill's father, and where did she work?"),
            reply(sentence="Bram Quill was a ferryman."),
            reply(question="What did Ada Quill's father do, and where did she work?"),
        ]
    )
    evolution = evolve(
        "Ada Quill was a glassblower.", [FATHER, EMPLOYER, FERRY], NAMES, JudgeSession(judge)
    )
    assert evolution.complete and not evolution.skipped
    assert [r.number for r in evolution.rounds] == [1, 2, 3, 4]
    assert [r.minimum for r in evolution.rounds] == [
        [],
        [FATHER],
        [FATHER, EMPLOYER],
        [FATHER, EMPLOYER, FERRY],
    ]
    assert [r.injected for r in evolution.rounds] == [None, FATHER, EMPLOYER, FERRY]
    assert evolution.final.answer == (
        "Ada Quill was a glassblower. Her father was Bram Quill. She worked at Lowmere "
        "Glassworks. Bram Quill was a ferryman."
    )
    assert evolution.final.question == "What did Ada Quill's father do, and where did she work?"
    # The third round's sentence is asked for with the answer so far and the knowledge, named
    # as the paper shows it; its question is rewritten from the previous one and the extended
    # answer, with the new sentence pointed out.
    add = judge.history[3].messages[-1].content
    assert "Her father was Bram Quill." in add and "Who was Ada Quill's father?" not in add
    assert "[Q101, name: Ada Quill, employer: Lowmere Glassworks]" in add
    assert "<value>\nLowmere Glassworks\n</value>" in add
    rewrite = judge.history[4].messages[-1].content
    assert "Who was Ada Quill's father?" in rewrite
    assert "<new_sentence>\nShe worked at Lowmere Glassworks.\n</new_sentence>" in rewrite


def test_a_sentence_that_omits_the_knowledge_is_sent_back():
    judge = FakeJudge(
        [
            reply(question="Who was Ada Quill?"),
            reply(sentence="She was talented."),
            reply(sentence="She was born on 3 February 1850."),
            reply(question="When was Ada Quill born?"),
        ]
    )
    evolution = evolve("Ada Quill was a glassblower.", [BIRTH], NAMES, JudgeSession(judge))
    assert evolution.complete and evolution.final.minimum == [BIRTH]
    assert evolution.final.answer.endswith("glassblower. She was born on 3 February 1850.")
    repair = judge.history[2].messages[-1].content
    assert "the sentence must state date of birth: 1850-02-03" in repair


def test_a_triple_the_model_will_not_state_is_skipped_for_a_spare():
    judge = FakeJudge(
        [
            reply(question="Who was Ada Quill?"),
            reply(sentence="Her father was Bram Quill."),
            reply(question="Who was her father?"),
            "no",
            "no",
            "no",
            reply(sentence="Bram Quill was a ferryman."),
            reply(question="Who was her father, and what did he do?"),
        ]
    )
    evolution = evolve(
        "Ada Quill was a glassblower.",
        [FATHER, EMPLOYER, FERRY],
        NAMES,
        JudgeSession(judge, retries=2),
        injections=2,
    )
    assert evolution.complete
    assert evolution.final.minimum == [FATHER, FERRY]
    assert [r.triple for r in evolution.skipped] == [EMPLOYER]
    assert evolution.skipped[0].reason.startswith("kalma.evolve.add: unreadable reply")
    assert len(judge.history) == 8


def test_evolution_that_runs_out_of_candidates_stops_with_the_reason_and_keeps_its_rounds():
    judge = FakeJudge(
        [
            reply(question="Who was Ada Quill?"),
            reply(sentence="Her father was Bram Quill."),
            reply(question="Who was her father?"),
            *["no"] * 3,
        ]
    )
    evolution = evolve(
        "Ada Quill was a glassblower.", [FATHER, EMPLOYER], NAMES, JudgeSession(judge, retries=2)
    )
    assert not evolution.complete
    assert evolution.stopped.startswith(
        "1 of 2 triples injected; skipped: kalma.evolve.add: unreadable reply"
    )
    assert evolution.final.minimum == [FATHER]


def test_a_question_that_cannot_be_rewritten_stops_evolution_at_that_round():
    judge = FakeJudge(
        [
            reply(question="Who was Ada Quill?"),
            reply(sentence="Her father was Bram Quill."),
            *["no"] * 3,
        ]
    )
    evolution = evolve(
        "Ada Quill was a glassblower.", [FATHER], NAMES, JudgeSession(judge, retries=2)
    )
    assert evolution.stopped.startswith("round 2: kalma.evolve.question: unreadable reply")
    assert [r.number for r in evolution.rounds] == [1]


def test_mentions_value():
    assert mentions_value("She was born on 3 February 1850.", "1850-02-03")
    assert not mentions_value("She was born in 1851.", "1850-02-03")
    assert mentions_value("A ruler born in 155.", "0155-03-17")
    assert mentions_value("She worked at the LOWMERE glassworks.", "Lowmere Glassworks")
    assert not mentions_value("She worked at a glassworks.", "Lowmere Glassworks")


def test_pick_triples_links_people_first_then_takes_turns_and_is_reproducible():
    stated = [t("Q101", "occupation", "glassblower")]
    first = pick_triples([ADA, BRAM], 5, random.Random("7:x"), exclude=stated)
    again = pick_triples([ADA, BRAM], 5, random.Random("7:x"), exclude=stated)
    assert first == again
    assert first[0] == FATHER  # the link between the two people
    assert len(first) == len(set(first)) == 5
    assert {x.entity for x in first[1:3]} == {"Q101", "Q102"}  # turns between the people
    assert all(x.property not in {"instance of", "name"} for x in first)
    # Neither a value held only as an entity id or an unknown-value hash, nor a bookkeeping
    # property, is injected.
    candidates = {x.property for x in pick_triples([ADA], 20, random.Random(1))}
    assert candidates == {
        "occupation",
        "country of citizenship",
        "father",
        "employer",
        "date of birth",
        "award received",
    }
    assert stated[0] not in first
    # Asking for more than there is yields everything once.
    everything = pick_triples([BRAM], 10, random.Random(0))
    assert sorted(x.property for x in everything) == ["occupation", "place of death"]


def test_seed_paragraph_and_knowledge_line():
    paragraph, stated = seed_paragraph([ADA, BRAM])
    assert paragraph == ("Ada Quill was a glassblower from Vesland. Bram Quill was a ferryman.")
    assert stated == [
        t("Q101", "occupation", "glassblower"),
        t("Q101", "country of citizenship", "Vesland"),
        t("Q102", "occupation", "ferryman"),
    ]
    assert knowledge_line(EMPLOYER, NAMES) == (
        "[Q101, name: Ada Quill, employer: Lowmere Glassworks]"
    )


def test_evolve_item_records_the_minimum_set_of_the_final_question():
    def respond(request):
        if "Write one natural question" in request.messages[0].content:
            return reply(question="Who was Ada Quill?")
        shown = request.messages[-1].content
        if "You extend an answer" in request.messages[0].content:
            value = shown.split("<value>\n")[1].split("\n</")[0]
            return reply(sentence=f"Also: {value}.")
        value = shown.split("<new_sentence>\nAlso: ")[1].split(".\n</")[0]
        return reply(question=f"What about {value}?")

    item = BenchmarkItem(
        id="x", question="Who was Ada Quill?", gold=["Q101", "Q102"], entities=[ADA, BRAM]
    )
    judge = FakeJudge(responder=respond)
    evolved = evolve_item(item, judge, rounds=4, seed=3)
    assert len(evolved.minimum) == 3  # six rounds in the paper; here four: 1 + 3 injections
    assert evolved.minimum == evolved.evolution.final.minimum
    assert evolved.minimum[0] == FATHER
    assert evolved.question == f"What about {evolved.minimum[-1].value}?"
    assert evolved.source["original_question"] == "Who was Ada Quill?"
    assert evolved.usage.model_calls == 7 == len(judge.history)  # 1 + 2 per injection
    assert len(evolved.evolution.planned) == 5  # 3 wanted and 2 spares, unused
    # Same seed, same choice of triples.
    assert (
        evolve_item(item, FakeJudge(responder=respond), rounds=4, seed=3).minimum == evolved.minimum
    )


def test_the_link_is_never_picked_twice():
    for seed in range(40):
        picked = pick_triples([ADA, BRAM], 6, random.Random(seed))
        assert picked[0] == FATHER and len(set(picked)) == len(picked) == 6


def test_mentions_value_accepts_dates_verbatim_or_by_year():
    assert mentions_value("Born 0271-01-01.", "0271-01-01")
    assert mentions_value("He died in 745 BC.", "-0745-01-01")
    assert not mentions_value("He died in 1745.", "-0745-01-01")
