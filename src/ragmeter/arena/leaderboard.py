"""The leaderboard: a pure function of the battles, shown as a rich table and written as CSV/JSON.

Per system: the Bradley-Terry Elo rating with its bootstrap interval, the win and win+tie rates
against the reference (the paper's Table 3) with bootstrap intervals, overall and per domain, and
the share of its answers that declined ("I couldn't find an answer."), which the paper reports
beside the win rates because a declining system loses battles for a different reason than a wrong
one, and the mean length of its answers in words, because judges (and people) favour longer
answers. Beside them, the length-controlled rating and win rate (``length_control``: what the
judge would prefer with the answers' length difference set to zero, as AlpacaEval 2.0 reports),
next to the raw win rate they correct (ties as halves, as the model counts them). Unscored
battles are counted and their reasons listed; they never enter a rate.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel
from rich.table import Table

from ragmeter.arena.battles import Battle
from ragmeter.arena.designs import REFERENCE
from ragmeter.arena.length_control import LengthControlled, LengthUnavailable, length_controlled
from ragmeter.arena.ratings import battle_arrays, elo_ratings
from ragmeter.stats import bootstrap_mean_ci

SCHEMA_VERSION = 1
OVERALL = "overall"
DEFAULT_PRIOR = 0.5
"""Half a virtual game per pair of systems that met, split as a tie: it keeps a winless system's
rating finite on a small run and is negligible against hundreds of battles per pair."""


class WinRate(BaseModel):
    system: str
    domain: str
    battles: int
    unscored: int
    win: float | None
    win_low: float | None
    win_high: float | None
    win_tie: float | None
    win_tie_low: float | None
    win_tie_high: float | None


class SystemRow(BaseModel):
    system: str
    rating: float | None
    rating_low: float | None
    rating_high: float | None
    battles: int
    wins: float
    ties: float
    losses: float
    win: float | None = None
    win_low: float | None = None
    win_high: float | None = None
    win_tie: float | None = None
    win_tie_low: float | None = None
    win_tie_high: float | None = None
    no_answer: float | None = None
    answers: int = 0
    mean_words: float | None = None
    """Mean length of the system's distinct answers; None when the battles do not record it."""
    win_half: float | None = None
    """Raw win rate against the reference with ties as halves: what ``lc_win`` corrects. Its
    interval, like the length-controlled ones, resamples questions."""
    win_half_low: float | None = None
    win_half_high: float | None = None
    lc_win: float | None = None
    """Length-controlled win rate against the reference (see ``length_control``)."""
    lc_win_low: float | None = None
    lc_win_high: float | None = None
    lc_rating: float | None = None
    """Length-controlled rating, on the Elo scale and anchored as ``rating``."""
    lc_rating_low: float | None = None
    lc_rating_high: float | None = None


class LengthControl(BaseModel):
    """The length term of the length-controlled model, or why there is none."""

    coefficient: float | None = None
    """The logit a much longer answer gains: the term is coefficient * tanh(Δwords / scale)."""
    coefficient_low: float | None = None
    coefficient_high: float | None = None
    scale_words: float | None = None
    """The standard deviation of the battles' length differences, in words."""
    questions: int = 0
    unavailable: str | None = None


class Leaderboard(BaseModel):
    schema_version: int = SCHEMA_VERSION
    reference: str
    anchor: str
    rounds: int
    prior: float
    battles: int
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]
    both_orders: int
    flips: int
    flip_rate: float | None
    systems: list[SystemRow]
    win_rates: list[WinRate]
    length_control: LengthControl | None = None
    """None in leaderboards written before length control."""


def win_rates(
    battles: Sequence[Battle], reference: str = REFERENCE, *, rounds: int = 2000, seed: int = 0
) -> list[WinRate]:
    """Win and win+tie rates of each system against ``reference``, overall and per domain."""
    outcomes: dict[tuple[str, str], list[int]] = defaultdict(list)
    unscored: Counter[tuple[str, str]] = Counter()
    for battle in battles:
        if reference not in (battle.system_a, battle.system_b):
            continue
        system = battle.system_b if battle.system_a == reference else battle.system_a
        groups = [(system, OVERALL)] + ([(system, battle.domain)] if battle.domain else [])
        for group in groups:
            if battle.verdict is None:
                unscored[group] += 1
                continue
            # Seen from the system: +1 win, 0 tie, -1 loss.
            outcomes[group].append(battle.verdict * (1 if battle.system_b == system else -1))
    rows = []
    for system, domain in sorted(set(outcomes) | set(unscored)):
        values = outcomes.get((system, domain), [])
        win = bootstrap_mean_ci([v > 0 for v in values], rounds=rounds, seed=seed)
        win_tie = bootstrap_mean_ci([v >= 0 for v in values], rounds=rounds, seed=seed)
        rows.append(
            WinRate(
                system=system,
                domain=domain,
                battles=len(values),
                unscored=unscored[(system, domain)],
                **_interval("win", win),
                **_interval("win_tie", win_tie),
            )
        )
    rows.sort(key=lambda r: (r.domain != OVERALL, r.domain, r.system))
    return rows


