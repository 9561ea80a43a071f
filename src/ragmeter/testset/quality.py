"""The checks every written question passes before it enters a test set.

Each check is measured and kept in the sample's metadata, so a reader sees why it was accepted;
the first check that fails rejects the candidate with that reason. What the documents say is
decided through claims (``ragmeter.claims``): one claim checked against one text is the
judgement the offline judge makes reliably, while a holistic question such as "do the passages
answer this?" got P 0.50-0.88 from it for every question, answered or not (docs/testsets.md).
In the order asked (cheap ones first, so a bad candidate costs few calls):

1. ``refers_to_source``: the question points at its source ("according to the passage"), found
   by a pattern: it would mean nothing to a user who never saw the chunk.
   Then, when ``copy_run`` is set (off by default), ``copies_source``: the question repeats
   ``copy_run`` consecutive words of its chunks. Off by default because a run of five words
   often holds a product's name ("configure IBM Cloud Container Registry"), which people copy
   too; at 5 on MTRAG passages, 7 of the 10 questions it rejected from the offline judge were
   multi-hop ones (docs/testsets.md).
2. ``stands_alone``: P(the question makes sense without the chunks), at least ``stands_alone``;
   a follow-up is read after its conversation. A follow-up needs its first turn by
   construction (``follow_ups``: the subject both name becomes a pronoun); the judge is asked
   whether it is understood alone only when ``understood_alone`` is below 1, and rejects it
   at or above that. Off by default: the offline judge gave every question 0.84-0.90,
   standalone or not (docs/testsets.md).
3. ``supported``, which is also what makes a question answerable from its chunks: the
   reference is an answer written from them, and every one of its claims (its sentences, a
   short one read as the answer to the question: "3 euros." is checked as "In answer to the
   question '...': 3 euros.") must be supported by the chunks with P >= ``supported`` (0.7).
   One invented claim is enough to make a reference wrong, so the rule is "all claims", not a
   mean. 0.7, not 0.5: with the offline judge, the claims read as invented in a first run on
   MTRAG passages scored 0.53-0.63, the supported ones 0.72-0.94 (docs/testsets.md).
4. ``needs_both_chunks`` (a question from two chunks): the same claims against each chunk
   alone; each chunk must leave some claim unsupported (P < ``supported``), while the two
   together support all (3). Otherwise ``one chunk suffices``.
5. ``closed_book``: the judge answers the question without the chunks, with its best guess;
   the share of the reference's claims its answer supports is the closed-book recall. Above
   ``closed_book_max`` (0.5: more than half of what the reference says is guessed without the
   documents), the question tests the model's memory, not retrieval. A best guess, not "say
   you do not know": a judge allowed to decline declines, and a reference that any lighthouse
   would fit ("built to guide ships at sea") then passes as if it came from the documents.

An unanswerable question passes 1 and 2, then ``not_answered`` (``unanswerable.py``): no claim
of its expected answer, nor of the answer its ``search_k`` nearest chunks give, is supported
by one of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from ragmeter.claims import (
    CLAIM_RULES,
    SHORT_CLAIM_RULE,
    SUPPORTED,
    as_checked,
    claim_sentences,
    supported,
)
from ragmeter.options import Options, Probability
from ragmeter.prompts import Prompt, YesNoPrompt
from ragmeter.session import JudgeSession
from ragmeter.testset.drafts import Draft, Rejected, Search
from ragmeter.testset.queries import ANSWER_MAX_TOKENS, Answer
from ragmeter.testset.unanswerable import FROM_PASSAGES, check_not_answered
from ragmeter.text import WORD

REFERS_TO_SOURCE = re.compile(
    r"\b(?:according to|as (?:stated|described|mentioned|shown) in|based on)\s+"
    r"(?:the|this|that|these|those)\s+(?:given\s+|provided\s+|above\s+)?"
    r"(?:passage|text|document|excerpt|context|paragraph|article|snippet|source)s?\b"
    r"|\b(?:the|this|these|both)\s+(?:two\s+|first\s+|second\s+|given\s+|provided\s+|above\s+)?"
    r"(?:passage|excerpt|snippet)s?\b"
    r"|\b(?:the|this)\s+(?:given|provided|above)\s+(?:text|document|context|article)s?\b"
    r"|\b(?:mentioned|described|stated)\s+above\b"
    r"|\b(?:the|this)\s+(?:previous|next|following|preceding|current)\s+"
    r"(?:part|section|chapter|page|video|slide|step)s?\b",
    re.IGNORECASE,
)
"""Words that point a reader at the text a question was written from."""

COPY_RUN = 5
"""Consecutive words of its source that make a question a copy (``copies``)."""


def copies(question: str, sources: Sequence[str], run: int = COPY_RUN) -> bool:
    """True when ``question`` repeats ``run`` consecutive words of one of ``sources``."""
    words = [w.casefold() for w in WORD.findall(question)]
    grams = {tuple(words[i : i + run]) for i in range(len(words) - run + 1)}
    if not grams:
        return False
    for source in sources:
        text = [w.casefold() for w in WORD.findall(source)]
        if grams & {tuple(text[i : i + run]) for i in range(len(text) - run + 1)}:
            return True
    return False


STANDS_ALONE = YesNoPrompt(
    name="testset.stands_alone",
    instruction=(
        "You check test questions for a search system. A good question can be understood by "
        "a user who has never seen the documents: it names what it asks about and does not "
        "point to 'the passage', 'the text' or something only a document shows. A question "
        "that follows a conversation may refer to what was said in the conversation."
    ),
    question="Does the question make sense on its own, without any document?",
)

UNDERSTOOD_ALONE = YesNoPrompt(
    name="testset.understood_alone",
    instruction=(
        "You check a question taken out of its conversation. Say Yes if it can be understood "
        "alone: it names what it asks about. Say No if it refers to something said before "
        "('it', 'that one', 'the second') that the question itself does not name."
    ),
    question="Can the question be understood without the conversation before it?",
)


CLOSED_BOOK = Prompt(
    name="testset.closed_book",
    instruction=(
        "Answer the question from your own knowledge in one to three sentences. If you are "
        "not sure, give your best guess."
    ),
    output=Answer,
)

CHECK_RULES = (
    "test-set checks v2: answerable when every reference claim is supported by the chunks; "
    "two chunks each leave a claim unsupported; closed-book best guess; unanswerable when no "
    "claim of the expected answer or of the near chunks' answer is supported by one of them"
)
"""The checks' rules in words. With the prompts and the claim rules (``versions``) it is part
of the runner's settings key, so a candidate judged under other rules is judged again rather
than read back from the candidates log: change it whenever a rule here changes."""

CHECK_PROMPTS = (STANDS_ALONE, UNDERSTOOD_ALONE, SUPPORTED, CLOSED_BOOK, FROM_PASSAGES)
"""Every prompt the checks ask."""


def versions() -> list[str]:
    """What decides the checks' verdicts beside their thresholds: each prompt's version, the
    rules of the checks and of claims."""
    return [*(p.version for p in CHECK_PROMPTS), CHECK_RULES, CLAIM_RULES, SHORT_CLAIM_RULE]


class QualityOptions(Options):
    stands_alone: Probability = Field(0.5, description="P(makes sense alone) to pass.")
    understood_alone: Probability = Field(
        1.0,
        description="P(a follow-up is understood without its conversation) that rejects it; "
        "1 does not ask.",
    )
    supported: Probability = Field(0.7, description="P(supported) every reference claim needs.")
    closed_book_max: Probability = Field(
        0.5,
        description="Highest share of the reference's claims the closed-book answer may support.",
    )
    answered: Probability = Field(
        0.5,
        description="P(supported) by a near chunk at which a claim of an unanswerable "
        "question's expected answer, or of the answer the chunks give, rejects it.",
    )
    duplicate: Probability = Field(
        0.92, description="Question cosine to an accepted one that rejects."
    )
    copy_run: int = Field(
        0,
        ge=0,
        le=50,
        description="A question repeating this many consecutive words of its chunks is "
        "rejected (5 is meta testset's measure); 0 allows any.",
    )
    search_k: int = Field(
        3, ge=1, le=20, description="Chunks an unanswerable question is checked against."
    )


def check(
    draft: Draft,
    session: JudgeSession,
    options: QualityOptions,
    search: Search,
    checks: dict[str, Any],
) -> None:
    """Measure ``draft`` into ``checks``; raise ``Rejected`` at the first check it fails (and
    ``Unscorable``, through the session, when the judge cannot answer one)."""
    turns = [t["content"] for t in draft.history if t["role"] == "user"]
    pointed = [REFERS_TO_SOURCE.search(text) for text in [*turns, draft.question]]
    checks["refers_to_source"] = any(pointed)
    if any(pointed):
        found = next(m for m in pointed if m)
        raise Rejected("refers to its source", f"the question says {found.group(0)!r}")
    if options.copy_run:  # unchecked is not "does not copy": record nothing when off
        checks["copies_source"] = copies(draft.question, draft.chunks, options.copy_run)
        if checks["copies_source"]:
            raise Rejected(
                "copies its source", f"the question repeats {options.copy_run}+ words of its chunk"
            )
    _check_stands_alone(draft, session, options, checks)
    if draft.kind == "unanswerable":
        nearest = search(draft.question, options.search_k)
        check_not_answered(draft, session, nearest, options.answered, checks)
        return
    _check_supported(draft, session, options, checks)
    _check_closed_book(draft, session, options, checks)


def _check_stands_alone(
    draft: Draft, session: JudgeSession, options: QualityOptions, checks: dict[str, Any]
) -> None:
    asked = draft.asked()
    questions: list[Any] = [(STANDS_ALONE, asked, {})]
    asks_understood = bool(draft.history) and options.understood_alone < 1
    if asks_understood:
        questions.append((UNDERSTOOD_ALONE, {"question": draft.question}, {}))
    answers = session.ask_yes_no_all(questions)
    checks["stands_alone"] = round(answers[0], 4)
    if answers[0] < options.stands_alone:
        raise Rejected("does not stand alone", f"P(makes sense alone) {answers[0]:.2f}")
    if asks_understood:
        checks["understood_alone"] = round(answers[1], 4)
        if answers[1] >= options.understood_alone:
            raise Rejected(
                "follow-up does not need the first turn", f"P(understood alone) {answers[1]:.2f}"
            )


def _check_supported(
    draft: Draft, session: JudgeSession, options: QualityOptions, checks: dict[str, Any]
) -> None:
    """3 and 4 above, from one table: the reference's claims against the chunks together, and
    for a question from two chunks, against each alone."""
    language = draft.language()
    claims = claim_sentences(draft.reference, language)
    if not claims:
        raise Rejected("reference has no claim", repr(draft.reference))
    texts: list[Sequence[str]] = [draft.chunks]
    if len(draft.chunks) > 1:
        texts += [[chunk] for chunk in draft.chunks]
    # "3 euros." is checked as the answer to its question, not as a bare phrase.
    checked = as_checked(claims, draft.question)
    table = supported(session, [(checked, texts)], language)[0]  # claims x texts
    together = table[:, 0]
    checks["supported"] = {
        "claims": claims,
        "p": [round(float(p), 4) for p in together],
        "all": bool((together >= options.supported).all()),
    }
    if not checks["supported"]["all"]:
        weakest = int(together.argmin())
        raise Rejected(
            "reference not supported by its chunks",
            f"claim {claims[weakest]!r}: P(supported) {together[weakest]:.2f}",
        )
    if len(draft.chunks) > 1:
        alone = table[:, 1:]  # claims x chunks
        supports_all = (alone >= options.supported).all(axis=0)
        checks["needs_both_chunks"] = {
            "p_alone": [[round(float(p), 4) for p in column] for column in alone.T],
            "chunk_supports_all": [bool(a) for a in supports_all],
        }
        if supports_all.any():
            raise Rejected(
                "one chunk suffices",
                f"chunk {int(np.argmax(supports_all)) + 1} supports every claim",
            )


def _check_closed_book(
    draft: Draft, session: JudgeSession, options: QualityOptions, checks: dict[str, Any]
) -> None:
    answer = session.ask(CLOSED_BOOK, draft.asked(), max_tokens=ANSWER_MAX_TOKENS).answer
    claims = checks["supported"]["claims"]
    checked = as_checked(claims, draft.question)
    known = supported(session, [(checked, [answer])], draft.language())[0][:, 0]
    recall = float((known >= options.supported).mean())
    checks["closed_book"] = {"answer": answer, "recall": round(recall, 4)}
    if recall > options.closed_book_max:
        raise Rejected(
            "answerable without the documents",
            f"the judge's closed-book answer supports {recall:.0%} of the reference",
        )


__all__ = [
    "CHECK_PROMPTS",
    "CHECK_RULES",
    "CLOSED_BOOK",
    "STANDS_ALONE",
    "UNDERSTOOD_ALONE",
    "Draft",
    "QualityOptions",
    "Rejected",
    "Search",
    "check",
    "copies",
    "versions",
]
