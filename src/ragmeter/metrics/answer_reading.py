"""A short reference read as the answer to its question: does a text give this answer?

Checked as claims, a short reference says little: "3 euros." is one fragment, "No." not even a
claim, and a right answer that says more than the reference ("It costs 3 euros for a child")
loses precision for every true detail it adds. Read as the answer to its question, each of the
reference's acceptable answers (``answers.short_answers``) is one Yes/No question: does the
text (the candidate answer, or a retrieved chunk) give this answer to the question? The best
alternative decides, and the explanation names it.

Two rules come before the judge: a text equal to an accepted answer once both are
SQuAD-normalised gives it (probability 1, no call), and an answer that hedges between answers
(``answers.hedged``: "either 1998 or 1999") gives none (0, no call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ragmeter.answers import SHORT_REFERENCE_RULE, polarity, short_answers, squad_normalised
from ragmeter.claims import parts_read
from ragmeter.language import language_of
from ragmeter.metrics.claim_metric import ClaimOptions
from ragmeter.prompts import PlannedCalls, YesNoPrompt, yes_no_call
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession, Question

Reading = Literal["auto", "claims", "answer"]

GIVES_ANSWER = YesNoPrompt(
    name="answer.gives",
    instruction=(
        "You check a text's answer to a question against the reference answer, which is "
        "correct; it is often a short phrase, a number, a date, or a bare yes or no. First find "
        "what the text answers to the question, then compare it with the reference answer. Say "
        "Yes if the two are the same answer, whatever the wording: a full sentence, other words "
        "for the same thing, or more detail around it. Say No if they differ in what matters "
        "(another name, another number or date, yes against no), if the text gives no answer to "
        "the question, or if it leaves the question open between several answers."
    ),
    question="Is the text's answer to the question the same as the reference answer?",
)
"""One check of one acceptable answer against one text; the text comes before the reference
answer, so a local judge reads the question and the text once for all the alternatives. Asked
after the data: on crafted cases (a right answer in a sentence, a wrong number, a wrong name)
it separated right from wrong better there than stated first."""

READING_RULE = (
    f"{SHORT_REFERENCE_RULE}; a text equal to an accepted answer (SQuAD-normalised) gives it "
    "without a check, a text opening with yes or no gives a bare yes or no alike and the "
    "opposite one not; the best alternative decides"
)
"""What decides a short reading besides its prompt, for the metrics' versions."""


class ReadingOptions(ClaimOptions):
    reading: Reading = Field(
        "auto",
        description="How the reference is read: 'auto' picks per sample (a short reference, "
        "or a list of acceptable answers, as the answer to its question; a longer one as "
        "claims); 'claims' or 'answer' reads every sample so.",
    )


def answers_to_read(sample: Sample, reading: Reading) -> list[str] | None:
    """The acceptable answers ``sample`` is read against as the answer to its question, or
    None where its reference is read as claims."""
    if reading == "claims":
        return None
    short = short_answers(sample)
    if short is None and reading == "answer":
        return [(sample.reference or "").strip()]
    return short


def _checks(
    session: JudgeSession | None, sample: Sample, accepted: Sequence[str], texts: Sequence[str]
) -> tuple[list[Question], list[tuple[int, int, int]], np.ndarray]:
    """The questions to ask, where each answer lands ((alternative, text, how many parts of
    the text)) and the probabilities known without asking: 1 for an exact match; for a text
    that opens with yes or no, 0 against the opposite word, 1 against a bare same word. (A
    small judge reads yes against no poorly: "Yes, it is visible." scored 0.7 against "No.")"""
    known = np.full((len(accepted), len(texts)), np.nan)
    questions: list[Question] = []
    places: list[tuple[int, int, int]] = []
    language = language_of(sample)
    asked = sample.asked()
    for k, text in enumerate(texts):
        said = squad_normalised(text)
        read = parts_read(session, text, accepted, language) if session else [text]
        for i, gold in enumerate(accepted):
            if said and said == squad_normalised(gold):
                known[i, k] = 1.0
                continue
            if polarity(text) and polarity(gold):
                if polarity(text) != polarity(gold):
                    known[i, k] = 0.0
                    continue
                if squad_normalised(gold) == polarity(gold):
                    known[i, k] = 1.0
                    continue
            places.append((i, k, len(read)))
            questions += [
                (GIVES_ANSWER, {**asked, "text": part, "reference answer": gold}, {})
                for part in read
            ]
    return questions, places, known


def given(
    session: JudgeSession, sample: Sample, accepted: Sequence[str], texts: Sequence[str]
) -> np.ndarray:
    """P(text k gives accepted answer i) as ``out[i, k]``, all asked in one batch; a text too
    long for the judge is read in parts (``claims.parts_read``), the best part deciding."""
    questions, places, known = _checks(session, sample, accepted, texts)
    answers = session.ask_yes_no_all(questions) if questions else []
    start = 0
    for i, k, parts in places:
        known[i, k] = max(answers[start : start + parts])
        start += parts
    return known


def planned(sample: Sample, accepted: Sequence[str], texts: Sequence[str]) -> PlannedCalls:
    """The calls ``given`` makes, for cost estimates before a run."""
    questions, _, _ = _checks(None, sample, accepted, texts)
    return [yes_no_call(prompt.render(inputs)) for prompt, inputs, _ in questions]


def explained(
    accepted: Sequence[str], best: Sequence[float | None], threshold: float
) -> dict[str, Any]:
    """The reading for a score's explanation: each alternative with the probability that it is
    given (the best over the texts; None where it was not asked, another having matched
    exactly), and the alternative that matched (None: none reached ``threshold``)."""
    asked = [-1.0 if p is None else float(p) for p in best]
    top = max(range(len(asked)), key=asked.__getitem__, default=None)
    return {
        "reading": "answer",
        "alternatives": [
            {"answer": gold, "p_given": None if p is None else round(float(p), 4)}
            for gold, p in zip(accepted, best, strict=True)
        ],
        "matched": accepted[top] if top is not None and asked[top] >= threshold else None,
    }


def exactly_given(answer: str, accepted: Sequence[str]) -> dict[str, Any] | None:
    """The explanation of an answer equal to an accepted answer once both are SQuAD-normalised:
    right without asking the judge about any alternative. None where it equals none."""
    said = squad_normalised(answer)
    for position, gold in enumerate(accepted):
        if said and said == squad_normalised(gold):
            shown = [1.0 if i == position else None for i in range(len(accepted))]
            return {**explained(accepted, shown, 1.0), "exact_match": True}
    return None


__all__ = [
    "GIVES_ANSWER",
    "READING_RULE",
    "ReadingOptions",
    "answers_to_read",
    "exactly_given",
    "explained",
    "given",
    "planned",
]
