"""``ragmeter arena``: generate answers, judge pairs, rank systems, check the judge on humans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ragmeter.arena.agreement import agreement_table, measure_agreement
from ragmeter.arena.battles import read_battles
from ragmeter.arena.data import (
    SystemAnswers,
    load_answers,
    load_corpus,
    load_pairs,
    load_questions,
)
from ragmeter.arena.designs import REFERENCE, design_pairs
from ragmeter.arena.generate import generate_answers
from ragmeter.arena.judge import MAX_TOKENS, Combine, Method, Orders, judge_pairs
from ragmeter.arena.leaderboard import (
    DEFAULT_PRIOR,
    Leaderboard,
    build_leaderboard,
    domain_table,
    leaderboard_table,
    length_table,
    write_leaderboard,
)
from ragmeter.arena.retrieval import DEFAULT_K
from ragmeter.cli.common import (
    CacheFlag,
    JudgeOptions,
    JudgeSpec,
    RayActorCpus,
    RayActors,
    RayAddress,
    ResultsFolder,
    Retries,
    advance,
    open_models,
    print_reasons,
    progress,
    user_errors,
)
from ragmeter.config import executor_for, parse_options

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="RAG-QA Arena: pairwise judging against reference answers, win rates and Elo.",
)

OrdersOption = Annotated[
    str, typer.Option(help="'both' (combined by --combine) or 'random' (one seeded order).")
]
JudgeTokens = Annotated[int, typer.Option(help="Judge budget per call.")]
ReferenceName = Annotated[str, typer.Option(help="The reference's name.")]
BootstrapRounds = Annotated[int, typer.Option(help="Bootstrap rounds for the intervals.")]
CombineOption = Annotated[
    Combine,
    typer.Option(
        "--combine",
        help="Both orders' verdict: 'agree' (a disagreement is a tie), 'sum' (a 'not sure' "
        "defers to the other order; opposite picks tie) or 'confidence' (as 'sum', but the "
        "judge's probabilities of its ratings settle opposite picks).",
    ),
]

MethodOption = Annotated[
    Method,
    typer.Option(
        "--method",
        help="How a pair is decided: 'generative' (the judge's written verdict on the two "
        "answers), 'claims' (each answer's claims checked against the reference answer and the "
        "passages) or 'side_by_side' (the judge's probabilities of A and B, both orders "
        "averaged); --orders and --combine apply to 'generative' only.",
    ),
]


def _check_orders(orders: str) -> Orders:
    if orders not in ("both", "random"):
        raise typer.BadParameter("use 'both' or 'random'", param_hint="--orders")
    return orders  # type: ignore[return-value]


def _putting(
    orders: str, combine_rule: Combine, seed: int, retries: int, max_tokens: int
) -> dict[str, Any]:
    """How each pair is put to the judge, the same in ``arena judge`` and ``arena agreement``:
    in which orders, how the orders' verdicts combine, and the judge's attempts and budget."""
    return {
        "orders": _check_orders(orders),
        "combine_rule": combine_rule,
        "seed": seed,
        "retries": retries,
        "max_tokens": max_tokens,
    }


@app.command("generate")
def generate_command(
    questions: Annotated[Path, typer.Argument(help="Questions: our JSONL or LFRQA files.")],
    corpus: Annotated[Path, typer.Option(help="Corpus: {id, text} rows or a folder of .txt.")],
    out: Annotated[Path, typer.Option(help="Answers file (JSONL); rerun with it to resume.")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    system: Annotated[str | None, typer.Option(help="Name for the answers. [MODEL@kK]")] = None,
    k: Annotated[int, typer.Option(help="Passages per question (paper: 5, or 10).")] = DEFAULT_K,
    cot: Annotated[bool, typer.Option(help="Short thinking step before answering.")] = True,
    max_words: Annotated[int, typer.Option(help="Words per passage at most.")] = 100,
    max_tokens: Annotated[int, typer.Option(help="Generation budget per answer.")] = 512,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Answer QUESTIONS from BM25 top-k passages of the corpus, as a system under test."""
    console = Console()
    with user_errors(console):
        chosen = load_questions(questions)[:limit]
        documents = load_corpus(corpus)
    generator, _ = open_models(console, judge, judge_option, cache=cache)
    with progress(console, "answering", len(chosen)) as bar, user_errors(console):
        answers = generate_answers(
            chosen,
            documents,
            generator=generator,
            system=system,
            out_path=out,
            k=k,
            cot=cot,
            max_words=max_words,
            max_tokens=max_tokens,
            retries=retries,
            cache=False,
            on_answer=lambda _a: advance(bar),
        )
    failed = [a for a in answers if a.answer is None]
    declined = sum(a.no_answer for a in answers)
    console.print(
        f"{len(answers) - len(failed)} answers by {answers[0].system if answers else system} "
        f"written to {out}; 'no answer' {declined}/{len(answers)}; failed {len(failed)}"
    )
    for answer in failed:
        console.print(f"[yellow]{answer.id}: no answer[/yellow] — {answer.unscored_reason}")


