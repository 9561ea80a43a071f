"""How far ready criteria agree with people, per reading, on rated data sets.

    python bench/bench_criteria.py topicalchat ../shared/data/criteria/topicalchat_dev.jsonl
    python bench/bench_criteria.py summeval ../shared/data/criteria/summeval_dev.jsonl --groups 12
    python bench/bench_criteria.py mtrag ../shared/data/mtrag/mtrag_dev.jsonl
    python bench/bench_criteria.py topicalchat FILE --readings direct,checklist --judge fake:...

Every (criterion, reading) is scored in one ``evaluate`` run, ``--out/SOURCE`` (each sample is
read once for all of them; a killed bench resumes where it stopped and an unchanged rerun judges
nothing), then correlated with the people's mean ratings by the source's own protocol:

- topicalchat (USR): turn level, one Spearman over every rated response, as UniEval and G-Eval
  pool them;
- summeval: summary level, a Spearman per article over its summaries, averaged (articles where
  either side is constant are skipped, as UniEval's ``correlation.py`` does);
- mtrag: one Spearman over the rows, with a 95 % bootstrap interval over conversations.

``--ragas-python PY`` adds the peer: ragas's rubric metric (``DomainSpecificRubrics``, a 1-5
rating written by the judge with its feedback) through the same GGUF, served by llama-cpp-python's
OpenAI-compatible server, on the same rows, with each criterion's own words: its levels as the
rubric (yes/no as two), its question added to the rubric prompt, the conversation before the
response as the input, and the passages where the criterion reads them. ``PY`` is the python of
the peer's virtualenv (``bench/ragas_peer.py`` says how to make it); its scores are kept in
``--out/SOURCE/ragas.jsonl``, so a killed run resumes.

``--groups N`` keeps the first N groups in sorted order (a fixed subset, not a chosen one).
``--rows-out FILE`` writes each row's score and rating.

``--learn 25,50`` adds what people's ratings buy: for each criterion whose value is the mean of one
Yes/No prompt's verdicts (what ``ragmeter tune`` fits) and each N, 20 draws of N rated rows,
whole groups at a time (a draw's first 25 among its first 50, as a team rates on); a head is
fitted on them as ``tune`` fits it (its penalty chosen inside them) and read on every other row;
the Spearman of the rest by the source's protocol, zero-shot and with the head, and the mean
gain with a 95 % interval over the draws.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from ragmeter import evaluate
from ragmeter.criteria import LIBRARY, Criterion, CriterionMetric
from ragmeter.heads.fitting import Design, Fitter, gather, means_by_group, predict
from ragmeter.heads.tuning import DEFAULT_STATES, penalty_score, rating_agreement
from ragmeter.judges.serve import served
from ragmeter.meta.mtrag import load_mtrag
from ragmeter.prompts import approx_tokens
from ragmeter.result import Result
from ragmeter.sample import Sample, Turn
from ragmeter.stats import Interval, coefficients, correlation

CRITERIA: dict[str, dict[str, str]] = {
    "topicalchat": {
        "naturalness": "naturalness",
        "coherence": "maintains_context",
        "engagingness": "engagingness",
        "groundedness": "groundedness",
    },
    "summeval": {
        "coherence": "coherence",
        "consistency": "consistency",
        "fluency": "fluency",
        "relevance": "relevance",
    },
    "mtrag": {
        "appropriateness": "appropriate_refusal",
        "naturalness": "naturalness",
        "completeness": "completeness",
    },
}
"""Per source: the people's rating -> the ready criterion that asks the same."""

MTRAG_SCALES = {name: (1.0, 4.0) for name in CRITERIA["mtrag"]}
"""MTRAG's 4-point scale: 1 No, 2 Mostly no, 3 Mostly yes, 4 Yes."""

READINGS = {
    "yes_no": ("direct", "reasoned", "per_sentence", "claims"),
    "levels": ("direct", "yes_no", "checklist", "reasoned", "per_sentence", "claims"),
}


class Row:
    def __init__(
        self,
        sample: Sample,
        group: str,
        ratings: dict[str, float],
        scales: dict[str, tuple[float, float]],
    ) -> None:
        self.sample, self.group, self.ratings, self.scales = sample, group, ratings, scales


def criteria_rows(path: Path) -> list[Row]:
    """Rows of ``../shared/data/criteria/``: a dialogue's last turn is the question, the turns
    before it its history (alternating, the last one the user's)."""
    rows = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        turns = [t for t in record["question"].split("\n") if t.strip()]
        roles = ["user" if (len(turns) - i) % 2 == 1 else "assistant" for i in range(len(turns))]
        history = [Turn(role=r, text=t.strip()) for r, t in zip(roles, turns, strict=True)][:-1]
        sample = Sample(
            id=record["id"],
            question=turns[-1].strip(),
            history=history,
            contexts=record["contexts"],
            answer=record["answer"],
        )
        scales = {k: (float(low), float(high)) for k, (low, high) in record["scale"].items()}
        rows.append(Row(sample, record["group"], record["ratings"], scales))
    return rows


