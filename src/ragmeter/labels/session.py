"""One labelling session over a run: its items in order, the scale people answer on, and the
log they write to. The page asks it for what to show (``state``) and hands it each answer, skip
and undo; every figure it shows (progress, agreement) is read afresh from the log, so two
servers or two tabs on the same run see each other's labels.
"""

from __future__ import annotations

import getpass
import math
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.criteria import Criterion
from ragmeter.heads.ratings import Scale, parse_scale
from ragmeter.labels.agreement import PairAgreement, pair_agreement
from ragmeter.labels.items import (
    CLAIM_METRIC,
    Item,
    Order,
    check_claims_metric,
    claim_items,
    evidence,
    order_text,
    ordered,
    rating_items,
)
from ragmeter.labels.passages import data_passages, judged_passages
from ragmeter.labels.store import (
    LABELS_FILE,
    NAME_LIMIT,
    NOTE_LIMIT,
    Event,
    Folded,
    ItemKey,
    Kind,
    LabelStore,
    fold,
    rating_scale,
)
from ragmeter.plugins import load
from ragmeter.result import Result
from ragmeter.viewer import open_run

DEFAULT_SCALE = "1-5"
CLAIM_SCALE = "claim"
JUDGE = "the judge"
"""How the judge is named in the agreement table."""


@dataclass(frozen=True)
class Choice:
    """An answer the page offers, and the keys that give it."""

    keys: tuple[str, ...]
    value: float | None
    text: str


CLAIM_CHOICES = (
    Choice(("y",), 1.0, "supported"),
    Choice(("n",), 0.0, "not supported"),
    Choice(("c",), None, "can't tell"),
)
"""``u`` undoes and ``s`` skips, so "can't tell" is ``c``."""

RANDOM_NOTE = (
    "Random order (seed {seed}): the items you label are a random draw of the run, as "
    "calibrate's estimate of the people's mean (PPI) needs. Label from the top and stop any "
    "time; skip only what cannot be judged at all, since skipping hard items biases the draw."
)
LEAST_SURE_NOTE = (
    "Least-sure order: the judge's least sure items come first, where a verdict head learns "
    "most (ragmeter tune). These labels are NOT a random draw of the run: calibrate's PPI "
    "estimate of the people's mean from them is biased. Label in random order for calibrate."
)


def default_annotator() -> str:
    try:
        return getpass.getuser() or "annotator"
    except (KeyError, OSError):  # no user name where the process runs (a bare container)
        return "annotator"


def rating_choices(scale: Scale) -> tuple[Choice, ...]:
    """A digit key per whole level of ``scale`` (levels 0-9); a 0-1 scale also takes y and n."""
    low, high = scale.low, scale.high
    if not (low.is_integer() and high.is_integer() and low >= 0 and high <= 9):
        raise ValueError(
            f"scale {scale.text}: labelling takes a scale of whole numbers from 0 to 9, a digit "
            "key per level (e.g. 1-5, 1-4 or binary)"
        )
    if (low, high) == (0, 1):
        return (Choice(("1", "y"), 1.0, "1 (yes)"), Choice(("0", "n"), 0.0, "0 (no)"))
    return tuple(
        Choice((str(level),), float(level), str(level)) for level in range(int(low), int(high) + 1)
    )


