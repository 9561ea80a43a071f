"""What a report shows, as plain data: sections of cards, charts and tables, made from an
opened run (or a comparison of two) and nothing else.

The page (``html.py``) draws these as they are, so everything a report holds can be checked here
without a browser. Charts come from ``charts.py`` (Altair); the rest is pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.explain import claim_fate, claim_rows, explain, fates_summary
from ragmeter.heads.ratings import Scale
from ragmeter.manifest import RunRecord
from ragmeter.meta.wikieval import DIMENSIONS, PAPER_TABLE_4
from ragmeter.metrics.diagnosis import DIAGNOSIS, DIAGNOSIS_PARTS
from ragmeter.ranking import Ranking
from ragmeter.sample import Sample
from ragmeter.score import Exchange, Score
from ragmeter.viewer.charts import grouped_bars, intervals, score_histogram
from ragmeter.viewer.compare import Comparison, RankedMetric, RunsRanking
from ragmeter.viewer.folders import OpenedRun

Section = dict[str, Any]

KIND_TITLES = {
    "evaluate": "evaluation",
    "wikieval": "WikiEval agreement (meta wikieval)",
    "meta-attribution": "attribution verifier agreement (meta attribution)",
    "arena": "RAG-QA Arena leaderboard",
    "arena-agreement": "arena judge agreement with human labels",
    "attribution": "KaLMA attribution",
    "retrieval": "retriever runs (ragmeter retrieval)",
    "side-by-side": "systems read side by side (compare --side-by-side)",
}


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    return "—" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


def card(title: str, value: str, detail: str = "", foot: str = "", **extra: Any) -> dict[str, Any]:
    return {"title": title, "value": value, "detail": detail, "foot": foot, **extra}


def _reasons(counts: Mapping[str, int] | None) -> list[str]:
    """Why items went unscored, as a card lists them: ``3: the judge call failed``."""
    return [f"{count}: {reason}" for reason, count in (counts or {}).items()]


def _flip_card(run: Mapping[str, Any], lead: str = "") -> dict[str, Any]:
    """How often the two orders of a pair disagreed, in an arena run or a check against human
    labels."""
    pairs = f"{run.get('flips')}/{run.get('both_orders')} pairs"
    return card("flip rate", fmt(run.get("flip_rate")), lead + pairs)


def table(
    columns: Sequence[str | tuple[str, bool]],
    rows: list[dict[str, Any]],
    *,
    name: str = "",
    filters: Sequence[dict[str, str]] = (),
    interactive: bool = False,
    missing: str = "—",
) -> dict[str, Any]:
    """Columns are names, or ``(name, numeric)``; a row is ``{"cells": [...]}``, with optional
    ``flags`` (what the filter matches) and ``detail`` (blocks shown when the row is opened).
    ``missing`` is shown for a number that is None: "unscored" in tables of scores, a dash
    elsewhere (an arena system without a rating was not unscored)."""
    return {
        "name": name,
        "columns": [
            {"name": c, "numeric": False} if isinstance(c, str) else {"name": c[0], "numeric": c[1]}
            for c in columns
        ],
        "rows": rows,
        "filters": list(filters),
        "interactive": interactive,
        "missing": missing,
    }


def run_sections(run: OpenedRun, prefix: str = "") -> list[Section]:
    """Every section of one run's report, by kind."""
    build = {
        "evaluate": _evaluation,
        "wikieval": _wikieval,
        "meta-attribution": _meta_attribution,
        "arena": _arena,
        "arena-agreement": _arena_agreement,
        "attribution": _attribution,
        "retrieval": _retrieval,
        "side-by-side": _side_by_side,
    }[run.kind]
    sections = build(run)
    for section in sections:
        section["heading"] = prefix + section["heading"]
    return sections


def describe(run: OpenedRun) -> str:
    """One line saying what the run is: kind, judge, status, when."""
    parts = [KIND_TITLES[run.kind], str(run.path)]
    record = run.record
    if record is not None:
        parts += [f"judge {record.judge}"]
        if record.embedder:
            parts.append(f"embedder {record.embedder}")
        parts += [f"status {record.status}", f"started {record.started[:19]}"]
        if record.ragmeter_version:
            parts.append(f"ragmeter {record.ragmeter_version}")
    elif run.kind == "wikieval":
        parts.append(f"judge {run.data.get('judge', '?')}")
    return " · ".join(parts)


# -- evaluate ---------------------------------------------------------------------------------


