"""Which pairs to judge: every system against the reference, and/or complete pairs of systems.

``reference`` is the paper's main design (Table 3): each system's answer against the LFRQA answer,
one battle per system and question, which gives win rates against the reference. ``complete``
adds every pair of systems on a sample of N questions per domain (the paper's Table 6, columns B
and C), which ties the systems to each other directly and narrows the Elo intervals.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ragmeter.arena.data import Pair, Question, SystemAnswers

Design = Literal["reference", "complete", "both"]
REFERENCE = "reference"
"""The name the reference answers play under on the leaderboard."""


@dataclass
class PairPlan:
    pairs: list[Pair]
    missing: Counter[str] = field(default_factory=Counter)
    """Questions skipped per system because it has no answer (e.g. generation failed)."""
    without_reference: int = 0
    """Questions skipped in the reference design because they have no reference answer."""


def reference_pairs(
    questions: Sequence[Question],
    systems: Sequence[SystemAnswers],
    *,
    reference_name: str = REFERENCE,
) -> PairPlan:
    """One pair per system and question: the system's answer (A) against the reference (B)."""
    _check_names(systems, reference_name)
    plan = PairPlan(pairs=[])
    for question in questions:
        if not question.reference:
            plan.without_reference += 1
            continue
        for system in systems:
            answer = system.answers.get(question.id)
            if not answer:
                plan.missing[system.name] += 1
                continue
            plan.pairs.append(
                _pair(
                    question, system.name, answer, reference_name, question.reference, "reference"
                )
            )
    return plan


def complete_pairs(
    questions: Sequence[Question],
    systems: Sequence[SystemAnswers],
    *,
    per_domain: int,
    seed: int = 0,
) -> PairPlan:
    """Every pair of systems on ``per_domain`` questions sampled (seeded) from each domain.

    Only questions that every system answered are sampled, so each sampled question contributes
    all K(K-1)/2 pairs and no system is compared on easier questions than another.
    """
    _check_names(systems, None)
    plan = PairPlan(pairs=[])
    by_domain: dict[str, list[Question]] = {}
    for question in questions:
        if all(s.answers.get(question.id) for s in systems):
            by_domain.setdefault(question.domain or "", []).append(question)
        else:
            for s in systems:
                if not s.answers.get(question.id):
                    plan.missing[s.name] += 1
    rng = random.Random(seed)
    for domain in sorted(by_domain):
        pool = by_domain[domain]
        chosen = rng.sample(pool, min(per_domain, len(pool)))
        for question in chosen:
            for first, second in itertools.combinations(systems, 2):
                plan.pairs.append(
                    _pair(
                        question,
                        first.name,
                        first.answers[question.id] or "",
                        second.name,
                        second.answers[question.id] or "",
                        "complete",
                    )
                )
    return plan


def design_pairs(
    questions: Sequence[Question],
    systems: Sequence[SystemAnswers],
    design: Design = "reference",
    *,
    per_domain: int = 100,
    seed: int = 0,
    reference_name: str = REFERENCE,
) -> PairPlan:
    """The pairs of one design, or of both (reference pairs first)."""
    if design not in ("reference", "complete", "both"):
        raise ValueError(f"design must be reference, complete or both, not {design!r}")
    plans = []
    if design in ("reference", "both"):
        plans.append(reference_pairs(questions, systems, reference_name=reference_name))
    if design in ("complete", "both"):
        plans.append(complete_pairs(questions, systems, per_domain=per_domain, seed=seed))
    merged = PairPlan(pairs=[p for plan in plans for p in plan.pairs])
    for plan in plans:
        merged.missing |= plan.missing  # the same questions, counted by each design: no sum
        merged.without_reference += plan.without_reference
    return merged


def _pair(
    question: Question, system_a: str, answer_a: str, system_b: str, answer_b: str, design: str
) -> Pair:
    return Pair(
        id=f"{question.id}|{system_a}|{system_b}",
        question=question.question,
        answer_a=answer_a,
        answer_b=answer_b,
        system_a=system_a,
        system_b=system_b,
        question_id=question.id,
        domain=question.domain,
        design=design,
        reference=question.reference,
    )


def _check_names(systems: Sequence[SystemAnswers], reference_name: str | None) -> None:
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ValueError(f"two systems share a name: {names}")
    if reference_name is not None and reference_name in names:
        raise ValueError(f"a system is named {reference_name!r}, the reference's name")
