"""Personas derived from the documents: who would search them, and for what.

``--personas N`` has the judge read excerpts of the corpus and write ``N`` personas, each one
sentence saying who the person is and what they want from these documents. They are then
drawn per candidate exactly as personas given with ``--persona`` are.

1. The excerpts: ``EXCERPTS`` source chunks chosen from the seed, spread over the documents
   (one chunk of each document in a shuffled order, then a second of each, ...), each cut to
   ``EXCERPT_CHARS`` characters: a persona needs the topics, not the details.
2. One typed prompt (``personas_prompt``) asks for exactly ``N``; the schema fixes the count,
   so a grammar-constrained judge cannot write more or fewer.
3. Each persona written is screened: blank, shorter than ``MIN_WORDS`` or longer than
   ``MAX_WORDS`` words, pointing at "the excerpt" (the test-set pattern), or a near-copy
   (MiniLM cosine at or above the run's duplicate threshold) of a given persona or of one kept
   before it is dropped with that reason. A reply with no usable persona is sent back to the
   judge with the reasons (the session's repairs); if the repairs fail too, no persona is
   derived, the reason is kept and the run goes on with the given ones.

The outcome is written to ``<out>.personas.json`` under a key of everything that shaped it (the
judge's and embedder's identities, the prompt's version, the excerpts, the given personas and
the threshold), so a rerun reuses it without a call; different personas change every
candidate's key, since a candidate's key holds its persona.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ragmeter.budget import BudgetExhausted, MetricEstimate
from ragmeter.cluster import WorkerDied
from ragmeter.judges import Embedder, Judge
from ragmeter.judges.base import identity_of
from ragmeter.prompts import Prompt, exactly, rendered_tokens
from ragmeter.records import digest
from ragmeter.score import Unscorable, Usage
from ragmeter.session import JudgeSession
from ragmeter.testset.chunking import unit_rows
from ragmeter.testset.planning import Corpus
from ragmeter.testset.quality import REFERS_TO_SOURCE
from ragmeter.testset.spread import Judging

MAX_PERSONAS = 8
"""Personas one prompt writes at most (its example shows this many)."""
EXCERPTS = 6
EXCERPT_CHARS = 600
MIN_WORDS = 4
MAX_WORDS = 40
WRITE_TOKENS = 120
"""Reply tokens per persona asked for (a bound)."""
EXPECTED_TOKENS = 30
"""Reply tokens a persona takes, as a dry run counts them (a sentence of about 20 words)."""


class WrittenPersonas(BaseModel):
    personas: list[str]


_EXAMPLE_EXCERPTS = [
    "Library cards are free for everyone who lives, works or studies in the city. Bring an "
    "identity document and a proof of address to any branch.",
    "Books can be borrowed for three weeks and renewed twice online. A late book costs 20 "
    "cents a day, up to 5 euros per book.",
]
_EXAMPLE_PERSONAS = [
    "A parent who has just moved to the city and wants library cards for the whole family.",
    "A student who wants to know how long books can be kept and what a late return costs.",
    "A commuter who works in the city but lives outside it and wonders whether they may join.",
    "A retired teacher who borrows many books and wants to renew them without visiting.",
    "A branch librarian who needs the exact rules to answer visitors' questions.",
    "A visitor from abroad who wants to know which documents prove an address.",
    "A reader who returned a book a month late and wants to know the fine.",
    "A night-shift nurse who can only reach the library online and wants to borrow from home.",
]


@cache
def personas_prompt(n: int) -> Prompt[WrittenPersonas]:
    """The prompt that writes exactly ``n`` personas from excerpts of the documents."""
    if not 1 <= n <= MAX_PERSONAS:
        raise ValueError(f"personas to derive must be 1 to {MAX_PERSONAS}, not {n}")
    output = exactly(WrittenPersonas, "personas", n)
    return Prompt(
        name="testset.personas",
        instruction=(
            "You read excerpts of an organisation's documents and describe the people who "
            f"would search these documents for answers. Write {n} different personas. Each is "
            "one sentence: who the person is (their role or situation) and what they want to "
            "find in these documents. Write about the people, never about 'the excerpts' or "
            "'the documents'."
        ),
        output=output,
        examples=[
            ({"excerpts": _EXAMPLE_EXCERPTS}, output(personas=_EXAMPLE_PERSONAS[:n])),
        ],
    )


def excerpts(corpus: Corpus, seed: int, size: int = EXCERPTS) -> list[int]:
    """``size`` source chunks (their positions in the corpus) spread over the documents: the
    documents in an order drawn from ``seed``, one chunk of each in turn, each document's
    chunks in an order drawn from the seed too."""
    draw = random.Random(f"{seed}:personas")
    by_document: dict[str, list[int]] = {}
    for position in corpus.sources:
        by_document.setdefault(corpus.chunks[position].document, []).append(position)
    queues = [draw.sample(chunks, len(chunks)) for chunks in by_document.values()]
    queues = draw.sample(queues, len(queues))
    chosen: list[int] = []
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen


def _cut(text: str, limit: int = EXCERPT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    return (head.rsplit(maxsplit=1)[0] if " " in head else head) + " ..."


def shown(corpus: Corpus, seed: int) -> tuple[list[int], tuple[str, ...]]:
    """The excerpts the judge is shown: their chunks' positions and their texts, cut."""
    chosen = excerpts(corpus, seed)
    return chosen, tuple(_cut(corpus.chunks[i].text) for i in chosen)