def _evaluation(run: OpenedRun) -> list[Section]:
    result = run.result
    assert result is not None
    summary = result.summary()
    cards = [
        card(
            row.metric,
            fmt(row.mean),
            f"95% CI {interval(row.ci_low, row.ci_high)}",
            f"scored {row.scored} · unscored {row.unscored}",
            reasons=_reasons(row.unscored_reasons),
            warn=row.unscored > 0,
        )
        for row in summary
    ]
    histograms = [
        score_histogram(m, [s.value for s in result.scores_for(m) if s.value is not None])
        for m in result.metrics
    ]
    sections: list[Section] = [{"heading": "Summary", "cards": cards}]
    diagnosed = [row for m in DIAGNOSIS for row in summary if row.metric == m]
    if diagnosed:
        sections.append(
            {
                "heading": "Diagnosis",
                "text": "RAGChecker's claim-level figures: which part of the system lost or "
                "invented claims. Open a sample below for its claims, one by one.",
                "table": table(
                    ["part", "metric", ("mean", True), "95% CI", "scored", "unscored"],
                    [
                        {
                            "cells": [
                                DIAGNOSIS_PARTS[row.metric],
                                row.metric,
                                row.mean,
                                interval(row.ci_low, row.ci_high),
                                row.scored,
                                row.unscored,
                            ]
                        }
                        for row in diagnosed
                    ],
                    name="diagnosis",
                ),
            }
        )
    if run.calibration is not None:
        sections.append(calibration_section(run.calibration, summary))
    sections.append(
        {
            "heading": "Distributions",
            "text": "Scored samples only; the unscored are counted on the cards and listed below.",
            "charts": histograms,
        }
    )
    record = run.record
    if record is not None and record.planted:
        sections.append(planted_section(record))
    unscored = [s for s in result.scores if not s.scored]
    if unscored:
        sections.append(
            {
                "heading": f"Unscored items ({len(unscored)})",
                "table": table(
                    ["sample", "metric", "reason"],
                    [{"cells": [s.sample_id, s.metric, s.unscored_reason or ""]} for s in unscored],
                    name="unscored",
                ),
            }
        )
    sections.append({"heading": "Samples", "table": sample_table(run)})
    return sections


def planted_section(record: RunRecord) -> Section:
    """The text addressed to the judge that the run's samples held, unit by unit."""
    counts = record.counts.planted_fields if record.counts else {}
    fields = ", ".join(f"{field} {n}" for field, n in counts.items())
    taken = record.parameters.get("planted", "remove") == "remove"
    samples = len({unit["sample"] for unit in record.planted})
    return {
        "heading": f"Text addressed to the judge: {samples} of {record.samples} samples",
        "text": f"Units of text that speak to the judge, by field: {fields}. "
        + ("They were taken out before judging." if taken else "They were left in (planted=keep)."),
        "table": table(
            ["sample", "field", "rule", "text"],
            [
                {"cells": [unit["sample"], unit["field"], unit["rule"], unit["text"]]}
                for unit in record.planted
            ],
            name="planted",
        ),
    }


def calibration_section(calibration: dict[str, Any], summary: list[Any]) -> Section:
    """A card per rated metric of ``calibration.json``: the people's mean (PPI++) beside the
    ratings alone; a note when the run has been scored further since it was written."""
    cards, problems = [], []
    now = {row.metric: (row.scored, row.mean) for row in summary}
    for row in calibration.get("metrics", []):
        metric, scale, found = row["metric"], row["scale"], row.get("result")
        title = f"{metric} · people's mean ({Scale.model_construct(**scale).text})"
        if found is None:
            cards.append(card(title, "—", row.get("reason") or "", warn=True))
            continue
        ppi, alone = found["ppi"], found["labels_only"]
        cards.append(
            card(
                title,
                fmt(ppi["estimate"], 2),
                f"95% CI {interval(ppi['low'], ppi['high'], 2)} · ratings only "
                f"{fmt(alone['estimate'], 2)} {interval(alone['low'], alone['high'], 2)}",
                f"rated {found['rated']} of {row['scored']} · judge "
                f"{fmt(found['judge_mean_on_scale'], 2)} (bias {found['judge_bias']:+.2f}, "
                f"r {fmt(found['correlation'], 2)}) · lambda {found['weight']:.2f}",
            )
        )
        scored, mean = now.get(metric, (row["scored"], found["judge_mean"]))
        if scored != row["scored"] or mean is None or abs(mean - found["judge_mean"]) > 1e-9:
            problems.append(
                f"{metric}: calibration.json was made over {row['scored']} scored samples "
                f"(judge mean {fmt(found['judge_mean'])}) and the run now has {scored} "
                f"({fmt(mean)}); run 'ragmeter calibrate' again"
            )
    section: Section = {
        "heading": "People's means from ratings",
        "text": f"PPI++ from the ratings in {calibration.get('labels', '?')} and the judge's "
        "scores of every sample (ragmeter calibrate).",
        "cards": cards,
    }
    if problems:
        section["problems"] = problems
    return section


