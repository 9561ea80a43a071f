"""How far two raters agree on the items both labelled: the share of equal labels, and Cohen's
kappa, which discounts the agreement their own label frequencies give by chance."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from ragmeter.stats import cohen_kappa


@dataclass(frozen=True)
class PairAgreement:
    other: str
    """Whom the labels are compared with: another person, or the judge."""
    items: int
    """Items both labelled."""
    agreement: float | None
    """The share of those given the same label; None when there are none."""
    kappa: float | None
    """Cohen's kappa; None when undefined (no items, or one label throughout on both sides)."""


def pair_agreement(
    other: str, mine: Mapping[Hashable, Hashable], theirs: Mapping[Hashable, Hashable]
) -> PairAgreement:
    """Agreement of two raters' labels (item -> category) over the items both labelled."""
    shared = [item for item in mine if item in theirs]
    a = [mine[item] for item in shared]
    b = [theirs[item] for item in shared]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    return PairAgreement(
        other=other,
        items=len(shared),
        agreement=same / len(shared) if shared else None,
        kappa=cohen_kappa(a, b),
    )
