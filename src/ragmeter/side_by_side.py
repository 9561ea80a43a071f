"""Two systems' answers to the same input read together: which one meets a criterion better?

This is how ragmeter compares systems. Read one answer at a time, a small judge's differences
between systems drown in its own noise; read side by side, the same judge tells apart what
people tell apart (docs/decisions.md has the figures).

The judge is told the criterion in its comparative wording ("Which response uses the knowledge
more?"), shown what both answers share once (the context, the conversation, the question, the
reference), then "Response A" and "Response B", is asked the criterion again, and replies with
one letter. Nothing is generated: P(A) is read from the judge's probabilities of the next token
"A" against "B". Where the two systems were given different passages, each response is shown
after its own. Planted text is taken out of every answer first, as ``evaluate`` takes it out.

Small judges prefer one position whatever the content (the bundled judge gave the larger
probability to the response shown first in 899 of 900 reads of Topical-Chat's groundedness),
so each input is read in both orders and only the probabilities averaged over the two orders
are used: the preference for B over A is the mean of P(B better) over the orders, minus one
half, from -0.5 to 0.5. One order's argmax is never read. A tie is a preference of exactly 0:
two answers shown alike are one, unread; the win rate counts a tie as half a win. Whether to
decide on each input's sign instead (a win, a loss or a tie) was measured: docs/decisions.md.

A read that fails or stays unreadable after the session's retries leaves that input unscored for
the pair, with the reason; nothing is guessed from the other order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ragmeter.criteria.asking import CriterionPrompt, sample_inputs
from ragmeter.criteria.definition import Criterion
from ragmeter.criteria.library import LIBRARY
from ragmeter.judges.base import Judge
from ragmeter.planted import guarded
from ragmeter.ranking import Preferences, Ranking, rank_preferences
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession

Order = Literal["ab", "ba"]
ORDERS: tuple[Order, ...] = ("ab", "ba")
Design = Literal["auto", "all", "anchor"]
ALL_PAIRS_UP_TO = 4
"""``design="auto"`` reads every pair of up to this many systems (6 pairs an input), and each
system against an anchor beyond (k - 1 pairs an input instead of k(k-1)/2)."""
LABELS = ("A", "B")

SYSTEM = (
    "You compare two responses to the same input against one criterion. The data comes first: "
    "what both responses share, then Response A and Response B. The criterion, and how to "
    "reply, follow it."
)
"""The system message, followed by the criterion (``side_by_side_prompt``)."""
PASSAGES_SYSTEM = (
    "You compare the passages two search systems returned for the same query against one "
    "criterion. The data comes first: the query, then Context A and Context B. The criterion, "
    "and how to reply, follow it."
)
"""The system message where the criterion reads no response: the contexts are compared."""

BUILT_IN: dict[str, Criterion] = {
    c.name: c
    for c in (
        Criterion(
            name="faithfulness",
            question="Is every claim of the response supported by the context?",
            compared=(
                "Which response states only what the context supports, with fewer claims that "
                "the context does not support?"
            ),
            reads=("contexts", "question", "answer"),
        ),
        Criterion(
            name="answer_relevance",
            question="Does the response address the question directly and completely?",
            compared="Which response addresses the question more directly and completely?",
            reads=("question", "answer"),
        ),
        Criterion(
            name="retrieved_passages",
            question="Do the passages answer the query?",
            compared=(
                "Which context answers the query better: more of its passages about what the "
                "query asks, and its best passages answering it more fully?"
            ),
            reads=("question", "contexts"),
        ),
        Criterion(
            name="answer_correctness",
            question="Does the response give the answer that the reference gives?",
            compared="Which response agrees better with the reference answer?",
            reads=("question", "reference", "answer"),
        ),
    )
}
"""The RAGAS metrics as side-by-side questions, what each of them asks of two answers; and what
two retrievers' passages for one query are compared on (``retrieved_passages``)."""


def comparative(criterion: Criterion) -> str:
    """The criterion asked of two responses: its own comparative wording where it has one,
    else its question put to the two."""
    if criterion.compared:
        return criterion.compared
    return f"Which response better meets this criterion? {criterion.question}"


