"""Faithfulness (RAGAS §3): the share of the answer's statements that the context supports.

1. The answer's statements:
   - ``statements="sentences"`` (default): the answer's own sentences, verified as they stand.
     Nothing is generated (about a third of this metric's time on a local judge), no claim can
     be dropped on the way (a small judge writing statements sometimes leaves sentences out),
     and nothing the judge writes can make it unscored; a sentence keeps its pronouns, which
     the verdict then reads against the context. On three human-judged sets it agreed with
     people at least as well as written statements (docs/agreement.md);
   - ``statements="generate"`` (the paper): the judge breaks the answer into short,
     self-contained statements (pronouns replaced by what they name), leaving out text that
     speaks to the judge.
2. Each statement gets a verdict against the context:
   - ``verdicts="generate"`` (the paper): one call, a brief reason then yes/no per statement;
   - ``verdicts="logprob"``: one Yes/No question per statement, read from the judge's next-token
     probabilities. The context comes first in every question, so a local judge evaluates it
     once and reuses it for each statement; no reasons are generated, which is most of the cost.
3. F = supported / total. With log-probabilities, ``soft=True`` counts each statement by its
   probability of being supported (an expected |V|), which separates answers that a hard count
   would tie; ``soft=False`` counts statements whose probability reaches ``threshold``.

When nothing was retrieved no claim can be supported, so an answer that commits to anything
scores 0 without its statements being written, and a decline ("I have no information on that")
scores 1: it makes no claim, and it is what a faithful system says when retrieval finds nothing.
Whether the answer commits is the few-token question answer relevance also asks.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from ragmeter.claims import (
    NO_CLAIM_RULE,
    SHORT_CLAIM_RULE,
    STATEMENTS,
    SUPPORTED,
    ShortClaims,
    as_checked,
    claims_only,
    parts_read,
    sort_claims,
    supported,
)
from ragmeter.language import language_of
from ragmeter.metrics.base import Metric
from ragmeter.metrics.commitment import (
    NONCOMMITTAL,
    is_noncommittal,
    planned_commitment_call,
    scored_without_context,
)
from ragmeter.options import Options, Probability
from ragmeter.prompts import (
    PlannedCalls,
    Prompt,
    approx_tokens,
    rendered_tokens,
    yes_no_call,
)
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession
from ragmeter.text import split_sentences


class NothingToVerify(Unscorable):
    """An answer that states nothing a context could support: unscored by faithfulness (there
    is nothing to be faithful or unfaithful about), but a plain "no" to a criterion that asks
    whether the answer draws on the context (``Criterion.when_nothing_to_check``)."""


class Verdict(BaseModel):
    statement: str
    reason: str
    verdict: Literal["yes", "no"]


class Verdicts(BaseModel):
    verdicts: list[Verdict]


VERDICTS = Prompt(
    name="faithfulness.verdicts",
    instruction=(
        "Consider the given context and the numbered statements, then determine whether each "
        "statement is supported by the information present in the context. Give a brief reason "
        "for each statement before arriving at the verdict: 'yes' if the context supports it, "
        "'no' if the context contradicts it or does not contain the information. Give one "
        "verdict per statement, in order."
    ),
    output=Verdicts,
    examples=[
        (
            {
                "context": "John is a student at XYZ University. He is pursuing a degree in "
                "Computer Science. He is enrolled in several courses this semester.",
                "statements": "1. John is majoring in Biology.\n"
                "2. John is a student at XYZ University.",
            },
            Verdicts(
                verdicts=[
                    Verdict(
                        statement="John is majoring in Biology.",
                        reason="The context says John studies Computer Science, not Biology.",
                        verdict="no",
                    ),
                    Verdict(
                        statement="John is a student at XYZ University.",
                        reason="The context states this directly.",
                        verdict="yes",
                    ),
                ]
            ),
        )
    ],
)


class FaithfulnessOptions(Options):
    statements: Literal["sentences", "generate"] = Field(
        "sentences",
        description="Verify the answer's own sentences as they stand (no generation), or have "
        "the judge write self-contained statements first (the paper).",
    )
    verdicts: Literal["logprob", "generate"] = Field(
        "logprob", description="Yes/No probabilities per statement, or one generated reply."
    )
    soft: bool = Field(
        True, description="Count each statement by its probability (logprob verdicts)."
    )
    threshold: Probability = Field(
        0.5, description="P(supported) that counts a statement when soft is off."
    )
    short_claims: ShortClaims = Field(
        "with_question",
        description='Verify a statement that does not stand alone ("3 euros.") as the answer '
        "to the question, or every statement as it stands.",
    )


class Faithfulness(Metric):
    name = "faithfulness"
    options_model = FaithfulnessOptions
    options: FaithfulnessOptions
    rules = (SHORT_CLAIM_RULE, NO_CLAIM_RULE)
    # layout="one_read" (docs/agreement.md, "Reading a sample once") went after commit e3a29d4
    retired: ClassVar[dict[str, Any]] = {"layout": "separate"}

    @property
    def prompts(self) -> list[Any]:
        written = [STATEMENTS] if self.options.statements == "generate" else []
        verdicts = SUPPORTED if self.options.verdicts == "logprob" else VERDICTS
        return [*written, verdicts, NONCOMMITTAL]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        """Written statements are guessed to be the answer's sentences."""
        if not sample.answer.strip():
            return []
        if not sample.contexts:
            return [planned_commitment_call(sample.answer)]
        sentences = split_sentences(sample.answer, language_of(sample))
        calls: PlannedCalls = []
        if self.options.statements == "generate":
            asked = STATEMENTS.in_language(language_of(sample)).render(
                {**sample.asked(), "answer": sample.answer}
            )
            calls.append(
                (rendered_tokens(asked), approx_tokens(json.dumps({"statements": sentences})))
            )
        if not sentences:
            return calls
        if self.options.verdicts == "logprob":
            return calls + [
                yes_no_call(SUPPORTED.render({"context": sample.contexts, "statement": s}))
                for s in as_checked(sentences, self._question(sample))
            ]
        listed = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
        verdicts = VERDICTS.render({"context": sample.contexts, "statements": listed})
        # Each verdict repeats its statement and adds a reason of about 20 tokens.
        written = sum(approx_tokens(s) + 20 for s in sentences)
        return [*calls, (rendered_tokens(verdicts), written)]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        if not sample.answer.strip():
            raise Unscorable("the answer is empty")
        if not sample.contexts:
            return scored_without_context(is_noncommittal(sample.answer, session))
        if self.options.statements == "sentences":
            statements = split_sentences(sample.answer, language_of(sample))
        else:
            statements = session.ask(
                STATEMENTS.in_language(language_of(sample)),
                {**sample.asked(), "answer": sample.answer},
                max_tokens=768,
                check=claims_only,
            ).statements
        statements, no_claims = sort_claims(statements, sample.question)
        if not statements:
            raise NothingToVerify("the answer yields no statements to verify")
        if self.options.verdicts == "logprob":
            value, explanation = self._by_probability(sample, statements, session)
        else:
            value, explanation = self._by_generation(sample, statements, session)
        return value, ({**explanation, "no_claim": no_claims} if no_claims else explanation)

    def _question(self, sample: Sample) -> str | None:
        """The question short statements are verified as the answer to, if they are."""
        return sample.question if self.options.short_claims == "with_question" else None

    def _by_probability(
        self, sample: Sample, statements: list[str], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:
        explanation: dict[str, Any] = {}
        checked = as_checked(statements, self._question(sample))
        language = language_of(sample)
        blocks = [(checked, [sample.contexts])]
        probabilities = supported(session, blocks, language)[0][:, 0].tolist()
        parts = len(parts_read(session, sample.contexts, checked, language))
        if parts > 1:
            explanation["parts"] = (
                f"the context exceeds the judge's window: read in {parts} parts, a "
                "statement supported as far as its best-supporting part supports it"
            )
        verdicts = [p >= self.options.threshold for p in probabilities]
        value = sum(probabilities) if self.options.soft else sum(verdicts)
        explanation["statements"] = [
            {"statement": s, "verdict": "yes" if ok else "no", "p_supported": round(p, 4)}
            for s, p, ok in zip(statements, probabilities, verdicts, strict=True)
        ]
        return value / len(statements), explanation

    def _by_generation(
        self, sample: Sample, statements: list[str], session: JudgeSession
    ) -> tuple[float, dict[str, Any]]:

        def right_count(reply: Verdicts) -> str | None:
            if len(reply.verdicts) != len(statements):
                return f"expected {len(statements)} verdicts, got {len(reply.verdicts)}"
            return None

        numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
        verdicts = session.ask(
            VERDICTS,
            {"context": sample.contexts, "statements": numbered},
            max_tokens=96 + 96 * len(statements),
            check=right_count,
        ).verdicts
        supported = sum(v.verdict == "yes" for v in verdicts)
        explanation = {
            "statements": [
                {"statement": s, "verdict": v.verdict, "reason": v.reason}
                for s, v in zip(statements, verdicts, strict=True)
            ]
        }
        return supported / len(statements), explanation
