"""A criterion written in words: what a team asks of its answers beyond the RAGAS questions.

A criterion has a name (its metric's name and column), the question or instructions the judge
reads, and one of three kinds:

- ``yes_no``: the score is the judge's probability of Yes;
- ``levels``: each level a score and what it means ("1: reads like a machine", "3: reads like a
  person"); the score is the expected level under the judge's distribution, put on 0-1;
- ``checklist``: requirements with weights, a negative weight for what must not happen, shared by
  every sample or carried by each (the sample's ``rubric`` field); the score is the expected
  points over the points available, as HealthBench counts them.

It says which fields of a sample it reads, and may carry labelled examples shown to the judge.
Every word of it is part of its identity (``CriterionMetric.version``): a changed word judges
again, an unchanged definition never does.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Kind = Literal["yes_no", "levels", "checklist"]
SampleField = Literal["question", "contexts", "answer", "reference", "history"]
Reading = Literal["auto", "direct", "yes_no", "reasoned", "per_sentence", "claims"]
"""How the judge is asked (``ragmeter.criteria.asking``): ``auto`` takes the kind's default."""

READS = ("question", "contexts", "answer")
RUBRIC_FIELD = "rubric"
"""The sample field (a column, kept in ``Sample.metadata``) holding a checklist of its own."""
SAMPLE = "sample"
MAX_LEVELS = 9
"""Levels are read as one digit each, so at most nine."""
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class FieldProblem(ValueError):
    """A definition that does not fit its kind, and the field that says so."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _number(label: str | float) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None


class Level(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float
    meaning: str = Field(min_length=1)


class Requirement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    weight: float = 1.0
    """Points when met; negative for what must not happen (met: points lost)."""

    @field_validator("weight")
    @classmethod
    def _not_zero(cls, value: float) -> float:
        if value == 0:
            raise ValueError("a requirement's weight cannot be 0")
        return value


class Example(BaseModel):
    """A labelled example shown to the judge: the fields it reads, and the right reply (Yes or
    No; a level's score; for a checklist, Yes or No to its first requirement, shown with that
    requirement alone)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, str]
    label: str | float
    """Yes or No; for ``levels``, a level's score."""


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    question: str = Field(min_length=1)
    """What the judge is asked; for ``levels`` and ``checklist`` the instructions above them."""
    kind: Kind = "yes_no"
    levels: tuple[Level, ...] = ()
    requirements: tuple[Requirement, ...] | Literal["sample"] = ()
    """A shared checklist, or ``"sample"``: each sample's ``rubric`` field."""
    reads: tuple[SampleField, ...] = READS
    examples: tuple[Example, ...] = ()
    reading: Reading = "auto"
    higher_is_better: bool = True
    """False for a criterion that names a fault ("does it invent a policy?")."""
    when_nothing_to_check: float | None = Field(default=None, ge=0.0, le=1.0)
    """The score (0-1) of the ``claims`` reading for an answer that states nothing to check:
    0 where the criterion asks whether the answer draws on the context (a reply that states
    nothing uses no knowledge). None leaves such an answer unscored, where the answer is plainly
    neither yes nor no."""
    compared: str | None = Field(default=None, min_length=1)
    """The criterion asked of two responses side by side ("Which response uses the knowledge
    more?"); None asks the question as written, of the two (``side_by_side.comparative``)."""

    @field_validator("name")
    @classmethod
    def _a_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"{value!r} is not a usable name: lower-case letters, digits and _, starting "
                "with a letter (it names the metric and its column)"
            )
        return value

    @field_validator("reads")
    @classmethod
    def _reads_something(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if "answer" not in value and "contexts" not in value:
            # A criterion of the contexts alone judges what a retriever returned.
            raise ValueError(
                "a criterion judges the answer or the contexts: 'reads' must include one"
            )
        return tuple(dict.fromkeys(value))

    @field_validator("levels")
    @classmethod
    def _ordered_levels(cls, value: tuple[Level, ...]) -> tuple[Level, ...]:
        scores = [level.score for level in value]
        if len(set(scores)) != len(scores):
            raise ValueError("two levels have the same score")
        return tuple(sorted(value, key=lambda level: level.score))

    @model_validator(mode="after")
    def _fits_its_kind(self) -> Criterion:
        if self.kind == "levels" and not 2 <= len(self.levels) <= MAX_LEVELS:
            raise FieldProblem("levels", f"a 'levels' criterion needs 2 to {MAX_LEVELS} levels")
        if self.kind != "levels" and self.levels:
            raise FieldProblem("levels", f"'levels' is given, but the kind is {self.kind!r}")
        if self.kind == "checklist" and not self.requirements:
            raise FieldProblem("requirements", "a 'checklist' needs requirements, or 'sample'")
        positive = self.requirements == SAMPLE or any(r.weight > 0 for r in self.requirements)
        if self.kind == "checklist" and not positive:
            raise FieldProblem("requirements", "a checklist needs a requirement of positive weight")
        if self.kind != "checklist" and self.requirements:
            raise FieldProblem(
                "requirements", f"'requirements' is given, but the kind is {self.kind!r}"
            )
        if self.reading == "yes_no" and self.kind != "levels":
            raise FieldProblem("reading", "reading 'yes_no' is a way to ask levels: kind 'levels'")
        if self.reading in ("per_sentence", "reasoned") and self.kind == "checklist":
            raise FieldProblem(
                "reading", f"a checklist is asked requirement by requirement, not {self.reading!r}"
            )
        if self.reading == "claims" and "contexts" not in self.reads:
            raise FieldProblem(
                "reading", "reading 'claims' checks the answer against 'contexts': read them"
            )
        if self.examples and self.requirements == SAMPLE:
            raise FieldProblem(
                "examples",
                "each sample carries its own checklist, so no example can say which "
                "requirement it answers",
            )
        scores = {level.score for level in self.levels}
        for number, example in enumerate(self.examples, 1):
            if self.kind == "levels" and _number(example.label) not in scores:
                raise FieldProblem(
                    "examples", f"example {number}: the label is not one of the levels' scores"
                )
            if self.kind != "levels" and str(example.label).lower() not in ("yes", "no"):
                raise FieldProblem("examples", f"example {number}: the label is Yes or No")
            unread = sorted(set(example.fields) - set(self.reads))
            if unread:
                raise FieldProblem(
                    "examples", f"example {number} has fields the criterion does not read: {unread}"
                )
        return self

    @property
    def scale(self) -> tuple[float, float]:
        """The range people rate this criterion on: its levels' scores, else 0-1."""
        if self.kind == "levels":
            return self.levels[0].score, self.levels[-1].score
        return 0.0, 1.0

    def sample_rubric(self) -> bool:
        return self.requirements == SAMPLE

    def described(self, *, read_alone: bool = False) -> dict[str, Any]:
        """The definition as data: the run record and the metric's version. ``read_alone``
        leaves out the side-by-side wording, which plays no part in scoring one answer."""
        return self.model_dump(
            mode="json", exclude_defaults=False, exclude={"compared"} if read_alone else None
        )