def _parse_answers(specs: list[str]) -> list[SystemAnswers]:
    systems = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        systems.append(load_answers(path, name) if sep else load_answers(spec))
    return systems


QuestionsArgument = Annotated[
    Path | None, typer.Argument(help="Questions with reference answers (or use --pairs).")
]
AnswersOption = Annotated[
    list[str] | None,
    typer.Option("--answers", help="A system's answers file, as PATH or NAME=PATH; repeat."),
]
PairsOption = Annotated[
    Path | None, typer.Option(help="Judge a pairs file instead of systems' answers.")
]
WorkersOption = Annotated[
    int, typer.Option(help="Pairs judged at once (with --ray: orders, by each worker).")
]


@app.command("judge")
def judge_command(
    questions: QuestionsArgument = None,
    answers: AnswersOption = None,
    pairs: PairsOption = None,
    design: Annotated[str, typer.Option(help="reference, complete or both.")] = "reference",
    per_domain: Annotated[int, typer.Option(help="Questions per domain, complete design.")] = 100,
    reference_name: ReferenceName = REFERENCE,
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    orders: OrdersOption = "both",
    combine_rule: CombineOption = "agree",
    method: MethodOption = "generative",
    seed: Annotated[int, typer.Option(help="Seeds random orders and sampling.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions or pairs.")] = None,
    out: ResultsFolder = Path("runs/arena"),
    max_tokens: JudgeTokens = MAX_TOKENS,
    retries: Retries = 2,
    workers: WorkersOption = 1,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    ray_actor_cpus: RayActorCpus = 1.0,
    cache: CacheFlag = True,
    rounds: BootstrapRounds = 1000,
) -> None:
    """Judge systems' answers pairwise (or a pairs file) and print the leaderboard."""
    console = Console()
    putting = _putting(orders, combine_rule, seed, retries, max_tokens)
    with user_errors(console):
        executor = executor_for(ray, ray_actors, ray_actor_cpus, workers)
        judge_options = parse_options(judge_option, "--judge-option")
        if pairs is not None:
            to_judge = load_pairs(pairs)[:limit]
        elif questions is not None and answers:
            if design not in ("reference", "complete", "both"):
                raise ValueError(f"--design must be reference, complete or both, not {design!r}")
            plan = design_pairs(
                load_questions(questions)[:limit],
                _parse_answers(answers),
                design,  # type: ignore[arg-type]
                per_domain=per_domain,
                seed=seed,
                reference_name=reference_name,
            )
            for system, count in sorted(plan.missing.items()):
                console.print(f"[yellow]{system}: no answer to {count} questions, skipped[/]")
            if plan.without_reference:
                console.print(
                    f"[yellow]{plan.without_reference} questions have no reference, skipped[/]"
                )
            to_judge = plan.pairs
        else:
            raise ValueError("give QUESTIONS with --answers, or --pairs")
    models: dict[str, Any]
    if executor == "threads":
        judge_model, _ = open_models(console, judge, judge_option, cache=cache)
        models = {"judge": judge_model, "cache": False}
    else:  # each Ray worker builds its own
        models = {"judge": judge, "judge_options": judge_options, "cache": cache}
    with progress(console, "judging", len(to_judge)) as bar, user_errors(console):
        battles = judge_pairs(
            to_judge,
            **models,
            **putting,
            out_dir=out,
            workers=workers,
            on_battle=lambda _b: advance(bar),
            executor=executor,
            method=method,
        )
    with user_errors(console):
        board = build_leaderboard(battles, reference=reference_name, rounds=rounds, seed=seed)
    _print_board(console, board, out)