def sample_table(run: OpenedRun) -> dict[str, Any]:
    """A row per sample with its scores; opening a row shows each metric's explanation and the
    judge exchanges behind it, and the sample's claim table when its metrics made one."""
    result = run.result
    assert result is not None
    by_key = {(s.sample_id, s.metric): s for s in result.scores}
    rows = []
    for sample in result.samples:
        cells: list[Any] = [sample.key, sample.question, sample.answer]
        flags, detail = [], []
        for metric in result.metrics:
            score = by_key.get((sample.key, metric))
            cells.append(score.value if score else None)
            if score is None:  # a killed run: never judged, so not scored either
                flags.append(f"unscored:{metric}")
                detail.append({"heading": metric, "lines": ["not judged in this run"]})
                continue
            if not score.scored:
                flags.append(f"unscored:{metric}")
            detail.append(score_block(score, sample))
        judged = [s for m in result.metrics if (s := by_key.get((sample.key, m)))]
        claims = claim_table_block(judged)
        if claims is not None:  # first: every claim the metrics below read, at a glance
            detail.insert(0, claims)
        flags.append("unscored-any" if flags else "scored-all")
        rows.append({"cells": cells, "flags": flags, "detail": detail, "full": sample.answer})
    filters = [
        {"label": "all samples", "flag": ""},
        {"label": "with an unscored metric", "flag": "unscored-any"},
        {"label": "every metric scored", "flag": "scored-all"},
    ] + [{"label": f"{m} unscored", "flag": f"unscored:{m}"} for m in result.metrics]
    columns: list[str | tuple[str, bool]] = ["id", "question", "answer"]
    columns += [(m, True) for m in result.metrics]
    return table(
        columns, rows, name="samples", filters=filters, interactive=True, missing="unscored"
    )


TABULATED = ("statements", "answer_claims", "reference_claims")
"""Explanation keys shown as claim tables rather than as lines."""


def score_block(score: Score, sample: Sample) -> dict[str, Any]:
    """A metric's explanation, for the opened row: its value (or why there is none), the
    explanation's lines (the claims it checked are in the claim table instead: faithfulness's
    statements in its own, the claim tables' claims in the sample's) and the judge
    exchanges."""
    value = fmt(score.value, 4) if score.scored else f"unscored: {score.unscored_reason}"
    rest = {k: v for k, v in score.explanation.items() if k not in TABULATED}
    block = {
        "heading": score.metric,
        "value": value,
        "unscored": not score.scored,
        "lines": explain(score.model_copy(update={"explanation": rest}), sample),
        "exchanges": [exchange_view(e) for e in score.exchanges],
    }
    statements = statement_table(score.explanation.get("statements"))
    if statements is not None:
        block["claims"] = statements
    return block


def statement_table(statements: Any) -> dict[str, Any] | None:
    """Faithfulness's statements as a claim table: each against the retrieved passages
    together, with its probability (or, from generated verdicts, the verdict and the judge's
    reason)."""
    if not isinstance(statements, list) or not all(isinstance(s, dict) for s in statements):
        return None
    rows = []
    for s in statements:
        supported = s.get("verdict") == "yes"
        rows.append(
            {
                "claim": s.get("statement", ""),
                "cells": [s.get("p_supported", s.get("verdict"))],
                "fate": "supported" if supported else "not supported",
                "tone": "good" if supported else "bad",
                "note": s.get("reason"),
            }
        )
    return claim_grid(["passages"], [("statements", rows)])


def claim_table_block(scores: Sequence[Score], threshold: float = 0.5) -> dict[str, Any] | None:
    """The sample's claim table, merged over the metrics that read one: each claim a row, each
    text it was checked against a column (the reference, the answer, chunk 1..k), its
    probability in each cell where it was checked, and where it went (``claim_fate``). None
    when no metric made one."""
    claims = claim_rows(scores)
    if not any(claims.values()):
        return None
    chunks = max(
        (len(r.get("p_in_chunks") or []) for side in claims.values() for r in side), default=0
    )
    columns = [
        name
        for name in ("reference", "answer")
        if any(f"p_in_{name}" in r for side in claims.values() for r in side)
    ]
    groups, fates = [], []
    for side in ("answer", "reference"):
        rows = []
        for row in claims[side]:
            fate, tone = claim_fate(side, row, threshold)
            fates.append(fate)
            in_chunks = row.get("p_in_chunks")
            rows.append(
                {
                    "claim": row["claim"],
                    "cells": [row.get(f"p_in_{name}") for name in columns]
                    + (list(in_chunks) if in_chunks is not None else [None] * chunks),
                    "fate": fate,
                    "tone": tone,
                }
            )
        if rows:
            groups.append((f"{side} claims", rows))
    columns += [f"chunk {k}" for k in range(1, chunks + 1)]
    grid = claim_grid(columns, groups, threshold)
    return {
        "heading": "claim table",
        "value": fates_summary(fates, threshold),
        "unscored": False,
        "wide": True,
        "lines": [],
        "claims": grid,
    }


