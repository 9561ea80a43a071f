"""Summaries and paper-style tables: pure functions of the generation and score records.

Micro averages pool the counts of all answers (every citation, every minimum-set triple weighs
the same); macro averages take each answer's ratio and average those (every answer weighs the
same), over the answers where the ratio exists: precision over answers with at least one
citation, recall over answers with a minimum set. F1 is computed from the averaged precision and
recall, as the paper does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from statistics import mean

from pydantic import BaseModel, Field
from rich import box
from rich.table import Table

from ragmeter.attribution.citations import parse_answer
from ragmeter.attribution.graph import KnowledgeGraph
from ragmeter.attribution.metrics import CitationCounts, count_citations, f1, ratio
from ragmeter.attribution.quality import CRITERIA
from ragmeter.attribution.records import GenerationRecord, ScoreRecord


class CitationSummary(BaseModel):
    answers: int = 0
    citations: int = 0
    correctness: float | None = None
    micro_precision: float | None = None
    micro_recall: float | None = None
    micro_f1: float | None = None
    macro_precision: float | None = None
    macro_recall: float | None = None
    macro_f1: float | None = None
    precision_answers: int = 0
    """Answers counted in macro precision (those with a citation and a minimum set)."""
    recall_answers: int = 0
    na_markers: int = 0
    incomplete: int = 0
    malformed: int = 0


def summarize_citations(counts: Sequence[CitationCounts]) -> CitationSummary:
    """Micro and macro citation quality over answers' tallies (paper §4.2)."""
    with_minimum = [c for c in counts if c.minimum is not None]
    citations = sum(c.citations for c in counts)
    precisions = [p for c in with_minimum if (p := c.precision) is not None]
    recalls = [r for c in with_minimum if (r := c.recall) is not None]
    micro_p = ratio(sum(c.precise for c in with_minimum), sum(c.citations for c in with_minimum))
    micro_r = ratio(
        sum(c.recalled for c in with_minimum), sum(c.minimum or 0 for c in with_minimum)
    )
    macro_p = mean(precisions) if precisions else None
    macro_r = mean(recalls) if recalls else None
    return CitationSummary(
        answers=len(counts),
        citations=citations,
        correctness=ratio(sum(c.correct for c in counts), citations),
        micro_precision=micro_p,
        micro_recall=micro_r,
        micro_f1=f1(micro_p, micro_r),
        macro_precision=macro_p,
        macro_recall=macro_r,
        macro_f1=f1(macro_p, macro_r),
        precision_answers=len(precisions),
        recall_answers=len(recalls),
        na_markers=sum(c.na for c in counts),
        incomplete=sum(c.incomplete for c in counts),
        malformed=sum(c.malformed for c in counts),
    )


def citation_counts(record: GenerationRecord) -> CitationCounts | None:
    """Recomputed from the record itself: the graph it was given and its minimum set."""
    if record.answer is None:
        return None
    return count_citations(
        parse_answer(record.answer), KnowledgeGraph(record.graph), record.minimum
    )


class ConditionSummary(BaseModel):
    condition: str
    questions: int
    answered: int
    failed: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    citation: CitationSummary
    alignment: float | None = None
    alignment_pairs: int = 0
    alignment_unscored: dict[str, int] = Field(default_factory=dict)
    na_precision: float | None = None
    na_recall: float | None = None
    na_f1: float | None = None
    na_sentences: int = 0
    na_absent: int = 0
    na_undecided: int = 0
    quality: dict[str, float | None] = Field(default_factory=dict)
    quality_unscored: dict[str, dict[str, int]] = Field(default_factory=dict)
    generation_seconds: float | None = None
    scoring_seconds: float | None = None
    seconds_per_question: float | None = None
    calls_per_question: float | None = None
    prompt_tokens_per_question: float | None = None
    completion_tokens_per_question: float | None = None


def _alignment(scores: Sequence[ScoreRecord]) -> tuple[float | None, int, dict[str, int]]:
    pairs = [p for s in scores if s.alignment for p in s.alignment.pairs]
    decided = [p for p in pairs if p.entailed is not None]
    reasons = Counter(p.unscored_reason or "" for p in pairs if p.entailed is None)
    return (
        ratio(sum(p.entailed is True for p in decided), len(decided)),
        len(decided),
        dict(reasons),
    )


def _quality(
    scores: Sequence[ScoreRecord],
) -> tuple[dict[str, float | None], dict[str, dict[str, int]]]:
    means: dict[str, float | None] = {}
    unscored: dict[str, dict[str, int]] = {}
    for name in CRITERIA:
        found = [s.quality[name] for s in scores if name in s.quality]
        values = [q.value for q in found if q.value is not None]
        means[name] = mean(values) if values else None
        reasons = Counter(q.unscored_reason or "" for q in found if q.value is None)
        if reasons:
            unscored[name] = dict(reasons)
    return means, unscored


