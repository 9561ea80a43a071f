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
  mean cosine similarity between the real question and the generated ones;
- ``"product"``: similarity x completeness.

The generated questions and their similarities are kept in the explanation where they were
written.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from ragmeter.judges.base import cosine_similarity
from ragmeter.metrics.base import Metric
from ragmeter.options import Options
from ragmeter.prompts import PlannedCalls, Prompt, YesNoPrompt, rendered_tokens, yes_no_call
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


class Commitment(BaseModel):
    noncommittal: bool


class GeneratedQuestions(BaseModel):
    questions: list[str]  # first: the judge writes them before it says whether it commits
    noncommittal: bool


# The two worked examples of both prompts: a committed answer and an evasion.
COMMITTED = "Albert Einstein was born in Germany."
EVASIVE = (
    "I don't know about the groundbreaking feature of the smartphone invented in 2023, as I lack "
    "information beyond that date."
)


def _n_questions(n: int, *questions: str, more: str) -> list[str]:
    """Exactly ``n`` example questions: the first ``n`` given, then ``more`` as often as needed."""
    return [*questions[:n], *[more] * max(0, n - len(questions))]


def questions_prompt(n: int) -> Prompt[GeneratedQuestions]:
    # Exactly n items in the schema: a grammar-constrained judge then cannot loop on the list.
    output = create_model(
        "GeneratedQuestions",
        __base__=GeneratedQuestions,
        questions=(list[str], Field(min_length=n, max_length=n)),
    )
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

NONCOMMITTAL = Prompt(
    name="answer_relevance.noncommittal",
    instruction=(
        "Say whether the given answer is noncommittal: true if it is evasive, vague or ambiguous "
        "(for example 'I don't know' or 'I'm not sure'), false if it commits to an answer."
    ),
    output=Commitment,
    examples=[
        ({"answer": COMMITTED}, Commitment(noncommittal=False)),
        ({"answer": EVASIVE}, Commitment(noncommittal=True)),
    ],
)


class AnswerRelevanceOptions(Options):
    n: int = Field(3, ge=1, description="Questions generated from the answer.")
    score: Literal["completeness", "similarity", "product"] = Field(
        "completeness",
        description="P(addresses the question), the paper's mean similarity, or their product.",
    )


class AnswerRelevance(Metric):
    name = "answer_relevance"
    options_model = AnswerRelevanceOptions
    options: AnswerRelevanceOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._prompt = questions_prompt(self.options.n)

    @property
    def needs_embedder(self) -> bool:  # type: ignore[override]
        return self.options.score != "completeness"  # only the generated questions are embedded

    @property
    def prompts(self) -> list[Any]:
        return {
            "completeness": [NONCOMMITTAL, COMPLETE],
            "similarity": [self._prompt],
            "product": [self._prompt, COMPLETE],
        }[self.options.score]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        if not sample.answer.strip():
            return []
        inputs = {**sample.asked(), "answer": sample.answer}
        if self.options.score == "completeness":
            commitment = NONCOMMITTAL.render({"answer": sample.answer})
            return [(rendered_tokens(commitment), 8), yes_no_call(COMPLETE.render(inputs))]
        questions = self._prompt.render({"answer": sample.answer})
        calls = [(rendered_tokens(questions), 8 + 16 * self.options.n)]
        if self.options.score == "product":
            calls.append(yes_no_call(COMPLETE.render(inputs)))
        return calls

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        if not sample.answer.strip():
            raise Unscorable("the answer is empty")
        inputs = {**sample.asked(), "answer": sample.answer}
        if self.options.score == "completeness":
            # A few generated tokens where writing the questions took fifty: in this mode they
            # served only the explanation.
            commitment = session.ask(NONCOMMITTAL, {"answer": sample.answer}, max_tokens=16)
            if commitment.noncommittal:
                return 0.0, {"noncommittal": True}
            complete = session.ask_yes_no(COMPLETE, inputs)
            return complete, {"noncommittal": False, "p_complete": round(complete, 4)}

        def enough(reply: GeneratedQuestions) -> str | None:
            usable = [q for q in reply.questions if q.strip()]
            return None if len(usable) >= self.options.n else f"expected {self.options.n} questions"

        reply = session.ask(
            self._prompt,
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
        if reply.noncommittal:
            return 0.0, explanation
        if self.options.score == "similarity":
            return mean, explanation
        complete = session.ask_yes_no(COMPLETE, inputs)
        explanation["p_complete"] = round(complete, 4)
        return mean * complete, explanation