def claim_grid(
    columns: list[str], groups: list[tuple[str, list[dict[str, Any]]]], threshold: float = 0.5
) -> dict[str, Any]:
    """A claim table as the page draws it: ``columns`` the texts checked against, each group's
    rows a claim with its ``cells`` (a probability, a verdict word, or None where it was not
    checked against that text), its ``fate`` and the fate's ``tone``; a probability counts as
    a Yes from ``threshold``."""
    return {
        "columns": columns,
        "threshold": threshold,
        "groups": [{"name": name, "rows": rows} for name, rows in groups],
    }


def exchange_view(exchange: Exchange) -> dict[str, Any]:
    return {
        "prompt": exchange.prompt,
        "messages": [[m.role, m.content] for m in exchange.messages],
        "reply": exchange.reply,
        "error": exchange.error,
        "probability": exchange.probability,
        "cached": exchange.cached,
    }


# -- comparisons ------------------------------------------------------------------------------


def _differences(rows: Sequence[dict[str, Any]], label: str, title: str) -> dict[str, Any]:
    """Each row's difference B - A with its 95% interval, against the rule of no difference:
    the chart of either kind of comparison."""
    return intervals(
        rows,
        label=label,
        value="difference",
        low="ci_low",
        high="ci_high",
        title=title,
        zero=0.0,
    )


def comparison_sections(comparison: Comparison) -> list[Section]:
    head = f"Comparison: B ({comparison.run_b}) against A ({comparison.run_a})"
    intro = {
        "heading": head,
        "problems": [f"Not comparable: {p}" for p in comparison.problems],
        "notes": comparison.notes,
    }
    if comparison.kind == "arena":
        rows = [r.model_dump() for r in comparison.ratings]
        intro["text"] = "Rating B minus rating A per system; " + comparison.p_value_method + "."
        intro["charts"] = [_differences(rows, "system", "rating difference (B - A)")]
        intro["table"] = table(
            [
                "system",
                ("rating A", True),
                ("rating B", True),
                ("B - A", True),
                "95% CI",
                ("win A", True),
                ("win B", True),
            ],
            [
                {
                    "cells": [
                        r.system,
                        r.rating_a,
                        r.rating_b,
                        r.difference,
                        interval(r.ci_low, r.ci_high, 1),
                        r.win_a,
                        r.win_b,
                    ]
                }
                for r in comparison.ratings
            ],
            name="ratings",
        )
        return [intro]
    intro["text"] = (
        f"{comparison.shared_samples} samples in both runs ({comparison.only_a} only in A, "
        f"{comparison.only_b} only in B). Difference of means over the samples scored in both, "
        f"with a paired-bootstrap 95% CI ({comparison.rounds} rounds, seed {comparison.seed}); "
        f"p-value: {comparison.p_value_method}."
    )
    intro["cards"] = [
        card(
            m.metric,
            "—" if m.difference is None else f"{m.difference:+.3f}",
            f"95% CI {interval(m.ci_low, m.ci_high)} · p = {fmt(m.p_value, 4)}",
            f"better {m.better} · worse {m.worse} · unchanged {m.unchanged} · pairs {m.pairs}"
            + (
                f" · unscored A {m.unscored_a}, B {m.unscored_b}"
                if m.unscored_a + m.unscored_b
                else ""
            ),
            detail2=f"mean A {fmt(m.mean_a)} → mean B {fmt(m.mean_b)}",
            warn=bool(m.unscored_a or m.unscored_b),
        )
        for m in comparison.metrics
    ]
    intro["charts"] = [
        _differences(
            [m.model_dump(exclude={"changed"}) for m in comparison.metrics],
            "metric",
            "difference of means (B - A)",
        )
    ]
    rows = [
        {
            "cells": [m.metric, c.sample_id, c.question, c.value_a, c.value_b, c.difference],
            "flags": [m.metric],
            "detail": [
                _side("A", c.value_a, c.explanation_a, c.unscored_a),
                _side("B", c.value_b, c.explanation_b, c.unscored_b),
            ],
        }
        for m in comparison.metrics
        for c in m.changed
    ]
    changed = {
        "heading": "Samples that changed most",
        "text": "Open a row for both explanations side by side; samples scored in one run only "
        "follow the largest changes.",
        "table": table(
            ["metric", "sample", "question", ("A", True), ("B", True), ("B - A", True)],
            rows,
            name="changed",
            filters=[{"label": "all metrics", "flag": ""}]
            + [{"label": m.metric, "flag": m.metric} for m in comparison.metrics],
            interactive=True,
            missing="unscored",
        ),
    }
    return [intro, changed]