def criterion_named(name: str) -> Criterion:
    """A ready criterion or a RAGAS metric by name, as the side-by-side reading asks it."""
    found = BUILT_IN.get(name) or LIBRARY.get(name)
    if found is None:
        known = ", ".join(sorted([*BUILT_IN, *LIBRARY]))
        raise ValueError(f"no side-by-side reading of {name!r}; known: {known}")
    return found


def side_by_side_prompt(criterion: Criterion) -> CriterionPrompt:
    """The criterion stated before the data (``shown``) and asked again after it, then "A or B".
    Stated first, the judge reads the two responses with the question in mind: on 10
    Topical-Chat dialogues (15 pairs of systems each) that raised the mean standardized effect
    of groundedness on the pairs people tell apart from 0.58 to 0.79 (docs/decisions.md)."""
    asked = comparative(criterion)
    system = SYSTEM if "answer" in criterion.reads else PASSAGES_SYSTEM
    return CriterionPrompt(
        name=f"side_by_side.{criterion.name}",
        instruction=f"{system} The criterion: {asked}",
        question=f"Criterion: {asked}\nAnswer with one letter, A or B.",
    )


def compared_field(criterion: Criterion) -> Literal["response", "context"]:
    """What differs between the two sides: the responses, or where the criterion reads none
    (two retrievers compared), the contexts."""
    return "response" if "answer" in criterion.reads else "context"


def shown(criterion: Criterion, first: Sample, second: Sample) -> dict[str, str | list[str]]:
    """What the judge reads of two answers to one input, in order: the fields both share, then
    each response (after its own passages where the two were given different ones); where no
    response is read, each side's passages."""
    one, two = sample_inputs(criterion, first), sample_inputs(criterion, second)
    compared = compared_field(criterion)
    own = {compared} | (
        {"context"} if "context" in one and one["context"] != two["context"] else set()
    )
    inputs = {k: v for k, v in one.items() if k not in own}
    for letter, found in (("A", one), ("B", two)):
        for field in ("context", "response"):
            if field in own:
                inputs[f"{field} {letter}"] = found[field]
    return inputs


def words_compared(criterion: Criterion, sample: Sample) -> int:
    """The length in words of what is compared of ``sample`` (for the length bias)."""
    if compared_field(criterion) == "response":
        return len(sample.answer.split())
    return sum(len(passage.split()) for passage in sample.contexts)


class Read(BaseModel):
    """One order's read: P(the response shown first is better), or why there is none."""

    order: Order
    first_better: float | None
    unscored_reason: str | None = None
    method: str | None = None
    """How the probabilities were read (``"logprobs"``, or replies sampled)."""


class InputPreference(BaseModel):
    """One input's preference for ``b`` over ``a``: the mean over both orders of P(b better),
    minus one half; None (with the reason) where an order could not be read."""

    input: str
    a: str
    b: str
    preference: float | None
    unscored_reason: str | None = None
    reads: list[Read]
    """Both orders' reads; none where the two answers are shown alike (a tie, unread)."""
    length_a: int
    length_b: int
    """The lengths in words of what was compared (for the length bias)."""


def preference_of(reads: Sequence[Read]) -> tuple[float | None, str | None]:
    """The preference for B over A from its reads, or why there is none."""
    missing = [r for r in reads if r.first_better is None]
    if missing:
        return None, "; ".join(f"order {r.order}: {r.unscored_reason}" for r in missing)
    b_better = [1 - r.first_better if r.order == "ab" else r.first_better for r in reads]  # type: ignore[operator]
    return float(np.mean(b_better)) - 0.5, None


Job = tuple[str, str, Sample, str, Sample]
"""(input, system a, its answer, system b, its answer): one pair read on one input."""