class LabelSession:
    """The items of one run to label, in order, on one scale, logged to the run's labels."""

    def __init__(
        self,
        store: LabelStore,
        items: list[Item],
        *,
        kind: Kind,
        metric: str,
        scale: Scale | None,
        order: Order,
        seed: int,
        run: str,
        annotator: str,
        notes: list[str] | None = None,
        threshold: float = 0.5,
    ) -> None:
        self.store = store
        self.items = items
        self.by_key = {item.key: item for item in items}
        self.positions = {item.key: number for number, item in enumerate(items, 1)}
        self.kind: Kind = kind
        self.metric = metric
        self.scale = scale
        self.order: Order = order
        self.seed = seed
        self.run = run
        self.annotator = annotator
        self.notes = notes or []
        self.threshold = threshold
        self.choices = CLAIM_CHOICES if scale is None else rating_choices(scale)

    @classmethod
    def open(
        cls,
        folder: str | Path,
        *,
        claims: bool = False,
        metric: str | None = None,
        scale: str | None = None,
        order: Order = "random",
        seed: int = 0,
        annotator: str | None = None,
        data: str | Path | None = None,
    ) -> LabelSession:
        """The session over the ``evaluate`` run in ``folder``: its claims, or its samples on
        ``metric`` (the run's first metric by default) on ``scale`` (the scale the run's
        labels of that metric were given on, else the metric's own: a criterion's levels, the
        passage grades' 0-3; else ``DEFAULT_SCALE``). The passages shown are
        read from the judge's prompts the run kept, or from ``data``, the file it scored."""
        opened = open_run(folder)
        if opened.kind != "evaluate" or opened.result is None:
            raise ValueError(f"{folder}: people label evaluate runs, not {opened.kind} runs")
        result: Result = opened.result
        check_claims_metric(claims, metric)
        if claims and scale is not None:
            raise ValueError(
                "claims are labelled supported, not supported or can't tell: --scale is for "
                "rating samples"
            )
        chosen = CLAIM_METRIC if claims else metric or next(iter(result.metrics), "")
        if data is None:
            passages, notes = judged_passages(result, [CLAIM_METRIC, chosen])
        else:
            passages, notes = data_passages(data, result)
        log = Path(folder) / LABELS_FILE
        fresh = not log.exists()
        store = LabelStore(log)
        kind: Kind = "claim" if claims else "rating"
        try:
            if claims:
                config = result.run.metrics.get(CLAIM_METRIC)
                threshold = float((config.config if config else {}).get("threshold", 0.5))
                items, more = claim_items(result, passages, threshold)
                on = None
            else:
                items, more = rating_items(result, chosen, passages)
                config = result.run.metrics.get(chosen)
                rated_on, guide = metric_scale(chosen)
                own = criterion_scale(config.config if config else {}) or rated_on
                on, threshold = _scale(store, chosen, scale or own), 0.5
                if guide and on.text == rated_on:
                    more = [guide, *more]
            return cls(
                store,
                ordered(items, order, seed, threshold),
                kind=kind,
                metric=chosen,
                scale=on,
                order=order,
                seed=seed,
                run=str(folder),
                annotator=annotator or default_annotator(),
                notes=[*notes, *more],
                threshold=threshold,
            )
        except BaseException:
            store.close()
            if fresh:  # a page that never opened leaves no empty log behind
                for suffix in ("", "-wal", "-shm"):
                    log.with_name(log.name + suffix).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        self.store.close()

    # -- what the page does ---------------------------------------------------------------

    def answer(self, annotator: str | None, key: str, value: Any, note: str = "") -> dict[str, Any]:
        """Log ``annotator``'s answer to the item ``key``; the page's next state."""
        who, item = self._who(annotator), self._item(key)
        if isinstance(value, bool) or not (value is None or isinstance(value, int | float)):
            raise ValueError(f"{value!r} is not an answer")
        allowed = [choice.value for choice in self.choices]
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of the answers ({self._answers()})")
        if not isinstance(note, str) or len(note) > NOTE_LIMIT:
            raise ValueError(f"a note is text of at most {NOTE_LIMIT} characters")
        self.store.add(
            item.key,
            who,
            None if value is None else float(value),
            note=note.strip(),
            scale=self.scale.text if self.scale else CLAIM_SCALE,
            order=order_text(self.order, self.seed),
            judge=item.judge,
        )
        return self.state(who)

    def skip(self, annotator: str | None, key: str) -> dict[str, Any]:
        who, item = self._who(annotator), self._item(key)
        self.store.skip(item.key, who, order=order_text(self.order, self.seed))
        return self.state(who)

    def undo(self, annotator: str | None) -> dict[str, Any]:
        """Take back ``annotator``'s latest answer or skip here, and show its item again."""
        who = self._who(annotator)
        taken = self.store.undo(who, self.kind, self.metric)
        state = self.state(who, focus=taken.item if taken else None)
        if taken is None:
            state["undone"] = "nothing to undo"
        else:
            what = "skip" if taken.action == "skip" else "answer"
            where = self.positions.get(taken.item)
            state["undone"] = f"{what} of {f'item {where}' if where else 'an item'} taken back"
        return state

    def state(self, annotator: str | None = None, focus: ItemKey | None = None) -> dict[str, Any]:
        """What the page shows ``annotator``: the setup, progress, the item to answer (the one
        ``focus`` names if it is unanswered, else the first neither answered nor skipped, else
        the first skipped), the last answer beside the judge's, and the agreement."""
        who = self._who(annotator or self.annotator)
        folded = fold(self.store.events(self.kind, self.metric))
        mine = {key: event for key, event in folded.of(who).items() if key in self.by_key}
        skipped = {
            item for (person, item) in folded.skips if person == who and item in self.by_key
        } - set(mine)
        current = focus if focus in self.by_key and focus not in mine else None
        if current is None:
            current = next(
                (key for key in self.by_key if key not in mine and key not in skipped), None
            )
        if current is None:
            current = next((key for key in self.by_key if key in skipped), None)
        return {
            "setup": self._setup(who),
            "progress": {"total": len(self.items), "labelled": len(mine), "skipped": len(skipped)},
            "item": None if current is None else self._shown(current, current in skipped),
            "revealed": self._revealed(folded, who),
            "agreement": [_pair(found) for found in self.agreement(folded, who)],
            "annotators": folded.annotators(),
        }

    # -- agreement --------------------------------------------------------------------------

    def category(self, value: float | None) -> str:
        """A label as the category agreement compares."""
        return next((c.text for c in self.choices if c.value == value), str(value))

    def judge_category(self, item: Item) -> str:
        """The judge's value as one of the people's answers: a claim supported at the metric's
        threshold, a score put linearly on the scale and rounded to the nearest level."""
        if self.scale is None:
            return self.category(1.0 if item.judge >= self.threshold else 0.0)
        on_scale = self._on_scale(item.judge)
        # Half up (2.5 is 3), not Python's round (to even: 2.5 is 2); to 9 places first, so
        # that a value a float's error short of the half (0.3749999999999999 of 1-5) is on it.
        level = math.floor(round(on_scale, 9) + 0.5)
        return self.category(float(min(max(level, self.scale.low), self.scale.high)))

    def agreement(self, folded: Folded, who: str) -> list[PairAgreement]:
        """``who`` against each other person who labelled the same items, then the judge
        (on the items ``who`` could tell)."""

        def categories(person: str) -> dict[Hashable, Hashable]:
            return {
                key: self.category(event.value)
                for key, event in folded.of(person).items()
                if key in self.by_key
            }

        mine = categories(who)
        people = [
            pair_agreement(other, mine, categories(other))
            for other in folded.annotators()
            if other != who
        ]
        told = [
            key for key, event in folded.of(who).items() if key in mine and event.value is not None
        ]
        judge = pair_agreement(
            JUDGE,
            {key: mine[key] for key in told},
            {key: self.judge_category(self.by_key[key]) for key in told},
        )
        return [*[found for found in people if found.items], judge]

    # -- helpers ---------------------------------------------------------------------------

    def _who(self, annotator: str | None) -> str:
        name = (annotator if isinstance(annotator, str) else "").strip()
        if not name or len(name) > NAME_LIMIT:
            raise ValueError(f"an annotator's name is 1 to {NAME_LIMIT} characters")
        return name

    def _item(self, key: str) -> Item:
        item = self.by_key.get(ItemKey.parse(key))
        if item is None:
            raise ValueError("no such item in this session")
        return item

    def _answers(self) -> str:
        return ", ".join(c.text for c in self.choices)

    def _setup(self, who: str) -> dict[str, Any]:
        return {
            "run": self.run,
            "kind": self.kind,
            "metric": self.metric,
            "scale": self.scale.text if self.scale else None,
            "choices": [
                {"keys": list(c.keys), "value": c.value, "text": c.text} for c in self.choices
            ],
            "order": self.order,
            "seed": self.seed,
            "order_note": (
                RANDOM_NOTE.format(seed=self.seed) if self.order == "random" else LEAST_SURE_NOTE
            ),
            "annotator": who,
            "notes": self.notes,
        }

    def _shown(self, key: ItemKey, skipped: bool) -> dict[str, Any]:
        """An item as the page shows it before it is answered: nothing of the judge's."""
        item = self.by_key[key]
        shown: dict[str, Any] = {
            "key": key.text(),
            "position": self.positions[key],
            "sample_id": key.sample_id,
            "question": item.question,
            "answer": item.answer,
            "skipped": skipped,
        }
        if self.kind == "claim":
            shown["claim"] = key.claim
            shown["evidence"] = evidence(key.claim, item.contexts, item.language)
        else:
            shown["contexts"] = list(item.contexts)
        return shown

    def _revealed(self, folded: Folded, who: str) -> dict[str, Any] | None:
        """The last answer ``who`` gave here that stands, beside the judge's."""
        answered = [
            event
            for event in folded.live.get(who, [])
            if event.action == "label" and event.item in self.by_key
        ]
        if not answered:
            return None
        event: Event = answered[-1]
        item = self.by_key[event.item]
        yours = self.category(event.value)
        return {
            "key": event.item.text(),
            "position": self.positions[event.item],
            "sample_id": event.item.sample_id,
            "claim": event.item.claim,
            "yours": yours,
            "judge": self._judge_text(item),
            "same": None if event.value is None else yours == self.judge_category(item),
            "note": event.note,
        }

    def _judge_text(self, item: Item) -> str:
        if self.scale is None:
            return item.judge_says
        return f"{item.judge:.2f} ({self._on_scale(item.judge):.1f} on {self.scale.text})"

    def _on_scale(self, judge: float) -> float:
        """The judge's value (0-1) put linearly on the people's scale."""
        assert self.scale is not None
        return self.scale.low + judge * (self.scale.high - self.scale.low)


