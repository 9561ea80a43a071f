"""Context relevance (RAGAS §3): how much of the retrieved context is needed for the question.

The judge extracts, verbatim, the context sentences that help answer the question, or says
"Insufficient Information". CR = extracted sentences / sentences in the context. Only extractions
that match a real context sentence count, so a paraphrase or an invention cannot inflate the score.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragmeter.metrics.base import Metric
from ragmeter.prompts import Prompt
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession
from ragmeter.text import best_match, normalize, split_sentences

INSUFFICIENT = "Insufficient Information"


class Extraction(BaseModel):
    sentences: list[str]


EXTRACT = Prompt(
    name="context_relevance.extract",
    instruction=(
        "Extract the sentences from the provided context that can potentially help answer the "
        "question. If no relevant sentences are found, or if you believe the question cannot be "
        f'answered from the given context, return the single item "{INSUFFICIENT}". While '
        "extracting candidate sentences you are not allowed to make any changes to sentences "
        "from the given context: copy them exactly."
    ),
    output=Extraction,
    examples=[
        (
            {
                "question": "What is the capital of Australia?",
                "context": "Australia is a country in the Southern Hemisphere. Canberra is the "
                "capital city of Australia. Sydney is its largest city.",
            },
            Extraction(sentences=["Canberra is the capital city of Australia."]),
        )
    ],
)


class ContextRelevance(Metric):
    name = "context_relevance"

    @property
    def prompts(self) -> list[Prompt[Any]]:
        return [EXTRACT]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        context_sentences = [s for passage in sample.contexts for s in split_sentences(passage)]
        if not context_sentences:
            raise Unscorable("the sample has no retrieved context")
        extracted = session.ask(
            EXTRACT,
            {"question": sample.question, "context": sample.contexts},
            max_tokens=1024,
        ).sentences
        insufficient = any(normalize(s) == normalize(INSUFFICIENT) for s in extracted)
        matched: set[int] = set()
        unmatched: list[str] = []
        if not insufficient:
            for item in extracted:
                for piece in split_sentences(item):
                    index = best_match(piece, context_sentences)
                    if index is None:
                        unmatched.append(piece)
                    else:
                        matched.add(index)
        explanation = {
            "extracted_sentences": [context_sentences[i] for i in sorted(matched)],
            "not_found_in_context": unmatched,
            "insufficient_information": insufficient,
            "context_sentences": len(context_sentences),
        }
        return len(matched) / len(context_sentences), explanation
