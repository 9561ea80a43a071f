"""The pairwise judge: the paper's rubric, our few-shot examples, and both presentation orders.

The rubric is the paper's (Tables 13-14): truthfulness first, then helpfulness, then completeness,
with "not sure" allowed. The judge thinks in at most two sentences, then rates 1 (<answer 1>),
2 (<answer 2>) or 0 (not sure), as one JSON object.

Small judges prefer whichever answer they read first (ours picked "A" whether A was the good or the
bad answer), so by default each pair is judged in both orders: when the two agree, that is the
verdict; when they disagree, the verdict is a tie and the pair counts as a flip (``combine=
"agree"``). With ``combine="sum"`` the verdict is the sign of the two preferences added up: a
"not sure" in one order leaves the other order's preference standing, while opposite picks still
cancel to a tie, so position bias is cancelled just the same. ``combine="confidence"`` is the
sum, except that opposite picks are not a tie: picking the answer in the same position both times
is the position bias, not a judgement that the answers are equal, so the judge's confidence
decides. Each order's preference is weighted by the judge's probabilities of its ratings, read
from the log-probabilities where it wrote its rating, and the verdict is the sign of the weighted
sum; a tie is left where the judge said "not sure" in both orders (or the weights cancel
exactly). Only this rule asks the judge for log-probabilities; from a judge that gives none it is
the ``"sum"`` rule. Whether the confidence is worth more than a coin on those pairs depends on
the judge: the agreement report measures it (see docs/agreement.md).

A single random order per pair (seeded, so a rerun shows the same order) halves the cost. A reply
that stays unreadable after the session's retries makes the pair unscored, never a tie.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmeter.arena.battles import (
    JUDGEMENTS_DB,
    RUN_FILE,
    Battle,
    Order,
    OrderVerdict,
    battle,
    write_battles,
)
from ragmeter.arena.claim_judge import NAME as CLAIMS_NAME
from ragmeter.arena.claim_judge import (
    check_pairs,
    judge_by_claims_on_cluster,
    judge_pair_by_claims,
)
from ragmeter.arena.claim_judge import version as claims_version
from ragmeter.arena.data import Label, Pair
from ragmeter.cluster import (
    Executor,
    ModelRecipe,
    RayExecutor,
    RayPool,
    describe_executor,
    keyed_on_cluster,
    ray_executor,
)
from ragmeter.criteria.definition import Criterion
from ragmeter.judges.base import Judge, TokenLogprobs, identity_of
from ragmeter.judges.registry import resolve_models
from ragmeter.manifest import model_record
from ragmeter.prompts import Prompt
from ragmeter.sample import Sample
from ragmeter.score import Score, Usage
from ragmeter.session import JudgeSession, measured
from ragmeter.side_by_side import read_input, side_by_side_prompt
from ragmeter.store import ScoreStore
from ragmeter.version import __version__

Orders = Literal["both", "random"]
Combine = Literal["agree", "sum", "confidence"]
COMBINE_RULES: tuple[Combine, ...] = ("agree", "sum", "confidence")
Method = Literal["generative", "claims", "side_by_side"]
"""How a pair is decided: the judge's written verdict on the two answers (this module), the
answers' claim tables against the reference and the passages (``claim_judge``), or the judge's
probabilities of "A" and "B" with the two answers side by side (``ragmeter.side_by_side``, the
reading every comparison of systems makes; a system against the reference is its special case)."""
METHODS: tuple[Method, ...] = ("generative", "claims", "side_by_side")


def check_combine(rule: str) -> None:
    if rule not in COMBINE_RULES:
        raise ValueError(f"combine must be 'agree', 'sum' or 'confidence', not {rule!r}")


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be 'generative', 'claims' or 'side_by_side', not {method!r}")


MAX_TOKENS = 200
"""Enough for two sentences of reasoning and the rating; a small local model writes ~20 tokens/s."""

RATING_ALTERNATIVES = 10
"""Log-probabilities asked for each reply token: enough for the three ratings to be among them."""


def rating_alternatives(rule: Combine) -> int:
    """Log-probabilities to ask for under ``rule``: only ``"confidence"`` reads them, and some
    endpoints refuse a request for them, so the other rules do not ask."""
    return RATING_ALTERNATIVES if rule == "confidence" else 0


class PairwiseRating(BaseModel):
    reasoning: str = Field(description="At most two short sentences.")
    rating: Literal[0, 1, 2]


_INSTRUCTION = """\
We will show you a query and a pair of answers to the query. You need to provide your preference \
over this pair of answers.
First, try your best to determine whether the information in an answer can help truthfully \
answer the query. Then rate your preference based on Helpfulness and Truthfulness.
- Helpfulness: information that is helpful/relevant to answer the query. An ideal answer consists \
of only information that is helpful/relevant to answer the query.
- Truthfulness: information that you believe is correct to answer the query. By our definition, \
truthful information should be helpful information. If you find it difficult to determine the \
truthfulness of some information, consider it untruthful. Often time, this is due to not enough \
context provided in the answer. Another source of untruthfulness is when conflicting information \
is presented, and the answer does not reconcile them in a coherent way.
<rubric>
Here is how you judge (in the order of importance),
- If one answer has all truthful information while the other has some untruthful information, \
prefer the all truthful one.
- If both have some untruthful information, prefer the one with less untruthful information.
- If both have all truthful information, prefer the one with more truthful or helpful information.
- If two answers look equally good, or it is too hard to judge using the 3 cases above, then you \
are "not sure" which one is better.
</rubric>
Query is in the <query></query> tags. Answer 1 is in <answer 1></answer 1>, and Answer 2 is in \
<answer 2></answer 2>.
Review the rubric in <rubric> tags: if you prefer <answer 1>, the rating is 1; if you prefer \
<answer 2>, the rating is 2; if you are not sure, the rating is 0.
First, think step by step and put your thinking in "reasoning": at most two short sentences, \
under 40 words. Then give your "rating", which must be 0, 1 or 2."""

# Our own examples, one per rating; kept short because every call pays for them.
_EXAMPLES: list[tuple[dict[str, str], PairwiseRating]] = [
    (
        {
            "query": "why does bread go stale faster in the fridge?",
            "answer 1": "Staling is mostly starch retrogradation: starch that softened during "
            "baking slowly recrystallises and traps water, so the crumb turns firm and dry. It "
            "runs fastest just above freezing, so a fridge speeds it up, while a freezer almost "
            "stops it.",
            "answer 2": "The cold air in a fridge is very dry, so it pulls the water out of the "
            "bread.",
        },
        PairwiseRating(
            reasoning="Answer 1 gives the real cause, starch recrystallising fastest at fridge "
            "temperatures, and adds the freezer contrast; Answer 2 blames dryness alone, which is "
            "not the main cause.",
            rating=1,
        ),
    ),
    (
        {
            "query": "can I use baking soda instead of baking powder?",
            "answer 1": "Yes, swap them one for one; they are the same leavening agent.",
            "answer 2": "Only with changes. Baking powder already contains an acid, but baking "
            "soda needs one from the recipe, such as buttermilk or lemon juice. Soda is also "
            "three to four times stronger, so use about a quarter of the amount.",
        },
        PairwiseRating(
            reasoning="Answer 1 is untruthful: the two are not the same and a one-for-one swap "
            "fails. Answer 2 is correct and explains how to substitute.",
            rating=2,
        ),
    ),
    (
        {
            "query": "is it better to run in the morning or in the evening?",
            "answer 1": "Either works; the best time is the one you can keep up. Morning runs fit "
            "in before the day gets busy, while in the evening the body is warm and some people "
            "feel stronger.",
            "answer 2": "There is no single best time. Evening runs can feel easier because the "
            "muscles are warm, but running in the morning helps some people keep a habit. "
            "Consistency matters more than the hour.",
        },
        PairwiseRating(
            reasoning="Both answers are truthful and make the same points about habit and body "
            "temperature. Neither is clearly more helpful, so I am not sure.",
            rating=0,
        ),
    ),
]

PAIRWISE = Prompt(
    name="arena.pairwise",
    instruction=_INSTRUCTION,
    output=PairwiseRating,
    examples=_EXAMPLES,
)

_POSITION = {1: -1, 2: 1, 0: 0}
"""Rating -> preference in presentation terms: -1 for the answer shown first, 1 for the second."""


# --- orders -------------------------------------------------------------------------------------


def presentation_orders(pair: Pair, orders: Orders, seed: int = 0) -> list[Order]:
    """``["ab", "ba"]`` for both orders, else one random order (see ``random_order``)."""
    if orders == "both":
        return ["ab", "ba"]
    if orders != "random":
        raise ValueError(f"orders must be 'both' or 'random', not {orders!r}")
    return [random_order(pair.id, seed)]


def random_order(pair_id: str, seed: int = 0) -> Order:
    """A coin derived from the seed and the pair id, so the same pair gets the same order
    whatever else is in the run."""
    coin = hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()[0] & 1
    return "ab" if coin == 0 else "ba"


def preference_in_pair(rating: int, order: Order) -> Label:
    """Turn a rating (which answer *position* won) into a preference between A and B."""
    position = _POSITION[rating]
    return position if order == "ab" else -position  # type: ignore[return-value]


_RATING_VALUE = re.compile(r'"rating"\s*:\s*(?=[012])')
_RATINGS = ("1", "2", "0")


def rating_probabilities(
    logprobs: Sequence[TokenLogprobs] | None,
) -> dict[str, float] | None:
    """The judge's probabilities of the ratings "1", "2" and "0" where it wrote its rating.

    Read from the alternatives of the token that holds the rating's digit and renormalised over
    the three; None when the reply carries no log-probabilities or none of them is a rating.
    """
    if not logprobs:
        return None
    text = "".join(t.token for t in logprobs)
    found = _RATING_VALUE.search(text)
    if found is None:
        return None
    ends = accumulate(len(token.token) for token in logprobs)
    # The token in which the digit after "rating": begins.
    digit = next(token for token, end in zip(logprobs, ends, strict=True) if end > found.end())
    mass = digit.probabilities(lambda t: t.strip() if t.strip() in _RATINGS else None)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {rating: mass.get(rating, 0.0) / total for rating in _RATINGS}


def expected_preference(verdict: OrderVerdict) -> float | None:
    """The order's preference in the pair's terms (-1 A ... 1 B) weighted by the judge's
    probabilities of its ratings; the preference itself where there are none."""
    if verdict.preference is None or verdict.probabilities is None:
        return verdict.preference
    p = verdict.probabilities
    toward_second = p.get("2", 0.0) - p.get("1", 0.0)
    return toward_second if verdict.order == "ab" else -toward_second


def combine(
    verdicts: Sequence[OrderVerdict], rule: Combine = "agree"
) -> tuple[Label | None, bool | None, str | None]:
    """The pair's verdict, whether the orders flipped, and why it is unscored if it is.

    The orders disagree (a flip) when their preferences differ. Under ``"agree"`` a flip is a
    tie; under ``"sum"`` the verdict is the sign of the preferences' sum, so only opposite picks
    tie; under ``"confidence"`` opposite picks are settled by the sign of the sum of the expected
    preferences (see ``expected_preference``) where every order has the probabilities of its
    ratings; with a bare rating on one side the two would not weigh alike, so such a pair is
    summed. Any unscored order leaves the pair unscored rather than guessing from the other order.
    """
    check_combine(rule)
    missing = [v for v in verdicts if v.preference is None]
    if missing:
        reasons = "; ".join(f"order {v.order}: {v.unscored_reason}" for v in missing)
        return None, None, reasons
    preferences = {v.preference for v in verdicts}
    if len(verdicts) < 2:
        return verdicts[0].preference, None, None
    if len(preferences) == 1:
        return verdicts[0].preference, False, None
    weighed = all(v.probabilities is not None for v in verdicts)
    if rule == "confidence" and preferences == {-1, 1} and weighed:
        return sign(sum(expected_preference(v) or 0.0 for v in verdicts)), True, None
    if rule in ("sum", "confidence"):
        return sign(sum(v.preference or 0 for v in verdicts)), True, None
    return 0, True, None


def sign(value: float) -> Label:
    """-1, 0 or 1: the preference a signed difference (B minus A) stands for."""
    return (value > 0) - (value < 0)  # type: ignore[return-value]


# --- judging ------------------------------------------------------------------------------------


def open_judge(
    judge: str | Judge,
    cache: bool | str | Path = True,
    options: Mapping[str, Any] | None = None,
) -> Judge:
    """A judge from a spec (with its provider's ``options``) or object, behind the call cache
    unless ``cache`` is False."""
    model, _ = resolve_models(judge, cache=cache, needs_embedder=False, judge_options=options)
    return model


def judgement_key(
    pair: Pair, order: Order, judge: Judge, max_tokens: int, top_logprobs: int = 0
) -> str:
    """Keyed by what the judge is shown, not by the pair's id: the same two answers in the same
    positions are one judgement, whichever design or file they came from, and by the judge's
    identity. A judgement made with the ratings' probabilities is another; one made without
    leaves them out of its key, so the other rules share their judgements."""
    first, second = (
        (pair.answer_a, pair.answer_b) if order == "ab" else (pair.answer_b, pair.answer_a)
    )
    asked = [top_logprobs] if top_logprobs else []
    material = json.dumps(
        [
            PAIRWISE.version,
            identity_of(judge).digest,
            max_tokens,
            *asked,
            pair.question,
            first,
            second,
        ]
    )
    return hashlib.sha256(material.encode()).hexdigest()


def judge_order(
    pair: Pair,
    order: Order,
    judge: Judge,
    *,
    retries: int = 2,
    max_tokens: int = MAX_TOKENS,
    top_logprobs: int = 0,
) -> Score:
    """One presentation; ``value`` is -1 when the answer shown first wins, 1 for the second, 0
    not sure, None when unscored (with the reason). The explanation holds the rating, the
    reasoning and, when ``top_logprobs`` asks for them, the probabilities of the ratings (None
    where the judge gives no log-probabilities)."""
    first, second = (
        (pair.answer_a, pair.answer_b) if order == "ab" else (pair.answer_b, pair.answer_a)
    )
    session = JudgeSession(judge, retries=retries)

    def measure() -> tuple[float, dict[str, Any]]:
        reply, logprobs = session.ask_with_logprobs(
            PAIRWISE,
            {"query": pair.question, "answer 1": first, "answer 2": second},
            max_tokens=max_tokens,
            top_logprobs=top_logprobs,
        )
        return float(_POSITION[reply.rating]), {
            "rating": reply.rating,
            "reasoning": reply.reasoning,
            "probabilities": rating_probabilities(logprobs),
        }

    return measured(pair.id, f"{PAIRWISE.name}.{order}", session, measure)


def _order_verdict(order: Order, score: Score, cached: bool) -> OrderVerdict:
    if score.value is None:
        return OrderVerdict(
            order=order,
            preference=None,
            unscored_reason=score.unscored_reason,
            cached=cached,
            usage=score.usage,
        )
    rating = int(score.explanation["rating"])
    return OrderVerdict(
        order=order,
        preference=preference_in_pair(rating, order),
        rating=rating,  # type: ignore[arg-type]
        probabilities=score.explanation.get("probabilities"),
        reasoning=score.explanation.get("reasoning"),
        cached=cached,
        usage=score.usage,
    )


class OrderJudge:
    """Judges presentations with one judge: what runs where the judge is, a thread of this
    process or a Ray worker that loaded its own. Returns the judgement's key, worked out once
    judging ended (the judge may have learned to ask its server another way meanwhile), and
    the score."""

    def __init__(
        self,
        judge: Judge,
        _embedder: object = None,
        *,
        retries: int,
        max_tokens: int,
        top_logprobs: int,
    ) -> None:
        self.judge = judge
        self.retries = retries
        self.max_tokens = max_tokens
        self.top_logprobs = top_logprobs

    def __call__(self, pair: Pair, order: Order) -> tuple[str, Score]:
        score = judge_order(
            pair,
            order,
            self.judge,
            retries=self.retries,
            max_tokens=self.max_tokens,
            top_logprobs=self.top_logprobs,
        )
        return judgement_key(pair, order, self.judge, self.max_tokens, self.top_logprobs), score


def battle_of(pair: Pair, verdicts: list[OrderVerdict], combine_rule: Combine) -> Battle:
    """The pair's verdict from its presentations' verdicts."""
    verdict, flipped, reason = combine(verdicts, combine_rule)
    return battle(pair, verdict=verdict, unscored_reason=reason, flipped=flipped, orders=verdicts)


def judge_pair(
    pair: Pair,
    judge: Judge,
    store: ScoreStore | None = None,
    *,
    orders: Orders = "both",
    combine_rule: Combine = "agree",
    seed: int = 0,
    retries: int = 2,
    max_tokens: int = MAX_TOKENS,
) -> Battle:
    """Judge a pair in its presentation order(s), reusing scored judgements from ``store`` and
    committing each new one to it as soon as it completes."""
    alternatives = rating_alternatives(combine_rule)
    judge_one = OrderJudge(judge, retries=retries, max_tokens=max_tokens, top_logprobs=alternatives)
    verdicts: list[OrderVerdict] = []
    for order in presentation_orders(pair, orders, seed):
        key = judgement_key(pair, order, judge, max_tokens, alternatives)
        stored = store.reusable(key) if store else None
        if stored is not None:
            verdicts.append(_order_verdict(order, stored, cached=True))
            continue
        key, score = judge_one(pair, order)
        if store:
            store.put(key, score)
        verdicts.append(_order_verdict(order, score, cached=False))
    return battle_of(pair, verdicts, combine_rule)


ARENA = Criterion(
    name="arena",
    question=(
        "Is the answer helpful and truthful for the query: only information that helps answer "
        "it, all of it correct?"
    ),
    compared=(
        "Which answer is better for the query? Prefer the answer whose information is all "
        "truthful; if both are, the one with more truthful, helpful information."
    ),
    reads=("question", "answer"),
)
"""The paper's rubric (truthfulness, then helpfulness) as a side-by-side question."""


def judge_pair_side_by_side(pair: Pair, judge: Judge, *, retries: int = 2) -> Battle:
    """The pair read side by side in both orders (``side_by_side.read_input``): the verdict is
    the sign of the preference for B, both orders' probabilities averaged; each order is kept
    as a presentation, its ``probabilities`` the judge's P("1") and P("2") of the position."""
    session = JudgeSession(judge, retries=retries)
    sides = [
        Sample(id=pair.id, question=pair.question, answer=pair.answer_a),
        Sample(id=pair.id, question=pair.question, answer=pair.answer_b),
    ]
    (read,) = read_input(session, ARENA, [(pair.id, "A", sides[0], "B", sides[1])])
    orders = [
        OrderVerdict(
            order=r.order,
            preference=None
            if r.first_better is None
            else preference_in_pair(
                1 if r.first_better > 0.5 else 2 if r.first_better < 0.5 else 0, r.order
            ),
            probabilities=None
            if r.first_better is None
            else {"1": r.first_better, "2": 1 - r.first_better, "0": 0.0},
            unscored_reason=r.unscored_reason,
        )
        for r in read.reads
    ]
    if orders:  # what the pair's reads cost, whichever order made them
        orders[0].usage = session.usage
    if read.preference is None:
        return battle(pair, verdict=None, unscored_reason=read.unscored_reason, orders=orders)
    flipped = len({o.preference for o in orders}) > 1 if len(orders) == 2 else None
    return battle(pair, verdict=sign(read.preference), flipped=flipped, orders=orders)


def judge_pairs(
    pairs: Sequence[Pair],
    *,
    judge: str | Judge = "local",
    out_dir: str | Path,
    orders: Orders = "both",
    combine_rule: Combine = "agree",
    seed: int = 0,
    retries: int = 2,
    max_tokens: int = MAX_TOKENS,
    cache: bool | str | Path = True,
    workers: int = 1,
    on_battle: Callable[[Battle], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    executor: Executor | RayExecutor = "threads",
    method: Method = "generative",
) -> list[Battle]:
    """Judge every pair, resumably, and write ``battles.jsonl`` and ``arena_run.json``.

    Args:
        pairs: what to judge (see ``designs`` for building them from systems' answers).
        judge: a ``Judge`` or a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``.
        out_dir: judgements are committed here as they complete; rerunning with the same folder
            judges only what is missing or was unscored.
        orders: ``"both"`` or ``"random"`` (one seeded order per pair, half the calls).
        combine_rule: how both orders make the verdict: ``"agree"`` (a disagreement is a tie),
            ``"sum"`` (a "not sure" defers to the other order's pick) or ``"confidence"`` (the
            sum, with opposite picks settled by the judge's probabilities of its ratings).
        method: ``"generative"`` (the judge's verdict on the two answers, the paper's) or
            ``"claims"`` (each answer's claims checked against the pair's reference and
            passages; ``orders`` and ``combine_rule`` then play no part: see ``claim_judge``).
        seed: picks the random orders.
        retries: further attempts after a failed call or an unreadable reply.
        max_tokens: the judge's budget per call.
        cache: the call cache: True for the user cache folder, a path, or False.
        workers: pairs judged at once (useful for remote endpoints; a local model serialises);
            with Ray, presentations judged at once by each worker.
        on_battle: called with each battle as it completes (e.g. for a progress bar).
        judge_options: the provider's options when ``judge`` is a spec.
        executor: "threads" (this process), "ray" or a ``RayExecutor``: each Ray worker loads
            its own judge, and judgements are committed here as they come back.
    """
    check_combine(combine_rule)
    check_method(method)
    ids = [p.id for p in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError("pair ids must be unique within a run")
    if method == "claims":
        check_pairs(pairs)
    spread = ray_executor(executor, workers)
    if spread is not None and method == "side_by_side":
        raise ValueError("the side-by-side method judges in this process, not on a Ray cluster")
    out = Path(out_dir)
    started, clock = datetime.now(UTC), time.perf_counter()
    config: dict[str, Any] = {
        "orders": orders,
        "combine": combine_rule,
        "seed": seed,
        "retries": retries,
        "max_tokens": max_tokens,
    }
    fresh: list[Score] = []  # the claims method's answers checked in this run
    if spread is None:
        model = open_judge(judge, cache, judge_options)
        store = ScoreStore(out / JUDGEMENTS_DB)
        decide: Callable[[Pair], Battle] = (
            partial(judge_pair_by_claims, judge=model, store=store, retries=retries, fresh=fresh)
            if method == "claims"
            else partial(judge_pair_side_by_side, judge=model, retries=retries)
            if method == "side_by_side"
            else partial(
                judge_pair,
                judge=model,
                store=store,
                orders=orders,
                combine_rule=combine_rule,
                seed=seed,
                retries=retries,
                max_tokens=max_tokens,
            )
        )
        try:
            battles = _in_threads(pairs, decide, workers, on_battle)
        finally:
            store.close()
        config["executor"] = "threads"
    else:
        recipe = ModelRecipe(judge, cache=cache, needs_embedder=False, judge_options=judge_options)
        with spread.open(recipe) as cluster:
            if method == "claims":
                store = ScoreStore(out / JUDGEMENTS_DB)
                try:
                    battles = judge_by_claims_on_cluster(
                        cluster, pairs, store, retries=retries, on_battle=on_battle, fresh=fresh
                    )
                finally:
                    store.close()
            else:
                battles = _judge_on_cluster(cluster, pairs, out, on_battle, **config)
            model = cluster.judge
        config["executor"] = describe_executor(spread, cluster)
    spent = Usage()  # what the calls made in this run cost
    for score in fresh:
        spent.add(score.usage)
    for order in (o for b in battles for o in b.orders if not o.cached):
        spent.add(order.usage)
    write_battles(battles, out)
    _write_run(out, battles, model, started, time.perf_counter() - clock, method, spent, **config)
    return battles


def _in_threads(
    pairs: Sequence[Pair],
    decide: Callable[[Pair], Battle],
    workers: int,
    on_battle: Callable[[Battle], None] | None,
) -> list[Battle]:
    """``decide`` every pair, ``workers`` pairs at once, in this process."""

    def run_one(pair: Pair) -> Battle:
        decided = decide(pair)
        if on_battle:
            on_battle(decided)
        return decided

    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        return list(threads.map(run_one, pairs))


def _judge_on_cluster(
    cluster: RayPool,
    pairs: Sequence[Pair],
    out: Path,
    on_battle: Callable[[Battle], None] | None,
    *,
    orders: Orders,
    combine: Combine,
    seed: int,
    retries: int,
    max_tokens: int,
) -> list[Battle]:
    """Reuse the stored judgements, send the rest to the workers, and make each pair's battle
    once its last presentation is in."""
    alternatives = rating_alternatives(combine)
    shown = {p.id: presentation_orders(p, orders, seed) for p in pairs}
    units = [(p, o) for p in pairs for o in shown[p.id]]
    verdicts: dict[tuple[str, Order], OrderVerdict] = {}
    battles: dict[str, Battle] = {}
    job = partial(OrderJudge, retries=retries, max_tokens=max_tokens, top_logprobs=alternatives)
    store = ScoreStore(out / JUDGEMENTS_DB)
    try:
        for position, score, reused in keyed_on_cluster(
            cluster,
            store,
            units,
            lambda judge, pair, order: judgement_key(pair, order, judge, max_tokens, alternatives),
            job,
            lambda pair, order: (pair.id, f"{PAIRWISE.name}.{order}"),
        ):
            pair, order = units[position]
            verdicts[pair.id, order] = _order_verdict(order, score, cached=reused)
            if all((pair.id, o) in verdicts for o in shown[pair.id]):
                mine = [verdicts[pair.id, o] for o in shown[pair.id]]
                battles[pair.id] = battle_of(pair, mine, combine)
                if on_battle:
                    on_battle(battles[pair.id])
    finally:
        store.close()
    return [battles[p.id] for p in pairs]


def _write_run(
    out: Path,
    battles: list[Battle],
    judge: Judge,
    started: datetime,
    seconds: float,
    method: Method,
    spent: Usage,
    **config: Any,
) -> None:
    record = model_record(judge)  # its identity: what the judgements' keys hash
    read = side_by_side_prompt(ARENA)
    prompt = {
        "claims": {"name": CLAIMS_NAME, "version": claims_version()},
        "side_by_side": {"name": read.name, "version": read.version},
    }.get(method, {"name": PAIRWISE.name, "version": PAIRWISE.version})
    if method != "generative":  # the generative settings played no part
        config = {k: v for k, v in config.items() if k not in ("orders", "combine", "max_tokens")}
    run = {
        "ragmeter_version": __version__,
        "judge": judge.name,
        "judge_model": record.model_dump(mode="json") if record else None,
        "method": method,
        "prompt": prompt,
        **config,
        "pairs": len(battles),
        "scored": sum(b.scored for b in battles),
        "unscored": sum(not b.scored for b in battles),
        "usage_this_run": spent.model_dump(),
        "started": started.isoformat(),
        "seconds": round(seconds, 3),
    }
    (out / RUN_FILE).write_text(json.dumps(run, indent=2))
