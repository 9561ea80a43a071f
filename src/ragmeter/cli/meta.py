"""ragmeter meta: agreement of ragmeter's judgments with human judgments."""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from ragmeter.arena.agreement import stats_table
from ragmeter.cli.common import (
    CacheFlag,
    EmbedderOptions,
    EmbedderSpec,
    JudgeOptions,
    JudgeSpec,
    MetricOptions,
    RayActorCpus,
    RayActors,
    RayAddress,
    ResultsFolder,
    Workers,
    advance,
    open_models,
    print_reasons,
    progress,
    user_errors,
)
from ragmeter.cluster import ModelRecipe
from ragmeter.config import configured_metrics, executor_for, parse_metric_options, parse_options
from ragmeter.judges import Judge
from ragmeter.judges.registry import get_embedder
from ragmeter.meta.attribution import (
    Claim,
    calibrate_threshold,
    load_attribution,
    summary,
    verify_claims,
)
from ragmeter.meta.mtrag import METRICS as MTRAG_METRICS
from ragmeter.meta.mtrag import Interval, chosen_metrics, load_mtrag, run_mtrag
from ragmeter.meta.openqa import AnswerAgreement, first_questions, load_openqa, run_openqa
from ragmeter.meta.ragchecker import FIGURES as RAGCHECKER_FIGURES
from ragmeter.meta.ragchecker import (
    PAIRWISE_METHODS,
    PAIRWISE_ROWS,
    load_ragchecker,
    run_ragchecker,
)
from ragmeter.meta.testset import K, TestsetReport, testset_report
from ragmeter.meta.wikieval import DIMENSIONS, METHODS, PAPER_TABLE_4, load_wikieval, run_wikieval
from ragmeter.metrics import metric_by_name
from ragmeter.testset.quality import COPY_RUN
from ragmeter.viewer.views import fmt

T = TypeVar("T")
Report = TypeVar("Report", bound=BaseModel)

app = typer.Typer(no_args_is_help=True, help=__doc__)


def _cell(accuracy: float | None, ties: int, unscored: int) -> str:
    if accuracy is None:
        return "—"
    extra = [f"{ties} ties"] if ties else []
    extra += [f"{unscored} unscored"] if unscored else []
    return f"{accuracy:.2f}" + (f" ({', '.join(extra)})" if extra else "")