def estimate_personas(corpus: Corpus, n: int, seed: int) -> MetricEstimate:
    """The one call that writes ``n`` personas, as ``--dry-run`` counts it."""
    row = MetricEstimate("personas", items=1)
    prompt = personas_prompt(n).render({"excerpts": list(shown(corpus, seed)[1])})
    row.add([(rendered_tokens(prompt), EXPECTED_TOKENS * n)])
    return row


class DerivedPersonas(BaseModel):
    """What ``--personas N`` gave, as the summary and ``<out>.personas.json`` keep it."""

    key: str
    asked: int
    personas: list[str] = Field(default_factory=list)
    dropped: list[dict[str, str]] = Field(default_factory=list)
    """Each persona written but not kept, with the reason."""
    failed: str | None = None
    """Why no persona could be derived (an unusable reply after the repairs)."""
    excerpts: list[dict[str, Any]] = Field(default_factory=list)
    """The chunks shown to the judge: document and offsets."""
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    resumed: bool = False


def screen(
    written: Sequence[str], given: Sequence[str], embedder: Embedder, duplicate: float
) -> tuple[list[str], list[dict[str, str]]]:
    """The personas worth keeping, in the order written, and the others with the reason."""
    kept: list[str] = []
    dropped: list[dict[str, str]] = []
    earlier = [p.strip() for p in given if p.strip()]
    vectors = list(unit_rows(embedder.embed(earlier))) if earlier else []
    for persona in (" ".join(p.split()) for p in written):
        words = len(persona.split())
        if not persona:
            reason = "blank"
        elif words < MIN_WORDS:
            reason = f"too short to say who the person is ({words} words)"
        elif words > MAX_WORDS:
            reason = f"longer than {MAX_WORDS} words ({words})"
        elif REFERS_TO_SOURCE.search(persona):
            reason = "refers to the excerpts, not to a person"
        else:
            vector = unit_rows(embedder.embed([persona]))[0]
            cosines = [float(v @ vector) for v in vectors]
            closest = int(np.argmax(cosines)) if cosines else -1
            if closest >= 0 and cosines[closest] >= duplicate:
                copied = [*earlier, *kept][closest]
                reason = f"near-copy (cosine {cosines[closest]:.3f}) of {copied!r}"
            else:
                kept.append(persona)
                vectors.append(vector)
                continue
        dropped.append({"persona": persona, "reason": reason})
    return kept, dropped


@dataclass(frozen=True)
class PersonaJob:
    """Made from a judge and embedder (in this process or on a Ray worker): the function that
    writes and screens the personas from the excerpts, or None when the budget ran out."""

    n: int
    given: tuple[str, ...]
    duplicate: float
    retries: int
    repairs: int

    def __call__(
        self, judge: Judge, embedder: Embedder | None
    ) -> Callable[[str, tuple[str, ...]], DerivedPersonas | None]:
        assert embedder is not None, "personas are compared by embedding"

        def derive(key: str, texts: tuple[str, ...]) -> DerivedPersonas | None:
            started = time.perf_counter()
            session = JudgeSession(judge, embedder, retries=self.retries, repairs=self.repairs)
            derived = DerivedPersonas(key=key, asked=self.n)

            def unusable(reply: WrittenPersonas) -> str | None:
                kept, dropped = screen(reply.personas, self.given, embedder, self.duplicate)
                if kept:
                    return None
                reasons = "; ".join(f"{d['persona']!r}: {d['reason']}" for d in dropped)
                return f"no usable persona ({reasons})"

            try:
                reply = session.ask(
                    personas_prompt(self.n),
                    {"excerpts": list(texts)},
                    max_tokens=WRITE_TOKENS * self.n,
                    check=unusable,
                )
            except BudgetExhausted:
                return None
            except Unscorable as exc:
                derived.failed = exc.reason
            else:
                derived.personas, derived.dropped = screen(
                    reply.personas, self.given, embedder, self.duplicate
                )
            derived.usage = session.usage
            derived.seconds = round(time.perf_counter() - started, 3)
            return derived

        return derive


def derive_personas(
    corpus: Corpus,
    n: int,
    *,
    seed: int,
    given: Sequence[str],
    duplicate: float,
    where: Judging,
    retries: int,
    repairs: int,
    saved: Path | None,
) -> DerivedPersonas | None:
    """``n`` personas written by the judge from excerpts of ``corpus`` (see the module's
    docstring), read from ``saved`` when a run with the same key wrote them; None when the
    budget ran out first."""
    job = PersonaJob(n, tuple(given), duplicate, retries, repairs)
    prompt = personas_prompt(n)
    chosen, texts = shown(corpus, seed)
    key = digest(
        identity_of(where.judge).digest,
        identity_of(where.embedder).digest,
        prompt.version,
        texts,
        job.given,
        duplicate,
    )
    if saved is not None and saved.exists():
        try:
            before = DerivedPersonas.model_validate_json(saved.read_text())
        except ValidationError:
            before = None  # unreadable: derived again and written over
        if before is not None and before.key == key:
            return before.model_copy(update={"resumed": True})
    [(_, outcome)] = where.map(job, [(key, texts)])
    if outcome is None:
        return None
    lost = isinstance(outcome, WorkerDied)  # not saved: a rerun tries again
    derived: DerivedPersonas = (
        DerivedPersonas(key=key, asked=n, failed=outcome.reason) if lost else outcome
    )
    derived.excerpts = [corpus.chunks[i].citation() for i in chosen]
    if saved is not None and not lost:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(derived.model_dump_json(indent=2))
    return derived
