"""How far padding moves a system's raw and length-controlled win rates against the reference.

    python bench/bench_length_control.py --judge fake
    python bench/bench_length_control.py --judge local --limit 20 --out runs/bench-lc-local

One system's answers are padded with redundant sentences: its own sentences restated, in order,
each behind a connective ("In other words, ..."), until the answer is ``--pad-ratio`` times
longer (deterministic: the same answer is always padded the same way). Every system is judged
against the reference, and the padded system once more with its padded answers, through the
arena's own judging (``judge_pairs``: the pairwise prompt, both orders, the judgement store).
The benchmark then fits the leaderboard's length-controlled model (``arena.length_control``)
twice, on the battles with the original answers and on the same battles with the padded
system's answers padded, and prints the padded system's raw win rate (ties as halves) and
length-controlled win rate before and after, with their 95% intervals, and how far each
moved. Target: the length-controlled rate moves at most a third as far as the raw one.

Data: the questions, reference answers and systems' answers of RAGChecker's meta-evaluation
(``--ragchecker``, default ``../shared/data/ragchecker/ragchecker_dev.jsonl``: 80 questions, 8
systems, each question answered by two of them), or the arena's own files (``--questions``
with references, ``--answers NAME=PATH`` repeated), as ``ragmeter arena judge`` takes them.
``--orders`` and ``--combine`` are ``arena judge``'s. ``--limit N`` judges only the first N
pairs, the padded system's first, so a slow judge spends its time where the measurement is
(each pair judged with the padded answer too). The judgements are stored in ``--out``, so a
rerun (another ``--combine``, a larger ``--limit``) judges only what is missing.

``--judge fake`` is a scripted judge for a dry run with no model: it prefers answer 1 with
probability sigmoid(3 * (coverage 1 - coverage 2) + 1.5 * tanh((words 1 - words 2) / 50)),
where an answer's coverage is the share of the question's words it uses, drawn with a coin
hashed from the question (so both orders agree, and an answer and its padded version meet the
same coin: the move measures the change of preference, not another draw). Restating an
answer's own sentences leaves its coverage as it was, so on this judge padding buys wins
through length alone, in the form the length-controlled model assumes: the dry run checks the
plumbing and that the model takes such a length effect out, not how a real judge behaves. Any
other value is a judge spec (``local``, ``openai:MODEL``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import time
from pathlib import Path

from ragmeter.arena.battles import Battle
from ragmeter.arena.data import (
    Pair,
    Question,
    SystemAnswers,
    is_no_answer,
    load_answers,
    load_questions,
)
from ragmeter.arena.designs import REFERENCE, reference_pairs
from ragmeter.arena.judge import COMBINE_RULES, judge_pairs
from ragmeter.arena.length_control import Estimate, length_controlled
from ragmeter.judges.base import ChatRequest, Judge
from ragmeter.judges.fake import FakeJudge
from ragmeter.text import WORD, split_sentences

REPO = Path(__file__).resolve().parent.parent
RAGCHECKER = REPO.parent / "shared" / "data" / "ragchecker" / "ragchecker_dev.jsonl"
CONNECTIVES = ("In other words,", "To put it another way,", "That is,", "Put simply,")
PADDED = ":padded"


def pad(answer: str, ratio: float) -> str:
    """``answer`` followed by its own sentences restated, in order and round again if need be,
    until it has at least ``ratio`` times its words. A declined answer is left as it is."""
    sentences = split_sentences(answer)
    if not sentences or is_no_answer(answer):
        return answer
    wanted = ratio * len(answer.split())
    padded, n = [answer], 0
    while len(" ".join(padded).split()) < wanted:
        sentence = sentences[n % len(sentences)]
        connective = CONNECTIVES[n % len(CONNECTIVES)]
        padded.append(f"{connective} {sentence[:1].lower()}{sentence[1:]}")
        n += 1
    return " ".join(padded)


def ragchecker(path: Path) -> tuple[list[Question], list[SystemAnswers]]:
    """RAGChecker's rows as questions with references (the ground-truth answers, citation
    markers removed) and one answers set per RAG system."""
    questions, answers = [], {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        qid = str(row["instance_id"])
        reference = re.sub(r"\s*\[\d+\]", "", row["gt_answer"])
        questions.append(Question(id=qid, question=row["query"], reference=reference))
        for side in ("model1", "model2"):
            model = row[side]
            answers.setdefault(model["model_name"], {})[qid] = model["response"]
    systems = [SystemAnswers(name=name, answers=found) for name, found in sorted(answers.items())]
    return questions, systems


def tagged(request: ChatRequest, tag: str) -> str:
    return request.messages[-1].content.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def vocabulary(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def length_biased_reply(request: ChatRequest) -> str:
    """The scripted judge: a logistic preference in coverage of the question and length,
    drawn by a coin hashed from the question, read from the side of the two answers in a fixed
    order so that both presentation orders agree."""
    first, second = tagged(request, "answer 1"), tagged(request, "answer 2")
    asked = vocabulary(tagged(request, "query"))
    coverage = (len(asked & vocabulary(first)) - len(asked & vocabulary(second))) / len(asked)
    words = len(first.split()) - len(second.split())
    p_first = 1 / (1 + math.exp(-(3 * coverage + 1.5 * math.tanh(words / 50))))
    low = min(first, second)
    coin = int(hashlib.sha256(tagged(request, "query").encode()).hexdigest()[:8], 16) / 16**8
    # The coin is read from the side of the answer that sorts first: it wins below its p.
    p_low = p_first if first == low else 1 - p_first
    rating = 1 if (coin < p_low) == (first == low) else 2
    return json.dumps({"reasoning": "Scripted: vocabulary and length.", "rating": rating})


def plan(
    questions: list[Question], systems: list[SystemAnswers], padded: list[str], limit: int | None
) -> list[Pair]:
    """Every system against the reference, the padded systems' pairs first (in the order of
    ``padded``, questions in order within each), cut to ``limit``."""
    pairs = reference_pairs(questions, systems).pairs
    rank = {name: n for n, name in enumerate(padded)}
    pairs.sort(key=lambda p: rank.get(p.system_a, len(rank)))
    return pairs[:limit]


def percent(estimate: Estimate) -> str:
    if estimate.value is None:
        return "—"
    if estimate.low is None or estimate.high is None:
        return f"{100 * estimate.value:.1f}"
    return f"{100 * estimate.value:.1f} [{100 * estimate.low:.1f}, {100 * estimate.high:.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judge", default="fake", help="'fake' (scripted) or a judge spec.")
    parser.add_argument("--ragchecker", type=Path, default=RAGCHECKER)
    parser.add_argument("--questions", type=Path, help="Arena questions with references.")
    parser.add_argument("--answers", action="append", default=[], help="NAME=PATH; repeat.")
    parser.add_argument(
        "--pad", help="The system to pad, or 'all' (each in turn). [the one with most answers]"
    )
    parser.add_argument("--pad-ratio", type=float, default=2.0, help="Padded length / length.")
    parser.add_argument("--limit", type=int, help="Only the first N pairs (padded system first).")
    parser.add_argument("--orders", choices=("both", "random"), default="both")
    parser.add_argument("--combine", choices=COMBINE_RULES, default="agree")
    parser.add_argument("--rounds", type=int, default=1000, help="Bootstrap rounds.")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-length-control"))
    parser.add_argument("--cache", action="store_true", help="Use the user's call cache.")
    args = parser.parse_args()

    if args.questions:
        questions = load_questions(args.questions)
        systems = [load_answers(path, name) for name, _, path in map(_split, args.answers)]
    else:
        questions, systems = ragchecker(args.ragchecker)
    if args.pad == "all":
        padded = [s.name for s in systems]
    else:
        most = max(systems, key=lambda s: sum(bool(a) for a in s.answers.values()))
        padded = [args.pad or most.name]
    original = plan(questions, systems, padded, args.limit)
    padded_pairs = [
        p.model_copy(update={"id": p.id + PADDED, "answer_a": pad(p.answer_a, args.pad_ratio)})
        for p in original
        if p.system_a in padded
    ]
    if not padded_pairs:
        raise SystemExit(f"no pairs of {padded} among the {len(original)} chosen")
    judge: str | Judge = (
        FakeJudge(responder=length_biased_reply, model="bench-length-biased")
        if args.judge == "fake"
        else args.judge
    )
    started = time.perf_counter()
    battles = judge_pairs(
        original + padded_pairs,
        judge=judge,
        out_dir=args.out,
        orders=args.orders,
        combine_rule=args.combine,
        cache=args.cache,
    )
    seconds = time.perf_counter() - started
    # A pair whose original or padded judgement is unscored leaves both out: the two fits then
    # compare the padded system on the same questions.
    scored = {b.pair_id for b in battles if b.scored}
    dropped = {
        p.id.removesuffix(PADDED)
        for p in padded_pairs
        if p.id not in scored or p.id.removesuffix(PADDED) not in scored
    }
    before = [b for b in battles if not b.pair_id.endswith(PADDED) and b.pair_id not in dropped]
    print(
        f"{len(original)} pairs and {len(padded_pairs)} padded ones judged by {args.judge} "
        f"({args.orders} orders, combined by {args.combine}) in {seconds:.0f} s; "
        f"{sum(not b.scored for b in battles)} unscored ({len(dropped)} pairs left out of both "
        f"fits for it); answers padded to {args.pad_ratio:g} times their words"
    )
    rows = []
    for system in dict.fromkeys(p.system_a for p in padded_pairs):
        after = [b for b in before if b.system_a != system]
        after += [
            b
            for b in battles
            if b.pair_id.endswith(PADDED)
            and b.system_a == system
            and b.pair_id.removesuffix(PADDED) not in dropped
        ]
        rows.append(measure(system, before, after, args.rounds))
    moved = {kind: sum(abs(r[kind]) for r in rows) / len(rows) for kind in ("raw", "lc")}
    ratio = moved["lc"] / moved["raw"] if moved["raw"] else None
    if len(rows) > 1:
        print(
            f"mean move over {len(rows)} padded systems: raw {100 * moved['raw']:.1f} points, "
            f"length-controlled {100 * moved['lc']:.1f} points"
            + (f" ({ratio:.2f} of the raw move; target at most 0.33)" if ratio is not None else "")
        )
    report = {
        "judge": args.judge,
        "orders": args.orders,
        "combine": args.combine,
        "pad_ratio": args.pad_ratio,
        "pairs": len(original),
        "padded_pairs": len(padded_pairs),
        "seconds": round(seconds, 1),
        "unscored": sum(not b.scored for b in battles),
        "pairs_left_out": sorted(dropped),
        "mean_abs_raw_move": moved["raw"],
        "mean_abs_lc_move": moved["lc"],
        "lc_move_over_raw_move": ratio,
        "systems": rows,
    }
    (args.out / "length_control_bench.json").write_text(json.dumps(report, indent=2))


def measure(
    system: str, before: list[Battle], after: list[Battle], rounds: int
) -> dict[str, object]:
    """Fit the length-controlled model on the battles before and after padding ``system``,
    print its rates and return them with how far they moved."""
    fits = {
        "original": length_controlled(before, REFERENCE, rounds=rounds),
        "padded": length_controlled(after, REFERENCE, rounds=rounds),
    }

    def words(battles: list[Battle]) -> float:
        own = [b.words_a for b in battles if b.system_a == system and b.words_a is not None]
        return sum(own) / len(own)

    own = sum(b.system_a == system for b in after)
    print(f"{system}: {own} pairs, {words(before):.0f} -> {words(after):.0f} mean words")
    for name, fit in fits.items():
        print(
            f"  {name:8s} raw win ½ {percent(fit.win_raw[system])}  "
            f"length-controlled {percent(fit.win[system])}  "
            f"length term {fit.length_coefficient.value:.2f}"
        )
    raw = fits["padded"].win_raw[system].value - fits["original"].win_raw[system].value
    lc = fits["padded"].win[system].value - fits["original"].win[system].value
    ratio = abs(lc) / abs(raw) if raw else None
    print(
        f"  moved: raw {100 * raw:+.1f} points, length-controlled {100 * lc:+.1f} points"
        + (f" ({ratio:.2f} of the raw move)" if ratio is not None else "")
    )
    return {
        "system": system,
        "pairs": own,
        "words_before": words(before),
        "words_after": words(after),
        **{
            f"{name}_{kind}": {"value": e.value, "low": e.low, "high": e.high}
            for name, fit in fits.items()
            for kind, e in (("raw_win_half", fit.win_raw[system]), ("lc_win", fit.win[system]))
        },
        "raw": raw,
        "lc": lc,
    }


def _split(spec: str) -> tuple[str, str, str]:
    name, sep, path = spec.partition("=")
    if not sep:
        raise SystemExit(f"--answers takes NAME=PATH, not {spec!r}")
    return name, sep, path


if __name__ == "__main__":
    main()
