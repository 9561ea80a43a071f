"""Asking the judge a criterion: the prompts, and the readings that turn its replies into a score.

Every question about a sample renders the same system message and the sample's fields first, and
the criterion after them, so that the criteria of one sample share the sample as a prefix: a
local judge reads the sample once, then only each criterion's own words. Each question is one
read of the judge's next-token probabilities (of Yes, or of each level's digit), after the
judge's own written feedback in the ``reasoned`` reading.

The readings:

- ``direct``: the criterion asked as written: P(Yes); the distribution over the levels; a
  checklist's requirements one by one, P(met) each.
- ``yes_no``: a ``levels`` criterion's question asked as Yes or No, P(Yes) put on its scale;
- ``reasoned``: the judge first writes a sentence or two on how the response meets the
  criterion, then is asked for its verdict (Yes or No, or a level's digit), read as ``direct``
  reads it: a written chain of thought, as ragas's rubric metrics and G-Eval ask, with the verdict
  still read as probabilities.
- ``per_sentence``: the criterion asked of each sentence of the answer (as faithfulness asks of
  each statement), the sentences' scores averaged.
- ``claims``: a support criterion (consistency, groundedness) scored by the claim verifier: the
  faithfulness of the answer to the contexts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.criteria.definition import RUBRIC_FIELD, Criterion, Requirement
from ragmeter.judges.base import Message
from ragmeter.prompts import DATA_NOTICE, Inputs, YesNoPrompt, render_inputs, writing_in
from ragmeter.sample import Sample
from ragmeter.score import Unscorable

SYSTEM = (
    "You judge a response against one criterion at a time. The data comes first; the "
    "criterion, and how to reply, follow it."
)
FIELD_ORDER = ("contexts", "history", "question", "reference", "answer")
"""Long text that several answers share (the contexts, the conversation) comes first, so that
the answers to one question also share it as a prefix."""
_TAGS = {"contexts": "context", "answer": "response"}


@dataclass(frozen=True)
class CriterionPrompt(YesNoPrompt):
    """A question about a sample, asked after it: ``question`` is everything that follows the
    data (the criterion, its examples and the reply wanted). The system message (the
    ``instruction``) is one for every criterion: ``SYSTEM``, or the side-by-side reading's."""

    @property
    def version(self) -> str:
        material = json.dumps([self.instruction, DATA_NOTICE, self.question])
        return hashlib.sha256(material.encode()).hexdigest()[:12]

    def render(self, inputs: Inputs, **fields: str) -> tuple[Message, ...]:
        system = f"{self.instruction}\n\n{DATA_NOTICE}"
        user = f"{render_inputs(inputs)}\n\n{self.question}"
        return (Message(role="system", content=system), Message(role="user", content=user))


def missing_field(criterion: Criterion, sample: Sample) -> str | None:
    """The first field ``criterion`` needs that ``sample`` lacks, or None. The conversation
    (``history``) is shown where there is one: a first turn has none."""
    present = {"contexts": bool(sample.contexts), "reference": bool(sample.reference)}
    for field in criterion.reads:
        if not present.get(field, True):
            return field
    if criterion.sample_rubric() and not sample.metadata.get(RUBRIC_FIELD):
        return RUBRIC_FIELD
    return None


def sample_inputs(criterion: Criterion, sample: Sample) -> dict[str, str | list[str]]:
    """The fields ``criterion`` reads, tagged and in the shared order."""
    values: dict[str, str | list[str]] = {
        "contexts": sample.contexts,
        "question": sample.question,
        "answer": sample.answer,
        "reference": sample.reference or "",
    }
    if sample.history:
        values["history"] = _conversation(sample)
    return {_TAGS.get(f, f): values[f] for f in FIELD_ORDER if f in criterion.reads and f in values}


def _conversation(sample: Sample) -> str:
    asked = sample.asked()
    return next(text for name, text in asked.items() if name != "question")


def _examples(criterion: Criterion, reply_of: Any) -> str:
    """The criterion's examples with the reply each should get; an example ``reply_of`` gives
    no reply for (None) is not shown."""
    replies = [(e, reply_of(e.label)) for e in criterion.examples]
    shown = [
        f"<example>\n{render_inputs({_TAGS.get(k, k): v for k, v in e.fields.items()})}\n"
        f"Reply: {reply}\n</example>"
        for e, reply in replies
        if reply is not None
    ]
    if not shown:
        return ""
    return "Examples of this criterion judged:\n" + "\n".join(shown) + "\n\n"


