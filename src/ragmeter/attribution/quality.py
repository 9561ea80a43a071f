"""Text quality, G-Eval style (paper §4.1): coherence, consistency, fluency, relevance on 1-5.

Each criterion is a definition and evaluation steps, written here in our own words after the
structure of the KaLMA authors' G-Eval prompt. The score is the probability-weighted mean of the
judge's next-token distribution over "1".."5" when the judge gives log-probabilities (G-Eval's
own refinement, which separates answers an integer score ties), else the integer from a parsed
JSON reply. A reply that cannot be read leaves the criterion unscored with the reason: there is
no default score.

All four prompts share one system message and put the data (question, knowledge, answer) before
the criterion, so a local judge evaluates the long shared part once for the four calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ragmeter.attribution.probe import NextTokenProbe
from ragmeter.judges.base import Judge, Message
from ragmeter.prompts import DATA_NOTICE, Prompt, render_inputs
from ragmeter.score import Score
from ragmeter.session import JudgeSession, measured

DIGITS = ("1", "2", "3", "4", "5")

SYSTEM = (
    "You grade an answer to a question on one quality criterion at a time. Read the question, "
    "the knowledge the answer was written from, and the answer; then apply the criterion and "
    "the evaluation steps that follow the data."
)


@dataclass(frozen=True)
class Criterion:
    name: str
    definition: str
    steps: tuple[str, ...]

    def text(self) -> str:
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(self.steps, 1))
        return (
            f"Criterion: {self.name.capitalize()} (1-5). {self.definition}\n\n"
            f"Evaluation steps:\n{steps}"
        )


CRITERIA: dict[str, Criterion] = {
    c.name: c
    for c in (
        Criterion(
            "coherence",
            "How well the answer holds together as a whole. A coherent answer is organised and "
            "builds from one sentence to the next into a connected account of its topic, rather "
            "than listing loosely related facts.",
            (
                "Read the question and note its topic and the points it asks about.",
                "Read the answer and check whether it covers those points in a clear, logical "
                "order, each sentence following from the ones before.",
                "Give a coherence score from 1 (lowest) to 5 (highest).",
            ),
        ),
        Criterion(
            "consistency",
            "Whether the answer agrees with the given knowledge and with itself: no statement "
            "contradicts the knowledge, and no two statements of the answer contradict each "
            "other.",
            (
                "Read the question and the knowledge.",
                "Read the answer and compare each of its claims with the knowledge, looking for "
                "contradictions with it and within the answer.",
                "Give a consistency score from 1 (lowest) to 5 (highest).",
            ),
        ),
        Criterion(
            "fluency",
            "How well the answer is written: fitting vocabulary, correct grammar and sentence "
            "structures that a reader understands without effort.",
            (
                "Read the question.",
                "Read the answer and judge the quality of its language alone.",
                "Give a fluency score from 1 (lowest) to 5 (highest).",
            ),
        ),
        Criterion(
            "relevance",
            "How directly the answer addresses the question: it answers what was asked, fully, "
            "without irrelevant or redundant material.",
            (
                "Read the question.",
                "Read the answer and check whether it answers the question completely and "
                "contains nothing beside the point.",
                "Give a relevance score from 1 (lowest) to 5 (highest).",
            ),
        ),
    )
}


class Rating(BaseModel):
    score: int = Field(ge=1, le=5)


def rating_prompt(criterion: Criterion) -> Prompt[Rating]:
    """The JSON form, used when the judge gives no log-probabilities."""
    return Prompt(
        name=f"kalma.quality.{criterion.name}",
        instruction=f"{SYSTEM}\n\n{criterion.text()}",
        output=Rating,
    )


def rating_messages(criterion: Criterion, inputs: Mapping[str, str]) -> tuple[Message, ...]:
    """The one-token form: the criterion after the data, so the four prompts share a prefix."""
    system = f"{SYSTEM}\n\n{DATA_NOTICE}\nReply with a single digit from 1 to 5."
    user = f"{render_inputs(inputs)}\n\n{criterion.text()}\n\nScore (1-5):"
    return Message(role="system", content=system), Message(role="user", content=user)


def weighted_score(distribution: Mapping[str, float]) -> float | None:
    """Expected score under the judge's distribution over "1".."5", renormalised over them."""
    mass = sum(distribution.get(d, 0.0) for d in DIGITS)
    if mass <= 0:
        return None
    return sum(int(d) * distribution.get(d, 0.0) for d in DIGITS) / mass


def rate(
    criterion: Criterion,
    inputs: Mapping[str, str],
    session: JudgeSession,
    probe: NextTokenProbe,
) -> tuple[float, dict[str, object]]:
    """Score one criterion; raises ``Unscorable`` when neither method yields a score."""
    distribution = probe.distribution(
        session, f"kalma.quality.{criterion.name}.token", rating_messages(criterion, inputs), DIGITS
    )
    if distribution is not None:
        value = weighted_score(distribution)
        if value is not None:
            mass = sum(distribution.values())
            return value, {"method": "logprobs", "distribution": distribution, "mass": mass}
    rating = session.ask(rating_prompt(criterion), inputs, max_tokens=24)
    return float(rating.score), {"method": "json"}


def text_quality(
    sample_id: str,
    inputs: Mapping[str, str],
    judge: Judge,
    probe: NextTokenProbe,
    *,
    retries: int = 2,
    criteria: Mapping[str, Criterion] = CRITERIA,
) -> dict[str, Score]:
    """One ``Score`` per criterion, each with its own exchanges and usage.

    ``inputs`` holds ``question``, ``knowledge`` and ``answer`` (citations stripped: the
    brackets are not prose and would be graded as bad fluency).
    """
    scores: dict[str, Score] = {}
    for name, criterion in criteria.items():
        session = JudgeSession(judge, retries=retries)
        scores[name] = measured(
            sample_id,
            f"quality.{name}",
            session,
            lambda criterion=criterion, session=session: rate(criterion, inputs, session, probe),
        )
    return scores