def ranking_sections(ranked: RunsRanking) -> list[Section]:
    """Two or more runs (or retrievers) ranked per metric: each one's mean with its interval,
    and every pair's verdict with what its samples tell apart and what such decisions were
    worth on public rated sets."""
    intro: Section = {
        "heading": "Which run is better: " + ", ".join(ranked.runs),
        "problems": [f"Not comparable: {p}" for p in ranked.problems],
        "notes": ranked.notes,
        "text": (
            f"Over the {ranked.samples} samples every run scored "
            f"({len(ranked.not_in_every_run)} in some runs only). Each pair: the paired "
            "difference with its 95% bootstrap interval, a sign-flip permutation p-value "
            "adjusted for the number of pairs (Holm), the verdict at 0.05, the smallest "
            "difference the samples tell apart 80% of the time, and how often decisions of "
            "that size were the people's on public rated sets"
            + (f" ({ranked.curve})." if ranked.curve else ".")
        ),
    }
    sections = [intro]
    for found in ranked.metrics:
        ranking = found.ranking
        direction = "higher" if ranking.higher_is_better else "lower"
        side = any(p.win_rate is not None for p in ranking.pairs)
        rows = []
        for pair, rate in zip(ranking.pairs, found.rates, strict=True):
            if rate is not None:
                worth = f"{rate.share:.0%} of {rate.draws} ({', '.join(rate.sets)})"
            elif ranked.curve is None:
                worth = "—"
            else:
                worth = "not measured" if not found.measured else "no decision this size drawn"
            rows.append(
                {
                    "cells": [
                        f"{pair.b} vs {pair.a}",
                        pair.test.difference,
                        interval(pair.test.ci_low, pair.test.ci_high),
                        pair.adjusted_p,
                        pair.verdict if pair.verdict == "cannot tell" else f"B {pair.verdict}",
                        "—" if pair.detectable is None else f"±{pair.detectable:.3f}",
                        *([_won(pair.win_rate), pair.read] if side else []),
                        worth,
                    ],
                    "flags": [pair.verdict],
                }
            )
        left_out = sum(len(keys) for keys in ranking.left_out.values())
        read = (
            f"{ranking.samples} inputs read side by side for every pair"
            if side
            else f"{ranking.samples} samples scored by every run"
        )
        sections.append(
            {
                "heading": f"{ranking.metric}: ranked, {direction} is better",
                "text": read
                + (f"; {left_out} left unscored by some run, so left out" if left_out else "")
                + ".",
                "charts": [
                    intervals(
                        [s.model_dump() for s in ranking.systems],
                        label="system",
                        value="mean",
                        low="ci_low",
                        high="ci_high",
                        title=f"{ranking.metric}: "
                        + ("Bradley-Terry rating" if side else "mean")
                        + " with 95% CI",
                    )
                ],
                "table": table(
                    [
                        "B vs A",
                        ("B - A", True),
                        "95% CI",
                        ("p (Holm)", True),
                        "verdict",
                        "tells apart",
                        *(["B preferred", "read"] if side else []),
                        "decided as people",
                    ],
                    rows,
                    name=f"pairs-{ranking.metric}",
                ),
            }
        )
    return sections


def _won(rate: Any) -> str:
    return "—" if rate is None else f"{rate.value:.0%} {interval(rate.low, rate.high, 2)}"


def _side_by_side(run: OpenedRun) -> list[Section]:
    """A ``compare --side-by-side`` folder: the systems ranked and every pair decided on the
    preferences, then what the reading cost and how the judge leaned (position, length)."""
    found = run.data
    ranked = RunsRanking.model_validate(found["ranking"])
    summary = found["side_by_side"]
    sections = ranking_sections(ranked)
    sections[0]["heading"] = "Which system is better, read side by side: " + ", ".join(ranked.runs)
    sections[0]["text"] = (
        f"Each input's answers were read together by the judge, in both orders, and the "
        f"probabilities of A and B averaged over the orders ({summary['design']} pairs, "
        f"{summary['reads']} reads). Each pair: the mean preference for B with its 95% "
        "bootstrap interval, a sign-flip p-value adjusted for the number of pairs (Holm), the "
        "verdict at 0.05 and the share of inputs on which B was preferred. Systems are ranked "
        "by Bradley-Terry ratings."
    )
    rows = []
    for metric in summary["metrics"]:
        order, length = metric["order_bias"], metric["length_bias"]
        controlled = metric["length_controlled"]
        rows.append(
            {
                "cells": [
                    metric["metric"],
                    metric["comparative"],
                    f"{order['first_preferred']} of {order['reads']}",
                    "—"
                    if length["longer_preferred"] is None
                    else f"{length['longer_preferred']:.0%}",
                    "—"
                    if controlled is None
                    else "; ".join(
                        f"{p['b']} vs {p['a']}: {p['verdict']}" for p in controlled["pairs"]
                    ),
                    metric["unscored"],
                ]
            }
        )
    sections.append(
        {
            "heading": "How the judge leaned",
            "text": "The first position's share of reads, whatever was shown there, and the "
            "longer answer's share of the inputs whose answers differ in length; the verdicts "
            "with the length term taken out are beside them.",
            "table": table(
                [
                    "metric",
                    "asked",
                    "first shown preferred",
                    "longer preferred",
                    "verdicts, length controlled",
                    ("unscored", True),
                ],
                rows,
                name="side-by-side-bias",
            ),
        }
    )
    return sections