def mtrag_rows(path: Path) -> list[Row]:
    """MTRAG's answers that were given passages (the criteria read them; a conversational turn
    without any is left out)."""
    return [
        Row(r.sample, r.conversation, r.human, MTRAG_SCALES)
        for r in load_mtrag(path)
        if r.sample.contexts
    ]


PEER = Path(__file__).with_name("ragas_peer.py")


def rubric_of(criterion: Criterion) -> dict[str, str]:
    """The criterion's scale as ragas's rubric: each level's meaning, or No and Yes."""
    if criterion.kind == "levels":
        return {f"score{level.score:g}_description": level.meaning for level in criterion.levels}
    return {"score1_description": "No.", "score2_description": "Yes."}


def conversation(sample: Sample) -> str:
    """What the response answers, as one input: the turns before it, then the question."""
    turns = [*((turn.role, turn.text) for turn in sample.history), ("user", sample.question)]
    return "\n".join(f"{role}: {text}" for role, text in turns)


def ragas_rubric_scores(
    rows: list[Row], wanted: dict[str, str], python: str, out: Path
) -> dict[tuple[str, str], dict[str, Any]]:
    """ragas's rubric score of each (sample, criterion), read from ``out/ragas.jsonl`` where
    an earlier run scored it; the rest scored now, each line kept as it comes."""
    out.mkdir(parents=True, exist_ok=True)
    kept = out / "ragas.jsonl"
    done = {}
    if kept.is_file():
        done = {r["id"]: r for r in map(json.loads, kept.read_text().splitlines())}
    todo = []
    for row in rows:
        for rating, name in wanted.items():
            criterion = LIBRARY[name]
            key = f"{row.sample.key}/{name}"
            if rating in row.ratings and key not in done:
                todo.append(
                    {
                        "id": key,
                        "metric": name,
                        "question": conversation(row.sample),
                        "answer": row.sample.answer,
                        "contexts": list(row.sample.contexts)
                        if "contexts" in criterion.reads
                        else None,
                        "rubrics": rubric_of(criterion),
                        "criterion": criterion.question,
                    }
                )
    if todo:
        print(f"ragas: {len(done)} scores kept, {len(todo)} to score", flush=True)
        asked = out / "ragas-asked.jsonl"
        asked.write_text("".join(json.dumps(t) + "\n" for t in todo))
        with served(log=out / "ragas-server.log") as url, kept.open("a") as sink:
            command = [python, str(PEER), str(asked), "--base-url", url]
            peer = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            assert peer.stdout is not None
            for line in peer.stdout:
                record = json.loads(line)
                done[record["id"]] = record
                sink.write(line)
                sink.flush()
            if peer.wait() != 0:
                raise SystemExit(f"the ragas peer failed ({peer.returncode})")
    return {
        (row.sample.key, name): done[f"{row.sample.key}/{name}"]
        for row in rows
        for name in wanted.values()
        if f"{row.sample.key}/{name}" in done
    }


def first_groups(rows: list[Row], groups: int | None) -> list[Row]:
    if groups is None:
        return rows
    kept = set(sorted({r.group for r in rows})[:groups])
    return [r for r in rows if r.group in kept]


def summary_level(
    scores: Sequence[float], ratings: Sequence[float], groups: Sequence[str]
) -> float:
    """The mean over groups of the Spearman within each group (constant groups skipped)."""
    by_group: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for score, rating, group in zip(scores, ratings, groups, strict=True):
        by_group[group].append((score, rating))
    values = []
    for pairs in by_group.values():
        x, y = np.array(pairs).T
        if len(pairs) >= 3 and x.std() > 0 and y.std() > 0:
            values.append(float(coefficients(x[None, :], y[None, :], "spearman")[0]))
    return fmean(values) if values else float("nan")


def agreement(source: str, scores: list[float], ratings: list[float], groups: list[str]) -> str:
    if source == "summeval":
        return f"{agreement_value(source, scores, ratings, groups):.3f}"
    interval: Interval | None = correlation(scores, ratings, "spearman")
    if interval is None:
        return "undefined"
    return f"{interval.value:.3f} [{interval.low:.2f}, {interval.high:.2f}]"