@app.command("wikieval")
def wikieval_command(
    path: Annotated[Path, typer.Argument(help="WikiEval rows or pair records (JSONL).")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    embedder: EmbedderSpec = "minilm",
    embedder_option: EmbedderOptions = None,
    methods: Annotated[
        str, typer.Option(help="Comma-separated subset of ragmeter,gpt_score,gpt_ranking.")
    ] = ",".join(METHODS),
    out: ResultsFolder = Path("runs/meta-wikieval"),
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    dimensions: Annotated[
        str, typer.Option(help="Comma-separated subset of the dimensions to measure.")
    ] = ",".join(DIMENSIONS),
    cache: CacheFlag = True,
    option: MetricOptions = None,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
) -> None:
    """Reproduce RAGAS Table 4: pairwise accuracy per dimension, with the paper's baselines."""
    console = Console()
    with user_errors(console):
        executor = executor_for(ray, ray_actors, ray_actor_cpus, 1)
        judge_options = parse_options(judge_option, "--judge-option")
        embedder_options = parse_options(embedder_option, "--embedder-option")
    wanted = {d.strip() for d in dimensions.split(",") if d.strip()}
    pairs = [p for p in load_wikieval(path) if p.dimension in wanted]
    if limit is not None:
        keep = list(dict.fromkeys(p.id for p in pairs))[:limit]
        pairs = [p for p in pairs if p.id in keep]
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    with user_errors(console):
        configured = {
            name: metric_by_name(name, **params)
            for name, params in parse_metric_options(option).items()
        }
    with console.status("judging") as status, user_errors(console):
        report = run_wikieval(
            pairs,
            metrics=configured,
            judge=judge,
            embedder=embedder,
            methods=chosen,
            out_dir=out,
            cache=cache,
            on_progress=lambda text: status.update(f"judging: {text}"),
            judge_options=judge_options,
            embedder_options=embedder_options,
            executor=executor,
        )
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pairs.jsonl").open("w") as handle:
        for outcome in report.outcomes:
            handle.write(outcome.model_dump_json() + "\n")
    (out / "agreement.json").write_text(
        json.dumps(report.model_dump(exclude={"outcomes"}), indent=2)
    )

    table = Table(title=f"WikiEval pairwise accuracy ({len(pairs)} pairs, judge {report.judge})")
    table.add_column("method")
    for dimension in DIMENSIONS:
        table.add_column(dimension.replace("_", " "), justify="right")
    for method in dict.fromkeys(a.method for a in report.agreements):
        cells = {a.dimension: a for a in report.agreements if a.method == method}
        table.add_row(
            method,
            *[
                _cell(cells[d].accuracy, cells[d].ties, cells[d].unscored) if d in cells else "—"
                for d in DIMENSIONS
            ],
        )
    for method, row in PAPER_TABLE_4.items():
        table.add_row(f"[dim]{method}[/dim]", *[f"[dim]{row[d]:.2f}[/dim]" for d in DIMENSIONS])
    console.print(table)
    if report.seconds_per_sample:
        timing = ", ".join(f"{d} {s:.1f} s" for d, s in report.seconds_per_sample.items())
        console.print(f"median seconds per sample (ragmeter metrics): {timing}")
    console.print(f"per-pair details in {out / 'pairs.jsonl'}")


def _judging(ctx: typer.Context) -> dict[str, Any]:
    """What the measurements scored through ``evaluate`` take from their command line alike:
    the judge and its options, the call cache, the workers and where they run."""
    given = ctx.params
    return {
        "judge": given["judge"],
        "judge_options": parse_options(given["judge_option"], "--judge-option"),
        "cache": given["cache"],
        "max_workers": given["workers"],
        "executor": executor_for(
            given["ray"], given["ray_actors"], given["ray_actor_cpus"], given["workers"]
        ),
    }


def _measure(
    console: Console,
    measure: Callable[..., Report],
    total: int,
    out: Path,
    ticks: tuple[str, ...] = ("on_score",),
) -> Report:
    """Run a measurement scored through ``evaluate`` under a progress bar of its ``total``
    items (each reported through one of its callbacks ``ticks``), its results kept in ``out``
    and its report in ``out/agreement.json``."""
    with progress(console, "judging", total) as bar, user_errors(console):
        report = measure(out_dir=out, **{tick: lambda _item: advance(bar) for tick in ticks})
    (out / "agreement.json").write_text(report.model_dump_json(indent=2))
    return report


def _interval(found: Interval | None) -> str:
    return "—" if found is None else f"{found.value:.2f} [{found.low:.2f}, {found.high:.2f}]"


LimitOption = Annotated[
    int | None,
    typer.Option(help="Only the first N conversations (every responder's answer to each)."),
]
MetricsOption = Annotated[
    str,
    typer.Option(
        help="Comma-separated subset of faithfulness,answer_relevance,answer_correctness."
    ),
]


MTRAG_METRICS_TEXT = ",".join(MTRAG_METRICS)
"""The default, as the option is written."""
MTRAG_COLUMNS = [
    ("faithfulness", "faithfulness", "faithfulness", "spearman"),
    ("faithfulness", "RAGAS rl_f", "faithfulness", "baseline_spearman"),
    ("answer_relevance", "AR ~ appropriateness", "appropriateness", "spearman"),
    ("answer_relevance", "AR ~ completeness", "completeness", "spearman"),
    ("answer_relevance", "rl_f ~ completeness", "completeness", "baseline_spearman"),
    ("answer_correctness", "AC ~ completeness", "completeness", "spearman"),
    ("answer_correctness", "rb_llm", "completeness", "reference_judge_spearman"),
    ("answer_correctness", "rl_f", "completeness", "baseline_spearman"),
]
"""The MTRAG table's columns after its rows: the metric each needs judged, its name, and the
people's rating and the figure of the correlation it shows."""


@app.command("mtrag")
def mtrag_command(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="MTRAG human-evaluation rows (JSONL).")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    embedder: EmbedderSpec = "minilm",
    embedder_option: EmbedderOptions = None,
    limit: LimitOption = None,
    out: ResultsFolder = Path("runs/meta-mtrag"),
    cache: CacheFlag = True,
    metrics: MetricsOption = MTRAG_METRICS_TEXT,
    option: MetricOptions = None,
    workers: Workers = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
) -> None:
    """Correlation of faithfulness and answer relevance with people's ratings of real answers
    to multi-turn questions (MTRAG), beside the authors' RAGAS faithfulness."""
    console = Console()
    with user_errors(console):
        judging = _judging(ctx)
        rows = load_mtrag(path)
        chosen = chosen_metrics(configured_metrics(metrics, option))
        embedder_options = parse_options(embedder_option, "--embedder-option")
    if limit is not None:
        keep = set(list(dict.fromkeys(r.conversation for r in rows))[:limit])
        rows = [r for r in rows if r.conversation in keep]
    measure = partial(
        run_mtrag,
        rows,
        metrics=list(chosen.values()),
        embedder=embedder,
        embedder_options=embedder_options,
        **judging,
    )
    report = _measure(console, measure, len(rows) * len(chosen), out)
    table = Table(
        title=f"MTRAG: Spearman with the mean human rating ({len(rows)} answers, {report.judge})"
    )
    judged = {c.metric for c in report.correlations}
    shown = [column for column in MTRAG_COLUMNS if column[0] in judged]
    table.add_column("rows", justify="right")
    for _, name, _, _ in shown:
        table.add_column(name, justify="right")
    for group in dict.fromkeys(c.group for c in report.correlations):
        cells = {(c.metric, c.human): c for c in report.correlations if c.group == group}
        sizes = "/".join(map(str, sorted({c.rows for c in cells.values()})))
        table.add_row(
            f"{group} ({sizes})",
            *[_interval(getattr(cells.get((m, human)), f, None)) for m, _, human, f in shown],
        )
    console.print(table)
    for metric, reasons in report.unscored_reasons.items():
        for reason, count in reasons.items():
            console.print(f"[yellow]{metric}: {count} unscored[/yellow] — {reason}")
    if report.seconds_per_sample is not None:
        console.print(f"median {report.seconds_per_sample:.1f} s per answer for the metrics judged")
    console.print(f"Pearson and every interval in {out / 'agreement.json'}")