def _retrieval(run: OpenedRun) -> list[Section]:
    """A ``ragmeter retrieval`` folder: per source of relevance (people's qrels, the judge's
    grades, both merged), every run's measures, and each measure's ranking of the runs."""
    sources = run.data.get("qrels", {})
    found = run.data.get("rankings", [])
    by_source = found if isinstance(found, dict) else {"human": found}
    sections: list[Section] = []
    for source, runs in sources.items():
        measures = list(dict.fromkeys(m for figures in runs.values() for m in figures))
        sections.append(
            {
                "heading": f"Retriever runs on the {source} qrels",
                "notes": run.data.get("notes", []) if source == "human" else [],
                "table": table(
                    ["run", *measures],
                    [
                        {
                            "cells": [
                                name,
                                *(
                                    f"{fmt(figures[m]['mean'])} "
                                    f"{interval(figures[m]['ci_low'], figures[m]['ci_high'])}"
                                    if m in figures
                                    else "—"
                                    for m in measures
                                ),
                            ]
                        }
                        for name, figures in runs.items()
                    ],
                    name=f"retrieval-{source}",
                ),
            }
        )
        rankings = [Ranking.model_validate(r) for r in by_source.get(source, [])]
        if rankings:
            ranked = RunsRanking(
                runs=list(runs),
                problems=[],
                notes=[],
                samples=rankings[0].samples,
                not_in_every_run=[],
                metrics=[
                    RankedMetric(ranking=r, rates=[None] * len(r.pairs), measured=False)
                    for r in rankings
                ],
                curve=None,
            )
            for section in ranking_sections(ranked)[1:]:  # the runs are introduced above
                section["heading"] = f"{source} qrels · {section['heading']}"
                sections.append(section)
    return sections


def _side(run: str, value: float | None, lines: list[str], unscored: str | None) -> dict[str, Any]:
    """One run's side of a changed sample, for the opened row."""
    block: dict[str, Any] = {
        "heading": f"{run}: {fmt(value, 4)}",
        "lines": lines,
        "unscored": value is None,
    }
    if unscored:
        block["value"] = f"unscored: {unscored}"
    return block


# -- meta, arena, attribution -----------------------------------------------------------------


def _wikieval(run: OpenedRun) -> list[Section]:
    agreements = run.data.get("agreements", [])
    methods = list(dict.fromkeys(a["method"] for a in agreements))
    cells = {(a["method"], a["dimension"]): a for a in agreements}

    def cell(method: str, dimension: str) -> str:
        found = cells.get((method, dimension))
        if found is None:
            return "—"
        extra = [f"{found['ties']} ties"] * bool(found["ties"])
        extra += [f"{found['unscored']} unscored"] * bool(found["unscored"])
        return fmt(found["accuracy"], 2) + (f" ({', '.join(extra)})" if extra else "")

    rows = [{"cells": [m, *[cell(m, d) for d in DIMENSIONS]]} for m in methods]
    rows += [
        {
            "cells": [
                f"{name} (paper)" if "paper" not in name else name,
                *[fmt(v[d], 2) for d in DIMENSIONS],
            ],
            "flags": ["paper"],
        }
        for name, v in PAPER_TABLE_4.items()
    ]
    chart_rows = [{k: a[k] for k in ("method", "dimension", "accuracy")} for a in agreements]
    seconds = run.data.get("seconds_per_sample") or {}
    return [
        {
            "heading": "Pairwise accuracy",
            "text": f"Judge {run.data.get('judge', '?')}. A tie counts 0.5; an unscored pair "
            "counts as a tie, so failures cannot raise the figure."
            + (
                " Median seconds per sample: "
                + ", ".join(f"{d} {s:.1f} s" for d, s in seconds.items())
                if seconds
                else ""
            ),
            "table": table(["method", *DIMENSIONS], rows, name="agreement"),
            "charts": [
                grouped_bars(
                    chart_rows,
                    x="dimension",
                    group="method",
                    value="accuracy",
                    title="pairwise accuracy",
                )
            ],
        }
    ]


