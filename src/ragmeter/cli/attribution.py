"""KaLMA attribution: graph retrieval, attributed answers, citation scores, evolution, experiments.

Each command writes records as it goes (rerun with the same --out to resume) and prints the
paper-style tables.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ragmeter.attribution.benchmark import (
    BenchmarkItem,
    build_benchmark,
    load_benchmark,
    store_graph,
    usable,
)
from ragmeter.attribution.experiments import (
    EXPERIMENTS,
    GENERATIONS_FILE,
    SCORES_FILE,
    ConditionRun,
    ScoreOptions,
    experiment_conditions,
    run_conditions,
    run_retrieval,
    score_answers,
)
from ragmeter.attribution.graph import GraphError, KnowledgeGraph, load_graph
from ragmeter.attribution.records import Condition, GenerationRecord, ScoreRecord
from ragmeter.attribution.report import (
    citation_table,
    notes,
    percent,
    quality_table,
    summarize,
)
from ragmeter.attribution.retrieval import (
    ENTITY_TYPES,
    Recognizer,
    RetrievalError,
    recognizer_by_name,
)
from ragmeter.cli.common import (
    CacheFlag,
    JudgeOptions,
    JudgeSpec,
    Retries,
    advance,
    fail,
    open_models,
    print_reasons,
    progress,
    progress_bar,
    user_errors,
    wide_console,
)
from ragmeter.judges import Judge
from ragmeter.judges.cache import CallCache
from ragmeter.records import RecordLog

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
console = Console()

Benchmark = Annotated[
    Path, typer.Argument(help="Benchmark JSONL: our items (from 'evolve') or BioKaLMA rows.")
]
GeneratorSpec = Annotated[
    str | None, typer.Option(help="Model that writes the answers. \\[default: the judge]")
]
Out = Annotated[Path | None, typer.Option(help="Results folder; rerun with it to resume.")]
Limit = Annotated[int | None, typer.Option("--limit", "--n", help="Use the first N questions.")]
Seed = Annotated[int, typer.Option(help="Seed for every random choice (samples, removals).")]
Field = Annotated[str, typer.Option(help="BioKaLMA question field to use.")]
GeneratorOptions = Annotated[
    list[str] | None,
    typer.Option("--generator-option", help="Generator provider option NAME=VALUE (repeat)."),
]
RetrievalMode = Annotated[
    str, typer.Option(help="'gold' graphs, or 'retrieve' them from the store.")
]
AnswerTokens = Annotated[int, typer.Option(help="Token limit of one answer.")]
GraphOption = Annotated[
    Path | None,
    typer.Option(
        "--graph", help="Graph store to retrieve from. \\[default: all the benchmark's graphs]"
    ),
]
RecognizerOption = Annotated[
    str, typer.Option(help="'spacy' (NER, needs the 'attribution' extra) or 'names'.")
]


READING_ERRORS = (GraphError, OSError, ValueError)
"""What reading a benchmark or a graph raises for a bad file."""
RUN_ERRORS = (RetrievalError, ValueError)
"""What retrieving and answering raise for a bad input or option."""


def _benchmark(
    path: Path, field: str, limit: int | None, graph: Path | None, *, with_graph: bool = True
) -> tuple[list[BenchmarkItem], KnowledgeGraph | None]:
    """The usable questions (the first ``limit``), and with ``with_graph`` the graph they are
    asked over: ``graph``, or one stored from the benchmark's own triples; the file read once."""
    with user_errors(console, READING_ERRORS):
        loaded = load_benchmark(path, field=field)
        store = (load_graph(graph) if graph else store_graph(loaded)) if with_graph else None
    items = usable(loaded)
    return (items[:limit] if limit else items), store


def _judges(
    judge: str,
    judge_option: list[str] | None,
    cache: bool,
    generator: str | None = None,
    generator_option: list[str] | None = None,
) -> tuple[Judge, Judge]:
    """(generator, judge) behind one call cache; one model instance when the generator is the
    judge (a local model is loaded once)."""
    calls = CallCache() if cache else False
    judge_model, _ = open_models(console, judge, judge_option, cache=calls)
    if generator in (None, judge) and not generator_option:
        return judge_model, judge_model
    writer, _ = open_models(console, generator or judge, generator_option, cache=calls)
    return writer, judge_model


def _recognizer(name: str, store: KnowledgeGraph | None) -> Recognizer | None:
    """The questions' entity recognizer where sub-graphs are retrieved (``store``), chosen
    before the progress bar starts, so that a wrong name is the last thing said."""
    with user_errors(console, (ValueError,)):
        return recognizer_by_name(name, store) if store is not None else None