def _agreeing(found: AnswerAgreement | None) -> str:
    if found is None:
        return "—"
    kappa = "—" if found.kappa is None else f"{found.kappa:.2f}"
    return f"{found.accuracy:.1%} / {kappa} ({found.rows})"


@app.command("openqa")
def openqa_command(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="NQ301 rows (JSONL), as ../shared/data/openqa.")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N questions (every system's answer).")
    ] = None,
    out: ResultsFolder = Path("runs/meta-openqa"),
    cache: CacheFlag = True,
    option: MetricOptions = None,
    threshold: Annotated[
        float, typer.Option(help="The score from which an answer counts as correct.")
    ] = 0.5,
    workers: Workers = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
) -> None:
    """Answer correctness against people's verdicts on QA systems' answers (NQ301), answer by
    answer and system by system, beside the set's EM, F1, BEM, InstructGPT-eval and
    GPT-4-eval."""
    console = Console()
    with user_errors(console):
        judging = _judging(ctx)
        rows = first_questions(load_openqa(path), limit)
        (metric,) = configured_metrics("answer_correctness", option)
    measure = partial(run_openqa, rows, metric=metric, threshold=threshold, **judging)
    distinct = len({(r.question, tuple(r.references), r.answer) for r in rows})
    report = _measure(console, measure, distinct, out)
    with (out / "answers.jsonl").open("w") as handle:
        for row in rows:
            value = report.probabilities[row.id]
            said = None if value is None else int(value >= threshold)
            record = {"id": row.id, "system": row.system, "human": row.human, "ragmeter": said}
            handle.write(json.dumps({**record, "score": value, "anchors": row.anchors}) + "\n")
    answers = Table(
        title=f"NQ301: agreement with people, answer by answer ({len(rows)} answers, "
        f"{report.distinct_answers} distinct, {report.judge}): accuracy / Cohen's kappa (rows)"
    )
    for column in ("judge", "all systems", "InstructGPT systems", "Kendall tau [95 % CI]"):
        answers.add_column(column, justify="left" if column == "judge" else "right")
    answers.add_column("pairs people tell apart: alike / cannot tell / wrong", justify="right")
    for found in report.judges:
        systems = found.systems
        answers.add_row(
            found.judge,
            _agreeing(found.answers),
            _agreeing(found.llm_answers),
            _interval(systems.kendall),
            f"{systems.separated} of {systems.pairs}: {systems.alike} / "
            f"{systems.cannot_tell} / {systems.wrong} ({systems.questions} questions)",
        )
    console.print(answers)
    per_system = Table(title="accuracy / kappa per system")
    shown = [j for j in report.judges if j.per_system]
    per_system.add_column("system")
    for found in shown:
        per_system.add_column(found.judge, justify="right")
    for system in sorted(shown[0].per_system) if shown else []:
        per_system.add_row(system, *[_agreeing(j.per_system.get(system)) for j in shown])
    console.print(per_system)
    for reason, count in report.unscored.items():
        console.print(f"[yellow]{count} answers unscored[/yellow] — {reason}")
    if report.seconds_per_answer is not None:
        console.print(f"median {report.seconds_per_answer:.2f} s per distinct answer judged now")
    console.print(f"every figure in {out / 'agreement.json'}")


