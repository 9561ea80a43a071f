"""Are the PPI++ intervals of ``ragmeter calibrate`` honest, and how much narrower are they?

    python bench/bench_ppi.py [--rounds 1000] [--sizes 25,50,100] [--json FILE]
    python bench/bench_ppi.py --mtrag-run runs/meta-mtrag --ragchecker-run runs/meta-ragchecker \
        --attribution-run runs/meta-attribution

On each human-rated dev set, ``n`` samples are drawn as the "rated" ones ``--rounds`` times;
every other sample is judged only. Each draw gives the PPI++ 95 % interval of the people's mean
(``ragmeter.heads.ppi.human_mean``, what ``calibrate`` prints) and the ratings-only interval.
Reported per set, judge and ``n``: how often each interval covers the mean of all the people's
ratings, and the PPI width over the ratings-only width (mean over draws).

Sets and judges:

- MTRAG (``../shared/data/mtrag/mtrag_dev.jsonl``, 180 answers, mean of 2-3 annotators' 1-4
  ratings of faithfulness and completeness). Judges: the authors' automatic scores in each row
  (``rl_f``: RAGAS faithfulness by a strong LLM; ``rb_llm``: a RAD-Bench-style LLM judge), and,
  with ``--mtrag-run``, a ragmeter run over the rows (``ragmeter meta mtrag ... --out FOLDER``:
  faithfulness for faithfulness, answer relevance for completeness), matched by sample id
  (``task_id/model_id``).
- The same answers paired by conversation: Llama-3.1-405B's faithfulness minus GPT-4o's (60
  pairs), the difference ``compare --labels A --labels B`` estimates; the judges are the
  differences of the automatic scores and, with ``--mtrag-run``, of the run's faithfulness.
- RAGChecker (``../shared/data/ragchecker/ragchecker_dev.jsonl``, 80 questions, each with two
  systems' answers): per question, the mean of two annotators' -2..2 labels of whether the
  second answer is more correct, more complete and better overall than the first; the people's
  mean preference is estimated. Judges: the second answer's precision, recall and F1 minus the
  first's, from RAGChecker's own run (in each row) and, with ``--ragchecker-run``, from a
  ragmeter run (``ragmeter meta ragchecker ... --out FOLDER``: ``answer_correctness``; an
  unscored answer leaves its question out).
- AttributionBench (``../shared/data/attributionbench/dev_all_subset_balanced.jsonl``, 1,198
  claims, binary human attribution labels). Judges: the share of the claim's words found in its
  references (lexical, no model) and, with ``--attribution-run``, a ragmeter run (``ragmeter
  meta attribution ... --out FOLDER``: P(supported) per claim id).

Every set also gets two judges that know nothing, to show the estimate is never worse than the
ratings alone: a constant, and the first judge's scores shuffled over the samples in each draw.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragmeter.heads.ppi import human_mean
from ragmeter.heads.ratings import Scale
from ragmeter.meta.ragchecker import FIGURES, load_ragchecker
from ragmeter.score import Score
from ragmeter.text import WORD
from ragmeter.viewer.folders import read_scores

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
MTRAG = DATA / "mtrag" / "mtrag_dev.jsonl"
ATTRIBUTION = DATA / "attributionbench" / "dev_all_subset_balanced.jsonl"
RAGCHECKER = DATA / "ragchecker" / "ragchecker_dev.jsonl"
MTRAG_METRICS = {"faithfulness": "faithfulness", "completeness": "answer_relevance"}
"""Each MTRAG rating, and the ragmeter metric of a run that judges it."""
SHORT = {"gpt-4o": "GPT-4o", "llama-3.1-405b-instruct": "Llama-405B", "reference": "human"}


@dataclass
class Case:
    """One human rating of one set, with the judges to try on it."""

    name: str
    ids: list[str]
    ratings: np.ndarray
    scale: Scale
    judges: dict[str, dict[str, float]]
    """Judge name -> its score by sample id (samples it left out are not in it)."""
    judge_range: tuple[float, float] = (0.0, 1.0)
    """The judges' own scale: 0-1, or -1..1 for a difference of two answers' scores."""


def mtrag_cases(path: Path, run: Path | None) -> Iterator[Case]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ids = [f"{row['task_id']}/{row['model_id']}" for row in rows]
    for rating, metric in MTRAG_METRICS.items():
        judges = {
            name: {i: float(row["auto"][name]) for i, row in zip(ids, rows, strict=True)}
            for name in ("rl_f", "rb_llm")
        }
        # a run of some of the metrics judges some of the ratings
        if run is not None and (found := from_run(run, metric, ids)):
            judges[f"ragmeter {metric}"] = found
        yield Case(
            name=f"MTRAG {rating}",
            ids=ids,
            ratings=np.array([row["human_mean"][rating] for row in rows], dtype=float),
            scale=Scale(low=1, high=4, stated=True),
            judges=judges,
        )


def mtrag_difference(
    path: Path, rating: str, first: str, second: str, run: Path | None = None
) -> Case:
    """Two responders' answers to the same conversations: the people's mean difference of
    ``rating`` (``second`` minus ``first``), as ``compare --labels`` estimates it, with the
    difference of the automatic scores, and of a ragmeter run's, as the judges."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by = {(row["task_id"], row["model_id"]): row for row in rows}
    tasks = [t for t, model in by if model == first and (t, second) in by]
    judges = {
        f"{name} difference": {
            t: float(by[t, second]["auto"][name] - by[t, first]["auto"][name]) for t in tasks
        }
        for name in ("rl_f", "rb_llm")
    }
    metric = MTRAG_METRICS[rating]
    if run is not None and (found := run_scores(run, metric)):
        judges[f"ragmeter {metric} difference"] = {
            t: found[f"{t}/{second}"] - found[f"{t}/{first}"]
            for t in tasks
            if f"{t}/{second}" in found and f"{t}/{first}" in found
        }
    ratings = [
        by[t, second]["human_mean"][rating] - by[t, first]["human_mean"][rating] for t in tasks
    ]
    return Case(
        name=f"MTRAG {rating}: {SHORT[second]} - {SHORT[first]}",
        ids=tasks,
        ratings=np.array(ratings, dtype=float),
        scale=Scale(low=-3, high=3, stated=True),
        judges=judges,
        judge_range=(-1.0, 1.0),
    )


