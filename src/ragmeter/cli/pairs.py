"""The one table of a comparison's pairs, whatever was compared (runs, retrievers, systems
read side by side): each pair's difference, interval, p-values, verdict and what its inputs tell
apart."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.ranking import Ranking
from ragmeter.viewer.compare import RankedMetric
from ragmeter.viewer.views import fmt, interval


def pairs_table(
    ranking: Ranking, found: RankedMetric | None = None, unit: str = "samples"
) -> Table:
    """Every pair of a ranking: its difference, interval, p-values, verdict and what its
    samples tell apart; with ``found``, what such decisions were worth on public rated sets."""
    order = " > ".join(system.system for system in ranking.systems)
    table = Table(
        title=escape(f"{ranking.metric}: every pair, over {ranking.samples} {unit}"),
        caption=escape(f"ranked: {order}"),
    )
    side = any(p.win_rate is not None for p in ranking.pairs)
    columns = ["B vs A", "B - A", "95% CI", "p", "p (Holm)", "verdict", "tells apart"]
    columns += ["B preferred", "read"] if side else []
    columns += ["samples needed"] if any(p.needed for p in ranking.pairs) else []
    columns += ["decided as people"] if found is not None else []
    for column in columns:
        table.add_column(column, justify="left" if column in ("B vs A", "verdict") else "right")
    rates = found.rates if found is not None else [None] * len(ranking.pairs)
    for pair, rate in zip(ranking.pairs, rates, strict=True):
        test = pair.test
        cells = [
            Text(f"{pair.b} vs {pair.a}"),
            f"{test.difference:+.4f}",
            interval(test.ci_low, test.ci_high),
            fmt(test.p_value, 4),
            fmt(pair.adjusted_p, 4),
            Text(pair.verdict if pair.verdict == "cannot tell" else f"B {pair.verdict}"),
            "—" if pair.detectable is None else f"±{pair.detectable:.3f}",
        ]
        if side:
            won = pair.win_rate
            cells += [
                "—" if won is None else f"{won.value:.0%} [{won.low:.0%}, {won.high:.0%}]",
                pair.read,
            ]
        if "samples needed" in columns:
            cells.append("—" if pair.needed is None else str(pair.needed))
        if found is not None:
            cells.append(rate_cell(found, rate))
        table.add_row(*cells)
    return table


def rate_cell(found: RankedMetric, rate: object) -> str:
    if rate is not None:
        return f"{rate.share:.0%} of {rate.draws}"  # type: ignore[attr-defined]
    return "not measured" if not found.measured else "no such draw"


def pair_sentences(
    found: RankedMetric, *, unit: str = "samples", difference: float | None = None
) -> list[str]:
    """What each pair's verdict means, in words: cannot tell with N, how often B was preferred
    (read side by side), what N tells apart, what ``difference`` needs, and what the decision
    curve measured of such decisions."""
    ranking = found.ranking
    lines = []
    for pair, rate in zip(ranking.pairs, found.rates, strict=True):
        words = f"{ranking.metric}, {pair.b} vs {pair.a}: "
        if pair.verdict == "cannot tell":
            words += f"cannot tell with {ranking.samples} {unit}"
        else:
            words += f"{pair.b} is {pair.verdict} than {pair.a}"
        if pair.win_rate is not None:
            words += f", preferred on {pair.win_rate.value:.0%} of {unit}"
        if pair.detectable is not None:
            words += (
                f"; {ranking.samples} {unit} tell apart differences of {pair.detectable:.3f} "
                f"or more {ranking.power:.0%} of the time"
            )
        if difference is not None and pair.needed is not None:
            words += f"; {difference:g} needs {pair.needed} {unit}"
        if rate is not None:
            words += f"; {rate.sentence()}"
        elif not found.measured:
            words += f"; what decisions of {ranking.metric} are worth was never measured"
        lines.append(words)
    return lines
