"""What a test-set run will cost before it runs (``ragmeter generate --dry-run``).

The candidates are those the run would plan first, ``n`` / ``ACCEPTANCE`` of them, each taken
through every check (the calls of a candidate rejected early are fewer). Prompts are rendered
from the real chunks and counted as characters / 4; the reference is guessed to have
``CLAIMS`` claims, and the judge to write ``WRITTEN_TOKENS`` tokens for a question with its
reference and ``ANSWER_TOKENS`` for an answer it writes while checking (closed-book, or from
an unanswerable question's nearest chunks, whose answers are guessed at one claim).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragmeter.budget import Estimate, MetricEstimate, Price
from ragmeter.claims import SUPPORTED
from ragmeter.prompts import rendered_tokens
from ragmeter.testset.quality import CLOSED_BOOK, STANDS_ALONE, UNDERSTOOD_ALONE
from ragmeter.testset.queries import PAIRED, writing_prompt
from ragmeter.testset.unanswerable import FROM_PASSAGES

ACCEPTANCE = 0.5
"""The share of candidates assumed accepted."""
CLAIMS = 2
WRITTEN_TOKENS = 80
ANSWER_TOKENS = 40
"""A closed-book answer, or an answer from the nearest chunks."""
CLAIM = "A sentence of about twenty words that the reference might say about the chunk."
QUESTION = "A question of about fifteen words that the judge might write about the chunk?"


def candidates_needed(n: int, acceptance: float = ACCEPTANCE) -> int:
    return math.ceil(n / acceptance)


def candidate_calls(
    kind: str, style: str, chunks: Sequence[str], search_k: int
) -> list[tuple[int, int]]:
    """(prompt tokens, completion tokens) of each call one candidate makes when it reaches
    every check."""
    if len(chunks) == 2:
        inputs = {"passage 1": chunks[0], "passage 2": chunks[1]}
    else:
        inputs = {"passage": chunks[0]}
    calls = [(rendered_tokens(writing_prompt(kind, style).render(inputs)), WRITTEN_TOKENS)]

    def yes_no(tokens: int) -> tuple[int, int]:
        return tokens, 1

    def claims_against(texts: Sequence[str | Sequence[str]], claims: int) -> list[tuple[int, int]]:
        return [
            yes_no(rendered_tokens(SUPPORTED.render({"context": text, "statement": CLAIM})))
            for text in texts
            for _ in range(claims)
        ]

    asked = {"question": QUESTION}
    calls.append(yes_no(rendered_tokens(STANDS_ALONE.render(asked))))
    written = "x" * ANSWER_TOKENS * 4
    if kind == "unanswerable":
        nearest = chunks[:1] * search_k  # the nearest chunks, as long as the source
        calls += claims_against(nearest, 1)  # the expected answer: one sentence
        passages = {"passages": nearest, **asked}
        calls.append((rendered_tokens(FROM_PASSAGES.render(passages)), ANSWER_TOKENS))
        return calls + claims_against(nearest, 1)
    if kind == "follow_up":
        calls.append(yes_no(rendered_tokens(UNDERSTOOD_ALONE.render(asked))))
    calls += claims_against([list(chunks), *([c] for c in chunks if kind in PAIRED)], CLAIMS)
    calls.append((rendered_tokens(CLOSED_BOOK.render(asked)), ANSWER_TOKENS))
    return calls + claims_against([written], CLAIMS)


def estimate_candidates(
    planned: Sequence[tuple[str, str, Sequence[str]]], search_k: int, price: Price | None
) -> Estimate:
    """The calls of ``planned`` candidates ((kind, style, chunk texts) each), by kind."""
    rows: dict[str, MetricEstimate] = {}
    for kind, style, chunks in planned:
        row = rows.setdefault(kind, MetricEstimate(kind))
        row.items += 1
        row.embedding_calls += 1
        row.add(candidate_calls(kind, style, chunks, search_k))
    notes = [
        "tokens are estimated as characters / 4",
        f"{len(planned)} candidates (an acceptance of {ACCEPTANCE:.0%} assumed), each through "
        f"every check, references of {CLAIMS} claims",
        "assumes no cache hits, retries or repairs",
    ]
    return Estimate(list(rows.values()), price, notes)
