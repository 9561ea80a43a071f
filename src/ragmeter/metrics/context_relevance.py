"""Context relevance (RAGAS §3): how much of the retrieved context is needed for the question.

The context is split into sentences. CR = extracted sentences / sentences in the context, where
the sentences needed to answer are found by

- ``mode="sentence"`` (default): one Yes/No question per sentence, the sentence shown alone with
  the question ("does this sentence state information needed to answer it?"), read from the
  next-token probabilities. The instruction and question form a prefix shared by every sentence,
  so a local judge reads them once. A small judge answers this reliably: it need not find the
  sentence in a long context, and a sentence cannot borrow relevance from its neighbours;
- ``mode="numbered"``: the same question per sentence, asked by number about the whole numbered
  context ("is sentence [k] needed?"), the context read once as a shared prefix. A 1.5B judge
  cannot tell sentence [37] from [38] this way and says "needed" with P ≈ 0.7 for nearly all;
- ``mode="select"`` (the paper's): the judge lists the numbers of the needed sentences in one
  reply (empty for "Insufficient Information"). Extracting by number rather than by copying text
  keeps the count exact: a small judge that paraphrases a sentence while copying it would
  otherwise lose it.

In the two Yes/No modes, ``soft=True`` counts each sentence by its probability of being needed,
``soft=False`` counts it when the probability reaches ``threshold``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel

from ragmeter.metrics.base import Metric
from ragmeter.prompts import (
    Inputs,
    PlannedCalls,
    Prompt,
    YesNoPrompt,
    rendered_tokens,
    yes_no_call,
)
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


NEEDED = YesNoPrompt(
    name="context_relevance.needed",
    instruction=(
        "You judge which sentences of a retrieved context are needed to answer a question. A "
        "sentence is needed only if it gives information that the answer to this question "
        "must use; a sentence that is merely about the same subject is not needed."
    ),
    question="Is sentence [{number}] needed to answer the question?",
)


SENTENCE_NEEDED = YesNoPrompt(
    name="context_relevance.sentence",
    instruction=(
        "You judge whether one sentence taken from a retrieved context helps answer a question. "
        "Say Yes only if the sentence itself states information that the answer to this "
        "question must use; say No if it is only about a related subject, or about something "
        "else."
    ),
    question="Does this sentence state information needed to answer the question?",
)

Mode = Literal["sentence", "numbered", "select"]


class ContextRelevance(Metric):
    name = "context_relevance"

    def __init__(
        self,
        mode: Mode = "sentence",
        soft: bool = True,
        threshold: float = 0.5,
    ) -> None:
        if mode not in get_args(Mode):
            raise ValueError(f"mode must be 'sentence', 'numbered' or 'select', not {mode!r}")
        self.mode = mode
        self.soft = soft
        self.threshold = threshold

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"mode": self.mode}
        if self.mode != "select":
            config |= {"soft": self.soft, "threshold": self.threshold}
        return config

    @property
    def prompts(self) -> list[Any]:
        return [{"sentence": SENTENCE_NEEDED, "numbered": NEEDED, "select": EXTRACT}[self.mode]]

    def _sentences(self, sample: Sample) -> list[str]:
        return [s for passage in sample.contexts for s in split_sentences(passage)]

    def _questions(
        self, sample: Sample, sentences: list[str]
    ) -> list[tuple[YesNoPrompt, Inputs, dict[str, str]]]:
        """One Yes/No question per sentence: (prompt, inputs, fields) as ``ask_yes_no`` takes
        them; the same list plans the calls and makes them."""
        if self.mode == "sentence":
            return [
                (SENTENCE_NEEDED, {"question": sample.question, "sentence": s}, {})
                for s in sentences
            ]
        inputs = {"question": sample.question, "context": numbered(sentences)}
        return [(NEEDED, inputs, {"number": str(n)}) for n in range(1, len(sentences) + 1)]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        sentences = self._sentences(sample)
        if not sentences:
            return []
        if self.mode == "select":
            inputs = {"question": sample.question, "context": numbered(sentences)}
            return [(rendered_tokens(EXTRACT.render(inputs)), 4 + len(sentences))]
        return [
            yes_no_call(prompt.render(inputs, **fields))
            for prompt, inputs, fields in self._questions(sample, sentences)
        ]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        sentences = self._sentences(sample)
        if not sentences:
            raise Unscorable("the sample has no retrieved context")
        if self.mode == "select":
            return self._by_selection(sample, sentences, session)
        probabilities = [
            session.ask_yes_no(prompt, inputs, **fields)
            for prompt, inputs, fields in self._questions(sample, sentences)
        ]
        return self._count(sentences, probabilities)

    def _count(
        self, sentences: list[str], probabilities: list[float]
    ) -> tuple[float, dict[str, Any]]:
        needed = [p >= self.threshold for p in probabilities]
        value = sum(probabilities) if self.soft else sum(needed)
        explanation = {
            "extracted_sentences": [s for s, ok in zip(sentences, needed, strict=True) if ok],
            "insufficient_information": not any(needed),
            "context_sentences": len(sentences),
            "p_needed": [round(p, 4) for p in probabilities],
        }
        return value / len(sentences), explanation

    def _by_selection(
        self, sample: Sample, sentences: list[str], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:
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
