"""How far ready criteria agree with people, per reading, on rated data sets.

    python bench/bench_criteria.py topicalchat ../shared/data/criteria/topicalchat_dev.jsonl
    python bench/bench_criteria.py summeval ../shared/data/criteria/summeval_dev.jsonl --groups 12
    python bench/bench_criteria.py mtrag ../shared/data/mtrag/mtrag_dev.jsonl
    python bench/bench_criteria.py topicalchat FILE --readings direct,yes_no --judge fake:...

Every (criterion, reading) is scored in one ``evaluate`` run, ``--out/SOURCE`` (each sample is
read once for all of them; a killed bench resumes where it stopped and an unchanged rerun judges
nothing), then correlated with the people's mean ratings by the source's own protocol:

- topicalchat (USR): turn level, one Spearman over every rated response, as UniEval and G-Eval
  pool them;
- summeval: summary level, a Spearman per article over its summaries, averaged (articles where
  either side is constant are skipped, as UniEval's ``correlation.py`` does);
- mtrag: one Spearman over the rows, with a 95 % bootstrap interval over conversations; the
  faithfulness rating is answered by the built-in faithfulness metric.

``--ragas-python PY`` adds the peer: ragas's rubric metric (``DomainSpecificRubrics``, a 1-5
rating written by the judge with its feedback) through the same GGUF, served by llama-cpp-python's
OpenAI-compatible server, on the same rows, with each criterion's own words: its levels as the
rubric (yes/no as two), its question added to the rubric prompt, the conversation before the
response as the input, and the passages where the criterion reads them. ``PY`` is the python of
the peer's virtualenv (``bench/ragas_peer.py`` says how to make it); its scores are kept in
``--out/SOURCE/ragas.jsonl``, so a killed run resumes.

``--groups N`` keeps the first N groups in sorted order (a fixed subset, not a chosen one).
``--rows-out FILE`` writes each row's score and rating.

``--learn 25,50`` adds what people's ratings buy: for each criterion or metric whose value is the
mean of one Yes/No prompt's verdicts (what ``ragmeter tune`` fits) and each N, ``--draws`` draws of
N rated rows, whole groups at a time (a draw's first 25 among its first 50, as a team rates on);
a head is fitted on them as ``tune`` fits it (``heads.tuning.rating_head``: its penalty chosen
inside them, and whether ``tune`` would write it, its out-of-fold gain's interval above zero) and
read on every other row; the Spearman of the rest by the source's protocol, zero-shot and with
the head, the gain, and the gain as ``tune`` decides (a head it would not write counts as no
gain), each the mean over the draws with their 2.5 and 97.5 percentiles. ``--curve FILE`` merges
them into a ratings curve, the file ``ragmeter tune`` reads to say what a team's own number of
ratings bought (``heads.curve``; one ships as ``ragmeter/judges/ratings_curve.json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from ragmeter import evaluate
from ragmeter.criteria import LIBRARY, Criterion, CriterionMetric
from ragmeter.heads.curve import RATINGS_FORMAT
from ragmeter.heads.fitting import gather, means_by_group, predict
from ragmeter.heads.tuning import DEFAULT_STATES, aggregation_of, rating_head
from ragmeter.judges.serve import served
from ragmeter.meta.mtrag import load_mtrag
from ragmeter.metrics import metric_by_name
from ragmeter.metrics.base import Metric
from ragmeter.prompts import YesNoPrompt, approx_tokens
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

BUILT_IN: dict[str, dict[str, str]] = {"mtrag": {"faithfulness": "faithfulness"}}
"""Per source: the people's rating -> the built-in metric that asks the same."""

MTRAG_SCALES = {name: (1.0, 4.0) for name in [*CRITERIA["mtrag"], *BUILT_IN["mtrag"]]}
"""MTRAG's 4-point scale: 1 No, 2 Mostly no, 3 Mostly yes, 4 Yes."""

