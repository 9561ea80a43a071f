"""Verdict heads: a Yes/No verdict read from the judge's own hidden state, by a small linear head
fitted on people's labels, instead of from its Yes and No log-probabilities alone.

The zero-shot read is P(Yes) against P(No) at the reply's first position: a fixed linear read of
the final hidden state (the difference of two rows of the output matrix). A head keeps that read
as one input and adds a learned direction over the hidden states of the same forward pass::

    logit = a * zero_shot_logit + b + w . (state - center) / scale

so it costs nothing at judging time, and with ``w = 0, a = 1, b = 0`` it is the zero-shot read.
A judge that shows no hidden states (a remote one) can still have a head with no states: a
one-dimensional calibration of P(Yes).

Each head reads the verdicts of one Yes/No prompt (``faithfulness.supported``, ...) at the version
it was fitted on; a set of heads is one JSON file, whose digest is part of the judge's identity
(score keys, ``run.json``; ``compare`` refuses runs read by different heads). The call cache keeps
the raw replies with their states, so another head re-reads a run without the model.

Only the reading is here, beside the judges it wraps (``--judge-option heads=``); fitting a head
on labelled verdicts, and ``ragmeter tune``, are ``ragmeter.heads``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    Judge,
    ModelIdentity,
    Reply,
    Wrapper,
    complete_each,
    identity_of,
    states_of,
    unpack_state,
)

FORMAT = "ragmeter-heads/1"
LOGIT_LIMIT = 12.0
"""The zero-shot logit is clipped here: P(Yes) is read from the ten likeliest first tokens, so
a No outside them gives P(Yes) = 1 and an infinite logit."""
BUNDLED_FILE = "bundled_heads.json"
"""The shipped heads, in this package beside the claims they were fitted on
(``verifier_training.npz``, which ``ragmeter tune`` refits on)."""
_NUMBER_LIST = re.compile(r"\[\s*((?:-?[\d.e+-]+,?\s*)+)\]")


class HeadsError(ValueError):
    """A heads file that cannot be read, or that does not fit the judge or prompt it meets."""


def logit(probability: float) -> float:
    """log(p / (1 - p)), within +-``LOGIT_LIMIT``."""
    if not 0 < probability < 1:
        return math.copysign(LOGIT_LIMIT, probability - 0.5)
    return max(-LOGIT_LIMIT, min(LOGIT_LIMIT, math.log(probability / (1 - probability))))


def sigmoid(value: float | np.ndarray) -> Any:
    return 1 / (1 + np.exp(-np.clip(value, -50, 50)))


@dataclass(frozen=True)
class Head:
    """The head of one Yes/No prompt: reads ``states`` (none for a calibration of P(Yes))."""

    prompt: str
    prompt_version: str
    states: tuple[str, ...]
    center: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    zero_shot_weight: float
    bias: float
    learned_from: str
    """Which labelled data taught it, in words, for the docs and ``run.json``."""
    figures: dict[str, Any] = field(default_factory=dict)
    """Its out-of-fold agreement beside the zero-shot read's, as measured when it was fitted."""

    def features(self, states: dict[str, np.ndarray]) -> np.ndarray:
        if not self.states:
            return np.zeros(0)
        raw = np.concatenate([states[name] for name in self.states])
        if len(raw) != len(self.center):
            raise HeadsError(
                f"the head for {self.prompt!r} reads {len(self.center)} numbers of "
                f"{'+'.join(self.states)}, and the reply carries {len(raw)}"
            )
        return (raw - self.center) / self.scale

    def logit(self, zero_shot_logit: float | np.ndarray, features: np.ndarray) -> Any:
        """The head's logit for one verdict (a float and a vector) or many (arrays)."""
        return self.zero_shot_weight * zero_shot_logit + self.bias + features @ self.weights

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "prompt_version": self.prompt_version,
            "states": list(self.states),
            "zero_shot_weight": self.zero_shot_weight,
            "bias": self.bias,
            "center": _floats(self.center),
            "scale": _floats(self.scale),
            "weights": _floats(self.weights),
            "learned_from": self.learned_from,
            "figures": self.figures,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Head:
        head = cls(
            prompt=data["prompt"],
            prompt_version=data["prompt_version"],
            states=tuple(data["states"]),
            center=np.asarray(data["center"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            zero_shot_weight=float(data["zero_shot_weight"]),
            bias=float(data["bias"]),
            learned_from=data.get("learned_from", ""),
            figures=data.get("figures", {}),
        )
        sizes = {len(head.center), len(head.scale), len(head.weights)}
        if len(sizes) != 1 or (head.states and not len(head.weights)):
            raise HeadsError(f"head {head.prompt!r}: center, scale and weights differ in length")
        numbers = np.concatenate(
            [head.center, head.scale, head.weights, [head.zero_shot_weight, head.bias]]
        )
        if not np.isfinite(numbers).all() or (head.scale <= 0).any():
            raise HeadsError(f"head {head.prompt!r}: a number that is not finite, or a scale <= 0")
        return head


def _floats(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64)]


@dataclass(frozen=True)
class Read:
    """A verdict as read: P(Yes), the zero-shot P(Yes) it came from, and the head (if any)."""

    probability: float
    zero_shot: float
    head: str | None


@dataclass(frozen=True)
class Heads:
    """A set of heads for one judge, by the prompt each reads, as one file."""

    heads: dict[str, Head]
    judge: dict[str, Any]
    """The judge the heads were fitted on: its name and, for a local judge, its weights'
    SHA-256 (hidden states are only meaningful for the weights that made them)."""
    source: str = ""
    """Where the heads came from (a path, or "bundled"), for people."""

    @cached_property
    def digest(self) -> str:
        material = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(material.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """How the judge's identity names these heads: their file's digest."""
        return f"heads:{self.digest}"

    def read(self, prompt: str, version: str, zero_shot: float, reply: ChatResponse) -> Read:
        """The verdict of ``prompt`` (at ``version``) from its zero-shot P(Yes) and the reply's
        hidden states; the zero-shot read itself where no head reads this prompt.

        Raises ``HeadsError`` for a head fitted on another version of the prompt (its
        direction was learned for other words), or one that needs states the reply lacks."""
        head = self.heads.get(prompt)
        if head is None:
            return Read(zero_shot, zero_shot, None)
        if head.prompt_version != version:
            raise HeadsError(
                f"the head for {prompt!r} was fitted on version {head.prompt_version} of the "
                f"prompt, and this is version {version}: fit it again (ragmeter tune) or read "
                "verdicts zero-shot (--judge-option heads=none)"
            )
        missing = [name for name in head.states if name not in (reply.states or {})]
        if missing:
            raise HeadsError(
                f"the head for {prompt!r} reads the hidden state {missing[0]!r}, which this "
                "reply does not carry (only the local judge shows its states)"
            )
        states = {name: unpack_state(reply.states[name]) for name in head.states}  # type: ignore[index]
        value = head.logit(logit(zero_shot), head.features(states))
        return Read(float(sigmoid(value)), zero_shot, f"{prompt}@{self.digest}")

    def describe(self) -> dict[str, Any]:
        """For the run record: which heads read the verdicts, and what each learned from."""
        return {
            "digest": self.digest,
            "source": self.source,
            "learned_from": {name: head.learned_from for name, head in sorted(self.heads.items())},
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "judge": self.judge,
            "heads": {name: head.to_json() for name, head in sorted(self.heads.items())},
        }

    def save(self, path: Path | str) -> None:
        """Written for people where it is read by people: indented, each vector on one line."""
        text = json.dumps(self.to_json(), indent=1)
        text = _NUMBER_LIST.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
        Path(path).write_text(text + "\n")

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str) -> Heads:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise HeadsError(f"{source}: not a heads file (its 'format' is not {FORMAT!r})")
        try:
            heads = {name: Head.from_json(head) for name, head in data["heads"].items()}
            return cls(heads=heads, judge=dict(data["judge"]), source=source)
        except (KeyError, TypeError, ValueError) as exc:
            raise HeadsError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: Path | str) -> Heads:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise HeadsError(f"cannot read heads from {path}: {exc}") from None
        return cls.from_json(data, str(path))

    def check_judge(self, judge: Judge) -> None:
        """Refuse heads fitted on another judge (states from other weights mean nothing to
        them, and a calibration of another judge's P(Yes) miscalibrates this one's), and heads
        that read states the judge does not keep."""
        name = judge.name
        fitted = self.judge.get("weights_sha256")
        if fitted is not None:
            if identity_of(judge).settings.get("weights_sha256") != fitted:
                raise HeadsError(
                    f"the heads in {self.source} were fitted on the states of weights "
                    f"{fitted[:12]}..., not on the judge {name}'s"
                )
        elif self.judge.get("name") != name:
            raise HeadsError(
                f"the heads in {self.source} were fitted on the judge {self.judge.get('name')}, "
                f"not on {name}"
            )
        kept = states_of(judge)
        for head in self.heads.values():
            missing = [state for state in head.states if state not in kept]
            if missing:
                raise HeadsError(
                    f"the head for {head.prompt!r} reads the hidden state {missing[0]!r}, which "
                    f"the judge {name} does not keep (the local judge keeps those its 'states' "
                    "option names)"
                )