class AnswerProfile(NamedTuple):
    no_answer: float
    """Share of the system's answers that decline."""
    answers: int
    mean_words: float | None
    """None when the battles do not record answer lengths."""


def answer_profiles(battles: Sequence[Battle]) -> dict[str, AnswerProfile]:
    """Per system, over its distinct answers: how many decline, how many there are, and how long
    they are. An answer is counted once however many battles it took part in (one per question)."""
    seen: dict[tuple[str, str], tuple[bool, int | None]] = {}
    for battle in battles:
        question = battle.question_id or battle.pair_id
        seen[(battle.system_a, question)] = (battle.no_answer_a, battle.words_a)
        seen[(battle.system_b, question)] = (battle.no_answer_b, battle.words_b)
    answers: dict[str, list[tuple[bool, int | None]]] = defaultdict(list)
    for (system, _), answer in seen.items():
        answers[system].append(answer)
    profiles = {}
    for system, found in answers.items():
        words = [w for _, w in found if w is not None]
        profiles[system] = AnswerProfile(
            no_answer=sum(declined for declined, _ in found) / len(found),
            answers=len(found),
            mean_words=sum(words) / len(words) if len(words) == len(found) else None,
        )
    return profiles


def build_leaderboard(
    battles: Sequence[Battle],
    *,
    reference: str = REFERENCE,
    anchor: str = "mean",
    rounds: int = 1000,
    seed: int = 0,
    prior: float = DEFAULT_PRIOR,
) -> Leaderboard:
    """Everything the leaderboard shows, from the battles alone."""
    arrays = battle_arrays(battles)
    rows: dict[str, SystemRow] = {}
    if arrays.systems:
        elo = elo_ratings(arrays, anchor=anchor, rounds=rounds, seed=seed, prior=prior)
        for n, system in enumerate(elo.systems):
            rows[system] = SystemRow(
                system=system,
                rating=float(elo.rating[n]),
                rating_low=_finite(elo.ci_low[n]),
                rating_high=_finite(elo.ci_high[n]),
                **_record(system, battles),
            )
    rates = win_rates(battles, reference, seed=seed)
    for rate in rates:
        if rate.domain == OVERALL:
            row = rows.setdefault(rate.system, _empty_row(rate.system, battles))
            for name in ("win", "win_low", "win_high", "win_tie", "win_tie_low", "win_tie_high"):
                setattr(row, name, getattr(rate, name))
    for system, profile in answer_profiles(battles).items():
        row = rows.setdefault(system, _empty_row(system, battles))
        row.no_answer, row.answers, row.mean_words = profile
    try:
        controlled = length_controlled(battles, reference, anchor=anchor, rounds=rounds, seed=seed)
    except LengthUnavailable as exc:
        length_control = LengthControl(unavailable=str(exc))
    else:
        length_control = _add_length_control(controlled, rows, battles)
    both = [b for b in battles if b.flipped is not None]
    flips = sum(bool(b.flipped) for b in both)
    return Leaderboard(
        reference=reference,
        anchor=anchor,
        rounds=rounds,
        prior=prior,
        battles=len(battles),
        scored=sum(b.scored for b in battles),
        unscored=sum(not b.scored for b in battles),
        unscored_reasons=dict(Counter(b.unscored_reason or "" for b in battles if not b.scored)),
        both_orders=len(both),
        flips=flips,
        flip_rate=flips / len(both) if both else None,
        systems=sorted(rows.values(), key=lambda r: -(r.rating if r.rating is not None else -1e9)),
        win_rates=rates,
        length_control=length_control,
    )


def _add_length_control(
    controlled: LengthControlled, rows: dict[str, SystemRow], battles: Sequence[Battle]
) -> LengthControl:
    for system in controlled.systems:
        row = rows.setdefault(system, _empty_row(system, battles))
        for prefix, estimates in (
            ("lc_rating", controlled.rating),
            ("lc_win", controlled.win),
            ("win_half", controlled.win_raw),
        ):
            if system in estimates:
                found = estimates[system]
                for name, value in _interval(prefix, (found.value, found.low, found.high)).items():
                    setattr(row, name, value)
    beta = controlled.length_coefficient
    return LengthControl(
        **_interval("coefficient", (beta.value, beta.low, beta.high)),
        scale_words=controlled.scale,
        questions=controlled.questions,
    )


def _interval(name: str, estimate: tuple[float | None, ...] | None) -> dict[str, float | None]:
    """An estimate and its interval as the fields ``name``, ``name_low`` and ``name_high``."""
    value, low, high = estimate or (None, None, None)
    return {name: value, f"{name}_low": low, f"{name}_high": high}