def _print_board(console: Console, board: Leaderboard, out: Path) -> None:
    console.print(leaderboard_table(board))
    controlled = length_table(board)
    if controlled is not None:
        console.print(controlled)
    elif board.length_control is not None and board.length_control.unavailable:
        console.print(
            f"[yellow]no length-controlled figures[/yellow] — {board.length_control.unavailable}"
        )
    by_domain = domain_table(board)
    if by_domain is not None:
        console.print(by_domain)
    print_reasons(console, board.unscored_reasons, "unscored")
    if board.flip_rate is not None:
        console.print(
            f"orders disagreed on {board.flips}/{board.both_orders} pairs "
            f"(flip rate {board.flip_rate:.3f})"
        )
    written = write_leaderboard(board, out)
    console.print(f"written: {', '.join(str(p) for p in written)}")


@app.command("leaderboard")
def leaderboard_command(
    run: Annotated[Path, typer.Argument(help="A judging run's folder (or its battles.jsonl).")],
    reference_name: ReferenceName = REFERENCE,
    anchor: Annotated[
        str, typer.Option(help="'mean' (mean Elo 1000) or a system put at 1000.")
    ] = "mean",
    rounds: BootstrapRounds = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    prior: Annotated[
        float, typer.Option(help="Virtual tied games per pair of systems (0: plain MLE).")
    ] = DEFAULT_PRIOR,
    out: Annotated[Path | None, typer.Option(help="Where to write CSV/JSON. [RUN]")] = None,
) -> None:
    """Rank the systems of a judging run: Elo with 95% CIs, win rates, 'no answer' ratios."""
    console = Console()
    with user_errors(console):
        board = build_leaderboard(
            read_battles(run),
            reference=reference_name,
            anchor=anchor,
            rounds=rounds,
            seed=seed,
            prior=prior,
        )
    _print_board(console, board, out or (run if run.is_dir() else run.parent))


@app.command("agreement")
def agreement_command(
    pairs: Annotated[Path, typer.Argument(help="Pairs with human labels (-1 A, 0 tie, 1 B).")],
    judge: JudgeSpec = "local",
    judge_option: JudgeOptions = None,
    orders: OrdersOption = "both",
    combine_rule: CombineOption = "agree",
    method: MethodOption = "generative",
    limit: Annotated[int | None, typer.Option(help="Only the first N pairs.")] = None,
    out: ResultsFolder = Path("runs/agreement"),
    seed: Annotated[int, typer.Option(help="Seeds the random orders.")] = 0,
    max_tokens: JudgeTokens = MAX_TOKENS,
    retries: Retries = 2,
    cache: CacheFlag = True,
) -> None:
    """Judge labelled pairs and report Cohen's kappa, Pearson, accuracy, the flip rate and a
    baseline that always prefers the longer answer."""
    console = Console()
    putting = _putting(orders, combine_rule, seed, retries, max_tokens)
    with user_errors(console):
        total = len(load_pairs(pairs)[:limit])
    judge_model, _ = open_models(console, judge, judge_option, cache=cache)
    with progress(console, "judging", total) as bar, user_errors(console):
        report = measure_agreement(
            pairs,
            judge=judge_model,
            **putting,
            out_dir=out,
            limit=limit,
            cache=False,
            on_battle=lambda _b: advance(bar),
            method=method,
        )
    console.print(agreement_table(report, title=f"judge vs human labels ({pairs.name})"))
    if report.flip_rate is not None:
        console.print(
            f"flip rate {report.flip_rate:.3f} ({report.flips}/{report.both_orders} pairs; "
            f"{report.reversals} picked opposite answers)"
        )
    if report.reversal_accuracy is not None:
        console.print(
            f"the judge's confidence settled {report.reversal_accuracy:.3f} of "
            f"{report.reversals_settled} opposite picks the humans' way (0.5 is a coin)"
        )
    if report.first_position_rate is not None:
        console.print(
            f"answer shown first won {report.first_position_rate:.3f} of presentations, "
            f"second {report.second_position_rate:.3f}"
        )
    if report.judge_longer_rate is not None and report.human_longer_rate is not None:
        console.print(
            f"the longer answer won {report.judge_longer_rate:.3f} of the judge's picks, "
            f"{report.human_longer_rate:.3f} of the humans'"
        )
    print_reasons(console, report.unscored_reasons, "unscored")
    console.print(f"results in {out}/")