def _yes_or_no(criterion: Criterion) -> Any:
    """How an example's label reads as Yes or No: as it is, or for a level, Yes above the
    middle of the scale and No below it (a level at the middle is no example of either)."""
    if criterion.kind != "levels":
        return lambda label: str(label).capitalize()
    low, high = criterion.scale
    middle = (low + high) / 2

    def reply(label: str | float) -> str | None:
        level = float(label)
        return None if level == middle else "Yes" if level > middle else "No"

    return reply


def level_digits(criterion: Criterion) -> list[str]:
    """The digits that name the levels, 1 to N, as the judge is asked to reply."""
    return [str(n) for n in range(1, len(criterion.levels) + 1)]


def _level_digit(criterion: Criterion, label: str | float) -> str:
    """The digit that names the level an example is labelled with (checked by ``Criterion``)."""
    return next(
        str(n) for n, level in enumerate(criterion.levels, 1) if float(label) == level.score
    )


YES_OR_NO = "Answer with one word, Yes or No."


def _as_yes_no(criterion: Criterion) -> str:
    """The criterion asked as Yes or No, with its examples: all but the reply wanted."""
    return f"{_examples(criterion, _yes_or_no(criterion))}Criterion: {criterion.question}"


def _as_levels(criterion: Criterion) -> tuple[str, str]:
    """The criterion with its levels and examples, and the reply wanted: a level's digit."""
    listed = "\n".join(f"{n}: {level.meaning}" for n, level in enumerate(criterion.levels, 1))
    asked = (
        f"{_examples(criterion, lambda label: _level_digit(criterion, label))}"
        f"Criterion: {criterion.question}\nLevels:\n{listed}"
    )
    last = len(criterion.levels)
    return (
        asked,
        f"Which level fits the response? Reply with its number, one digit from 1 to {last}.",
    )


def yes_no_prompt(criterion: Criterion) -> CriterionPrompt:
    block = f"{_as_yes_no(criterion)}\n{YES_OR_NO}"
    return CriterionPrompt(name=f"criterion.{criterion.name}", instruction=SYSTEM, question=block)


def levels_prompt(criterion: Criterion) -> CriterionPrompt:
    asked, reply = _as_levels(criterion)
    return CriterionPrompt(
        name=f"criterion.{criterion.name}", instruction=SYSTEM, question=f"{asked}\n{reply}"
    )


FEEDBACK = (
    "First say, in one or two short sentences, how the response meets the criterion and where "
    "it falls short. Do not give your verdict yet."
)
FEEDBACK_TOKENS = 80
"""The most the judge may write before its verdict: two short sentences."""


@dataclass(frozen=True)
class ReasonedPrompt(CriterionPrompt):
    """The ``reasoned`` reading: the judge first writes why (``question`` ends by asking for
    that), then, shown its own words, is asked ``verdict``, whose next token is read. Writing
    first is how ragas's rubric metrics and G-Eval's chain of thought ask; reading the verdict's
    probabilities rather than the written digit keeps the score graded."""

    verdict: str = ""

    @property
    def version(self) -> str:
        material = json.dumps([self.instruction, DATA_NOTICE, self.question, self.verdict])
        return hashlib.sha256(material.encode()).hexdigest()[:12]

    def in_language(self, language: str) -> ReasonedPrompt:
        """This prompt asking for its feedback in ``language`` (``prompts.writing_in``): itself
        for English."""
        sentence = writing_in(language)
        return self if sentence is None else replace(self, question=f"{self.question}\n{sentence}")

    def render(self, inputs: Inputs, **fields: str) -> tuple[Message, ...]:
        """Without ``feedback``: the request for it; with it, the whole exchange and the
        verdict asked."""
        asked = super().render(inputs)
        if "feedback" not in fields:
            return asked
        return (
            *asked,
            Message(role="assistant", content=fields["feedback"]),
            Message(role="user", content=self.verdict),
        )