def _meta_attribution(run: OpenedRun) -> list[Section]:
    c = run.data["classification"]
    names = ("accuracy", "macro_f1", "f1_supported", "f1_unsupported", "roc_auc")
    return [
        {
            "heading": "Statement verifier against human labels",
            "cards": [card(n.replace("_", " "), fmt(c.get(n))) for n in names]
            + [card("unscored", str(c.get("unscored", 0)), warn=bool(c.get("unscored")))],
            "table": table(
                ["threshold", ("rows", True), *[(n, True) for n in names], ("unscored", True)],
                [
                    {
                        "cells": [
                            fmt(c.get("threshold")),
                            c.get("rows"),
                            *[c.get(n) for n in names],
                            c.get("unscored"),
                        ]
                    }
                ],
                name="classification",
            ),
            "text": f"{run.data.get('truncated_references', 0)} references were cut to fit.",
        }
    ]


def _arena(run: OpenedRun) -> list[Section]:
    board = run.data
    systems = board.get("systems", [])
    cards = [
        card(
            "battles",
            str(board.get("battles")),
            f"scored {board.get('scored')}",
            f"unscored {board.get('unscored')}",
            reasons=_reasons(board.get("unscored_reasons")),
            warn=bool(board.get("unscored")),
        ),
        _flip_card(board, "orders disagreed on "),
        card(
            "reference",
            str(board.get("reference")),
            f"anchor {board.get('anchor')}",
            f"{board.get('rounds')} bootstrap rounds",
        ),
        _length_card(board.get("length_control")),
    ]
    rows = [
        {
            "cells": [
                s["system"],
                s.get("rating"),
                interval(s.get("rating_low"), s.get("rating_high"), 1),
                s.get("battles"),
                f"{s.get('wins', 0):g}/{s.get('ties', 0):g}/{s.get('losses', 0):g}",
                s.get("win"),
                s.get("win_tie"),
                s.get("no_answer"),
                s.get("mean_words"),
                s.get("lc_rating"),
                interval(s.get("lc_rating_low"), s.get("lc_rating_high"), 1),
                s.get("win_half"),
                s.get("lc_win"),
                interval(s.get("lc_win_low"), s.get("lc_win_high")),
            ]
        }
        # Highest rating first, systems without one last (a rating of 0 is a rating).
        for s in sorted(systems, key=lambda s: (s.get("rating") is None, -(s.get("rating") or 0)))
    ]
    rates = board.get("win_rates", [])
    rate_rows = [
        {
            "cells": [
                r["system"],
                r["domain"],
                r.get("battles"),
                r.get("win"),
                interval(r.get("win_low"), r.get("win_high")),
                r.get("win_tie"),
                interval(r.get("win_tie_low"), r.get("win_tie_high")),
                r.get("unscored"),
            ]
        }
        for r in rates
    ]
    return [
        {
            "heading": "Leaderboard",
            "cards": cards,
            "charts": [
                intervals(
                    systems,
                    label="system",
                    value="rating",
                    low="rating_low",
                    high="rating_high",
                    title="Elo rating with 95% bootstrap CI",
                ),
                *(
                    [
                        intervals(
                            systems,
                            label="system",
                            value="lc_win",
                            low="lc_win_low",
                            high="lc_win_high",
                            title=f"length-controlled win rate against {board.get('reference')} "
                            "with 95% bootstrap CI",
                        )
                    ]
                    if any(s.get("lc_win") is not None for s in systems)
                    else []
                ),
            ],
            "table": table(
                [
                    "system",
                    ("Elo", True),
                    "95% CI",
                    ("battles", True),
                    "W/T/L",
                    ("win", True),
                    ("win+tie", True),
                    ("no answer", True),
                    ("mean words", True),
                    ("LC Elo", True),
                    "95% CI",
                    ("win ½", True),
                    ("LC win", True),
                    "95% CI",
                ],
                rows,
                name="leaderboard",
            ),
        },
        {
            "heading": f"Win rates against {board.get('reference')} per domain",
            "charts": [
                grouped_bars(rates, x="domain", group="system", value="win", title="win rate"),
                grouped_bars(
                    rates, x="domain", group="system", value="win_tie", title="win + tie rate"
                ),
            ],
            "table": table(
                [
                    "system",
                    "domain",
                    ("battles", True),
                    ("win", True),
                    "95% CI",
                    ("win+tie", True),
                    "95% CI",
                    ("unscored", True),
                ],
                rate_rows,
                name="win rates",
            ),
        },
    ]