def read_input(
    session: JudgeSession, criterion: Criterion, jobs: Sequence[Job]
) -> list[InputPreference]:
    """Every pair of one input read in both orders, asked as one batch (the shared input is
    read once by a local judge). Two answers the judge would be shown alike are a tie without
    a read: both orders show the same prompt, so their P(B better) add to exactly one."""
    prompt = side_by_side_prompt(criterion)
    asked = [
        (prompt, shown(criterion, *((sa, sb) if order == "ab" else (sb, sa))), {})
        for _, _, sa, _, sb in jobs
        for order in ORDERS
    ]
    alike = [asked[2 * n][1] == asked[2 * n + 1][1] for n in range(len(jobs))]
    to_read = [q for n, q in enumerate(asked) if not alike[n // 2]]
    answers = iter(session.ask_levels_all(to_read, LABELS) if to_read else [])
    found = []
    for n, (key, a, sa, b, sb) in enumerate(jobs):
        reads = [] if alike[n] else [_read(order, next(answers)) for order in ORDERS]
        preference, reason = preference_of(reads) if reads else (0.0, None)
        found.append(
            InputPreference(
                input=key,
                a=a,
                b=b,
                preference=preference,
                unscored_reason=reason,
                reads=reads,
                length_a=words_compared(criterion, sa),
                length_b=words_compared(criterion, sb),
            )
        )
    return found


def _read(order: Order, answer: tuple[dict[str, float], str] | Unscorable) -> Read:
    if isinstance(answer, Unscorable):
        return Read(order=order, first_better=None, unscored_reason=answer.reason)
    mass, method = answer
    total = mass["A"] + mass["B"]
    if total <= 0:
        return Read(order=order, first_better=None, unscored_reason="neither A nor B")
    return Read(order=order, first_better=mass["A"] / total, method=method)


# --- designs ------------------------------------------------------------------------------------


def pairs_to_read(
    systems: Sequence[str], design: Design, anchor: str | None = None
) -> list[tuple[str, str]]:
    """The pairs read on each input: every pair, or each system against the anchor (the first
    system unless one is named); ``auto`` reads every pair of up to ``ALL_PAIRS_UP_TO``."""
    if design == "auto":
        design = "all" if len(systems) <= ALL_PAIRS_UP_TO else "anchor"
    if design == "all":
        return list(combinations(systems, 2))
    if design != "anchor":
        raise ValueError(f"design must be 'auto', 'all' or 'anchor', not {design!r}")
    anchor = anchor or systems[0]
    if anchor not in systems:
        raise ValueError(f"the anchor {anchor!r} is not among the systems: {list(systems)}")
    return [
        (anchor, s) if systems.index(anchor) < systems.index(s) else (s, anchor)
        for s in systems
        if s != anchor
    ]


# --- order and length ---------------------------------------------------------------------------


class OrderBias(BaseModel):
    """How often the response shown first was preferred (P > 0.5), whatever it was."""

    reads: int
    first_preferred: int

    @property
    def share(self) -> float | None:
        return self.first_preferred / self.reads if self.reads else None


def order_bias(found: Sequence[InputPreference]) -> OrderBias:
    reads = [r.first_better for p in found for r in p.reads if r.first_better is not None]
    return OrderBias(reads=len(reads), first_preferred=sum(p > 0.5 for p in reads))


class LengthBias(BaseModel):
    """Whether the judge prefers the longer answer: over inputs whose two answers differ in
    length, the share on which the longer one was preferred, and the slope of the preference
    on ``tanh(length difference / its spread)`` (AlpacaEval-LC's length term), fitted with an
    intercept per pair of systems."""

    inputs: int
    longer_preferred: float | None
    slope: float | None


def length_controlled(found: Sequence[InputPreference]) -> tuple[list[InputPreference], LengthBias]:
    """The preferences with the length term taken out, and the length bias measured: each
    preference minus slope x tanh(its length difference / the spread), the slope fitted by
    least squares beside one intercept per pair of systems (so a system that is better and
    longer keeps what is not explained by length)."""
    scored = [p for p in found if p.preference is not None]
    differing = [p for p in scored if p.length_a != p.length_b]
    longer = [(p.preference > 0) == (p.length_b > p.length_a) for p in differing if p.preference]
    if len(scored) < 3:
        return list(found), LengthBias(inputs=len(differing), longer_preferred=None, slope=None)
    gaps = np.array([p.length_b - p.length_a for p in scored], dtype=float)
    spread = gaps.std() or 1.0
    term = np.tanh(gaps / spread)
    pairs = sorted({(p.a, p.b) for p in scored})
    design = np.zeros((len(scored), len(pairs) + 1))
    for row, p in enumerate(scored):
        design[row, pairs.index((p.a, p.b))] = 1.0
    design[:, -1] = term
    target = np.array([p.preference for p in scored], dtype=float)
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    slope = float(coefficients[-1])
    controlled = iter(np.clip(target - slope * term, -0.5, 0.5))  # in ``scored``'s order
    adjusted = [
        p if p.preference is None else p.model_copy(update={"preference": float(next(controlled))})
        for p in found
    ]
    bias = LengthBias(
        inputs=len(differing),
        longer_preferred=sum(longer) / len(longer) if longer else None,
        slope=slope,
    )
    return adjusted, bias


# --- comparing systems ------------------------------------------------------------------------


class MetricSideBySide(BaseModel):
    """One metric read side by side: the ranking and its pairs, the same with length
    controlled, the position and length biases, and every input's preferences."""

    metric: str
    comparative: str
    ranking: Ranking
    length_controlled: Ranking | None
    order_bias: OrderBias
    length_bias: LengthBias
    preferences: list[InputPreference]
    unscored: int


class SideBySide(BaseModel):
    """A comparison read side by side: what was read, what it cost, and each metric's
    ranking."""

    systems: list[str]
    inputs: int
    """Inputs every system answered."""
    missing: dict[str, list[str]]
    """Per system, the inputs it did not answer (left out of every comparison)."""
    design: str
    pairs_read: list[tuple[str, str]]
    reads: int
    judge_calls: int
    """Reads sent to the judge in this run; the rest came from the call cache."""
    seconds: float
    planted: list[dict[str, str]] = []
    """Each unit of text addressed to the judge found in an answer: its system, sample, field,
    rule and text (taken out before reading unless kept)."""
    metrics: list[MetricSideBySide]


def paired_inputs(
    systems: Mapping[str, Sequence[Sample]],
) -> tuple[list[str], dict[str, list[str]]]:
    """The inputs every system answered, by sample id (in the first system's order), and per
    system the ids it lacks that another has."""
    keys = {name: [s.key for s in samples] for name, samples in systems.items()}
    for name, found in keys.items():
        twice = sorted(k for k, n in Counter(found).items() if n > 1)
        if twice:
            raise ValueError(f"{name}: the id {twice[0]!r} is given twice; inputs are paired by id")
    held = {name: set(found) for name, found in keys.items()}
    every = set.union(*held.values())
    shared = [k for k in next(iter(keys.values())) if all(k in ids for ids in held.values())]
    missing = {name: sorted(every - ids) for name, ids in held.items()}
    return shared, {name: ids for name, ids in missing.items() if ids}


def planned_reads(
    systems: Sequence[str],
    inputs: int,
    metrics: int,
    design: Design = "auto",
    anchor: str | None = None,
) -> int:
    """Reads a comparison makes: two orders of each pair read, on each input, per metric."""
    return 2 * len(pairs_to_read(systems, design, anchor)) * inputs * metrics


def compare_side_by_side(
    systems: Mapping[str, Sequence[Sample]],
    criteria: Sequence[Criterion],
    judge: Judge,
    *,
    design: Design = "auto",
    anchor: str | None = None,
    retries: int = 2,
    rounds: int = 2000,
    seed: int = 0,
    difference: float | None = None,
    planted: Literal["remove", "keep"] = "remove",
    unit_of: Callable[[str], str] | None = None,
    on_input: Callable[[int], None] | None = None,
) -> SideBySide:
    """Read every input's answers side by side under each criterion and rank the systems.

    Args:
        systems: system name -> its answers; inputs are paired by sample id, and one that some
            system did not answer is named in ``missing`` and left out.
        criteria: what to compare on (``criterion_named`` gives the ready ones).
        judge: the judge, behind the call cache where reruns should cost nothing.
        design: ``"all"`` pairs, each system against an ``"anchor"``, or ``"auto"``.
        planted: text addressed to the judge is taken out of the answers (``"remove"``) or left
            in (``"keep"``); either way the units found are listed in ``planted``.
        unit_of: input id -> what the paired test draws over, where several inputs belong
            together (a query's passages compared rank by rank): their preferences are
            averaged, and the pair decided over these units. None: each input is one.
        on_input: called with the number of reads made after each input (a progress bar).
    """
    names = list(systems)
    if len(names) < 2:
        raise ValueError(f"side by side compares two systems or more, got {len(names)}")
    systems, planted_units = _guarded(systems, remove=planted == "remove")
    shared, missing = paired_inputs(systems)
    if not shared:
        raise ValueError("no input was answered by every system (inputs are paired by id)")
    by_id = {name: {s.key: s for s in samples} for name, samples in systems.items()}
    pairs = pairs_to_read(names, design, anchor)
    started = time.perf_counter()
    calls = 0
    found: list[MetricSideBySide] = []
    for criterion in criteria:
        preferences: list[InputPreference] = []
        for key in shared:
            session = JudgeSession(judge, retries=retries)
            jobs = [(key, a, by_id[a][key], b, by_id[b][key]) for a, b in pairs]
            preferences += read_input(session, criterion, jobs)
            calls += session.usage.model_calls
            if on_input:
                on_input(2 * len(jobs))
        found.append(_measured(criterion, names, preferences, rounds, seed, difference, unit_of))
    return SideBySide(
        systems=names,
        inputs=len({unit_of(k) for k in shared} if unit_of else shared),
        missing=missing,
        design="all" if len(pairs) == len(names) * (len(names) - 1) // 2 else "anchor",
        pairs_read=pairs,
        reads=sum(len(p.reads) for m in found for p in m.preferences),
        judge_calls=calls,
        seconds=round(time.perf_counter() - started, 3),
        planted=planted_units,
        metrics=found,
    )


def _guarded(
    systems: Mapping[str, Sequence[Sample]], remove: bool
) -> tuple[dict[str, list[Sample]], list[dict[str, str]]]:
    """Each system's answers as the judge is to read them (``planted.guarded``), and every
    planted unit found, with its system and sample."""
    kept: dict[str, list[Sample]] = {}
    units: list[dict[str, str]] = []
    for name, samples in systems.items():
        kept[name] = []
        for sample in samples:
            judged, found = guarded(sample, remove=remove)
            kept[name].append(judged)
            units += [{"system": name, "sample": sample.key, **u.record()} for u in found]
    return kept, units


def table_of(
    found: Sequence[InputPreference], unit_of: Callable[[str], str] | None = None
) -> Preferences:
    """(a, b) -> input -> preference, as ``rank_preferences`` reads them; with ``unit_of``, the
    mean preference of each unit's inputs (None where one of them is unscored)."""
    grouped: dict[tuple[str, str], dict[str, list[float | None]]] = {}
    for p in found:
        unit = unit_of(p.input) if unit_of else p.input
        grouped.setdefault((p.a, p.b), {}).setdefault(unit, []).append(p.preference)
    return {
        pair: {
            unit: None if None in values else float(np.mean(values))  # type: ignore[arg-type]
            for unit, values in units.items()
        }
        for pair, units in grouped.items()
    }


def _measured(
    criterion: Criterion,
    systems: Sequence[str],
    found: list[InputPreference],
    rounds: int,
    seed: int,
    difference: float | None,
    unit_of: Callable[[str], str] | None,
) -> MetricSideBySide:
    rank = lambda table: rank_preferences(  # noqa: E731
        table, systems, metric=criterion.name, difference=difference, rounds=rounds, seed=seed
    )
    controlled, bias = length_controlled(found)
    unscored = sum(p.preference is None for p in found)
    return MetricSideBySide(
        metric=criterion.name,
        comparative=comparative(criterion),
        ranking=rank(table_of(found, unit_of)),
        length_controlled=rank(table_of(controlled, unit_of)) if bias.slope is not None else None,
        order_bias=order_bias(found),
        length_bias=bias,
        preferences=found,
        unscored=unscored,
    )
