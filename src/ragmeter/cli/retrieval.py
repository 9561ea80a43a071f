"""``ragmeter retrieval QRELS RUN... --out DIR``: retriever runs evaluated alone, no answers
needed. Per run, each measure's mean over the queries with its 95 % bootstrap interval and the
judged share of its top k; per measure, every pair of runs decided by a paired test over the
queries, adjusted for the number of pairs (Holm). With ``--grade``, the pool of the runs' top k
graded by the judge on a 0-3 scale (``retrieval.grading``), the runs scored on its grades and on
both merged too, and the grades' agreement with people's. Exit status: 0 done, 2 bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragmeter.budget import estimate
from ragmeter.cli.common import (
    AnchorSystem,
    CacheFlag,
    JudgeOptions,
    JudgeSpec,
    SideBySideDesign,
    Workers,
    advance,
    print_reasons,
    print_warning,
    progress,
    say,
    user_errors,
    wide_console,
)
from ragmeter.cli.pairs import pairs_table
from ragmeter.cli.retrieval_side_by_side import run_retrieval_side_by_side
from ragmeter.cli.side_by_side import Reading
from ragmeter.config import parse_options
from ragmeter.evaluate import evaluate
from ragmeter.manifest import Counts
from ragmeter.metrics.passage_relevance import PassageRelevance
from ragmeter.ranking import Ranking
from ragmeter.report import estimate_table, write_outputs
from ragmeter.result import Result
from ragmeter.retrieval import (
    DEFAULT_MEASURES,
    HUMAN,
    RetrievalEvaluation,
    RunSummary,
    evaluate_files,
)
from ragmeter.retrieval.evaluation import evaluate_runs, read_files, write_sources
from ragmeter.retrieval.grading import (
    Grading,
    agreement,
    grades_of,
    grading_of,
    judge_qrels,
    merged_qrels,
    pair_samples,
    write_grades,
)
from ragmeter.retrieval.grading import pool as pool_of
from ragmeter.retrieval.qrels import Qrels
from ragmeter.retrieval.runs import Run
from ragmeter.retrieval.texts import read_passages, read_queries
from ragmeter.retrieval.top_passages import DEPTH
from ragmeter.sample import Sample
from ragmeter.stats import P_VALUE_METHOD, Interval
from ragmeter.viewer.views import fmt, interval

GRADES_FOLDER = "grades"
"""The evaluate run of the pool's grades, inside the output folder."""
SHOWN_IDS = 5
"""Query ids named on a line before the rest are counted."""


DEFAULT_MEASURES_TEXT = ",".join(DEFAULT_MEASURES)
"""The default, as the option is written."""


QrelsArgument = Annotated[
    Path,
    typer.Argument(
        help="Relevance judgments: a TREC qrels file (qid iteration docid grade), a BEIR "
        "qrels .tsv, or a samples .jsonl (id, reference_context_ids); with --side-by-side, "
        "- where nobody graded."
    ),
]
RunsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Runs, each named after its file: TREC run files (qid Q0 docid rank score "
        "tag) or samples .jsonl files (id, context_ids in rank order; with --side-by-side, "
        "or contexts)."
    ),
]
OutOption = Annotated[
    Path,
    typer.Option(help="Folder for summary.json, rankings.json and per_query.jsonl."),
]
MetricsOption = Annotated[
    str,
    typer.Option(
        help="Measures as ir-measures names them, comma-separated, e.g. "
        "nDCG@10,R(rel=2)@100,RR,AP,P@10."
    ),
]
GradeOption = Annotated[
    bool,
    typer.Option(help="Grade the pool of the runs' top --pool with the judge (UMBRELA 0-3)."),
]
SideBySideOption = Annotated[
    bool,
    typer.Option(
        help="Read each pair of runs' top --depth passages for a query side by side with "
        "the judge, and decide the runs on the preferences (no grades needed)."
    ),
]
QueriesOption = Annotated[
    Path | None,
    typer.Option(help="--grade, --side-by-side: the queries, JSONL {qid, query} or BEIR's."),
]
PassagesOption = Annotated[
    Path | None,
    typer.Option(help="--grade, --side-by-side: the passages, JSONL {docid, text} or BEIR's."),
]
DepthOption = Annotated[
    int, typer.Option(min=1, help="--side-by-side: the passages of each run read a query.")
]
DryRunOption = Annotated[
    bool,
    typer.Option(help="--grade, --side-by-side: say what the judge would read; call no model."),
]