def reasoned_prompt(criterion: Criterion) -> ReasonedPrompt:
    """A ``yes_no`` criterion ends in Yes or No; a ``levels`` one in a level's digit."""
    if criterion.kind == "levels":
        asked, verdict = _as_levels(criterion)
    else:
        asked, verdict = _as_yes_no(criterion), YES_OR_NO
    return ReasonedPrompt(
        name=f"criterion.{criterion.name}.reasoned",
        instruction=SYSTEM,
        question=f"{asked}\n{FEEDBACK}",
        verdict=verdict,
    )


def requirement_prompt(
    criterion: Criterion, number: int, requirement: Requirement
) -> CriterionPrompt:
    """One requirement of a shared checklist: the team's words, so part of the prompt. The
    examples answer the first requirement, so they are shown with it alone."""
    examples = _examples(criterion, _yes_or_no(criterion)) if number == 1 else ""
    return CriterionPrompt(
        name=f"criterion.{criterion.name}.requirement{number}",
        instruction=SYSTEM,
        question=(
            f"{examples}Criterion: {criterion.question}\n"
            f"Requirement: {requirement.text}\n"
            f"Does the response meet this requirement? {YES_OR_NO}"
        ),
    )


def rubric_prompt(criterion: Criterion) -> CriterionPrompt:
    """A requirement of the sample's own checklist: shown as data (``<requirement>``), so one
    prompt, of one version, asks every sample's requirements (such a criterion has no
    examples: no requirement is shared for them to answer)."""
    return CriterionPrompt(
        name=f"criterion.{criterion.name}.requirement",
        instruction=SYSTEM,
        question=(
            f"Criterion: {criterion.question}\n"
            "Does the response meet the requirement in <requirement>? Answer with one word, "
            "Yes or No."
        ),
    )


def sentence_prompt(prompt: CriterionPrompt) -> CriterionPrompt:
    """``prompt`` asked of one sentence of the response, shown as data after it
    (``<sentence>``), so every sentence shares the sample and one prompt version."""
    return CriterionPrompt(
        name=f"{prompt.name}.sentence",
        instruction=SYSTEM,
        question=f"Judge only the sentence of the response shown in <sentence>.\n{prompt.question}",
    )


def sample_requirements(criterion: Criterion, sample: Sample) -> tuple[Requirement, ...]:
    """The checklist that applies to ``sample``: the criterion's, or the sample's ``rubric``
    (a list of texts or of ``{text, weight}``; ``criterion``/``points`` as HealthBench names
    them; JSON text in a CSV cell)."""
    if not criterion.sample_rubric():
        assert isinstance(criterion.requirements, tuple)
        return criterion.requirements
    raw = sample.metadata.get(RUBRIC_FIELD)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raw = [line for line in raw.splitlines() if line.strip()]
    if not isinstance(raw, list) or not raw:
        raise Unscorable(f"the sample's {RUBRIC_FIELD!r} is not a list of requirements")
    requirements = []
    for number, item in enumerate(raw, 1):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, Mapping):
            raise Unscorable(f"{RUBRIC_FIELD} item {number} is neither a text nor an object")
        text = item.get("text", item.get("criterion", item.get("requirement")))
        weight = item.get("weight", item.get("points", 1.0))
        try:
            requirements.append(Requirement(text=text, weight=weight))
        except ValueError as exc:
            raise Unscorable(f"{RUBRIC_FIELD} item {number}: {exc}") from None
    if not any(r.weight > 0 for r in requirements):
        raise Unscorable(f"the sample's {RUBRIC_FIELD} has no requirement of positive weight")
    return tuple(requirements)


def checklist_score(requirements: Sequence[Requirement], met: Sequence[float]) -> float:
    """Expected points over the points available, within 0-1: a met requirement of negative
    weight takes its points away (HealthBench's count, with P(met) for met)."""
    available = sum(r.weight for r in requirements if r.weight > 0)
    points = sum(r.weight * p for r, p in zip(requirements, met, strict=True))
    return min(1.0, max(0.0, points / available))


def expected_level(criterion: Criterion, distribution: Mapping[str, float]) -> float:
    """The expected score under a distribution over the levels' digits."""
    return sum(level.score * distribution[str(n)] for n, level in enumerate(criterion.levels, 1))


def on_unit_scale(criterion: Criterion, value: float) -> float:
    low, high = criterion.scale
    return (value - low) / (high - low)
