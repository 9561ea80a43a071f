"""Whether an answer commits to anything, asked in a reply of a few tokens.

Two metrics need it: answer relevance (a non-committal answer addresses no question) and
faithfulness when nothing was retrieved (a decline makes no claim, so it invents nothing). Both
make the same request, so with the call cache on a run that scores both asks it once.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragmeter.prompts import Prompt, rendered_tokens
from ragmeter.session import JudgeSession


class Commitment(BaseModel):
    noncommittal: bool


# Worked examples, also of answer relevance's question-writing prompt: an answer and an evasion.
COMMITTED = "Albert Einstein was born in Germany."
EVASIVE = (
    "I don't know about the groundbreaking feature of the smartphone invented in 2023, as I lack "
    "information beyond that date."
)

NONCOMMITTAL = Prompt(
    name="commitment.noncommittal",
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

REPLY_TOKENS = 16
"""Room for ``{"noncommittal": false}`` and a little chatter around it."""


def is_noncommittal(answer: str, session: JudgeSession) -> bool:
    return session.ask(NONCOMMITTAL, {"answer": answer}, max_tokens=REPLY_TOKENS).noncommittal


def planned_commitment_call(answer: str) -> tuple[int, int]:
    """The check as ``planned_calls`` counts it: its prompt, and a reply of about 8 tokens."""
    return rendered_tokens(NONCOMMITTAL.render({"answer": answer})), 8


def scored_without_context(noncommittal: bool) -> tuple[float, dict[str, Any]]:
    """The score where nothing was retrieved: nothing the question asks for is in the context
    and no claim can be supported by it, so a decline scores 1 and an answer that commits 0."""
    return (1.0 if noncommittal else 0.0), {"noncommittal": noncommittal, "context": "empty"}