def retrieval_command(
    qrels: QrelsArgument,
    runs: RunsArgument,
    out: OutOption,
    metrics: MetricsOption = DEFAULT_MEASURES_TEXT,
    rounds: Annotated[int, typer.Option(min=1, help="Bootstrap and permutation rounds.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutations.")] = 0,
    grade: GradeOption = False,
    side_by_side: SideBySideOption = False,
    queries: QueriesOption = None,
    passages: PassagesOption = None,
    pool: Annotated[int, typer.Option(min=1, help="--grade: the depth of the pool.")] = 10,
    depth: DepthOption = DEPTH,
    design: SideBySideDesign = "auto",
    anchor: AnchorSystem = None,
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    cache: CacheFlag = True,
    workers: Workers = 1,
    dry_run: DryRunOption = False,
) -> None:
    """Evaluate retriever runs against qrels: each measure's mean with its 95% CI over the
    queries, the judged share of each run's top k, and every pair of runs decided per measure.

    A query of the qrels that a run does not return scores 0 (as trec_eval -c); a document the
    qrels do not judge counts as not relevant (as trec_eval), and the judged share says how
    often that happened.
    """
    console = wide_console()
    if side_by_side:
        with user_errors(console):
            if grade:
                raise ValueError("--side-by-side and --grade are two ways to compare: give one")
            reading = Reading(judge, judge_option, cache, design, anchor, rounds, seed)
            run_retrieval_side_by_side(
                console,
                qrels,
                runs,
                reading,
                measures=metrics,
                queries=queries,
                passages=passages,
                depth=depth,
                dry=dry_run,
                out=out,
            )
        return
    with user_errors(console):
        if dry_run and not grade:
            raise ValueError("--dry-run says what --grade would judge: give --grade too")
        found = evaluate_files(qrels, runs, metrics, rounds=rounds, seed=seed)
        if grade:
            if queries is None or passages is None:
                raise ValueError("--grade reads the texts: give --queries and --passages")
            human, read, _ = read_files(qrels, runs)
            # Bad texts, or a pooled id they lack, are said before any judging.
            samples = pair_samples(
                pool_of(read, pool), read_queries(queries), read_passages(passages)
            )
            judge_options = parse_options(judge_option, "--judge-option")
            if dry_run:
                _dry_run(console, samples, pool)
                return
        written = found.write(out)
    if grade:
        with user_errors(console):
            result, grading = _grade(
                console, samples, judge, judge_options, cache, workers, out, pool
            )
        _scored_on_grades(console, found, human, read, result, grading, out)
        return
    _print_runs(console, found, written, rounds, seed)


def _grade(
    console: Console,
    samples: list[Sample],
    judge: str,
    judge_options: dict[str, Any],
    cache: bool,
    workers: int,
    out: Path,
    pool: int,
) -> tuple[Result, Grading]:
    """The judge's grade of every pooled passage, kept in the grades folder."""
    with progress(console, "grading", len(samples)) as bar:
        result = evaluate(
            samples,
            [PassageRelevance()],
            judge=judge,
            judge_options=judge_options,
            cache=cache,
            max_workers=workers,
            out_dir=out / GRADES_FOLDER,
            on_score=lambda _: advance(bar),
        )
    write_outputs(result, out / GRADES_FOLDER)  # what the label page and report read
    counts = result.run.counts or Counts()
    grading = grading_of(
        result.scores_for(PassageRelevance.name),
        judge=result.run.judge,
        pool=pool,
        judged_now=counts.judged,
        resumed=counts.resumed,
        seconds=result.run.seconds,
    )
    return result, grading


def _print_runs(
    console: Console, found: RetrievalEvaluation, written: list[Path], rounds: int, seed: int
) -> None:
    console.print(_runs_table(found))
    for ranking in found.rankings:
        console.print(pairs_table(ranking, unit="queries"))
    for ranking in found.rankings:
        console.print(f"{ranking.metric}: {_told(ranking)} told apart", highlight=False)
    for note in [*found.notes, *_query_notes(found.runs)]:
        print_warning(console, note)
    say(
        console,
        f"{found.queries} queries of the qrels ({found.judgments} judgments); a query a run "
        "does not return scores 0 (trec_eval -c); unjudged documents count as not relevant; "
        f"CI: percentile bootstrap over queries, {rounds} rounds, seed {seed}; p: "
        f"{P_VALUE_METHOD}, adjusted for the number of pairs (Holm)",
    )
    say(console, f"written: {', '.join(map(str, written))}")


def _dry_run(console: Console, samples: list[Sample], depth: int) -> None:
    """The pool and what grading it asks of the judge, no model called."""
    queries = len({sample.question for sample in samples})
    console.print(
        f"the pool of the runs' top {depth}: {len(samples)} (query, passage) pairs over "
        f"{queries} queries",
        highlight=False,
    )
    console.print(estimate_table(estimate(samples, [PassageRelevance()])))
    say(
        console,
        "tokens in count each prompt whole; a local judge reads the instructions and a query "
        "once for all of its passages. No model was called.",
    )


