"""Context relevance (RAGAS §3): how much of the retrieved context is needed for the question.

The context is split into sentences and shown to the judge numbered; the judge extracts the
sentences that help answer the question by their numbers, or none ("Insufficient Information").
CR = extracted sentences / sentences in the context. Extracting by number rather than by copying
text keeps the count exact: a small judge that paraphrases a sentence (or resolves its pronouns)
while copying it would otherwise lose it, and an invented sentence cannot be counted at all.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragmeter.metrics.base import Metric
from ragmeter.prompts import Prompt
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession
from ragmeter.text import split_sentences


class Extraction(BaseModel):
    sentences: list[int]


EXTRACT = Prompt(
    name="context_relevance.extract",
    instruction=(
        "The context below is split into numbered sentences. Extract the sentences that can "
        "potentially help answer the question, by listing their numbers. If no sentence is "
        "relevant, or if you believe the question cannot be answered from the given context "
        "(insufficient information), return an empty list. Do not list sentences that are only "
        "about the same topic but do not help answer this question."
    ),
    output=Extraction,
    examples=[
        (
            {
                "question": "What is the capital of Australia?",
                "context": "[1] Australia is a country in the Southern Hemisphere.\n"
                "[2] Its capital city is Canberra.\n[3] Sydney is its largest city.",
            },
            Extraction(sentences=[2]),
        )
    ],
)


def numbered(sentences: list[str]) -> str:
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(sentences, 1))


class ContextRelevance(Metric):
    name = "context_relevance"

    @property
    def prompts(self) -> list[Prompt[Any]]:
        return [EXTRACT]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        sentences = [s for passage in sample.contexts for s in split_sentences(passage)]
        if not sentences:
            raise Unscorable("the sample has no retrieved context")
        chosen = session.ask(
            EXTRACT,
            {"question": sample.question, "context": numbered(sentences)},
            max_tokens=16 + 4 * len(sentences),
        ).sentences
        valid = sorted({n for n in chosen if 1 <= n <= len(sentences)})
        explanation = {
            "extracted_sentences": [sentences[n - 1] for n in valid],
            "insufficient_information": not valid,
            "context_sentences": len(sentences),
            "out_of_range_numbers": sorted({n for n in chosen if not 1 <= n <= len(sentences)}),
        }
        return len(valid) / len(sentences), explanation