def learned(
    source: str,
    result: Result,
    metric: CriterionMetric,
    rows: list[Row],
    rating: str,
    sizes: Sequence[int],
    draws: int = 20,
) -> list[str]:
    """For each size N: zero-shot and head Spearman on the rows left out of N rated rows, over
    ``draws`` draws of whole groups, and the mean gain with its interval. A draw's groups are
    taken in one seeded order for every N, so its first N rows are among its first 2N, as a team
    rates on."""
    prompt = metric.verdicts_prompt()
    if prompt is None:
        return ["no head (not a mean of verdicts)"]
    rated = {r.sample.key: r for r in rows if rating in r.ratings}
    targets = {
        k: (r.ratings[rating] - r.scales[rating][0]) / (r.scales[rating][1] - r.scales[rating][0])
        for k, r in rated.items()
    }
    scores = [s for s in result.scores_for(metric.name) if s.scored and s.sample_id in rated]
    material, _ = gather(scores, prompt, DEFAULT_STATES, lambda _: None)
    verdicts = material.verdicts
    if not len(verdicts):
        return ["no verdicts with states"]
    samples = np.asarray(verdicts.groups)
    design = Design(prompt.name, prompt.version, DEFAULT_STATES, f"{rating} ratings")

    def spearman_of(values: dict[str, float]) -> float:
        keys = list(values)
        humans = [rated[k].ratings[rating] for k in keys]
        groups_ = [rated[k].group for k in keys]
        return agreement_value(source, [values[k] for k in keys], humans, groups_)

    choosing = penalty_score(rating_agreement(samples, targets))  # as ``tune`` chooses
    fitter = Fitter(design, verdicts, targets=targets, score=choosing, folds=5, seed=0)
    keys = sorted(set(samples.tolist()))
    groups = sorted({rated[k].group for k in keys})
    lines = []
    for size in sizes:
        gains, zero, head = [], [], []
        for draw in range(draws):
            order = np.random.default_rng(draw).permutation(len(groups))
            chosen: set[str] = set()
            for index in order:
                if sum(1 for k in keys if rated[k].group in chosen) >= size:
                    break
                chosen.add(groups[index])
            train = np.array([rated[k].group in chosen for k in samples])
            test_rows = np.flatnonzero(~train)
            predicted = predict(fitter.fitted(np.flatnonzero(train)).head, verdicts.rows(test_rows))
            tested = samples[test_rows]
            zero.append(spearman_of(means_by_group(tested, verdicts.zero_shot[test_rows])))
            head.append(spearman_of(means_by_group(tested, predicted)))
            gains.append(head[-1] - zero[-1])
        low_gain, high_gain = np.percentile(gains, [2.5, 97.5])
        lines.append(
            f"{size} | zero-shot {fmean(zero):.3f}, head {fmean(head):.3f}, gain "
            f"{fmean(gains):+.3f} [{low_gain:+.3f}, {high_gain:+.3f}]"
        )
    return lines


def agreement_value(
    source: str, scores: list[float], ratings: list[float], groups: list[str]
) -> float:
    if source == "summeval":
        return summary_level(scores, ratings, groups)
    value = coefficients(np.array(scores)[None, :], np.array(ratings)[None, :], "spearman")[0]
    return float(value)


Table = list[tuple[str, str, str, str, int, int]]


def cost(result: Result, measured: Sequence[tuple[str, str, str, CriterionMetric]]) -> list[str]:
    """Per (criterion, reading): judge calls, prompt tokens actually read (after the prefix a
    sample's earlier questions left) and seconds, each a sample; and the floor, the tokens of
    the sample's own fields, read once."""
    lines = []
    samples = {s.key: s for s in result.samples}
    floor = fmean(
        approx_tokens(" ".join([*s.contexts, s.question, s.answer])) for s in samples.values()
    )
    for _, name, reading, metric in measured:
        scores = [s for s in result.scores_for(metric.name) if s.scored]
        if not scores:
            continue
        calls = fmean(s.usage.model_calls + s.usage.cached_calls for s in scores)
        tokens = fmean(s.usage.prompt_tokens for s in scores)
        seconds = fmean(s.seconds for s in scores)
        lines.append(f"| {name} | {reading} | {calls:.1f} | {tokens:.0f} | {seconds:.1f} |")
    lines.append(f"| floor: the sample's fields, read once | | 1 | {floor:.0f} | |")
    return lines