def _print_runs(runs: list[ConditionRun], title: str, out_dir: Path) -> None:
    """Print the tables and write them as ``summary.json`` beside the records."""
    rows = [summarize(r.condition.name, r.generations, r.scores, dict(r.skipped)) for r in runs]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(
        json.dumps([row.model_dump() for row in rows], indent=2, ensure_ascii=False)
    )
    wide = wide_console()
    wide.print(citation_table(rows, title=f"{title}: citation quality (%)"))
    wide.print(quality_table(rows, title=f"{title}: text quality (1-5) and cost"))
    for row in rows:
        for line in notes(row):
            console.print(f"[yellow]{line}[/yellow]")


@app.command("retrieve")
def retrieve_command(
    benchmark: Benchmark,
    graph: GraphOption = None,
    recognizer: RecognizerOption = "spacy",
    type_filter: Annotated[
        bool, typer.Option(help="Match NER labels to entity types (PERSON -> human).")
    ] = True,
    field: Field = "question_complex",
    limit: Limit = None,
    out: Out = None,
) -> None:
    """Retrieve each question's sub-graphs and report retrieval accuracy against gold graphs."""
    items, store = _benchmark(benchmark, field, limit, graph)
    assert store is not None
    out_dir = out or Path("runs") / f"kalma-{benchmark.stem}"
    with user_errors(console, RUN_ERRORS):
        results, accuracy = run_retrieval(
            items,
            store,
            recognizer_by_name(recognizer, store),
            out_dir=out_dir,
            types=ENTITY_TYPES if type_filter else {},
        )
    table = Table(title=f"retrieval over {len(store)} entities ({recognizer})")
    for column in ("questions", "accuracy", "precision", "exact set", "no entity found"):
        table.add_column(column, justify="right")
    table.add_row(
        str(accuracy.scored),
        percent(accuracy.accuracy),
        percent(accuracy.precision),
        percent(accuracy.exact),
        str(sum(not r.selected for r in results)),
    )
    console.print(table)
    print_reasons(console, accuracy.unscored, "unscored")
    console.print(f"per-question results in {out_dir}/")