def ragchecker_cases(path: Path, run: Path | None) -> Iterator[Case]:
    """Per label, the annotators' mean preference for the second answer, with differences of
    the second answer's figure minus the first's as the judges (the authors' pairing of figures
    and labels, ``meta ragchecker``'s)."""
    instances = load_ragchecker(path)
    ids = [i.instance for i in instances]
    scores = {s.sample_id: s for s in read_scores(run)[0]} if run is not None else {}
    if run is not None:
        print(f"judge 'ragmeter answer_correctness': {run}, {len(scores)} answers scored")
    for dimension, figure in FIGURES.items():
        theirs = {
            i.instance: second - first
            for i in instances
            for first, second in [i.theirs[dimension]]
            if first is not None and second is not None
        }
        judges = {f"RAGChecker's {figure} difference": theirs}
        if run is not None:
            judges[f"ragmeter {figure} difference"] = {
                i.instance: figures[1] - figures[0]
                for i in instances
                for figures in [[_explained(scores.get(s.id), figure) for s in i.samples]]
                if None not in figures
            }
        yield Case(
            name=f"RAGChecker {dimension}, 2nd - 1st",
            ids=ids,
            ratings=np.array([np.mean(i.labels[dimension]) for i in instances]),
            scale=Scale(low=-2, high=2, stated=True),
            judges=judges,
            judge_range=(-1.0, 1.0),
        )


def _explained(score: Score | None, figure: str) -> float | None:
    """One figure of an answer-correctness score's explanation; None when it is unscored."""
    return float(score.explanation[figure]) if score is not None and score.scored else None


def attribution_case(path: Path, run: Path | None) -> Case:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ids = [str(row["id"]) for row in rows]
    judges = {
        "claim words in references": {
            i: word_overlap(row["claim"], row["references"])
            for i, row in zip(ids, rows, strict=True)
        }
    }
    if run is not None and (found := from_run(run, "supported", ids)):
        judges["ragmeter P(supported)"] = found
    return Case(
        name="AttributionBench attributable",
        ids=ids,
        ratings=np.array([row["attribution_label"] == "attributable" for row in rows], float),
        scale=Scale(low=0, high=1, stated=True),
        judges=judges,
    )


def word_overlap(claim: str, references: list[str]) -> float:
    """The share of the claim's distinct words (three letters or more) that its references
    hold: a judge without a model."""
    words = {w for w in WORD.findall(claim.lower()) if len(w) > 2}
    found = set(WORD.findall(" ".join(references).lower()))
    return len(words & found) / len(words) if words else 0.0


def from_run(folder: Path, metric: str, ids: list[str]) -> dict[str, float]:
    """A run's scores as a judge, saying which run and how many rows it scored."""
    found = run_scores(folder, metric)
    scored = sum(key in found for key in ids)
    print(f"judge 'ragmeter {metric}': {folder}, {scored} of {len(ids)} rows scored")
    return found


def run_scores(folder: Path, metric: str) -> dict[str, float]:
    """A ragmeter results folder's scores of ``metric`` by sample id: ``verdicts.jsonl`` of
    ``meta attribution``, else the scores of ``evaluate`` or ``meta mtrag``."""
    verdicts = folder / "verdicts.jsonl"
    if verdicts.is_file():
        rows = [json.loads(line) for line in verdicts.read_text().splitlines() if line.strip()]
        return {r["id"]: r["p_supported"] for r in rows if r.get("p_supported") is not None}
    scores, notes = read_scores(folder)
    for note in notes:
        if not note.startswith("no scores.jsonl"):  # meta mtrag keeps its scores in the database
            print(f"{folder}: {note}")
    return {s.sample_id: s.value for s in scores if s.metric == metric and s.value is not None}