def _pair(found: PairAgreement) -> dict[str, Any]:
    return {
        "with": found.other,
        "items": found.items,
        "agreement": found.agreement,
        "kappa": found.kappa,
    }


def criterion_scale(config: dict[str, Any]) -> str | None:
    """The scale people rate a criterion on, from its run record: its levels' range, or
    ``binary`` for a yes/no question or a checklist; None for any other metric."""
    if "criterion" not in config:
        return None
    criterion = Criterion.model_validate(config["criterion"])
    if criterion.kind != "levels":
        return "binary"
    low, high = criterion.scale
    return f"{low:g}-{high:g}"


def metric_scale(name: str) -> tuple[str | None, str]:
    """The scale people rate the metric ``name`` on where it has its own (``Metric.rated_on``)
    and what its levels mean; (None, "") for any other, and for a name not registered here
    (a criterion of the run's own, a plugin not installed)."""
    try:
        found = load("metric", name)
    except (ValueError, ImportError, AttributeError):
        return None, ""
    return getattr(found, "rated_on", None), str(getattr(found, "rating_guide", ""))


def _scale(store: LabelStore, metric: str, stated: str | None) -> Scale:
    """The scale of this session: the one the run's labels of ``metric`` were given on (a
    different ``stated`` one is refused: one metric's ratings share one scale), else
    ``stated`` or the default."""
    return parse_scale(
        rating_scale(store.events("rating", metric), metric, stated) or stated or DEFAULT_SCALE
    )
