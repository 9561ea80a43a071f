"""How many samples of each kind a run still needs, and what it does when a kind cannot be made.

The mix gives each kind its quota of ``n`` (``queries.quotas``). A kind stops being planned
when it cannot give more candidates: its sources are used up (a kind written from two chunks
on one short document has none; a kind written about fact sentences has asked about every
one), or it has used its share of the candidates (``per_sample`` times its quota) without
filling its quota. What it still lacks then goes to the kinds of the mix that are still
planned, by their shares (largest remainder, ties to the kind listed first), and the
substitution is recorded with its reason, so the summary says what was made instead and why.
A run ends short only when every kind of the mix has stopped.

Nothing here changes how a candidate is judged, only which candidates are planned, so the
candidates log stays valid across it (its keys do not depend on it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from pydantic import BaseModel

from ragmeter.testset.queries import FACT_KINDS, PAIRED, quotas


class Substitution(BaseModel):
    """Samples of one kind that the documents could not give, made as other kinds instead."""

    kind: str
    count: int
    made_as: dict[str, int]
    reason: str
    """Why no more of ``kind`` was planned."""


class KindQuotas:
    """The accepted samples each kind needs: the mix's quotas, then the substitutions."""

    def __init__(self, mix: Mapping[str, float], n: int, per_sample: float | None) -> None:
        self.mix = dict(mix)
        self.asked = quotas(self.mix, n)
        self.wanted = dict(self.asked)
        self.per_sample = per_sample
        """Candidates a kind may use per sample of its quota; None: no limit by kind."""
        self.stopped: dict[str, str] = {}
        """Kinds no longer planned, with why."""
        self.substitutions: dict[str, Substitution] = {}

    def needs(self, kind: str, accepted: int) -> bool:
        return kind not in self.stopped and accepted < self.wanted[kind]

    def done(self, accepted: Counter[str]) -> bool:
        return not any(self.needs(kind, accepted[kind]) for kind in self.wanted)

    def share_used(self, kind: str, candidates: int) -> bool:
        """Whether ``kind`` has used its share of the candidates."""
        if self.per_sample is None:
            return False
        return candidates >= math.ceil(self.per_sample * self.wanted[kind])

    def stop(self, kind: str, reason: str) -> None:
        self.stopped.setdefault(kind, reason)

    def substitute(self, accepted: Counter[str], pending: Counter[str]) -> None:
        """Give what each stopped kind still lacks (counting its ``pending`` candidates as if
        they pass, as a batch is planned) to the kinds still planned."""
        open_shares = {k: s for k, s in self.mix.items() if k not in self.stopped}
        total = sum(open_shares.values())
        for kind, reason in self.stopped.items():
            lacking = self.wanted[kind] - accepted[kind] - pending[kind]
            if lacking <= 0 or not total:
                continue
            given = quotas({k: s / total for k, s in open_shares.items()}, lacking)
            self.wanted[kind] -= lacking
            record = self.substitutions.setdefault(
                kind, Substitution(kind=kind, count=0, made_as={}, reason=reason)
            )
            record.count += lacking
            for other, count in given.items():
                if count:
                    self.wanted[other] += count
                    record.made_as[other] = record.made_as.get(other, 0) + count


def no_more(kind: str, candidates: int, accepted: int) -> str:
    """Why ``kind`` has no source left, after ``candidates`` of it were planned."""
    if not candidates and kind in PAIRED:
        return "the documents give no two chunks to pair, each with a fact sentence to ask about"
    if not candidates:
        return "no chunk has a fact sentence to ask about"
    sources = "every fact sentence of every chunk" if kind in FACT_KINDS else "every chunk"
    return f"{sources} was tried ({_counted(candidates, accepted)})"


def share_used(candidates: int, accepted: int, per_sample: float) -> str:
    """Why a kind that used its share of the candidates stopped."""
    return (
        f"its share of the candidates ({per_sample:g} per sample) was used: "
        f"{_counted(candidates, accepted)}"
    )


def _counted(candidates: int, accepted: int) -> str:
    return f"{candidates} candidate{'s' * (candidates != 1)}, {accepted} accepted"
