"""An unanswerable question, verified claim by claim against the chunks nearest to it.

Asked "do the passages answer the question?", the offline judge gave every unanswerable
candidate 0.50-0.88, those the documents answer and those they do not (docs/testsets.md): no
threshold separates them. What it does reliably is check one claim against one text. So an
unanswerable question is made by construction and verified through claims:

1. The judge writes a question about a detail of its chunk's subject that the chunk never
   mentions, with the answer a user would expect: a plausible detail (``queries.py``).
2. The ``search_k`` chunks of the corpus nearest to the question (by embedding) are found.
3. No claim of the expected answer, read with the question, may be supported by any one of
   them: a near chunk that supports it answers the question.
4. The judge answers the question from those chunks, writing "Not in the passages." when
   they do not give the answer. Its answer must decline, or none of its claims may be
   supported by any one of them. This covers what 3 cannot: an expected answer that the
   chunks contradict ("5 euros" where a chunk says 3 euros) is not supported by them, yet
   the documents answer the question.

A claim counts as found at P(supported) >= ``answered`` (0.5), below the 0.7 an answerable
reference needs: where the judge is unsure, the question is taken as answered and rejected,
since an unanswerable question that the documents answer is a wrong item, and a rejected
candidate only costs another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.claims import as_checked, claim_sentences, supported
from ragmeter.prompts import Prompt
from ragmeter.session import JudgeSession
from ragmeter.testset.drafts import Draft, Rejected
from ragmeter.testset.queries import ANSWER_MAX_TOKENS, Answer

NOT_IN_PASSAGES = "Not in the passages."

FROM_PASSAGES = Prompt(
    name="testset.from_passages",
    instruction=(
        "Answer the question using only the passages, in one or two sentences. If the "
        f"passages do not give the answer, write exactly: {NOT_IN_PASSAGES}"
    ),
    output=Answer,
)
"""The answer to an unanswerable question that its nearest chunks give, if they give one."""

_ABOUT_THE_PASSAGES = re.compile(r"\bpassages?\b|\btexts?\b|\bdocuments?\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|nothing|none)\b|n't\b", re.IGNORECASE)


def declines(sentence: str) -> bool:
    """Whether a sentence of an answer from the passages says that they do not give the answer
    ("Not in the passages.", "The passages do not say how tall it is."): it is about the
    passages, not a claim about the subject to check."""
    return bool(_ABOUT_THE_PASSAGES.search(sentence) and _NEGATION.search(sentence))


def _found(
    session: JudgeSession,
    claims: Sequence[str],
    nearest: Sequence[str],
    question: str,
    language: str = "en",
) -> np.ndarray:
    """P(supported) of each claim, read with ``question``, by its most supportive near chunk
    (read in parts cut between sentences of ``language``, where one is too long)."""
    if not claims:
        return np.zeros(0)
    blocks = [(as_checked(claims, question), list(nearest))]
    return supported(session, blocks, language)[0].max(axis=1)


def _refuse_found(found: np.ndarray, claims: Sequence[str], answered: float, whose: str) -> None:
    if (found >= answered).any():
        top = int(found.argmax())
        raise Rejected(
            "answered by the documents",
            f"a near chunk supports the claim {claims[top]!r} of {whose}: P(supported) "
            f"{found[top]:.2f}",
        )


def check_not_answered(
    draft: Draft,
    session: JudgeSession,
    nearest: Sequence[str],
    answered: float,
    checks: dict[str, Any],
) -> None:
    """Steps 3 and 4 above against the ``nearest`` chunks: raise ``Rejected`` when a claim of
    the expected answer, or of the answer the chunks give, is found in one of them. What was
    measured is in ``checks["not_answered"]`` either way."""
    language = draft.language()
    expected = claim_sentences(draft.expected or "", language)
    if not expected:
        raise Rejected("expected answer has no claim", repr(draft.expected))
    record: dict[str, Any] = {
        "nearest": len(nearest),
        "expected_answer": draft.expected,
        "expected_claims": expected,
    }
    checks["not_answered"] = record
    found = _found(session, expected, nearest, draft.question, language)
    record["expected_p"] = [round(float(p), 4) for p in found]
    _refuse_found(found, expected, answered, "the expected answer")
    reply = session.ask(
        FROM_PASSAGES, {"passages": list(nearest), **draft.asked()}, max_tokens=ANSWER_MAX_TOKENS
    ).answer
    given = [claim for claim in claim_sentences(reply, language) if not declines(claim)]
    record.update(answer_from_passages=reply, answer_claims=given)
    found = _found(session, given, nearest, draft.question, language)
    record["answer_p"] = [round(float(p), 4) for p in found]
    _refuse_found(found, given, answered, "the answer the near chunks give")