READINGS = {
    "yes_no": ("direct", "reasoned", "per_sentence", "claims"),
    "levels": ("direct", "yes_no", "reasoned", "per_sentence", "claims"),
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


@dataclass
class Bought:
    """What N rated rows bought over ``draws`` draws: the Spearman of the other rows read
    zero-shot and with the head, and the gain, also as ``tune`` decides (a head it would not
    write counts as no gain: the team keeps the zero-shot read)."""

    size: int
    zero: list[float]
    head: list[float]
    written: list[bool]

    @property
    def gains(self) -> np.ndarray:
        return np.array(self.head) - np.array(self.zero)

    @property
    def tuned_gains(self) -> np.ndarray:
        return np.where(self.written, self.gains, 0.0)

    def record(self) -> dict[str, Any]:
        """The curve file's entry: each figure's mean over the draws with the 2.5 and 97.5
        percentiles of the draws (how far one team's draw may land)."""

        def spread(values: Sequence[float]) -> dict[str, float]:
            low, high = np.percentile(values, [2.5, 97.5])
            return {"mean": round(fmean(values), 4), "low": round(low, 4), "high": round(high, 4)}

        return {
            "zero_shot": spread(self.zero),
            "head": spread(self.head),
            "gain": spread(self.gains),
            "gain_tuned": spread(self.tuned_gains),
            "written": sum(self.written),
            "draws": len(self.zero),
        }

    def line(self) -> str:
        found = self.record()

        def cell(name: str) -> str:
            value = found[name]
            return f"{value['mean']:+.3f} [{value['low']:+.3f}, {value['high']:+.3f}]"

        return (
            f"{self.size} | {found['zero_shot']['mean']:.3f} | {found['head']['mean']:.3f} | "
            f"{cell('gain')} | {found['written']} of {found['draws']} | {cell('gain_tuned')}"
        )


def learned(
    source: str,
    result: Result,
    metric: str,
    prompt: YesNoPrompt,
    rows: list[Row],
    rating: str,
    sizes: Sequence[int],
    draws: int = 20,
) -> list[Bought] | str:
    """For each size N, over ``draws`` draws of whole groups: a head fitted on N rated rows as
    ``tune`` fits it (``heads.tuning.rating_head``, which also says whether ``tune`` would write
    it), and the Spearman of every other row by the source's protocol, zero-shot and with the
    head. A draw's groups are taken in one seeded order for every N, so its first N rows are
    among its first 2N, as a team rates on. A string says why nothing could be measured."""
    rated = {r.sample.key: r for r in rows if rating in r.ratings}
    targets = {
        k: (r.ratings[rating] - r.scales[rating][0]) / (r.scales[rating][1] - r.scales[rating][0])
        for k, r in rated.items()
    }
    scores = [s for s in result.scores_for(metric) if s.scored and s.sample_id in rated]
    material, _ = gather(scores, prompt, DEFAULT_STATES, lambda _: None)
    verdicts = material.verdicts
    if not len(verdicts):
        return "no verdicts with states"
    samples = np.asarray(verdicts.groups)

    def spearman_of(values: dict[str, float]) -> float:
        keys = list(values)
        humans = [rated[k].ratings[rating] for k in keys]
        groups_ = [rated[k].group for k in keys]
        return agreement_value(source, [values[k] for k in keys], humans, groups_)

    keys = sorted(set(samples.tolist()))
    groups = sorted({rated[k].group for k in keys})
    found = []
    for size in sizes:
        bought = Bought(size, [], [], [])
        for draw in range(draws):
            order = np.random.default_rng(draw).permutation(len(groups))
            chosen: set[str] = set()
            for index in order:
                if sum(1 for k in keys if rated[k].group in chosen) >= size:
                    break
                chosen.add(groups[index])
            train = np.array([rated[k].group in chosen for k in samples])
            test_rows = np.flatnonzero(~train)
            tuned = rating_head(
                metric,
                prompt,
                verdicts.rows(np.flatnonzero(train)),
                targets,
                DEFAULT_STATES,
                folds=5,
                seed=0,
                learned_from=f"{rating} ratings of {size} rows of {source}",
            )
            assert tuned.fitted is not None
            tested = samples[test_rows]
            bought.zero.append(spearman_of(means_by_group(tested, verdicts.zero_shot[test_rows])))
            predicted = predict(tuned.fitted, verdicts.rows(test_rows))
            bought.head.append(spearman_of(means_by_group(tested, predicted)))
            bought.written.append(tuned.kept)
        found.append(bought)
    return found


def write_curve(path: Path, source: str, measured: dict[str, dict[str, Any]]) -> None:
    """Merge the ratings of this source measured here into ``path`` (``heads.curve``'s ratings
    format): each run adds, or measures again, its own ratings and keeps the others'."""
    curve = json.loads(path.read_text()) if path.exists() else {"format": RATINGS_FORMAT}
    curve.setdefault("sets", {}).setdefault(source, {}).update(measured)
    path.write_text(json.dumps(curve, indent=1) + "\n")


def agreement_value(
    source: str, scores: list[float], ratings: list[float], groups: list[str]
) -> float:
    if source == "summeval":
        return summary_level(scores, ratings, groups)
    value = coefficients(np.array(scores)[None, :], np.array(ratings)[None, :], "spearman")[0]
    return float(value)


Table = list[tuple[str, str, str, str, int, int]]


def cost(result: Result, measured: Sequence[tuple[str, str, str, Metric]]) -> list[str]:
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
    draws: int = 20,
    built_in: dict[str, str] | None = None,
) -> tuple[Table, list[str], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Score every (criterion, reading) on ``rows``, and the ``built_in`` metrics (by the rating
    each answers), and correlate each with the people; with ``learn``, what a head
    fitted on that many rated rows buys. Returns the agreement table, the learning lines, each
    row's score beside its rating and the ratings curve (by rating: the criterion, its reading
    and what each N bought)."""
    table: Table = []
    learning: list[str] = []
    written: list[dict[str, Any]] = []
    curve: dict[str, dict[str, Any]] = {}
    measured: list[tuple[str, str, str, Metric]] = []
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
    for rating, name in (built_in or {}).items():
        measured.append((rating, name, "default", metric_by_name(name)))
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
        prompt = verdicts_prompt(metric)
        if learn and prompt is None:
            learning.append(f"| {rating} | {name} | {reading} | no head (not a mean of verdicts) |")
        elif learn and prompt is not None:
            bought = learned(source, result, metric.name, prompt, rows, rating, learn, draws)
            if isinstance(bought, str):
                learning.append(f"| {rating} | {name} | {reading} | {bought} |")
            else:
                learning += [f"| {rating} | {name} | {reading} | {b.line()} |" for b in bought]
                # The curve keeps the criterion's default reading where it was learned, else
                # the first reading that was.
                if rating not in curve or reading == default_reading(name):
                    curve[rating] = {
                        "metric": name,
                        "reading": reading,
                        "rows": len(scored),
                        "sizes": {str(b.size): b.record() for b in bought},
                    }
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
    return table, learning, written, curve


def default_reading(name: str) -> str:
    """How a ready criterion is read unless told otherwise ("default" for a built-in metric)."""
    return CriterionMetric(LIBRARY[name]).reading if name in LIBRARY else "default"


def verdicts_prompt(metric: Metric) -> YesNoPrompt | None:
    """The one prompt whose verdicts' mean is the metric's value (what a head is fitted
    through, as ``tune`` finds it), or None."""
    found = aggregation_of(metric.name, metric.config())
    return None if isinstance(found, str) else found.prompt


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
    parser.add_argument("--draws", type=int, default=20, help="Draws of rated rows a size.")
    parser.add_argument(
        "--curve", type=Path, default=None, help="Merge what --learn measured into this file."
    )
    args = parser.parse_args()

    rows = mtrag_rows(args.file) if args.source == "mtrag" else criteria_rows(args.file)
    rows = first_groups(rows, args.groups)
    wanted, built_in = CRITERIA[args.source], BUILT_IN.get(args.source, {})
    if args.criteria:
        wanted = {k: v for k, v in wanted.items() if k in args.criteria.split(",")}
        built_in = {k: v for k, v in built_in.items() if k in args.criteria.split(",")}
    readings = args.readings.split(",") if args.readings else READINGS["levels"]
    sizes = [int(n) for n in args.learn.split(",") if n]
    print(f"{args.source}: {len(rows)} rows, {len({r.group for r in rows})} groups")
    table, learning, written, curve = measure(
        args.source,
        rows,
        wanted,
        readings,
        args.judge,
        args.out / args.source,
        sizes,
        args.draws,
        built_in,
    )
    print("| rating | criterion | reading | Spearman | scored | unscored |")
    print("|---|---|---|---|---|---|")
    for line in table:
        print("| " + " | ".join(map(str, line)) + " |")
    if learning:
        print(
            "\nWith a head fitted on N rated rows as tune fits it, read on the rest "
            f"({args.draws} draws):"
        )
        print(
            "| rating | criterion | reading | N | zero-shot | head | gain | tune wrote | "
            "gain as tune decides |\n|---|---|---|---|---|---|---|---|---|"
        )
        print("\n".join(learning))
        if args.curve:
            write_curve(args.curve, args.source, curve)
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