def _record(system: str, battles: Sequence[Battle]) -> dict[str, float | int]:
    wins = ties = losses = 0.0
    for b in battles:
        if b.verdict is None or system not in (b.system_a, b.system_b):
            continue
        side = -1 if b.system_a == system else 1
        if b.verdict == 0:
            ties += 1
        elif b.verdict == side:
            wins += 1
        else:
            losses += 1
    return {"battles": int(wins + ties + losses), "wins": wins, "ties": ties, "losses": losses}


def _empty_row(system: str, battles: Sequence[Battle]) -> SystemRow:
    return SystemRow(
        system=system, rating=None, rating_low=None, rating_high=None, **_record(system, battles)
    )


def _finite(value: float) -> float | None:
    return None if value != value else float(value)  # NaN when no bootstrap was run


# --- presentation -------------------------------------------------------------------------------


def _pct(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "—"
    text = f"{100 * value:.1f}"
    if low is not None and high is not None:
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def leaderboard_table(board: Leaderboard, title: str = "RAG-QA arena") -> Table:
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("system")
    for column in (
        "Elo",
        "95% CI",
        "battles",
        "W/T/L",
        f"win % vs {board.reference}",
        "win+tie %",
        "no answer %",
        "words",
    ):
        table.add_column(column, justify="right")
    for rank, row in enumerate(board.systems, 1):
        ci = "—" if row.rating_low is None else f"[{row.rating_low:.0f}, {row.rating_high:.0f}]"
        table.add_row(
            str(rank),
            row.system,
            "—" if row.rating is None else f"{row.rating:.0f}",
            ci,
            str(row.battles),
            f"{row.wins:g}/{row.ties:g}/{row.losses:g}",
            "" if row.system == board.reference else _pct(row.win, row.win_low, row.win_high),
            ""
            if row.system == board.reference
            else _pct(row.win_tie, row.win_tie_low, row.win_tie_high),
            _pct(row.no_answer),
            "—" if row.mean_words is None else f"{row.mean_words:.0f}",
        )
    return table


def length_table(board: Leaderboard) -> Table | None:
    """The length-controlled figures beside the raw ones they correct; None when the
    leaderboard has none."""
    control = board.length_control
    if control is None or control.unavailable is not None:
        return None
    table = Table(
        title="length-controlled: the answers' length difference set to 0",
        caption=f"length term {_number(control.coefficient)} "
        f"[{_number(control.coefficient_low)}, {_number(control.coefficient_high)}]"
        f" * tanh(Δwords / {control.scale_words:.0f}); intervals resample "
        f"{control.questions} questions",
    )
    table.add_column("system")
    for column in (
        "words",
        "Elo",
        "LC Elo",
        "95% CI",
        f"win ½ % vs {board.reference}",
        "LC win %",
    ):
        table.add_column(column, justify="right")
    for row in board.systems:
        is_reference = row.system == board.reference
        table.add_row(
            row.system,
            "—" if row.mean_words is None else f"{row.mean_words:.0f}",
            "—" if row.rating is None else f"{row.rating:.0f}",
            "—" if row.lc_rating is None else f"{row.lc_rating:.0f}",
            "—"
            if row.lc_rating_low is None or row.lc_rating_high is None
            else f"[{row.lc_rating_low:.0f}, {row.lc_rating_high:.0f}]",
            "" if is_reference else _pct(row.win_half, row.win_half_low, row.win_half_high),
            "" if is_reference else _pct(row.lc_win, row.lc_win_low, row.lc_win_high),
        )
    return table


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def domain_table(board: Leaderboard) -> Table | None:
    """Win / win+tie per domain against the reference; None when the battles have no domains."""
    domains = sorted({r.domain for r in board.win_rates if r.domain != OVERALL})
    if not domains:
        return None
    table = Table(title=f"win % / win+tie % against {board.reference}, by domain")
    table.add_column("system")
    for domain in [*domains, OVERALL]:
        table.add_column(domain, justify="right")
    by_key = {(r.system, r.domain): r for r in board.win_rates}
    for system in sorted({r.system for r in board.win_rates}):
        cells = []
        for domain in [*domains, OVERALL]:
            rate = by_key.get((system, domain))
            cells.append(
                "—"
                if rate is None or rate.win is None
                else f"{_pct(rate.win)} / {_pct(rate.win_tie)}"
            )
        table.add_row(system, *cells)
    return table


def write_leaderboard(board: Leaderboard, out_dir: str | Path) -> list[Path]:
    """``leaderboard.json`` (everything), ``leaderboard.csv`` (a row per system) and
    ``win_rates.csv`` (a row per system and domain)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "leaderboard.json"
    json_path.write_text(board.model_dump_json(indent=2))
    csv_path = out / "leaderboard.csv"
    _write_csv(csv_path, [row.model_dump() for row in board.systems], SystemRow)
    rates_path = out / "win_rates.csv"
    _write_csv(rates_path, [rate.model_dump() for rate in board.win_rates], WinRate)
    return [json_path, csv_path, rates_path]


def _write_csv(path: Path, rows: list[dict[str, object]], model: type[BaseModel]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(model.model_fields))
        writer.writeheader()
        writer.writerows(rows)
