"""Context relevance (RAGAS §3): how much of the retrieved context is needed for the question.

The context is split into sentences. CR = extracted sentences / sentences in the context, where
the sentences needed to answer are found by

- ``mode="sentence"`` (default): one Yes/No question per sentence, the sentence shown alone with
  the question ("does this sentence state information needed to answer it?"), read from the
  next-token probabilities. What is asked comes first, in the instruction, then the question,
  then the sentence and a short cue to answer: all before the sentence is a prefix shared by
  every sentence, which a local judge reads once. A small judge answers this reliably: it need
  not find the sentence in a long context, and a sentence cannot borrow relevance from its
  neighbours;
- ``mode="select"`` (the paper's): the judge lists the numbers of the needed sentences in one
  reply (empty for "Insufficient Information"). Extracting by number rather than by copying text
  keeps the count exact: a small judge that paraphrases a sentence while copying it would
  otherwise lose it.

Up to commit b41d0d0, ``mode="numbered"`` asked about each sentence by its number in the whole
numbered context, read once as a shared prefix: a 1.5B judge could not tell sentence [37] from
[38] that way and agreed with people far less (docs/agreement.md, "WikiEval (RAGAS Table 4)").

With each sentence asked, ``soft=False`` (default) counts a sentence as extracted when its
probability of being needed reaches ``threshold``, as the paper counts extracted sentences;
``soft=True`` counts each sentence by its probability. With ``repeats`` (on by default) a
sentence judged needed that follows other needed sentences must also be new: a context that
states the needed fact twice (as retrieved passages that quote each other do) is not more
relevant for it. ``repeats_by="asking"`` asks it once more, shown after them: does it add needed
information they do not already state? Its probability is multiplied by that answer, so it
counts only if it is more likely than not both needed and new. ``repeats_by="bar"`` (the default
where each sentence is asked alone) asks nothing more and counts it only where its P(needed)
reaches ``repeat_bar``: the bundled judge answers the repeat question with P(new) 0.60 +- 0.07
whatever the sentence, so the product works as a higher bar on P(needed), and the bar keeps the
asked checks' verdicts without their calls, each of which waits on the one before
(docs/agreement.md, "Context relevance: asking only where the answer is in doubt").

With ``screen="embedding"`` the judge is asked only about the sentences whose embedding is
near the question's: those whose cosine similarity reaches ``keep_similarity``, and the
``keep_top`` most similar of the context whatever their similarity. Most sentences of a
retrieved passage are plainly not needed, and the embedder (the one answer relevance uses)
reads them in a fraction of the judge's time. The others count as not needed and are listed
under ``skipped`` with their similarity; repeats are checked among the kept sentences as
without a screen. A kept sentence gets the very question it gets without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import BaseModel, Field, model_validator

from ragmeter.judges.base import cosine_similarity
from ragmeter.language import language_of
from ragmeter.metrics.base import Metric
from ragmeter.options import Options, Probability
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
from ragmeter.text import passage_sentences


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


SENTENCE_NEEDED = YesNoPrompt(
    name="context_relevance.sentence",
    instruction=(
        "You judge whether one sentence taken from a retrieved context helps answer a question. "
        "Say Yes only if the sentence itself states information that the answer to this "
        "question must use; say No if it is only about a related subject, or about something "
        "else."
    ),
    question="Does this sentence state information needed to answer the question?",
    asked_first=True,
)

NEW_INFORMATION = YesNoPrompt(
    name="context_relevance.new_information",
    instruction=(
        "You judge whether a sentence of a retrieved context adds information needed to answer "
        "a question, beyond what earlier sentences of the same context already state. Say Yes "
        "if the sentence states something the answer must use that the earlier sentences do "
        "not state; say No if what it states is already given by the earlier sentences, or is "
        "not needed."
    ),
    question="Does this sentence add needed information that the earlier sentences do not state?",
    asked_first=True,
)

Mode = Literal["sentence", "select"]
Screen = Literal["none", "embedding"]


def screen_query(sample: Sample) -> str:
    """What a sentence is compared with: the question, then the conversation's earlier turns,
    the latest first, where there are some (a follow-up such as "and the second one?" says
    little alone; the embedder reads a bounded length, so what comes first is what counts)."""
    return "\n".join([sample.question, *(turn.text for turn in reversed(sample.history))])


def kept_by_similarity(
    similarities: np.ndarray | Sequence[float], above: float, top: int
) -> list[int]:
    """The sentences a screen by similarity asks about, in order: those at or above ``above``,
    and the ``top`` most similar whatever their similarity (ties broken by position)."""
    ranked = sorted(range(len(similarities)), key=lambda i: (-float(similarities[i]), i))
    best = set(ranked[:top])
    return [i for i, s in enumerate(similarities) if s >= above or i in best]


class ContextRelevanceOptions(Options):
    mode: Mode = Field(
        "sentence",
        description="Ask about each sentence alone, or have the judge select the needed sentences.",
    )
    soft: bool = Field(False, description="Count each sentence by its probability.")
    threshold: Probability = Field(0.5, description="P(needed) x P(new) that counts a sentence.")
    repeats: bool | None = Field(
        None,
        description="Check needed sentences for repeated facts; unset: on where each sentence "
        "is asked (a selection lists each sentence once anyway). Always set after validation.",
    )

    @model_validator(mode="before")
    @classmethod
    def _repeats_by_mode(cls, values: Any) -> Any:
        if isinstance(values, dict) and values.get("repeats") is None:
            return {**values, "repeats": values.get("mode", "sentence") != "select"}
        return values

    repeats_by: Literal["asking", "bar"] | None = Field(
        None,
        description="How a needed sentence after the first is checked for repeating the earlier "
        "ones: the judge asked, or the higher bar repeat_bar on its P(needed). Unset: bar where "
        "each sentence is asked alone (mode='sentence', soft=false), else "
        "asking.",
    )
    repeat_bar: Probability = Field(
        0.72,
        description="With repeats_by=bar: the P(needed) a needed sentence after the first must "
        "reach to count.",
    )

    screen: Screen = Field(
        "none",
        description="Ask about every sentence (none), or only about those whose embedding is "
        "near the question's (embedding): the others count as not needed.",
    )
    keep_similarity: float = Field(
        0.2,
        ge=-1,
        le=1,
        description="With screen=embedding: a sentence whose cosine similarity to the question "
        "reaches this is asked.",
    )
    keep_top: int = Field(
        4,
        ge=0,
        description="With screen=embedding: the sentences of the context most similar to the "
        "question, this many, are asked whatever their similarity.",
    )

    @property
    def _counted_alone(self) -> bool:
        """Each sentence asked alone and counted: what the repeat bar was fitted to."""
        return self.mode == "sentence" and not self.soft

    @property
    def repeat_checks(self) -> Literal["asking", "bar"] | None:
        """How repeats are checked (``repeats_by``, its default resolved); None without."""
        if not self.repeats:
            return None
        if self.repeats_by is not None:
            return self.repeats_by
        return "bar" if self._counted_alone else "asking"

    @model_validator(mode="after")
    def _repeats_need_yes_no(self) -> Self:
        if self.repeats and self.mode == "select":
            raise ValueError("repeats applies to mode='sentence', not to mode='select'")
        if self.repeats_by == "bar" and not self._counted_alone:
            raise ValueError(
                "repeats_by='bar' is fitted to P(needed) of each sentence asked alone, counted: "
                "it needs mode='sentence' and soft=false"
            )
        if self.screen != "none" and self.mode != "sentence":
            raise ValueError(
                "a screen spares questions about single sentences: it needs mode='sentence'"
            )
        return self


class ContextRelevance(Metric):
    name = "context_relevance"
    options_model = ContextRelevanceOptions
    options: ContextRelevanceOptions
    # layout="one_read" (docs/agreement.md, "Reading a sample once") went after commit e3a29d4
    retired: ClassVar[dict[str, Any]] = {"layout": "separate"}

    @property
    def needs_embedder(self) -> bool:  # type: ignore[override]
        return self.options.screen == "embedding"

    @property
    def prompts(self) -> list[Any]:
        main = SENTENCE_NEEDED if self.options.mode == "sentence" else EXTRACT
        asks = self.options.repeat_checks == "asking"
        return [main, NEW_INFORMATION] if asks else [main]

    def _sentences(self, sample: Sample) -> list[str]:
        return passage_sentences(sample.contexts, language_of(sample))

    def _questions(
        self, sample: Sample, sentences: list[str]
    ) -> list[tuple[YesNoPrompt, Inputs, dict[str, str]]]:
        """One Yes/No question per sentence: (prompt, inputs, fields) as ``ask_yes_no`` takes
        them; the same list plans the calls and makes them."""
        return [(SENTENCE_NEEDED, {**sample.asked(), "sentence": s}, {}) for s in sentences]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        sentences = self._sentences(sample)
        if not sentences:
            return []
        if self.options.mode == "select":
            inputs = {**sample.asked(), "context": numbered(sentences)}
            return [(rendered_tokens(EXTRACT.render(inputs)), 4 + len(sentences))]
        # Without any repeat checks asked, whose number depends on the answers (a few a sample);
        # with a screen, every sentence still: what it spares is known only once it has run.
        return [
            yes_no_call(prompt.render(inputs, **fields))
            for prompt, inputs, fields in self._questions(sample, sentences)
        ]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        sentences = self._sentences(sample)
        if not sentences:
            raise Unscorable("the sample has no retrieved context")
        if self.options.mode == "select":
            return self._by_selection(sample, sentences, session)
        if self.options.screen != "none":
            return self._screened(sample, sentences, session)
        probabilities = session.ask_yes_no_all(self._questions(sample, sentences))
        return self._scored(sample, sentences, probabilities, session)

    def _screened(
        self, sample: Sample, sentences: list[str], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:
        """As the full layout, with only the sentences the screen keeps asked."""
        similarities = self._similarities(sample, sentences, session)
        kept = kept_by_similarity(similarities, self.options.keep_similarity, self.options.keep_top)
        questions = self._questions(sample, sentences)
        asked = session.ask_yes_no_all([questions[i] for i in kept])
        answers = dict(zip(kept, asked, strict=True))
        # A skipped sentence counts as not needed: P(needed) 0 for the score, None (never asked)
        # in the explanation, where it is listed with its similarity.
        value, explanation = self._scored(
            sample, sentences, [answers.get(i, 0.0) for i in range(len(sentences))], session
        )
        explanation["p_needed"] = [
            p if i in answers else None for i, p in enumerate(explanation["p_needed"])
        ]
        explanation["skipped"] = [
            {"sentence": s, "by": "embedding", "similarity": round(float(similarities[i]), 4)}
            for i, s in enumerate(sentences)
            if i not in answers
        ]
        return value, explanation

    def _similarities(
        self, sample: Sample, sentences: list[str], session: JudgeSession
    ) -> np.ndarray:
        """Each sentence's cosine similarity to what is asked (``screen_query``)."""
        vectors = session.embed([screen_query(sample), *sentences])
        return cosine_similarity(vectors[1:], vectors[0])

    def from_needed(
        self, sample: Sample, probabilities: list[float], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:
        """The score and explanation from each context sentence's P(needed), however it was
        read (a head over another reading, say), checked for repeats as the options say, as
        ``measure`` scores its own questions' answers."""
        sentences = self._sentences(sample)
        if len(probabilities) != len(sentences):
            raise ValueError(f"{len(probabilities)} P(needed) for {len(sentences)} sentences")
        return self._scored(sample, sentences, probabilities, session)

    def _scored(
        self,
        sample: Sample,
        sentences: list[str],
        probabilities: list[float],
        session: JudgeSession,
    ) -> tuple[float, dict[str, Any]]:
        new_information = (
            self._new_information(sample, sentences, probabilities, session)
            if self.options.repeat_checks == "asking"
            else {}
        )
        return self._count(sentences, probabilities, new_information)

    def _new_information(
        self,
        sample: Sample,
        sentences: list[str],
        probabilities: list[float],
        session: JudgeSession,
    ) -> dict[int, float]:
        """P(adds needed information) for each needed sentence after the first, by index.

        Only sentences that pass ``threshold`` are asked and shown as earlier ones: they are few,
        and a sentence the judge did not find needed cannot make a later one redundant.
        """
        earlier: list[str] = []
        found: dict[int, float] = {}
        for index, (sentence, p) in enumerate(zip(sentences, probabilities, strict=True)):
            if p < self.options.threshold:
                continue
            if earlier:
                inputs = {
                    **sample.asked(),
                    "earlier sentences": "\n".join(earlier),
                    "sentence": sentence,
                }
                found[index] = session.ask_yes_no(NEW_INFORMATION, inputs)
                if found[index] < 0.5:
                    continue  # more likely a repeat than new: nothing for a later one to repeat
            earlier.append(sentence)
        return found

    def _count(
        self,
        sentences: list[str],
        probabilities: list[float],
        new_information: dict[int, float],
    ) -> tuple[float, dict[str, Any]]:
        counted = [p * new_information.get(i, 1.0) for i, p in enumerate(probabilities)]
        needed = [p >= self.options.threshold for p in counted]
        barred = self.options.repeat_checks == "bar"
        if barred and any(needed):  # after the first needed sentence, only those over the bar
            first = needed.index(True)
            needed = [
                ok and (i == first or p >= self.options.repeat_bar)
                for i, (ok, p) in enumerate(zip(needed, counted, strict=True))
            ]
        value = sum(counted) if self.options.soft else sum(needed)
        explanation: dict[str, Any] = {
            "extracted_sentences": [s for s, ok in zip(sentences, needed, strict=True) if ok],
            "insufficient_information": not any(needed),
            "context_sentences": len(sentences),
            "p_needed": [round(p, 4) for p in probabilities],
        }
        if barred:
            explanation["repeat_bar"] = self.options.repeat_bar
        elif self.options.repeats:
            explanation["p_new_information"] = {
                str(i): round(p, 4) for i, p in new_information.items()
            }
        return value / len(sentences), explanation

    def _by_selection(
        self, sample: Sample, sentences: list[str], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:
        chosen = session.ask(
            EXTRACT,
            {**sample.asked(), "context": numbered(sentences)},
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