def measure(
    source: str,
    rows: list[Row],
    wanted: dict[str, str],
    readings: Sequence[str],
    judge: Any,
    out: Path,
    learn: Sequence[int] = (),
) -> tuple[Table, list[str], list[dict[str, Any]]]:
    """Score every (criterion, reading) on ``rows`` and correlate each with the people; with
    ``learn``, what a head fitted on that many rated rows buys. Returns the agreement table,
    the learning lines and each row's score beside its rating."""
    table: Table = []
    learning: list[str] = []
    written: list[dict[str, Any]] = []
    measured: list[tuple[str, str, str, CriterionMetric]] = []
    for reading in readings:
        for rating, name in wanted.items():
            criterion = LIBRARY[name]
            apt = READINGS["levels" if criterion.kind == "levels" else "yes_no"]
            if reading not in apt or (reading == "claims" and "contexts" not in criterion.reads):
                continue
            # One run holds every reading, each criterion under a name of its own, so that each
            # sample is read once for all of them (the name is not in the prompt).
            renamed = criterion.model_copy(update={"name": f"{name}_{reading}"})
            measured.append((rating, name, reading, CriterionMetric(renamed, reading=reading)))
    result = evaluate([r.sample for r in rows], [m for *_, m in measured], judge=judge, out_dir=out)
    by_key = {(s.sample_id, s.metric): s for s in result.scores}
    for rating, name, reading, metric in measured:
        pairs = [
            (by_key[(r.sample.key, metric.name)].value, r.ratings[rating], r.group)
            for r in rows
            if rating in r.ratings
        ]
        scored = [(v, h, g) for v, h, g in pairs if v is not None]
        scores, ratings, groups = (list(c) for c in zip(*scored, strict=True))
        figure = agreement(source, scores, ratings, groups)
        table.append((rating, name, reading, figure, len(scored), len(pairs) - len(scored)))
        if learn:
            for bought in learned(source, result, metric, rows, rating, learn):
                learning.append(f"| {rating} | {name} | {reading} | {bought} |")
        written += [
            {
                "id": r.sample.key,
                "criterion": name,
                "reading": reading,
                "rating": rating,
                "human": r.ratings.get(rating),
                "score": by_key[(r.sample.key, metric.name)].value,
                "group": r.group,
            }
            for r in rows
        ]
    print("| criterion | reading | calls a sample | prompt tokens read a sample | seconds |")
    print("|---|---|---|---|---|")
    print("\n".join(cost(result, measured)))
    return table, learning, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", choices=sorted(CRITERIA))
    parser.add_argument("file", type=Path)
    parser.add_argument("--readings", default=None, help="Comma-separated; default: all apt.")
    parser.add_argument("--criteria", default=None, help="Comma-separated ratings to measure.")
    parser.add_argument("--groups", type=int, default=None)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--out", type=Path, default=Path("runs/criteria"))
    parser.add_argument("--rows-out", type=Path, default=None)
    parser.add_argument("--ragas-python", default=None, help="The ragas peer's python.")
    parser.add_argument(
        "--learn", default="", help="Comma-separated numbers of rated rows a head learns from."
    )
    args = parser.parse_args()

    rows = mtrag_rows(args.file) if args.source == "mtrag" else criteria_rows(args.file)
    rows = first_groups(rows, args.groups)
    wanted = CRITERIA[args.source]
    if args.criteria:
        wanted = {k: v for k, v in wanted.items() if k in args.criteria.split(",")}
    readings = args.readings.split(",") if args.readings else READINGS["levels"]
    sizes = [int(n) for n in args.learn.split(",") if n]
    print(f"{args.source}: {len(rows)} rows, {len({r.group for r in rows})} groups")
    table, learning, written = measure(
        args.source, rows, wanted, readings, args.judge, args.out / args.source, sizes
    )
    print("| rating | criterion | reading | Spearman | scored | unscored |")
    print("|---|---|---|---|---|---|")
    for line in table:
        print("| " + " | ".join(map(str, line)) + " |")
    if learning:
        print("\nWith a head fitted on N rated rows, read on the rest (20 draws):")
        print("| rating | criterion | reading | N | Spearman of the rest |\n|---|---|---|---|---|")
        print("\n".join(learning))
    if args.ragas_python:
        peer = ragas_rubric_scores(rows, wanted, args.ragas_python, args.out / args.source)
        print("\nragas's rubric metric (DomainSpecificRubrics), the same judge and rows:")
        print("| rating | criterion | Spearman | scored | unscored |\n|---|---|---|---|---|")
        for rating, name in wanted.items():
            found = [
                (peer[(r.sample.key, name)]["value"], r.ratings[rating], r.group)
                for r in rows
                if rating in r.ratings and (r.sample.key, name) in peer
            ]
            scored = [f for f in found if f[0] is not None]
            figure = agreement(args.source, *map(list, zip(*scored, strict=True))) if scored else ""
            print(f"| {rating} | {name} | {figure} | {len(scored)} | {len(found) - len(scored)} |")
    if args.rows_out:
        args.rows_out.write_text("".join(json.dumps(w) + "\n" for w in written))


if __name__ == "__main__":
    main()
