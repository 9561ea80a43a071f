"""Evolutionary question generation (paper §2.2, appendix D), which yields minimum knowledge sets.

Round 1 writes a question that a seed paragraph answers. Each later round injects one triple of
the graph: the model extends the answer so that it states the triple, then writes a new question
from the extended answer (answer first, question second: the paper's answer-to-question
paradigm, which keeps the question answerable). The model writes only the added sentences, which
are appended to the answer: the earlier answer is kept exactly, and a round costs a few dozen
generated tokens instead of the whole paragraph again. The triples injected so far are the
question's minimum knowledge set. With the paper's six rounds, the final question needs five.

The added sentences must state the injected value (a date may be written another way; its year
must appear); otherwise the reply is sent back for repair, and if it still does not, evolution
stops there with the reason rather than record a minimum set the answer does not use.
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

# Properties that are labels or bookkeeping rather than knowledge worth asking about.
NOT_INJECTED = frozenset(
    {
        "name",
        "qid",
        "instance of",
        "given name",
        "surname",
        "family name",
        "topic's main category",
        "described by source",
        "sex or gender",
    }
)
SEED_PROPERTIES = ("occupation", "country of citizenship")
_ISO_DATE = re.compile(r"^[+-]?(\d{1,4})-\d{2}-\d{2}")


class SeedQuestion(BaseModel):
    question: str


class Evolved(BaseModel):
    addition: str
    """The sentences that extend the answer; the earlier answer is kept verbatim before them."""
    question: str


SEED = Prompt(
    name="kalma.evolve.seed",
    instruction=(
        "You write questions for a question-answering benchmark. Write one natural question "
        "that the given paragraph answers, about the person or people it describes."
    ),
    output=SeedQuestion,
    examples=[
        (
            {
                "paragraph": "Maren Holt was a cartographer born in Bergen. Her father Ivar Holt "
                "was a ship captain."
            },
            SeedQuestion(question="Who was Maren Holt, and what did her father do?"),
        )
    ],
)

EXTEND = Prompt(
    name="kalma.evolve.extend",
    instruction=(
        "You evolve a question-answer pair by adding one piece of knowledge. First write one "
        "to three sentences that continue the answer and state the new knowledge, writing its "
        "value as given; they are appended to the answer as it stands. Then write a new "
        "question that the whole extended answer answers, covering the new knowledge too: one "
        "question where possible, otherwise as few as possible."
    ),
    output=Evolved,
    examples=[
        (
            {
                "answer": "Maren Holt was a cartographer born in Bergen. Her father Ivar Holt was "
                "a ship captain.",
                "question": "Who was Maren Holt, and what did her father do?",
                "knowledge": "[Q9990001, name: Maren Holt, employer: Norwegian Polar Institute]",
            },
            Evolved(
                addition="She later worked for the Norwegian Polar Institute, where she mapped "
                "the northern coast.",
                question="Who was Maren Holt, how did her father's work shape her, and where "
                "did she work as a cartographer?",
            ),
        )
    ],
)


class EvolutionRound(BaseModel):
    number: int
    injected: Triple | None
    answer: str
    question: str
    minimum: list[Triple]
    """The triples injected up to and including this round."""


class Evolution(BaseModel):
    paragraph: str
    planned: list[Triple]
    rounds: list[EvolutionRound] = Field(default_factory=list)
    stopped: str | None = None
    """Why evolution ended before the planned rounds, when it did."""

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
            if normalize(t.property) not in NOT_INJECTED and t.key not in skip
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
    triples: Sequence[Triple],
    names: dict[str, str],
    session: JudgeSession,
    *,
    max_tokens: int = 256,
) -> Evolution:
    """Run round 1 on ``paragraph``, then one round per triple in ``triples``."""
    evolution = Evolution(paragraph=paragraph, planned=list(triples))
    try:
        seed = session.ask(SEED, {"paragraph": paragraph}, max_tokens=96)
    except Unscorable as exc:
        evolution.stopped = f"round 1: {exc.reason}"
        return evolution
    evolution.rounds.append(
        EvolutionRound(
            number=1, injected=None, answer=paragraph, question=seed.question, minimum=[]
        )
    )
    for triple in triples:
        last = evolution.rounds[-1]

        def states_it(reply: Evolved, triple: Triple = triple) -> str | None:
            if mentions_value(reply.addition, triple.value):
                return None
            return f"the addition must state {triple.property}: {triple.value}"

        inputs = {
            "answer": last.answer,
            "question": last.question,
            "knowledge": knowledge_line(triple, names),
        }
        try:
            step = session.ask(EXTEND, inputs, max_tokens=max_tokens, check=states_it)
        except Unscorable as exc:
            evolution.stopped = f"round {last.number + 1}: {exc.reason}"
            break
        evolution.rounds.append(
            EvolutionRound(
                number=last.number + 1,
                injected=triple,
                answer=f"{last.answer} {step.addition.strip()}",
                question=step.question.strip(),
                minimum=[*last.minimum, triple],
            )
        )
    return evolution