@app.command("generate")
def generate_command(
    benchmark: Benchmark,
    retrieval: RetrievalMode = "gold",
    removed: Annotated[int, typer.Option(help="Minimum-set triples to remove.")] = 0,
    graph: GraphOption = None,
    recognizer: RecognizerOption = "spacy",
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    generator: GeneratorSpec = None,
    generator_option: GeneratorOptions = None,
    field: Field = "question_complex",
    limit: Limit = None,
    out: Out = None,
    seed: Seed = 0,
    max_tokens: AnswerTokens = 768,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Write an attributed answer per question; prints the judge-free citation metrics."""
    if retrieval not in {"gold", "retrieve"}:
        raise fail(console, "--retrieval is 'gold' or 'retrieve'")
    items, store = _benchmark(benchmark, field, limit, graph, with_graph=retrieval == "retrieve")
    out_dir = out or Path("runs") / f"kalma-{benchmark.stem}"
    name = f"{retrieval}, removed {removed}"
    condition = Condition(name=name, removed=removed, retrieval=retrieval)
    recognizing = _recognizer(recognizer, store)
    writer, _ = _judges(judge, judge_option, cache, generator, generator_option)
    with progress(console, "generating", len(items)) as bar, user_errors(console, RUN_ERRORS):
        runs = run_conditions(
            items,
            [(condition, ScoreOptions())],
            generator=writer,
            judge=None,
            out_dir=out_dir,
            store=store,
            recognizer=recognizing,
            seed=seed,
            retries=retries,
            max_tokens=max_tokens,
            on_generation=lambda _: advance(bar),
        )
    _print_runs(runs, f"{benchmark.name} ({writer.name})", out_dir)
    console.print(
        f"answers in {out_dir / GENERATIONS_FILE}; judge them with "
        f"'ragmeter attribution score {out_dir}'"
    )


@app.command("score")
def score_command(
    run: Annotated[Path, typer.Argument(help=f"Folder holding {GENERATIONS_FILE}.")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    limit: Limit = None,
    alignment: Annotated[bool, typer.Option(help="Text-citation alignment.")] = True,
    na: Annotated[bool, typer.Option(help="[NA] precision/recall (removed knowledge).")] = True,
    quality: Annotated[bool, typer.Option(help="G-Eval text quality.")] = True,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Judge generated answers: alignment, [NA] and text quality, beside citation quality."""
    path = run / GENERATIONS_FILE
    if not path.is_file():
        raise fail(
            console, f"no {GENERATIONS_FILE} in {run}; run 'ragmeter attribution generate' first"
        )
    by_condition: dict[str, list[GenerationRecord]] = {}
    for record in RecordLog(path, GenerationRecord):
        by_condition.setdefault(record.condition.name, []).append(record)
    _, judge_model = _judges(judge, judge_option, cache)
    log = RecordLog(run / SCORES_FILE, ScoreRecord)
    options = ScoreOptions(alignment=alignment, na=na, quality=quality)
    runs = []
    with progress_bar(console) as bars:
        for name, records in by_condition.items():
            records = records[:limit] if limit else records
            task = bars.add_task(
                f"judging {name}", total=sum(r.answer is not None for r in records)
            )
            scores = score_answers(
                records,
                judge_model,
                log,
                options,
                retries=retries,
                on_record=lambda _, t=task: bars.advance(t),
            )
            runs.append(ConditionRun(records[0].condition, records, scores, Counter()))
    _print_runs(runs, f"{run.name} (judge {judge_model.name})", run)
    console.print(f"scores in {run / SCORES_FILE}")


@app.command("evolve")
def evolve_command(
    data: Annotated[
        Path,
        typer.Argument(
            help="BioKaLMA JSONL (read in place, never copied) or our items with entities."
        ),
    ],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    limit: Annotated[int, typer.Option("--limit", "--n", help="Questions to evolve.")] = 50,
    rounds: Annotated[int, typer.Option(help="Rounds, the first without injection.")] = 6,
    spares: Annotated[
        int, typer.Option(help="Extra triples to try when the model does not state one.")
    ] = 2,
    seed: Annotated[
        int, typer.Option(help="Seed for the sample of rows and the triples to inject.")
    ] = 0,
    out: Out = None,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Evolve questions with minimum knowledge sets (one injected triple per round)."""
    out_dir = out or Path("runs") / f"kalma-evolved-{data.stem}"
    target = out_dir / "benchmark.jsonl"
    writer, _ = _judges(judge, judge_option, cache)
    with progress(console, "evolving", limit) as bar, user_errors(console, READING_ERRORS):
        items = build_benchmark(
            data,
            target,
            writer,
            n=limit,
            seed=seed,
            rounds=rounds,
            retries=retries,
            spares=spares,
            on_item=lambda _: advance(bar),
        )
    stopped = Counter(i.evolution.stopped for i in items if i.evolution and i.evolution.stopped)
    sizes = [len(i.minimum or []) for i in usable(items)]
    n = len(items) or 1
    table = Table(title=f"evolved questions ({writer.name})")
    for column in (
        "questions",
        "usable",
        "complete",
        "mean minimum set",
        "s/question",
        "calls/q",
        "tokens in/q",
        "tokens out/q",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        str(len(items)),
        str(len(sizes)),
        str(len(items) - sum(stopped.values())),
        f"{sum(sizes) / len(sizes):.2f}" if sizes else "—",
        f"{sum(i.seconds for i in items) / n:.1f}",
        f"{sum(i.usage.model_calls for i in items) / n:.1f}",
        f"{sum(i.usage.prompt_tokens for i in items) / n:.0f}",
        f"{sum(i.usage.completion_tokens for i in items) / n:.0f}",
    )
    console.print(table)
    print_reasons(console, stopped, "stopped early")
    skipped = sum(len(i.evolution.skipped) for i in items if i.evolution)
    if skipped:
        console.print(f"{skipped} triples skipped (not stated, or the request failed)")
    console.print(f"benchmark in {target}")


@app.command("experiment")
def experiment_command(
    benchmark: Benchmark,
    kind: Annotated[str, typer.Option(help=f"One of: {', '.join(EXPERIMENTS)}.")] = "all",
    retrieval: RetrievalMode = "gold",
    graph: GraphOption = None,
    recognizer: RecognizerOption = "spacy",
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    generator: GeneratorSpec = None,
    generator_option: GeneratorOptions = None,
    field: Field = "question_complex",
    limit: Limit = None,
    out: Out = None,
    seed: Seed = 0,
    quality: Annotated[
        bool, typer.Option(help="G-Eval text quality on the main condition.")
    ] = True,
    full: Annotated[bool, typer.Option(help="Alignment under every condition.")] = False,
    max_tokens: AnswerTokens = 768,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Run a paper experiment: main, incompetence (remove 0-3 triples), retrieval (accuracy
    100-20%), or all of them."""
    with user_errors(console, (ValueError,)):
        conditions = experiment_conditions(kind, retrieval, quality=quality, full=full)
    items, store = _benchmark(benchmark, field, limit, graph)
    out_dir = out or Path("runs") / f"kalma-{benchmark.stem}"
    recognizing = _recognizer(recognizer, store if retrieval == "retrieve" else None)
    writer, judge_model = _judges(judge, judge_option, cache, generator, generator_option)
    total = len(items) * len(conditions)
    with progress_bar(console) as bars, user_errors(console, RUN_ERRORS):
        generating = bars.add_task("generating", total=total)
        judging = bars.add_task("judging", total=total)
        runs = run_conditions(
            items,
            conditions,
            generator=writer,
            judge=judge_model,
            out_dir=out_dir,
            store=store,
            recognizer=recognizing,
            seed=seed,
            retries=retries,
            max_tokens=max_tokens,
            on_generation=lambda _: bars.advance(generating),
            on_score=lambda _: bars.advance(judging),
        )
    _print_runs(runs, f"{benchmark.name} ({writer.name} / judge {judge_model.name})", out_dir)
    console.print(f"records in {out_dir}/")
