"""Evolutionary question generation (paper §2.2, appendix D), which yields minimum knowledge sets.

Round 1 writes a question that a seed paragraph answers. Each later round injects one triple of
the graph: the model writes one sentence that states the triple, which is appended to the answer,
then rewrites the question from the extended answer (answer first, question second: the paper's
answer-to-question paradigm, which keeps the question answerable). The earlier answer is kept
exactly, and a round costs a few dozen generated tokens instead of the whole paragraph again.
The triples injected so far are the question's minimum knowledge set. With the paper's six
rounds, the final question needs five.

The added sentence must state the injected value (a date may be written another way; its year
must appear); otherwise the reply is sent back for repair, and if it still does not, that triple
is skipped for the next candidate rather than record a minimum set the answer does not use.
Evolution stops early when the candidates run out, or when a question cannot be rewritten.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragmeter.attribution.graph import Entity, Triple, normalize
from ragmeter.prompts import Prompt
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession

# Properties that are labels or bookkeeping rather than knowledge worth asking about, in the
# form properties are compared in ("topic's" becomes "topics").
NOT_INJECTED = frozenset(
    normalize(p)
    for p in (
        "name",
        "qid",
        "instance of",
        "given name",
        "surname",
        "family name",
        "topic's main category",
        "described by source",
        "sex or gender",
    )
)
SEED_PROPERTIES = ("occupation", "country of citizenship")
_ISO_DATE = re.compile(r"^[+-]?(\d{1,4})-\d{2}-\d{2}")
_UNSTATABLE = re.compile(r"^(Q\d+|[0-9a-f]{32})$")
"""Values no answer text can state: an entity id without its label, or the hash Wikidata dumps
give an unknown value (BioKaLMA has dates of death like that)."""


class Question(BaseModel):
    question: str


class Addition(BaseModel):
    sentence: str
    """Appended to the answer; the earlier answer is kept verbatim before it."""


SEED = Prompt(
    name="kalma.evolve.seed",
    instruction=(
        "You write questions for a question-answering benchmark. Write one natural question "
        "that the given paragraph answers, about the person or people it describes."
    ),
    output=Question,
    examples=[
        (
            {
                "paragraph": "Maren Holt was a cartographer born in Bergen. Her father Ivar Holt "
                "was a ship captain."
            },
            Question(question="Who was Maren Holt, and what did her father do?"),
        )
    ],
)

# Stating the fact and rewriting the question are two requests: asked for both in one reply,
# the 1.5B default judge mostly wrote what it already believed about the person and left the
# injected fact out.
ADD_FACT = Prompt(
    name="kalma.evolve.add",
    instruction=(
        "You extend an answer with one piece of knowledge. Write one sentence that continues "
        "the answer and states the knowledge, with its value written exactly as given."
    ),
    output=Addition,
    examples=[
        (
            {
                "answer": "Maren Holt was a cartographer born in Bergen. Her father Ivar Holt was "
                "a ship captain.",
                "knowledge": "[Q9990001, name: Maren Holt, employer: Norwegian Polar Institute]",
                "value": "Norwegian Polar Institute",
            },
            Addition(sentence="She later worked for the Norwegian Polar Institute."),
        )
    ],
)

REWRITE = Prompt(
    name="kalma.evolve.question",
    instruction=(
        "You evolve a question for a question-answering benchmark. The answer has a new last "
        "sentence. Rewrite the question so that the whole answer answers it, the new sentence "
        "too: one question where possible, otherwise as few as possible."
    ),
    output=Question,
    examples=[
        (
            {
                "question": "Who was Maren Holt, and what did her father do?",
                "answer": "Maren Holt was a cartographer born in Bergen. Her father Ivar Holt was "
                "a ship captain. She later worked for the Norwegian Polar Institute.",
                "new_sentence": "She later worked for the Norwegian Polar Institute.",
            },
            Question(
                question="Who was Maren Holt, what did her father do, and which institute did "
                "she work for?"
            ),
        )
    ],
)

EVOLVE_PROMPTS = (SEED, ADD_FACT, REWRITE)


class EvolutionRound(BaseModel):
    number: int
    injected: Triple | None
    answer: str
    question: str
    minimum: list[Triple]
    """The triples injected up to and including this round."""


class Refusal(BaseModel):
    triple: Triple
    reason: str


class Evolution(BaseModel):
    paragraph: str
    planned: list[Triple]
    """Candidate triples in the order they are tried; those past the wanted rounds are spares."""
    rounds: list[EvolutionRound] = Field(default_factory=list)
    skipped: list[Refusal] = Field(default_factory=list)
    """Candidates passed over: the model did not state them even after repair, or the request
    failed. The next candidate, if any, was tried instead."""
    stopped: str | None = None
    """Why evolution ended before the wanted rounds, when it did."""

    @property
    def complete(self) -> bool:
        return self.stopped is None

    @property
    def final(self) -> EvolutionRound | None:
        return self.rounds[-1] if self.rounds else None


def mentions_value(text: str, value: str) -> bool:
    """Whether ``text`` states ``value``: verbatim after normalisation, or, for an ISO date,
    its year (the model writes "8 July 1596" for 1596-07-08)."""
    date = _ISO_DATE.match(value.strip())
    normalised = normalize(text)
    if normalize(value) in normalised:
        return True
    year = rf"(?<!\d)0*{int(date.group(1))}(?!\d)" if date else None
    return year is not None and re.search(year, normalised) is not None


def knowledge_line(triple: Triple, names: dict[str, str]) -> str:
    """An injected triple as the paper shows it: ``[Q1, name: N, property: value]``."""
    name = names.get(triple.entity, triple.entity)
    return f"[{triple.entity}, name: {name}, {triple.property}: {triple.value}]"


def seed_paragraph(entities: Sequence[Entity]) -> tuple[str, list[Triple]]:
    """A plain opening paragraph from each entity's occupation and citizenship, and the triples
    it states (they are kept out of the injections, which must be new to the answer).

    BioKaLMA does not ship the biographical paragraphs the paper started from; this gives the
    first round a neutral start from the graph itself.
    """
    sentences, used = [], []
    for entity in entities:
        facts = {p: entity.properties[p][0] for p in SEED_PROPERTIES if entity.properties.get(p)}
        used += [Triple(entity=entity.id, property=p, value=v) for p, v in facts.items()]
        what = f"a {facts['occupation']}" if "occupation" in facts else "a person"
        where = (
            f" from {facts['country of citizenship']}" if "country of citizenship" in facts else ""
        )
        sentences.append(f"{entity.name} was {what}{where}.")
    return " ".join(sentences), used


def pick_triples(
    entities: Sequence[Entity], count: int, rng: random.Random, exclude: Sequence[Triple] = ()
) -> list[Triple]:
    """Choose ``count`` triples to inject, reproducibly for a given ``rng``.

    A triple linking two of the entities (e.g. ``father: <the other person>``) goes first, as
    the paper's questions start from a related pair of people; the rest are drawn in turn from
    each entity, so every person of the question gets knowledge injected.
    """
    skip = {t.key for t in exclude}
    names = {normalize(e.name) for e in entities}
    pools: list[list[Triple]] = []
    for entity in entities:
        pool = [
            t
            for t in entity.triples(with_name=False)
            if normalize(t.property) not in NOT_INJECTED
            and t.key not in skip
            and not _UNSTATABLE.match(t.value.strip())
        ]
        rng.shuffle(pool)
        pools.append(pool)
    links = [t for pool in pools for t in pool if normalize(t.value) in names]
    chosen = links[:1] if count else []
    pools = [[t for t in pool if t not in chosen] for pool in pools]
    while len(chosen) < count and any(pools):
        for pool in pools:
            if pool and len(chosen) < count:
                chosen.append(pool.pop(0))
    return chosen


def evolve(
    paragraph: str,
    candidates: Sequence[Triple],
    names: dict[str, str],
    session: JudgeSession,
    *,
    injections: int | None = None,
    max_tokens: int = 96,
) -> Evolution:
    """Run round 1 on ``paragraph``, then inject ``injections`` triples (default: every
    candidate), one per round, trying ``candidates`` in order.

    A candidate the model does not state even after repair is skipped for the next one, so
    candidates beyond ``injections`` are spares; a triple enters the minimum set only once the
    answer states it.
    """
    wanted = len(candidates) if injections is None else injections
    evolution = Evolution(paragraph=paragraph, planned=list(candidates))
    try:
        seed = session.ask(SEED, {"paragraph": paragraph}, max_tokens=max_tokens)
    except Unscorable as exc:
        evolution.stopped = f"round 1: {exc.reason}"
        return evolution
    evolution.rounds.append(
        EvolutionRound(
            number=1, injected=None, answer=paragraph, question=seed.question, minimum=[]
        )
    )
    for triple in candidates:
        if len(evolution.rounds) > wanted:
            break
        last = evolution.rounds[-1]
        try:
            added = _add_fact(last.answer, triple, names, session, max_tokens)
        except Unscorable as exc:
            evolution.skipped.append(Refusal(triple=triple, reason=exc.reason))
            continue
        answer = f"{last.answer} {added}"
        inputs = {"question": last.question, "answer": answer, "new_sentence": added}
        try:
            rewritten = session.ask(REWRITE, inputs, max_tokens=max_tokens)
        except Unscorable as exc:
            evolution.stopped = f"round {last.number + 1}: {exc.reason}"
            return evolution
        evolution.rounds.append(
            EvolutionRound(
                number=last.number + 1,
                injected=triple,
                answer=answer,
                question=rewritten.question.strip(),
                minimum=[*last.minimum, triple],
            )
        )
    if len(evolution.rounds) <= wanted:
        injected = len(evolution.rounds) - 1
        evolution.stopped = (
            f"{injected} of {wanted} triples injected; skipped: "
            + "; ".join(r.reason for r in evolution.skipped)
            if evolution.skipped
            else f"{injected} of {wanted} triples injected: no candidates left"
        )
    return evolution


def _add_fact(
    answer: str, triple: Triple, names: dict[str, str], session: JudgeSession, max_tokens: int
) -> str:
    """One sentence continuing ``answer`` that states ``triple``, checked to contain its value."""

    def states_it(reply: Addition) -> str | None:
        if mentions_value(reply.sentence, triple.value):
            return None
        return f"the sentence must state {triple.property}: {triple.value}"

    inputs = {"answer": answer, "knowledge": knowledge_line(triple, names), "value": triple.value}
    return session.ask(ADD_FACT, inputs, max_tokens=max_tokens, check=states_it).sentence.strip()