@app.command("ragchecker")
def ragchecker_command(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="RAGChecker's human-labelled instances (JSONL).")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N instances.")] = None,
    out: ResultsFolder = Path("runs/meta-ragchecker"),
    cache: CacheFlag = True,
    option: MetricOptions = None,
    workers: Workers = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
    pairwise: Annotated[
        bool,
        typer.Option(
            help="Also decide each instance as an arena pair, from claims and by the generative "
            "judge: Cohen's kappa and accuracy with the overall labels."
        ),
    ] = False,
) -> None:
    """Correlation of answer correctness with two annotators' comparisons of two answers to one
    question (RAGChecker's protocol), beside RAGChecker's own run and the annotators' agreement."""
    console = Console()
    with user_errors(console):
        judging = _judging(ctx)
        instances = load_ragchecker(path)[:limit]
        (metric,) = configured_metrics("answer_correctness", option)
    # Each pairwise method decides every instance once per annotator.
    total = 2 * len(instances) * (1 + len(PAIRWISE_METHODS) * pairwise)
    measure = partial(run_ragchecker, instances, metric=metric, pairwise=pairwise, **judging)
    report = _measure(console, measure, total, out, ticks=("on_score", "on_pair"))
    table = Table(
        title=f"RAGChecker: Pearson with the annotators' labels ({len(instances)} instances, "
        f"{report.judge}); Spearman in {out / 'agreement.json'}"
    )
    table.add_column("group")
    for dimension, figure in RAGCHECKER_FIGURES.items():
        table.add_column(f"{dimension} ({figure})", justify="right")
    for group in dict.fromkeys(a.group for a in report.correlations):
        for who in ("ragmeter", "ragchecker", "annotators"):
            cells = {
                a.dimension: a for a in report.correlations if a.group == group and a.who == who
            }
            size = next(iter(cells.values())).instances
            table.add_row(
                f"{group} ({size}): {who}" if who == "ragmeter" else f"[dim]  {who}[/dim]",
                *[_interval(cells[d].pearson) for d in RAGCHECKER_FIGURES],
            )
    console.print(table)
    print_reasons(console, report.unscored_reasons, "answers unscored", " (median-filled)")
    if report.seconds_per_instance is not None:
        console.print(
            f"median {report.seconds_per_instance:.1f} s per instance (two answers), "
            f"{report.checks_per_claim:.2f} model calls per claim"
        )
    if report.pairwise is not None:
        rows = [(PAIRWISE_ROWS[key], stats) for key, stats in report.pairwise.items()]
        title = "RAGChecker as pairs: the overall preference, each instance once per annotator"
        console.print(stats_table(rows, title))
        console.print(f"each method's decisions in {out}/pairwise-<method>/")