def bundled_heads() -> Heads:
    """The heads shipped with ragmeter, for the bundled local judge."""
    text = resources.files("ragmeter.judges").joinpath(BUNDLED_FILE).read_text()
    return Heads.from_json(json.loads(text), "bundled")


HEADS_OPTION = "heads"
"""The judge option that picks the heads: ``none`` (zero-shot), ``auto`` (the bundled heads for
the bundled local judge, none for any other), ``bundled``, or a heads file."""
DEFAULT_HEADS = "none"
"""Zero-shot unless asked: a head is on by default only once it helps on sources it never saw
(by 0.03 ROC AUC on average, each source left out in turn, and nowhere worse by more than 0.02;
``bench/bench_verifier.py``), and the shipped head does not yet (docs/heads.md)."""


class WithHeads(Wrapper):
    """A judge whose Yes/No verdicts ``heads`` read (in ``JudgeSession``). Its identity names the
    heads, so scores read by other heads are other results; what it wraps (the call cache) keys
    on the judge alone, since the raw replies do not depend on the heads."""

    def __init__(self, inner: Judge, heads: Heads) -> None:
        super().__init__(inner)
        heads.check_judge(inner)
        self._heads = heads

    @property
    def heads(self) -> Heads:
        return self._heads

    @property
    def identity(self) -> ModelIdentity:
        inner = identity_of(self.inner)
        settings = {**inner.settings, HEADS_OPTION: self._heads.digest}
        return inner.model_copy(update={"settings": settings})

    def complete(self, request: ChatRequest) -> ChatResponse:
        response: ChatResponse = self.inner.complete(request)
        return response

    def complete_batch(self, requests: list[ChatRequest], concurrency: int = 1) -> list[Reply]:
        return complete_each(self.inner, requests, concurrency)


def heads_for(spec: str | None, judge: Judge) -> Heads | None:
    """The heads ``spec`` names for ``judge`` (see ``HEADS_OPTION``)."""
    spec = (spec or DEFAULT_HEADS).strip()
    if spec in ("none", "zero-shot"):
        return None
    if spec == "auto":
        heads = bundled_heads()
        fitted = heads.judge.get("weights_sha256")
        mine = identity_of(judge).settings.get("weights_sha256")
        return heads if heads.heads and fitted is not None and fitted == mine else None
    if spec == "bundled":
        return bundled_heads()
    return Heads.load(spec)


def with_heads(judge: Judge, spec: str | None) -> Judge:
    """``judge`` read by the heads ``spec`` names, or as it is when they name none."""
    heads = heads_for(spec, judge)
    return judge if heads is None else WithHeads(judge, heads)
