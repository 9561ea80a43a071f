"""Ready criteria that RAG teams ask for, each usable by name (``--metrics naturalness``).

Their agreement with people, where it was measured, is in docs/criteria.md with the command
that measured it; a criterion without a figure there is unmeasured. Each is registered as a
metric (``ragmeter.plugins``) under ``ragmeter.criteria.library:NAME``, as a plugin's metric is.
"""

from __future__ import annotations

from ragmeter.criteria.definition import Criterion, Level, Reading
from ragmeter.criteria.metric import CriterionMetric


def _levels(*meanings: str, start: int = 1) -> tuple[Level, ...]:
    return tuple(Level(score=start + i, meaning=m) for i, m in enumerate(meanings))


LIBRARY: dict[str, Criterion] = {
    c.name: c
    for c in (
        Criterion(
            name="appropriate_refusal",
            compared=(
                "Which response does the right one of the two better: say that it cannot "
                "answer from the given information where the context does not contain what is "
                "asked, and answer where it does?"
            ),
            question=(
                "If the context does not contain what the question asks for, the response "
                "should say that it cannot answer from the given information instead of "
                "answering anyway; if the context does contain it, the response should answer "
                "rather than decline. Does the response do the right one of the two?"
            ),
            reads=("contexts", "history", "question", "answer"),
        ),
        Criterion(
            name="naturalness",
            compared="Which response reads more like something a person would naturally say?",
            question="Does the response read like something a person would naturally say?",
            kind="levels",
            levels=_levels(
                "No: it reads like a machine wrote it (awkward, repetitive or unnatural).",
                "Somewhat: mostly natural, with some odd or stiff wording.",
                "Yes: it reads like a person wrote it.",
            ),
            reads=("history", "question", "answer"),
        ),
        Criterion(
            name="maintains_context",
            compared="Which response is the more sensible continuation of the conversation so far?",
            question="Is the response a sensible continuation of the conversation so far?",
            kind="levels",
            levels=_levels(
                "No: it ignores or contradicts what was said before.",
                "Somewhat: it relates to the conversation but does not follow on well.",
                "Yes: it follows on naturally from what was said before.",
            ),
            reads=("history", "question", "answer"),
        ),
        Criterion(
            name="engagingness",
            compared=(
                "Which response is more interesting to read and invites the conversation on more?"
            ),
            question="Is the response interesting to read and does it invite the conversation on?",
            kind="levels",
            levels=_levels(
                "Dull: generic, says little.",
                "Somewhat interesting.",
                "Interesting: says something engaging.",
            ),
            reads=("history", "question", "answer"),
        ),
        Criterion(
            name="groundedness",
            compared=(
                "Which response uses the information in the given context more (states "
                "something from it)?"
            ),
            # Read through the claim verifier by default (the response's statements against the
            # context), which agrees with people far better than this question asked directly
            # (docs/criteria.md); the words are asked where another reading is chosen.
            question=(
                "Does the response make use of the information in the given context (it draws "
                "on a fact stated there)?"
            ),
            reads=("contexts", "history", "question", "answer"),
            reading="claims",
            # A reply that states nothing ("haha, nice") draws on no fact: a plain no.
            when_nothing_to_check=0.0,
        ),
        Criterion(
            name="completeness",
            compared=(
                "Which response answers more of the question, with more of the information a "
                "person asking it needs?"
            ),
            question=(
                "Does the response answer every part of the question, with the information a "
                "person asking it needs?"
            ),
            kind="levels",
            levels=_levels(
                "No: it answers none of what was asked.",
                "Partly: it answers a small part.",
                "Mostly: it answers most of what was asked.",
                "Fully: it answers everything asked.",
            ),
            reads=("contexts", "history", "question", "answer"),
        ),
        Criterion(
            name="coherence",
            compared=(
                "Which response is better structured and organised, each sentence building on "
                "the ones before into a connected account?"
            ),
            question=(
                "Is the response well structured and organised, each sentence building on the "
                "ones before into a connected account, rather than a heap of related facts?"
            ),
            kind="levels",
            levels=_levels(
                "Incoherent: sentences do not connect.",
                "Poor: weakly connected, hard to follow.",
                "Fair: mostly connected, with some jumps.",
                "Good: well connected.",
                "Excellent: a clear, well-built account.",
            ),
            reads=("question", "answer"),
        ),
        Criterion(
            name="consistency",
            compared=(
                "Which response keeps closer to the context: fewer statements the context does "
                "not support, less made up?"
            ),
            # As groundedness: the claim verifier by default; the levels are asked elsewise.
            question=(
                "Is every statement of the response supported by the context, with nothing made up?"
            ),
            kind="levels",
            levels=_levels(
                "Mostly made up or contradicted by the context.",
                "Several statements not supported.",
                "Some statements not supported.",
                "One small unsupported detail.",
                "Everything is supported by the context.",
            ),
            reads=("contexts", "question", "answer"),
            reading="claims",
        ),
        Criterion(
            name="fluency",
            compared=(
                "Which response has better-formed sentences: grammatical, with fewer repetitions "
                "or formatting problems, easier to read?"
            ),
            question=(
                "Is each sentence of the response well formed: grammatical, without repetition "
                "or formatting problems, easy to read?"
            ),
            kind="levels",
            levels=_levels(
                "Very poor: many sentences are broken or hard to read.",
                "Poor: several problems.",
                "Fair: a few problems.",
                "Good: minor problems only.",
                "Excellent: every sentence is well formed.",
            ),
            reads=("question", "answer"),
        ),
        Criterion(
            name="relevance",
            compared=(
                "Which response keeps better to the important content the question calls for, "
                "with less redundancy and unimportant detail?"
            ),
            question=(
                "Does the response keep to the important content the question calls for, "
                "without redundancy or unimportant detail?"
            ),
            kind="levels",
            levels=_levels(
                "Off the point: none of the important content.",
                "Little of the important content, much beside it.",
                "Some important content, some unimportant detail.",
                "Most of the important content, little beside it.",
                "The important content, and nothing beside it.",
            ),
            reads=("contexts", "question", "answer"),
        ),
    )
}
"""The ready criteria by name."""


class ReadyCriterion:
    """A ready criterion as the metric registry loads it: the factory of its metric."""

    def __init__(self, criterion: Criterion) -> None:
        self.criterion = criterion
        self.higher_is_better = criterion.higher_is_better

    def __call__(self, *, reading: Reading | None = None) -> CriterionMetric:
        return CriterionMetric(self.criterion, reading=reading)


def __getattr__(name: str) -> ReadyCriterion:
    """``ragmeter.criteria.library:NAME``, as the registry names each ready criterion."""
    if name in LIBRARY:
        return ReadyCriterion(LIBRARY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