def _subsample(rows: list[T], limit: int | None, seed: int = 0) -> list[T]:
    """A seeded random subset in file order: the files are grouped by source data set, so the
    first N rows would measure one source only."""
    if limit is None or limit >= len(rows):
        return rows
    keep = sorted(random.Random(seed).sample(range(len(rows)), limit))
    return [rows[i] for i in keep]


@app.command("attribution")
def attribution_command(
    path: Annotated[Path, typer.Argument(help="AttributionBench-format JSONL (the test set).")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    calibrate: Annotated[
        Path | None,
        typer.Option(help="A development file: pick the threshold with the best macro-F1 there."),
    ] = None,
    calibrate_limit: Annotated[int, typer.Option(help="Rows of the development file used.")] = 200,
    threshold: Annotated[float, typer.Option(help="P(supported) needed to say supported.")] = 0.5,
    with_question: Annotated[
        bool, typer.Option(help="Show the question with the claim (short claims need it).")
    ] = True,
    limit: Annotated[
        int | None,
        typer.Option(help="A seeded random sample of N rows (files are sorted by source)."),
    ] = None,
    out: ResultsFolder = Path("runs/meta-attribution"),
    cache: CacheFlag = True,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
) -> None:
    """Accuracy and macro-F1 of the faithfulness statement verifier on human attribution labels."""
    console = Console()
    with user_errors(console):
        executor = executor_for(ray, ray_actors, ray_actor_cpus, 1)
        options = parse_options(judge_option, "--judge-option")
        claims = _subsample(load_attribution(path), limit)
    with ExitStack() as stack:
        # Built once for the calibration and the test rows (a local model loads once).
        if executor == "threads":
            judge_model, _ = open_models(console, judge, judge_option, cache=cache)
            run_on: Any = "threads"
        else:
            recipe = ModelRecipe(judge, cache=cache, needs_embedder=False, judge_options=options)
            with user_errors(console):
                run_on = stack.enter_context(executor.open(recipe))  # type: ignore[union-attr]
            judge_model = run_on.judge
        _attribution(
            console, path, claims, judge_model, run_on, calibrate, calibrate_limit, threshold,
            with_question, out,
        )  # fmt: skip


ATTRIBUTION_FIGURES = {
    "threshold": "threshold",
    "accuracy": "accuracy",
    "macro-F1": "macro_f1",
    "F1 supported": "f1_supported",
    "F1 not": "f1_unsupported",
    "ROC AUC": "roc_auc",
}
"""The columns of the AttributionBench table, and the classification's figure each shows."""


def _attribution(
    console: Console,
    path: Path,
    claims: list[Claim],
    judge_model: Judge,
    run_on: Any,
    calibrate: Path | None,
    calibrate_limit: int,
    threshold: float,
    with_question: bool,
    out: Path,
) -> None:
    if calibrate is not None:
        with user_errors(console):
            dev = _subsample(load_attribution(calibrate), calibrate_limit)
        with console.status(f"calibrating on {len(dev)} development rows"):
            dev_verdicts = verify_claims(
                dev,
                judge_model,
                with_question=with_question,
                out_dir=out / "dev",
                cache=False,
                executor=run_on,
            )
        threshold = calibrate_threshold(dev_verdicts)
        console.print(f"calibrated threshold {threshold:.4f} on {len(dev)} rows of {calibrate}")
    started = time.perf_counter()
    with console.status("verifying") as status:
        done = itertools.count(1)
        verdicts = verify_claims(
            claims,
            judge_model,
            with_question=with_question,
            out_dir=out,
            cache=False,
            on_verdict=lambda _: status.update(f"verifying {next(done)}/{len(claims)}"),
            executor=run_on,
        )
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    with (out / "verdicts.jsonl").open("w") as handle:
        for verdict in verdicts:
            handle.write(verdict.model_dump_json() + "\n")
    report = summary(verdicts, threshold)
    (out / "summary.json").write_text(json.dumps(report, indent=2))
    result = report["classification"]
    table = Table(title=f"AttributionBench: {path.name} ({len(claims)} claims)")
    for column in [*ATTRIBUTION_FIGURES, "unscored"]:
        table.add_column(column, justify="right")
    table.add_row(*[fmt(result[f]) for f in ATTRIBUTION_FIGURES.values()], str(result["unscored"]))
    console.print(table)
    console.print(
        f"{report['truncated_references']} rows had references cut to fit; "
        f"{seconds / max(1, len(claims)):.2f} s per claim this run (cached rows are free)"
    )


@app.command("testset")
def testset_command(
    testset: Annotated[Path, typer.Argument(help="A test set written by ragmeter generate.")],
    corpus: Annotated[
        list[Path], typer.Option(help="The documents to retrieve from (repeat for several).")
    ],
    mtrag: Annotated[
        Path | None,
        typer.Option(help="MTRAG dev rows: people's questions over their passages, beside."),
    ] = None,
    embedder: EmbedderSpec = "minilm",
    embedder_option: EmbedderOptions = None,
    out: Annotated[
        Path | None, typer.Option(help="Also write the figures as JSON to this file.")
    ] = None,
) -> None:
    """Quality of a generated test set: acceptance, support, copying, duplicates, the mix, and
    BM25 and MiniLM recall@5 of the sources beside people's questions."""
    console = Console()
    with user_errors(console):
        embed_model = get_embedder(embedder, **parse_options(embedder_option, "--embedder-option"))
        report = testset_report(
            testset, [str(p) for p in corpus], embedder=embed_model, mtrag=mtrag
        )
    for table in testset_tables(report):
        console.print(table)
    if out is not None:
        out.write_text(report.model_dump_json(indent=2))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def testset_tables(report: TestsetReport) -> list[Table]:
    """The figures of ``meta testset`` as tables: quality, the mix, and retrieval."""
    quality = Table(title=f"test set: {report.samples} samples")
    quality.add_column("figure")
    quality.add_column("value", justify="right")
    candidates = "-" if report.candidates is None else str(report.candidates)
    quality.add_row("candidates judged", candidates)
    quality.add_row("accepted", _percent(report.acceptance))
    for reason, count in report.rejected.items():
        quality.add_row(f"  rejected: {reason}", str(count))
    quality.add_row("references supported (accepted)", _percent(report.supported_accepted))
    quality.add_row(
        "references supported (all that reached the check)", _percent(report.supported_reached)
    )
    quality.add_row(f"questions copying {COPY_RUN}+ words of the source", _percent(report.copying))
    quality.add_row("  people's (MTRAG), same measure", _percent(report.copying_people))
    quality.add_row("questions with a near-duplicate (cosine >= 0.92)", str(report.duplicates))
    mix = Table(title="kinds: asked and accepted")
    for column in ("kind", "asked", "accepted"):
        mix.add_column(column, justify="left" if column == "kind" else "right")
    for kind, shares in report.kinds.items():
        mix.add_row(kind, _percent(shares["asked"]), _percent(shares["accepted"]))
    retrieval = Table(
        title=f"recall@{K} of the source ({report.corpus_chunks} chunks"
        + (
            f"; people's corpus {report.people_corpus_chunks} chunks)"
            if report.people_corpus_chunks
            else ")"
        )
    )
    for column in ("questions", "n", "BM25", "MiniLM"):
        retrieval.add_column(column, justify="left" if column == "questions" else "right")
    for name, row in report.recall.items():
        retrieval.add_row(name, str(row.questions), _percent(row.bm25), _percent(row.minilm))
    return [quality, mix, retrieval]
