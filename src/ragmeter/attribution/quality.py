"""Text quality, G-Eval style (paper §4.1): coherence, consistency, fluency, relevance on 1-5.

The four are the ready criteria of the same names (``ragmeter.criteria.library``), asked as the
paper asks them: one 1-5 rating each, read directly as the expected level under the judge's
distribution over "1".."5" (G-Eval's own refinement, which separates answers an integer score
ties), or the digit the judge writes when it gives no log-probabilities. A reply that names no
level leaves the criterion unscored with the reason: there is no default score.

The knowledge graph is the criteria's context, and every criterion puts the data before its own
words, so a local judge evaluates the long shared part once for the four.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragmeter.criteria import LIBRARY, Criterion, CriterionMetric
from ragmeter.judges.base import Judge
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.session import JudgeSession

CRITERIA: dict[str, Criterion] = {
    name: Criterion.model_validate(
        {
            **LIBRARY[name].described(),
            "reading": "direct",
            "reads": ["contexts", "question", "answer"],
        }
    )
    for name in ("coherence", "consistency", "fluency", "relevance")
}
"""The paper's four, each a 1-5 rating read directly."""


def quality_version() -> list[str]:
    """What the scores depend on besides the judge: each criterion metric's version."""
    return [CriterionMetric(c).version for c in CRITERIA.values()]


def text_quality(
    sample_id: str,
    inputs: Mapping[str, str],
    judge: Judge,
    *,
    retries: int = 2,
    criteria: Mapping[str, Criterion] = CRITERIA,
) -> dict[str, Score]:
    """One ``Score`` per criterion on the paper's 1-5 scale, each with its own exchanges and
    usage.

    ``inputs`` holds ``question``, ``knowledge`` and ``answer`` (citations stripped: the
    brackets are not prose and would be graded as bad fluency).
    """
    sample = Sample(
        id=sample_id,
        question=inputs["question"],
        contexts=[inputs["knowledge"]],
        answer=inputs["answer"],
    )
    scores: dict[str, Score] = {}
    for name, criterion in criteria.items():
        score = CriterionMetric(criterion).score(sample, JudgeSession(judge, retries=retries))
        low, high = criterion.scale
        value = None if score.value is None else low + score.value * (high - low)
        scores[name] = score.model_copy(update={"metric": f"quality.{name}", "value": value})
    return scores
