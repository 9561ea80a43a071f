"""Answer relevance (RAGAS §3): does the answer address the question that was asked?

A non-committal answer ("I don't know", evasions) scores 0, as in ragas. What the score is
otherwise made of is ``score``:

- ``"completeness"`` (default): the judge's probability that the answer addresses every part of
  the question, one Yes/No forward pass. On WikiEval the paper's similarity barely moves for an
  answer that covers one half of a two-part question (a short partial answer even yields
  questions closer to the original), while asking directly separates them. Whether the answer
  is non-committal is asked first, in a reply of a few tokens with two worked examples (asked
  as a Yes/No question instead, the small local judge did not separate evasions from answers);
- ``"similarity"`` (the paper): the judge writes n questions that the answer would answer
  (without seeing the real one) and says whether the answer is non-committal; the score is the
  mean cosine similarity between the real question and the generated ones.

``against`` says what completeness is judged against. ``"question"`` (default) is the paper's
reference-free reading: the question and the answer only. ``"context"`` judges it against what
the retrieved context holds for the question, nearer to how MTRAG's annotators rated
completeness (docs/agreement.md): an answer is complete when it gives everything the context
says that the question asks for, or, when the context does not hold it, says so. The score is
then P(the context holds it) x P(the answer gives all of it) for an answer that commits, and
1 - P(the context holds it) for one that declines, where ``"question"`` scores every decline 0;
with no context at all, a decline scores 1 and an answer that commits 0. The two probes share
the context as a prefix, which a local judge reads once.

An answer none of whose sentences claims anything (``claims.claims_nothing``: it only asks back,
or says the question again, "You are asking when the tower was completed.") scores 0 before the
judge is asked, its sentences listed under ``no_claim``: the small judge finds such an echo on
topic and complete. The judge still reads the whole of any other answer: a list of questions
can be what was asked for ("What should I ask a lawyer?").

``off_topic_below`` (0.05 by default) scores 0, before the judge is asked, an answer whose
embedding's cosine is below it with the question's and with every retrieved passage's: it shares
no meaning with what was asked nor with what was found for it. It guards a gate against an
answer that ignores the question and says, in words aimed at the judge, that it addresses it:
the judge can be talked round (docs/reliability.md, "Hostile input"), an embedding cannot. The
passages count because a short answer drawn from them ("Delete snapshot versions.") can sit far
from a terse follow-up question. None turns it off.

The generated questions and their similarities are kept in the explanation where they were
written.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, Field, model_validator

from ragmeter.claims import CLAIM_RULES, NO_CLAIM_RULE, claims_nothing
from ragmeter.judges.base import cosine_similarity
from ragmeter.language import language_of
from ragmeter.metrics.base import Metric
from ragmeter.metrics.commitment import (
    COMMITTED,
    EVASIVE,
    NONCOMMITTAL,
    is_noncommittal,
    planned_commitment_call,
    scored_without_context,
)
from ragmeter.options import Options
from ragmeter.prompts import (
    PlannedCalls,
    Prompt,
    YesNoPrompt,
    exactly,
    rendered_tokens,
    yes_no_call,
)
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


class GeneratedQuestions(BaseModel):
    questions: list[str]  # first: the judge writes them before it says whether it commits
    noncommittal: bool


def _n_questions(n: int, *questions: str, more: str) -> list[str]:
    """Exactly ``n`` example questions: the first ``n`` given, then ``more`` as often as needed."""
    return [*questions[:n], *[more] * max(0, n - len(questions))]


def questions_prompt(n: int) -> Prompt[GeneratedQuestions]:
    output = exactly(GeneratedQuestions, "questions", n)
    return Prompt(
        name="answer_relevance.questions",
        instruction=(
            f"Write {n} different questions that the given answer answers, each one a question "
            "a user could have asked to receive exactly this answer. Also say whether the answer "
            "is noncommittal: true if it is evasive, vague or ambiguous (for example 'I don't "
            "know' or 'I'm not sure'), false if it commits to an answer."
        ),
        output=output,
        examples=[
            (
                {"answer": COMMITTED},
                output(
                    questions=_n_questions(
                        n,
                        "Where was Albert Einstein born?",
                        "In which country was Albert Einstein born?",
                        "What is Albert Einstein's country of birth?",
                        more="Where does Albert Einstein come from?",
                    ),
                    noncommittal=False,
                ),
            ),
            (
                {"answer": EVASIVE},
                output(
                    questions=_n_questions(
                        n,
                        "What was the groundbreaking feature of the smartphone invented in 2023?",
                        "Which new feature did the 2023 smartphone introduce?",
                        "What made the smartphone invented in 2023 special?",
                        more="What is new about the 2023 smartphone?",
                    ),
                    noncommittal=True,
                ),
            ),
        ],
    )


COMPLETE = YesNoPrompt(
    name="answer_relevance.complete",
    instruction=(
        "You judge whether an answer addresses its question. Say Yes only if the answer "
        "responds directly to every part of the question. Say No if it leaves part of the "
        "question unanswered, evades it, or answers a different question. Do not judge whether "
        "the answer is true."
    ),
    question="Does the answer address every part of the question?",
)

# Both context probes say the same before the data, so the second reads only its own end.
_AGAINST_CONTEXT = (
    "You judge an answer against the context the assistant was given to answer the question. "
    "An answer is complete when it gives all the information in the context that the question "
    "asks for or, when the context does not contain what the question asks for, when it says "
    "so. Do not judge whether the context is true."
)

HELD = YesNoPrompt(
    name="answer_relevance.context_holds",
    instruction=_AGAINST_CONTEXT,
    question="Does the context state the information the question asks for?",
)

COVERS = YesNoPrompt(
    name="answer_relevance.covers_context",
    instruction=_AGAINST_CONTEXT,
    question="Does the answer give everything the context says that the question asks for?",
)


class AnswerRelevanceOptions(Options):
    n: int = Field(3, ge=1, description="Questions generated from the answer.")
    score: Literal["completeness", "similarity"] = Field(
        "completeness", description="P(addresses the question), or the paper's mean similarity."
    )
    against: Literal["question", "context"] = Field(
        "question",
        description=(
            "Judge completeness against the question alone, or against what the context holds "
            "for it (a decline is then complete when the context holds nothing)."
        ),
    )

    off_topic_below: float | None = Field(
        0.05,
        ge=-1.0,
        le=1.0,
        description=(
            "Score 0, before the judge is asked, an answer whose embedding's cosine with the "
            "question's (after the conversation so far) and with each retrieved passage's is "
            "below this: it shares no meaning with either, whatever it says about itself. None "
            "turns it off (docs/reliability.md)."
        ),
    )

    @model_validator(mode="after")
    def _completeness_is_judged(self) -> Self:
        if self.against == "context" and self.score == "similarity":
            raise ValueError(
                "against='context' judges completeness, which score='similarity' omits"
            )
        return self


class AnswerRelevance(Metric):
    name = "answer_relevance"
    options_model = AnswerRelevanceOptions
    options: AnswerRelevanceOptions
    rules = (CLAIM_RULES, NO_CLAIM_RULE)
    # layout="one_read" (docs/agreement.md, "Reading a sample once") went after commit e3a29d4
    retired: ClassVar[dict[str, Any]] = {"layout": "separate"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._prompt = questions_prompt(self.options.n)

    @property
    def needs_embedder(self) -> bool:  # type: ignore[override]
        # the generated questions, and the question and answer for ``off_topic_below``
        return self.options.score != "completeness" or self.options.off_topic_below is not None

    @property
    def prompts(self) -> list[Any]:
        if self.options.score == "similarity":
            return [self._prompt]
        completeness = [HELD, COVERS] if self.options.against == "context" else [COMPLETE]
        return [NONCOMMITTAL, *completeness]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        if not sample.answer.strip():
            return []
        if claims_nothing(sample.answer, sample.question, language_of(sample)):
            return []
        if self.options.score == "completeness":
            return [planned_commitment_call(sample.answer), *self._completeness_calls(sample)]
        questions = self._prompt.in_language(language_of(sample)).render({"answer": sample.answer})
        return [(rendered_tokens(questions), 8 + 16 * self.options.n)]

    def planned_embeddings(self, sample: Sample) -> int:
        # One for the off-topic gate, one more for the generated questions.
        if not sample.answer.strip():
            return 0
        gate = self.options.off_topic_below is not None
        return int(gate) + int(self.options.score != "completeness")

    def _completeness_calls(self, sample: Sample) -> PlannedCalls:
        """The calls ``_completeness`` makes for an answer that commits."""
        if self.options.against == "question":
            return [yes_no_call(COMPLETE.render({**sample.asked(), "answer": sample.answer}))]
        if not sample.contexts:
            return []
        held = {"context": sample.contexts, **sample.asked()}
        return [
            yes_no_call(HELD.render(held)),
            yes_no_call(COVERS.render({**held, "answer": sample.answer})),
        ]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        if not sample.answer.strip():
            raise Unscorable("the answer is empty")
        if echoed := claims_nothing(sample.answer, sample.question, language_of(sample)):
            # It only asks back or echoes the question: it answers nothing, which the small
            # judge does not see.
            return 0.0, {"no_claim": echoed}
        if self.options.off_topic_below is None:
            return self._judged(sample, session)
        # Text cannot talk an embedding round: an off-topic answer that says it addresses the
        # question, which the judge believes, stays as far from the question as it was.
        vectors = session.embed(
            [sample.answer, "\n".join(sample.asked().values()), *sample.contexts]
        )
        asked, *passages = (round(float(c), 4) for c in cosine_similarity(vectors[1:], vectors[0]))
        similarity = {"question_similarity": asked}
        if passages:
            similarity["context_similarity"] = max(passages)
        if max(similarity.values()) < self.options.off_topic_below:
            return 0.0, {**similarity, "off_topic": True}
        value, explanation = self._judged(sample, session)
        return value, {**similarity, **explanation}

    def _judged(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        """The score as the judge gives it (``score``, ``against``)."""
        if self.options.score == "completeness":
            # A few generated tokens where writing the questions took fifty: in this mode they
            # served only the explanation.
            return self._completeness(sample, session, is_noncommittal(sample.answer, session))

        def enough(reply: GeneratedQuestions) -> str | None:
            usable = [q for q in reply.questions if q.strip()]
            return None if len(usable) >= self.options.n else f"expected {self.options.n} questions"

        reply = session.ask(
            self._prompt.in_language(language_of(sample)),
            {"answer": sample.answer},
            max_tokens=64 + 48 * self.options.n,
            check=enough,
        )
        questions = [q.strip() for q in reply.questions if q.strip()][: self.options.n]
        vectors = session.embed([sample.question, *questions])
        similarities = cosine_similarity(vectors[1:], vectors[0])
        mean = float(similarities.mean())
        explanation = {
            "generated_questions": [
                {"question": q, "similarity": round(float(s), 4)}
                for q, s in zip(questions, similarities, strict=True)
            ],
            "mean_similarity": round(mean, 4),
            "noncommittal": reply.noncommittal,
        }
        return (0.0 if reply.noncommittal else mean), explanation

    def _completeness(
        self, sample: Sample, session: JudgeSession, noncommittal: bool
    ) -> tuple[float, dict[str, Any]]:
        """The completeness score and its explanation, given whether the answer commits."""
        if self.options.against == "question":
            if noncommittal:
                return 0.0, {"noncommittal": True}
            complete = session.ask_yes_no(COMPLETE, {**sample.asked(), "answer": sample.answer})
            return complete, {"noncommittal": False, "p_complete": round(complete, 4)}
        if not sample.contexts:
            # A decline gives all the context holds; whatever an answer commits to came from
            # elsewhere.
            return scored_without_context(noncommittal)
        held_inputs = {"context": sample.contexts, **sample.asked()}
        if noncommittal:
            # A decline is as complete as the context is empty of what was asked.
            held = session.ask_yes_no(HELD, held_inputs)
            return 1.0 - held, {"noncommittal": True, "p_context_holds": round(held, 4)}
        held, covers = session.ask_yes_no_all(
            [(HELD, held_inputs, {}), (COVERS, {**held_inputs, "answer": sample.answer}, {})]
        )
        explanation = {
            "noncommittal": False,
            "p_context_holds": round(held, 4),
            "p_covers_context": round(covers, 4),
        }
        return held * covers, explanation