def _scored_on_grades(
    console: Console,
    found: RetrievalEvaluation,
    human: Qrels,
    read: list[Run],
    result: Result,
    grading: Grading,
    out: Path,
) -> None:
    """The runs scored on the people's qrels, the judge's grades and both merged; the grades
    written as qrels; and how far they agree with the people's."""
    grades = grades_of(result.scores_for(PassageRelevance.name), human)
    write_grades(grades, out)
    (out / "grading.json").write_text(grading.model_dump_json(indent=2) + "\n")
    by_judge = judge_qrels(grades)

    def scored(qrels: Qrels) -> RetrievalEvaluation:
        return evaluate_runs(qrels, read, found.measures, rounds=found.rounds, seed=found.seed)

    sources = {
        HUMAN: found,
        "judge": scored(by_judge),
        "merged": scored(merged_qrels(human, by_judge)),
    }
    write_sources(sources, out)
    agreed = agreement(grades, seed=found.seed)
    (out / "agreement.json").write_text(agreed.model_dump_json(indent=2) + "\n")
    for source, evaluation in sources.items():
        console.print(_runs_table(evaluation.model_copy(update={"qrels": source})))
        for ranking in evaluation.rankings:
            say(
                console,
                f"{source} qrels, {ranking.metric}: {_told(ranking)} told apart; ranked "
                f"{' > '.join(s.system for s in ranking.systems)}",
            )
    print_reasons(console, grading.unscored_reasons, "unscored", " (not in the judge's qrels)")
    say(console, _grading_line(grading, out))
    say(
        console,
        f"against the people on the {agreed.pairs} pairs of the pool both graded: Cohen's "
        f"kappa {_kappa(agreed.kappa)} on 0-3, {_kappa(agreed.kappa_relevant)} on relevant "
        "(grade >= 2) or not; 95% CI: percentile bootstrap over queries",
    )
    say(
        console,
        f"written: {out / 'summary.json'}, {out / 'rankings.json'}, {out / 'grades.qrels'}, "
        f"{out / 'grades.jsonl'}, {out / 'agreement.json'}, {out / 'grading.json'}, "
        f"{out / GRADES_FOLDER}/",
    )


def _told(ranking: Ranking) -> str:
    """``3 of 6 pairs``: how many of the ranking's pairs its verdicts tell apart."""
    told = sum(pair.verdict != "cannot tell" for pair in ranking.pairs)
    return f"{told} of {len(ranking.pairs)} pairs"


def _grading_line(grading: Grading, out: Path) -> str:
    line = (
        f"{grading.pairs} pairs (pool of the top {grading.pool}): {grading.scored} graded, "
        f"{grading.unscored} unscored; {grading.judged_now} judged now, {grading.resumed} "
        f"from {out / GRADES_FOLDER}/"
    )
    if grading.pairs_a_minute is not None:
        line += f"; {grading.pairs_a_minute:.1f} pairs a minute now"
    if grading.seconds_a_pair is not None and grading.prompt_tokens_a_pair is not None:
        line += (
            f"; a pair the judge read took {grading.seconds_a_pair:.2f} s and "
            f"{grading.prompt_tokens_a_pair:.0f} prompt tokens"
        )
    return line + f" ({grading.cached_calls} judge calls answered from the cache)"


def _kappa(found: Interval | None) -> str:
    return (
        "undefined" if found is None else f"{found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"
    )


def _runs_table(found: RetrievalEvaluation) -> Table:
    table = Table(
        title=escape(f"{found.qrels}: {len(found.runs)} runs over {found.queries} queries"),
        caption="mean [95% CI]; judged: the share of the top k that the qrels judge",
    )
    table.add_column("run")
    for measure in found.measures:
        table.add_column(escape(measure), justify="right")
    cutoffs = [judged.k for judged in found.runs[0].judged]
    for k in cutoffs:
        table.add_column(f"judged@{k}", justify="right")
    for run in found.runs:
        cells: list[str | Text] = [Text(run.run)]
        for measure in found.measures:
            summary = run.measures[measure]
            cells.append(f"{fmt(summary.mean, 4)}\n{interval(summary.ci_low, summary.ci_high)}")
        for judged in run.judged:
            share = "—" if judged.fraction is None else f"{judged.fraction:.1%}"
            cells.append(f"{share}\n{judged.judged}/{judged.retrieved}")
        table.add_row(*cells)
    return table


def _query_notes(runs: list[RunSummary]) -> list[str]:
    """The queries a run leaves out, or returns but the qrels do not judge, by run."""
    notes = []
    for run in runs:
        if run.missing_queries:
            notes.append(
                f"{run.run}: {_ids(run.missing_queries)} of the qrels not returned, scored 0"
            )
        if run.unjudged_queries:
            notes.append(f"{run.run}: {_ids(run.unjudged_queries)} not in the qrels, not scored")
    return notes


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")
    return f"{len(ids)} {'query' if len(ids) == 1 else 'queries'} ({shown})"
