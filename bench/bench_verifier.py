"""The claim verifier's head: which design travels to sources it never saw, measured by leaving
each source out, beside the zero-shot read; and the shipped head, fitted on every source.

    python bench/verifier_sample.py runs/verifier/sample.jsonl
    ragmeter meta attribution runs/verifier/sample.jsonl --out runs/verifier/read \\
        --judge-option heads=none \\
        --judge-option states=l_out-8,l_out-12,l_out-16,l_out-20,l_out-24,result_norm
    python bench/bench_verifier.py --run runs/verifier/read \\
        [--write src/ragmeter/judges/bundled_heads.json]

The run may be read in part (it is read in rounds that cover every source): what it holds is
what is measured, and the first table says how much of each source that is. Nothing here asks
the model: the run kept every verdict's zero-shot P(Yes) and hidden states. What it prints:

1. what was read of each source;
2. each design's leave-one-source-out summary: the mean ROC AUC gain over the zero-shot read
   across sources, the worst source's, and how many sources fall by more than 0.01;
3. the chosen design's table, source by source, zero-shot beside the head;
4. SummEdits' balanced accuracy, each domain left out in turn, beside the published zero-shot
   figures of large models;
5. AttributionBench's in-domain test sample, the head fitted on everything but it;
6. ``--write FILE``: the chosen design fitted on every source, with its figures.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragmeter.claims import SUPPORTED
from ragmeter.heads.fitting import Design, predict
from ragmeter.heads.verifier import (
    TRAINING_FILE,
    LabelledClaims,
    LeftOut,
    Recipe,
    TrainingSet,
    best_threshold,
    fit_head,
    leave_one_source_out,
    load_claims,
    read_run,
    with_figures,
)
from ragmeter.judges.heads import Heads
from ragmeter.judges.weights import QWEN_CODER_1_5B
from ragmeter.stats import balanced_accuracy, macro_f1, roc_auc

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
AB_DEV = DATA / "attributionbench" / "dev_all_subset_balanced.jsonl"
AB_TEST = DATA / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl"
VERIFIER = DATA / "verifier"
STATES = ("l_out-8", "l_out-12", "l_out-16", "l_out-20", "l_out-24", "result_norm")
PENALTIES = (0.03, 0.3, 3.0, 30.0)


def design(states: tuple[str, ...], pooled: bool = False, components: int | None = None) -> Design:
    return Design(SUPPORTED.name, SUPPORTED.version, states, "", pooled, components)


RECIPES = [
    Recipe(design(()), "both", (0.0,)),
    Recipe(design(("l_out-16",), components=64), "both", PENALTIES),
]
MORE_RECIPES = [
    Recipe(design(("l_out-16",), components=64), "none", PENALTIES),
    Recipe(design(("l_out-16",)), "both", PENALTIES),
]
"""Measured with ``--all`` (nine more minutes on two cores)."""
"""What a verifier head may be: a calibration of P(Yes) alone; layer 16's first 64 principal
directions, with the rows balanced by source and label; other layers, numbers of directions
and the mean of layers are ``design(...)`` lines away. Each takes minutes on two cores (16
sources, each fitted with its penalty chosen inside)."""
PUBLISHED_SUMMEDITS = {
    "GPT-4": 82.1,
    "Claude-2.1": 74.4,
    "ChatGPT": 71.2,
    "QAFactEval": 65.5,
    "Llama-2-13B": 58.4,
    "Mistral-7B": 57.8,
    "SummaC": 57.1,
}
"""Balanced accuracy on SummEdits, zero-shot (Laban et al., 2023; the issue's figures)."""
LICENCES = (
    "AttributionBench (Apache-2.0; rows from ExpertQA, Stanford-GenSearch, AttributedQA, "
    "LFQA), SummEdits (Apache-2.0; 8 domains), Factcheck-GPT (Apache-2.0), BEGIN (Wizard of "
    "Wikipedia CC-BY-4.0, TopicalChat CDLA-Sharing-1.0, CMU-DoG festvox), WiCE (ODC-BY-1.0, "
    "text CC-BY-SA)"
)


def labelled(run: Path) -> tuple[LabelledClaims, set[str], Counter[str]]:
    """The run's verdicts on every labelled file, AttributionBench's sources named as such,
    with the ids of AttributionBench's test sample and how many claims each source has."""
    claims = []
    for path in [AB_DEV, AB_TEST]:
        for claim in load_claims([path]):
            claims.append(claim.model_copy(update={"source": f"AB-{claim.source}"}))
    test_ids = {claim.id for claim in load_claims([AB_TEST])}
    claims += load_claims(sorted(VERIFIER.glob("*.jsonl")))
    available = Counter(claim.source for claim in claims)
    data, notes = read_run(run, claims, STATES)
    for note in notes:
        print("note:", note)
    return data, test_ids, available


def read_table(data: LabelledClaims, available: Counter[str]) -> None:
    print("\n## 1. What was read\n")
    print("| source | read | of | supported | groups |")
    print("|---|---|---|---|---|")
    for source in sorted(available):
        rows = data.sources == source
        groups = len(set(data.groups[rows].tolist()))
        print(
            f"| {source} | {rows.sum()} | {available[source]} | {data.truth[rows].sum()} | "
            f"{groups} |"
        )
    print(f"| **all** | {len(data)} | {sum(available.values())} | {data.truth.sum()} | |")


def summary_table(data: LabelledClaims, recipes: list[Recipe]) -> list[LeftOut]:
    print("\n## 2. Designs, each source left out in turn (ROC AUC)\n")
    print("| design | mean AUC, zero-shot | mean AUC, head | mean gain | worst source | "
          "sources below -0.01 | seconds |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    found = []
    for recipe in recipes:
        start = time.perf_counter()
        left = leave_one_source_out(data, recipe)
        zero = np.mean([f.zero_shot_auc for f in left.figures if f.zero_shot_auc is not None])
        head = np.mean([f.head_auc for f in left.figures if f.head_auc is not None])
        worst = min(left.figures, key=lambda f: f.gain if f.gain is not None else 0.0)
        below = sum(gain < -0.01 for gain in left.gains())
        print(
            f"| {recipe.name} | {zero:.3f} | {head:.3f} | {left.mean_gain():+.3f} | "
            f"{worst.source} {left.worst_gain():+.3f} | {below} | "
            f"{time.perf_counter() - start:.0f} |",
            flush=True,
        )
        found.append(left)
    start = time.perf_counter()
    zero, head, worst = mlp_left_out(data)
    print(
        f"| non-linear: {HIDDEN} tanh units over {COMPONENTS} components of l_out-16 "
        f"(not shippable as a linear head); balanced by both | {zero:.3f} | {head:.3f} | "
        f"{head - zero:+.3f} | {worst:+.3f} | | {time.perf_counter() - start:.0f} |",
        flush=True,
    )
    return found


HIDDEN = 16
COMPONENTS = 64


def _unpack(theta: np.ndarray) -> list[np.ndarray]:
    inputs = (len(theta) - 2 * HIDDEN - 2) // HIDDEN
    parts, at = [], 0
    for shape in [(inputs, HIDDEN), (HIDDEN,), (HIDDEN,), (2,)]:
        size = int(np.prod(shape))
        parts.append(theta[at : at + size].reshape(shape))
        at += size
    return parts


def _mlp_loss(
    theta: np.ndarray, x: np.ndarray, z: np.ndarray, y: np.ndarray, counts: np.ndarray
) -> tuple[float, np.ndarray]:
    penalty = 1.0
    w1, b1, w2, ab = _unpack(theta)
    hidden = np.tanh(x @ w1 + b1)
    score = ab[0] * z + ab[1] + hidden @ w2
    p = 1 / (1 + np.exp(-np.clip(score, -50, 50)))
    value = counts @ (np.logaddexp(0, score) - y * score)
    value += 0.5 * penalty * (np.sum(w1**2) + np.sum(w2**2))
    r = (p - y) * counts
    back = np.outer(r, w2) * (1 - hidden**2)
    gradient = [
        (x.T @ back + penalty * w1).ravel(),
        back.sum(0),
        hidden.T @ r + penalty * w2,
        np.array([r @ z, r.sum()]),
    ]
    return float(value), np.concatenate(gradient)


def mlp_left_out(data: LabelledClaims, state: str = "l_out-16") -> tuple[float, float, float]:
    """A small non-linear head, for comparison only (the shipped heads are linear): the
    zero-shot logit plus a tanh layer of ``HIDDEN`` units over ``COMPONENTS`` principal
    components of the state, L2-penalised, rows balanced by source and label; each source left
    out in turn. Returns the mean zero-shot AUC, the mean head AUC and the worst gain."""
    from scipy import optimize

    from ragmeter.heads.verifier import balancing

    rng = np.random.default_rng(0)
    z = data.verdicts.logits()
    y = data.truth.astype(float)
    raw = data.verdicts.states[state]
    zero, head = [], []
    for source in sorted(set(data.sources.tolist())):
        held = data.sources == source
        train, test = np.flatnonzero(~held), np.flatnonzero(held)
        center, scale = raw[train].mean(0), np.maximum(raw[train].std(0), 1e-3)
        basis = np.linalg.svd((raw[train] - center) / scale, full_matrices=False)[2]
        x = ((raw - center) / scale) @ basis[:COMPONENTS].T
        x /= np.maximum(x[train].std(0), 1e-6)
        counts = balancing(data.sources[train], data.truth[train], "both")
        start = np.concatenate(
            [rng.normal(0, 0.1, x.shape[1] * HIDDEN), np.zeros(HIDDEN), np.zeros(HIDDEN), [1, 0]]
        )
        start[-HIDDEN - 2 : -2] = rng.normal(0, 0.1, HIDDEN)
        theta = optimize.minimize(
            _mlp_loss, start, args=(x[train], z[train], y[train], counts), jac=True,
            method="L-BFGS-B", options={"maxiter": 300},
        ).x  # fmt: skip
        w1, b1, w2, ab = _unpack(theta)
        read = ab[0] * z[test] + ab[1] + np.tanh(x[test] @ w1 + b1) @ w2
        found = (
            roc_auc(data.truth[test], data.verdicts.zero_shot[test]),
            roc_auc(data.truth[test], read),
        )
        if None not in found:
            zero.append(found[0])
            head.append(found[1])
    gains = np.array(head) - np.array(zero)
    return float(np.mean(zero)), float(np.mean(head)), float(gains.min())


def sources_table(left: LeftOut) -> None:
    print(f"\n## 3. {left.recipe.name}: each source left out\n")
    print("| left out | claims | supported | ROC AUC zero-shot | ROC AUC head | gain | "
          "balanced acc. zero-shot | balanced acc. head |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for f in left.figures:
        gain = "—" if f.gain is None else f"{f.gain:+.3f}"
        print(
            f"| {f.source} | {f.claims} | {f.supported} | {_fmt(f.zero_shot_auc)} | "
            f"{_fmt(f.head_auc)} | {gain} | {f.zero_shot_balanced:.3f} | {f.head_balanced:.3f} |"
        )


def summedits_table(left: LeftOut) -> None:
    domains = [f for f in left.figures if f.source.startswith("SummEdits")]
    if not domains:
        return
    print("\n## 4. SummEdits, each domain left out in turn (balanced accuracy, %)\n")
    print("| domain | claims | zero-shot (threshold from the other sources) | head at 0.5 |")
    print("|---|---|---|---|")
    for f in domains:
        print(
            f"| {f.source} | {f.claims} | {100 * f.zero_shot_balanced:.1f} | "
            f"{100 * f.head_balanced:.1f} |"
        )
    zero = np.mean([f.zero_shot_balanced for f in domains])
    head = np.mean([f.head_balanced for f in domains])
    print(f"| **mean** | {sum(f.claims for f in domains)} | {100 * zero:.1f} | {100 * head:.1f} |")
    print("\nPublished zero-shot (whole benchmark): " + ", ".join(
        f"{name} {value}" for name, value in PUBLISHED_SUMMEDITS.items()
    ))  # fmt: skip


def previous_table(data: LabelledClaims, previous: Path) -> None:
    """A head fitted on AttributionBench alone, read on the sources it never saw."""
    head = Heads.load(previous).heads[SUPPORTED.name]
    print(f"\n## 6. The head fitted on AttributionBench alone ({previous.name}), other sources\n")
    print("| source | claims | ROC AUC zero-shot | ROC AUC that head | gain |")
    print("|---|---|---|---|---|")
    gains = []
    for source in sorted(set(data.sources.tolist())):
        if source.startswith("AB-"):
            continue
        rows = np.flatnonzero(data.sources == source)
        t = data.truth[rows]
        zero = roc_auc(t, data.verdicts.zero_shot[rows])
        read = roc_auc(t, predict(head, data.verdicts.rows(rows)))
        if zero is not None and read is not None:
            gains.append(read - zero)
        gain = "—" if zero is None or read is None else f"{read - zero:+.3f}"
        print(f"| {source} | {len(rows)} | {_fmt(zero)} | {_fmt(read)} | {gain} |")
    if gains:
        print(f"| **mean gain** | | | | {np.mean(gains):+.3f} |")


def attributionbench_test(data: LabelledClaims, test_ids: set[str], recipe: Recipe) -> None:
    is_test = np.array([key in test_ids for key in data.ids])
    if not is_test.any():
        return
    train = data.rows(np.flatnonzero(~is_test))
    test = data.rows(np.flatnonzero(is_test))
    head, penalty = fit_head(train, recipe)
    read = predict(head, test.verdicts)
    zero = test.verdicts.zero_shot
    cut = best_threshold(train.truth, train.verdicts.zero_shot)
    t = test.truth
    print(f"\n## 5. AttributionBench test sample ({len(t)} of 500 read), head fitted without it\n")
    print("| read | threshold | macro-F1 | balanced accuracy | ROC AUC |")
    print("|---|---|---|---|---|")
    for name, probability, at in [
        ("zero-shot", zero, cut),
        ("zero-shot", zero, 0.5),
        (f"head (penalty {penalty:g})", read, 0.5),
    ]:
        predicted = probability >= at
        print(
            f"| {name} | {at:.3f} | {macro_f1(t, predicted):.3f} | "
            f"{balanced_accuracy(t, predicted):.3f} | {_fmt(roc_auc(t, probability))} |"
        )


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", type=Path, required=True, help="a meta attribution run")
    parser.add_argument("--all", action="store_true", help="measure MORE_RECIPES too")
    parser.add_argument("--design", type=int, help="the RECIPES index to ship (default: best)")
    parser.add_argument("--write", type=Path, help="write the shipped heads here")
    parser.add_argument(
        "--previous", type=Path, help="a heads file fitted on AttributionBench alone, to compare"
    )
    args = parser.parse_args()

    data, test_ids, available = labelled(args.run)
    read_table(data, available)
    found = summary_table(data, RECIPES + (MORE_RECIPES if args.all else []))
    if args.design is not None:
        chosen = found[args.design]
    else:
        chosen = max(found, key=lambda left: (left.worst_gain() >= -0.02, left.mean_gain()))
    sources_table(chosen)
    summedits_table(chosen)
    attributionbench_test(data, test_ids, chosen.recipe)
    if args.previous:
        previous_table(data, args.previous)
    if args.write:
        write(data, chosen, args.write)


def write(data: LabelledClaims, chosen: LeftOut, target: Path) -> None:
    """The shipped head and its training set: the claims kept as the design's projections
    (``heads.verifier.TrainingSet``, beside the heads file), the head fitted on them, so that
    the training set refits the shipped head exactly and ``tune`` refits on top of it."""
    training = TrainingSet.build(data, chosen.recipe, SUPPORTED.version)
    training.save(target.parent / TRAINING_FILE)
    head, penalty = training.fit()
    counts = Counter(data.sources.tolist())
    learned = (
        f"{len(data)} human-labelled claims of {len(counts)} sources ({LICENCES}); "
        f"{chosen.recipe.name}; penalty {penalty:g}"
    )
    heads = Heads(
        heads={SUPPORTED.name: with_figures(head, chosen, learned)},
        judge={"name": f"local:{QWEN_CODER_1_5B.name}", "weights_sha256": QWEN_CODER_1_5B.sha256},
    )
    heads.save(target)
    print(f"\nwritten: {target} and {target.parent / TRAINING_FILE}")


if __name__ == "__main__":
    main()
