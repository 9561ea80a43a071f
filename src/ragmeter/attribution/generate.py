"""Attributed generation (paper §3.3): answer from a knowledge graph, citing its triples.

The retrieved sub-graphs are flattened into text, one ``{qid: ..., name: ..., property: value}``
line per entity, and the model answers with citations such as
``[Q212657, place of birth: Rome, occupation: painter]``. Following the paper's conscious-
incompetence setting, a claim that needs knowledge the graph does not hold is marked ``[NA]``; the
one-shot demonstration (a fictional person, our own text) leaves facts out of its graph on
purpose and marks the sentences that use them.
"""

from __future__ import annotations

from pydantic import BaseModel

from ragmeter.attribution.graph import KnowledgeGraph
from ragmeter.prompts import Prompt
from ragmeter.session import JudgeSession


class AttributedAnswer(BaseModel):
    answer: str


DEMO_KNOWLEDGE = (
    "{qid: Q9990001, name: Maren Holt, occupation: cartographer, place of birth: Bergen, "
    "date of birth: 1921-03-14, country of citizenship: Norway, father: Ivar Holt, "
    "employer: Norwegian Polar Institute, notable works: Atlas of the Barents Shelf}\n"
    "{qid: Q9990002, name: Ivar Holt, occupation: ship captain, child: Maren Holt, "
    "place of death: Tromsø}"
)
DEMO_QUESTION = (
    "How did Maren Holt's childhood as the daughter of a ship captain shape her career in "
    "polar cartography?"
)
DEMO_ANSWER = (
    "Maren Holt was a Norwegian cartographer born in Bergen on 14 March 1921 [Q9990001, "
    "occupation: cartographer, place of birth: Bergen, date of birth: 1921-03-14, country of "
    "citizenship: Norway]. Her father, Ivar Holt, was a ship captain [Q9990001, father: Ivar "
    "Holt] [Q9990002, occupation: ship captain], and as a child she sailed with him along the "
    "northern coast [NA]. She studied geography at the University of Oslo [NA] and later worked "
    "for the Norwegian Polar Institute [Q9990001, employer: Norwegian Polar Institute]. Her "
    "best-known work, the Atlas of the Barents Shelf, drew on the sea routes she had learned "
    "on her father's ship [Q9990001, notable works: Atlas of the Barents Shelf] [NA]."
)

GENERATE = Prompt(
    name="kalma.generate",
    instruction=(
        "Answer the question using your own knowledge together with the given knowledge "
        "graph, and annotate your answer with citations in the format shown. After each claim "
        "that the knowledge supports, cite the triples it uses in square brackets: the "
        "entity's qid first, then one or more 'property: value' pairs copied exactly from the "
        "knowledge, e.g. [Q123, place of birth: Rome, occupation: painter]. A claim that needs "
        "knowledge which is not in the given knowledge gets [NA]. Write a few fluent paragraphs "
        "of plain prose; put the whole answer, with its citations, in the 'answer' field."
    ),
    output=AttributedAnswer,
    examples=[
        (
            {"knowledge": DEMO_KNOWLEDGE, "question": DEMO_QUESTION},
            AttributedAnswer(answer=DEMO_ANSWER),
        )
    ],
)


def generate_answer(
    question: str, graph: KnowledgeGraph, session: JudgeSession, *, max_tokens: int = 768
) -> str:
    """The model's attributed answer; raises ``Unscorable`` (with the reason) if it gives none.

    Knowledge comes before the question in the prompt, as in the paper, which also lets a local
    model reuse the evaluated knowledge when the same graph is asked about again.
    """

    def not_blank(reply: AttributedAnswer) -> str | None:
        return None if reply.answer.strip() else "the answer is empty"

    inputs = {"knowledge": graph.render() or "(no knowledge was retrieved)", "question": question}
    return session.ask(GENERATE, inputs, max_tokens=max_tokens, check=not_blank).answer.strip()