SHUFFLED = "first judge shuffled (uninformative)"
"""Shuffled over samples afresh in each draw: any one shuffle of a finite set keeps a chance
correlation with the ratings, which over the draws averages out."""


def with_controls(case: Case) -> dict[str, dict[str, float]]:
    """The case's judges and two that know nothing: a constant and the first judge shuffled."""
    return {
        **case.judges,
        "constant 0.5 (uninformative)": dict.fromkeys(case.ids, 0.5),
        SHUFFLED: next(iter(case.judges.values())),
    }


def measure(
    case: Case, judge: dict[str, float], n: int, rounds: int, seed: int, *, shuffle: bool = False
) -> dict[str, float | int | None]:
    """Coverage and width over ``rounds`` draws of ``n`` rated samples among those judged; with
    ``shuffle``, the judge's scores are shuffled over the samples in each draw."""
    kept = [i for i, key in enumerate(case.ids) if key in judge]
    y = case.ratings[kept]
    f = np.array([judge[case.ids[i]] for i in kept], dtype=float)
    truth = float(y.mean())
    rng = np.random.default_rng(seed)
    covered = covered_alone = 0
    ratios, weights, correlations = [], [], []
    for _ in range(rounds):
        rated = np.zeros(y.size, dtype=bool)
        rated[rng.choice(y.size, size=n, replace=False)] = True
        if shuffle:
            f = rng.permutation(f)
        found = human_mean(f[rated], y[rated], f[~rated], case.scale, judge_range=case.judge_range)
        covered += found.ppi.low <= truth <= found.ppi.high
        covered_alone += found.labels_only.low <= truth <= found.labels_only.high
        if found.width_ratio is not None:
            ratios.append(found.width_ratio)
        weights.append(found.weight)
        if found.correlation is not None:
            correlations.append(found.correlation)
    return {
        "samples": int(y.size),
        "n": n,
        "truth": truth,
        "coverage_ppi": covered / rounds,
        "coverage_labels_only": covered_alone / rounds,
        "width_ratio": float(np.mean(ratios)),
        "width_ratio_max": float(np.max(ratios)),
        "lambda": float(np.mean(weights)),
        "correlation": float(np.mean(correlations)) if correlations else None,
    }


def _r(correlation: float | int | None) -> str:
    return "—" if correlation is None else f"{correlation:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mtrag", type=Path, default=MTRAG)
    parser.add_argument("--attributionbench", type=Path, default=ATTRIBUTION)
    parser.add_argument(
        "--mtrag-run", type=Path, help="A 'ragmeter meta mtrag' results folder as a judge."
    )
    parser.add_argument("--ragchecker", type=Path, default=RAGCHECKER)
    parser.add_argument(
        "--ragchecker-run",
        type=Path,
        help="A 'ragmeter meta ragchecker' results folder as a judge.",
    )
    parser.add_argument(
        "--attribution-run",
        type=Path,
        help="A 'ragmeter meta attribution' results folder as a judge.",
    )
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--sizes", default="25,50,100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="Also write every figure to this file.")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    cases = [
        *mtrag_cases(args.mtrag, args.mtrag_run),
        mtrag_difference(
            args.mtrag, "faithfulness", "gpt-4o", "llama-3.1-405b-instruct", args.mtrag_run
        ),
        *ragchecker_cases(args.ragchecker, args.ragchecker_run),
        attribution_case(args.attributionbench, args.attribution_run),
    ]
    if None in (args.mtrag_run, args.ragchecker_run, args.attribution_run):
        print(
            "judges: the sets' own automatic scores; for a ragmeter judge, run e.g. "
            "'ragmeter meta mtrag ../shared/data/mtrag/mtrag_dev.jsonl --out runs/meta-mtrag' "
            "and pass --mtrag-run runs/meta-mtrag (--ragchecker-run for 'meta ragchecker', "
            "--attribution-run for 'meta attribution')"
        )
    print(
        f"{args.rounds} draws per row; coverage of the mean of all ratings by the 95 % interval; "
        "width: PPI++ over ratings-only, mean (max) over draws"
    )
    header = (
        f"{'set':<40}{'judge':<38}{'n':>4}{'r':>6}{'lambda':>7}"
        f"{'cover PPI':>10}{'cover alone':>12}{'width':>7}{'(max)':>7}"
    )
    print(header)
    figures = []
    for case in cases:
        for judge_name, judge in with_controls(case).items():
            for n in [n for n in sizes if n < len(case.ids)]:
                shuffle = judge_name == SHUFFLED
                row = measure(case, judge, n, args.rounds, args.seed, shuffle=shuffle)
                figures.append({"set": case.name, "judge": judge_name, **row})
                print(
                    f"{case.name:<40}{judge_name[:37]:<38}{n:>4}{_r(row['correlation']):>6}"
                    f"{row['lambda']:>7.2f}{row['coverage_ppi']:>10.3f}"
                    f"{row['coverage_labels_only']:>12.3f}{row['width_ratio']:>7.3f}"
                    f"{row['width_ratio_max']:>7.3f}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