def summarize(
    condition: str,
    generations: Sequence[GenerationRecord],
    scores: Sequence[ScoreRecord] = (),
    skipped: Mapping[str, int] | None = None,
) -> ConditionSummary:
    """Everything the tables show for one condition."""
    answered = [g for g in generations if g.answer is not None]
    counts = [c for g in answered if (c := citation_counts(g)) is not None]
    wanted = {g.key for g in generations}
    scores = [s for s in scores if s.generation_key in wanted]
    align, pairs, align_unscored = _alignment(scores)
    na = [s.na for s in scores if s.na is not None]
    sentence_hits = [h for r in na for h in r.sentence_hits]
    absent_hits = [h for r in na for h in r.absent_hits]
    na_p = ratio(sum(h is True for h in sentence_hits), sum(h is not None for h in sentence_hits))
    na_r = ratio(sum(h is True for h in absent_hits), sum(h is not None for h in absent_hits))
    quality, quality_unscored = _quality(scores)
    n = len(generations)
    gen_seconds = sum(g.seconds for g in generations)
    score_seconds = sum(s.seconds for s in scores)
    usages = [g.usage for g in generations] + [s.usage for s in scores]
    return ConditionSummary(
        condition=condition,
        questions=n,
        answered=len(answered),
        failed=dict(Counter(g.error or "" for g in generations if g.answer is None)),
        skipped=dict(skipped or {}),
        citation=summarize_citations(counts),
        alignment=align,
        alignment_pairs=pairs,
        alignment_unscored=align_unscored,
        na_precision=na_p if na else None,
        na_recall=na_r if na else None,
        na_f1=f1(na_p, na_r) if na else None,
        na_sentences=len(sentence_hits),
        na_absent=len(absent_hits),
        na_undecided=sum(h is None for h in sentence_hits + absent_hits),
        quality=quality,
        quality_unscored=quality_unscored,
        generation_seconds=gen_seconds / n if n else None,
        scoring_seconds=score_seconds / n if n and scores else None,
        seconds_per_question=(gen_seconds + score_seconds) / n if n else None,
        calls_per_question=sum(u.model_calls for u in usages) / n if n else None,
        prompt_tokens_per_question=sum(u.prompt_tokens for u in usages) / n if n else None,
        completion_tokens_per_question=(
            sum(u.completion_tokens for u in usages) / n if n else None
        ),
    )


def percent(value: float | None) -> str:
    """A ratio as the paper prints it (x100, one decimal), or a dash when unmeasured."""
    return "—" if value is None else f"{100 * value:.1f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(
    title: str,
    columns: dict[str, Callable[[ConditionSummary], str]],
    rows: Sequence[ConditionSummary],
) -> Table:
    """One row per condition; ``columns`` maps each heading to how a row fills it."""
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in columns:
        table.add_column(column, justify="left" if column == "condition" else "right")
    for row in rows:
        table.add_row(*(cell(row) for cell in columns.values()))
    return table


def citation_table(rows: Sequence[ConditionSummary], title: str = "citation quality") -> Table:
    """The paper's Table 3 layout (percentages), with [NA] precision/recall beside it."""
    columns: dict[str, Callable[[ConditionSummary], str]] = {
        "condition": lambda r: r.condition,
        "n": lambda r: str(r.answered),
        "Align.": lambda r: percent(r.alignment),
        "Corr.": lambda r: percent(r.citation.correctness),
        "micro P": lambda r: percent(r.citation.micro_precision),
        "micro R": lambda r: percent(r.citation.micro_recall),
        "micro F1": lambda r: percent(r.citation.micro_f1),
        "macro P": lambda r: percent(r.citation.macro_precision),
        "macro R": lambda r: percent(r.citation.macro_recall),
        "macro F1": lambda r: percent(r.citation.macro_f1),
        "[NA] P": lambda r: percent(r.na_precision),
        "[NA] R": lambda r: percent(r.na_recall),
    }
    return _table(title, columns, rows)


def quality_table(rows: Sequence[ConditionSummary], title: str = "text quality and cost") -> Table:
    """The paper's Table 4 (G-Eval, 1-5) plus what each question cost."""
    columns: dict[str, Callable[[ConditionSummary], str]] = {
        "condition": lambda r: r.condition,
        **{
            heading: lambda r, name=name: _num(r.quality.get(name))
            for heading, name in (
                ("Coh.", "coherence"),
                ("Con.", "consistency"),
                ("Flu.", "fluency"),
                ("Rel.", "relevance"),
            )
        },
        "s/question": lambda r: _num(r.seconds_per_question, 1),
        "calls/q": lambda r: _num(r.calls_per_question, 1),
        "tokens in/q": lambda r: _num(r.prompt_tokens_per_question, 0),
        "tokens out/q": lambda r: _num(r.completion_tokens_per_question, 0),
        "failed": lambda r: str(sum(r.failed.values())),
    }
    return _table(title, columns, rows)


def notes(row: ConditionSummary) -> list[str]:
    """Lines that say what was not measured and why, for printing under the tables."""
    lines = []
    for reason, count in row.failed.items():
        lines.append(f"{row.condition}: {count} answer(s) not generated — {reason}")
    for reason, count in row.skipped.items():
        lines.append(f"{row.condition}: {count} question(s) skipped — {reason}")
    if row.answered and row.citation.recall_answers == 0:
        lines.append(
            f"{row.condition}: precision/recall not measured — the questions have no "
            "minimum knowledge set (evolve them first)"
        )
    for reason, count in row.alignment_unscored.items():
        lines.append(f"{row.condition}: {count} alignment pair(s) unscored — {reason}")
    for name, reasons in row.quality_unscored.items():
        for reason, count in reasons.items():
            lines.append(f"{row.condition}: {name} unscored for {count} — {reason}")
    if row.na_undecided:
        lines.append(
            f"{row.condition}: {row.na_undecided} [NA] judgement(s) undecided "
            "(an entailment check was unscored)"
        )
    return lines