def _length_card(control: dict[str, Any] | None) -> dict[str, Any]:
    """The length term of the length-controlled figures (LC columns: the answers' length
    difference set to 0; "win ½" is the raw win rate they correct, ties as halves)."""
    if not control:
        return card("length control", "—", "written before length control")
    if control.get("unavailable"):
        return card("length control", "—", control["unavailable"], warn=True)
    return card(
        "length term",
        fmt(control.get("coefficient"), 2),
        f"95% CI {interval(control.get('coefficient_low'), control.get('coefficient_high'), 2)}",
        f"logits * tanh(Δwords / {fmt(control.get('scale_words'), 0)}); LC columns set Δ to 0",
    )


def _arena_agreement(run: OpenedRun) -> list[Section]:
    report = run.data
    stats = {"verdict": report.get("verdict")}
    if (report.get("first_order") or {}).get("pairs"):  # none when decided from claims
        stats["first order"] = report["first_order"]
    stats |= {f"combined: {k}": v for k, v in (report.get("by_combination") or {}).items()}
    if report.get("longer_answer"):
        stats["baseline: longer answer"] = report["longer_answer"]
    names = (
        "pairs",
        "kappa",
        "pearson",
        "accuracy",
        "decided_accuracy",
        "judge_tie_rate",
        "human_tie_rate",
    )
    verdict = report.get("verdict") or {}
    return [
        {
            "heading": "Judge against human labels",
            "cards": [
                card("Cohen's kappa", fmt(verdict.get("kappa"))),
                card("accuracy", fmt(verdict.get("accuracy"))),
                _flip_card(report),
                card(
                    "unscored",
                    str(report.get("unscored")),
                    reasons=_reasons(report.get("unscored_reasons")),
                    warn=bool(report.get("unscored")),
                ),
            ],
            "table": table(
                ["row", *[(n.replace("_", " "), True) for n in names]],
                [{"cells": [k, *[(v or {}).get(n) for n in names]]} for k, v in stats.items()],
                name="agreement",
            ),
            "charts": [
                grouped_bars(
                    [
                        {"measure": n, "row": k, "value": (v or {}).get(n)}
                        for k, v in stats.items()
                        for n in ("kappa", "pearson", "accuracy")
                    ],
                    x="measure",
                    group="row",
                    value="value",
                    title="agreement with the human labels",
                )
            ],
        }
    ]


def _attribution(run: OpenedRun) -> list[Section]:
    conditions = run.data
    citation = (
        "correctness",
        "micro_precision",
        "micro_recall",
        "micro_f1",
        "macro_precision",
        "macro_recall",
        "macro_f1",
    )
    rows, bars, quality_bars = [], [], []
    criteria = list(dict.fromkeys(k for c in conditions for k in (c.get("quality") or {})))
    for c in conditions:
        cit = c.get("citation") or {}
        failed = sum((c.get("failed") or {}).values()) + sum((c.get("skipped") or {}).values())
        rows.append(
            {
                "cells": [
                    c["condition"],
                    c.get("questions"),
                    c.get("answered"),
                    failed,
                    *[cit.get(k) for k in citation],
                    c.get("alignment"),
                    c.get("na_f1"),
                    *[(c.get("quality") or {}).get(k) for k in criteria],
                ],
                "flags": ["failed"] * bool(failed),
            }
        )
        bars += [{"measure": k, "condition": c["condition"], "value": cit.get(k)} for k in citation]
        quality_bars += [
            {"criterion": k, "condition": c["condition"], "score": v}
            for k, v in (c.get("quality") or {}).items()
        ]
    unscored = [
        {"cells": [c["condition"], what, reason, n]}
        for c in conditions
        for what, reasons in [
            ("alignment", c.get("alignment_unscored") or {}),
            *(c.get("quality_unscored") or {}).items(),
            ("failed", c.get("failed") or {}),
            ("skipped", c.get("skipped") or {}),
        ]
        for reason, n in reasons.items()
    ]
    sections: list[Section] = [
        {
            "heading": "Citation quality and text quality per condition",
            "charts": [
                grouped_bars(
                    bars,
                    x="measure",
                    group="condition",
                    value="value",
                    title="citation quality (0-1)",
                )
            ]
            + (
                [
                    grouped_bars(
                        quality_bars,
                        x="criterion",
                        group="condition",
                        value="score",
                        title="G-Eval text quality (1-5)",
                    )
                ]
                if quality_bars
                else []
            ),
            "table": table(
                [
                    "condition",
                    ("questions", True),
                    ("answered", True),
                    ("failed/skipped", True),
                    *[(k, True) for k in citation],
                    ("alignment", True),
                    ("[NA] F1", True),
                    *[(k, True) for k in criteria],
                ],
                rows,
                name="conditions",
            ),
        },
    ]
    if unscored:
        sections.append(
            {
                "heading": "Unscored and failed",
                "table": table(
                    ["condition", "what", "reason", ("count", True)], unscored, name="unscored"
                ),
            }
        )
    return sections
