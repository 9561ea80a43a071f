"""Refit the shipped verdict heads from scratch and measure them beside the zero-shot read.

    DATA=../shared/data/attributionbench
    STATES=states=l_out-12,l_out-16,l_out-20,l_out-24,result_norm
    ragmeter meta attribution $DATA/dev_all_subset_balanced.jsonl \
        --out runs/heads-ab-dev --judge-option heads=none --judge-option $STATES
    ragmeter meta attribution $DATA/test_all_subset_balanced_sampled500.jsonl \
        --out runs/heads-ab-test --judge-option heads=none --judge-option $STATES
    python bench/bench_heads.py --dev-run runs/heads-ab-dev --test-run runs/heads-ab-test \
        [--mtrag-run runs/heads-mtrag] [--write src/ragmeter/judges/bundled_heads.json]

The runs keep every verdict's zero-shot P(Yes) and the judge's hidden states (``Exchange.states``),
so nothing here asks the model. What it prints:

1. **Designs** on AttributionBench's dev file (1,198 human-labelled claims about 331 questions),
   5-fold out of fold with a question's claims in one fold (they share references): which hidden
   state a head reads (the final one, or a layer's output), ROC AUC and macro-F1 at 0.5, beside
   the zero-shot read.
2. **The held-out test sample** (500 claims), the chosen design fitted on the dev file only:
   macro-F1 at 0.5 and at the threshold best on the dev file's out-of-fold reads, ROC AUC; the
   zero-shot read at the threshold best on the dev file, as ``meta attribution --calibrate``
   picks it.
3. With ``--mtrag-run`` (a ``meta mtrag`` run with ``faithfulness``): faithfulness's Spearman
   correlation with people's ratings of 180 answers, zero-shot, read by the heads fitted on
   AttributionBench (data they never saw: the dev file's, and the shipped one), and by heads
   fitted on MTRAG's own ratings through the mean (5-fold, a conversation's answers in one
   fold, each fold read by a head fitted on the other four).
4. ``--write FILE``: the shipped head, the chosen design fitted on the dev file and the test
   sample together (after the test figures above are measured), with its figures.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter import stats
from ragmeter.claims import SUPPORTED
from ragmeter.heads.fitting import Design, Fitter, Verdicts, gather, predict
from ragmeter.judges.heads import Head, Heads
from ragmeter.judges.weights import QWEN_CODER_1_5B
from ragmeter.meta.attribution import load_attribution
from ragmeter.meta.mtrag import load_mtrag
from ragmeter.score import Score
from ragmeter.stats import correlation, macro_f1, roc_auc
from ragmeter.store import stored_payloads
from ragmeter.viewer.folders import read_scores

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
DEV = DATA / "attributionbench" / "dev_all_subset_balanced.jsonl"
TEST = DATA / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl"
MTRAG = DATA / "mtrag" / "mtrag_dev.jsonl"
DESIGNS = [(), ("result_norm",), ("l_out-12",), ("l_out-16",), ("l_out-20",), ("l_out-24",)]
"""What a head may read: nothing (a calibration of P(Yes)), one hidden state, or two."""


@dataclass
class Labelled:
    """A ``meta attribution`` run's verdicts with people's labels and each claim's question
    (claims about one question share its references: they share a fold)."""

    verdicts: Verdicts
    truth: np.ndarray
    questions: list[str]


def attribution_verdicts(run: Path, data: Path, states: tuple[str, ...]) -> Labelled:
    """The claims' verdicts in a ``meta attribution`` run, in the order stored."""
    claims = {claim.id: claim for claim in load_attribution(data)}
    scores = [Score.model_validate_json(p) for p in stored_payloads(run / "verdicts.sqlite")]
    scores = [s for s in scores if s.sample_id in claims and s.scored]
    material, notes = gather(scores, SUPPORTED, states, lambda _: None)
    for note in notes:
        print("note:", note)
    truth = np.array([claims[key].label for key in material.samples], dtype=float)
    return Labelled(material.verdicts, truth, [claims[key].question for key in material.samples])


def best_threshold(truth: np.ndarray, probability: np.ndarray) -> float:
    """The cut of the best macro-F1."""
    candidates = np.unique(np.round(probability, 4))
    return stats.best_threshold(candidates, lambda t: macro_f1(truth, probability >= t))


def fitter(data: Labelled, states: tuple[str, ...], learned: str) -> Fitter:
    design = Design(SUPPORTED.name, SUPPORTED.version, states, learned)
    truth = data.truth.astype(bool)

    def auc(rows: np.ndarray, predicted: np.ndarray) -> float:
        return roc_auc(truth[rows], predicted) or 0.5

    return Fitter(design, data.verdicts, labels=data.truth, score=auc, together=data.questions)


def designs_table(dev: Labelled) -> dict[tuple[str, ...], np.ndarray]:
    print(f"\n## 1. Designs on the dev file ({len(dev.truth)} claims), 5-fold out of fold\n")
    print("| reads | ROC AUC | macro-F1 at 0.5 | penalty (all dev) |")
    print("|---|---|---|---|")
    t = dev.truth.astype(bool)
    zero = dev.verdicts.zero_shot
    print(f"| zero-shot P(Yes) | {roc_auc(t, zero):.3f} | {macro_f1(t, zero >= 0.5):.3f} | |")
    found = {}
    for states in DESIGNS:
        fitting = fitter(dev, states, "dev")
        oof = found[states] = fitting.out_of_fold()
        name = " + ".join(states) or "calibration of P(Yes) alone"
        print(
            f"| head: {name} | {roc_auc(t, oof):.3f} | {macro_f1(t, oof >= 0.5):.3f} | "
            f"{fitting.fitted().penalty:g} |",
            flush=True,
        )
    return found


def test_table(
    dev: Labelled, test: Labelled, states: tuple[str, ...], dev_oof: np.ndarray
) -> tuple[Head, dict[str, Any]]:
    print(f"\n## 2. Held-out test sample ({len(test.truth)} claims), heads fitted on dev only\n")
    print("| read | threshold | macro-F1 | accuracy | ROC AUC |")
    print("|---|---|---|---|---|")
    t, d = test.truth.astype(bool), dev.truth.astype(bool)
    zero_cut = best_threshold(d, dev.verdicts.zero_shot)
    zero = test.verdicts.zero_shot
    rows = [("zero-shot P(Yes)", f"{zero_cut:.3f} (best on dev)", zero, zero_cut)]
    fitted = fitter(dev, states, "dev").fitted()
    read = predict(fitted.head, test.verdicts)
    name = f"head: {' + '.join(states)} (penalty {fitted.penalty:g})"
    cut = best_threshold(d, dev_oof)
    rows += [(name, "0.5", read, 0.5), (name, f"{cut:.3f} (best on dev, out of fold)", read, cut)]
    for label, threshold, probability, at in rows:
        predicted = probability >= at
        print(
            f"| {label} | {threshold} | {macro_f1(t, predicted):.3f} | "
            f"{np.mean(predicted == t):.3f} | {roc_auc(t, probability):.3f} |"
        )
    figures = {
        # Measured with the head fitted on the dev file alone, before the test sample joined
        # the shipped head's training data.
        "test_claims": len(t),
        "dev_only_head_test_roc_auc": round(float(roc_auc(t, read) or 0), 3),
        "dev_only_head_test_macro_f1_at_0.5": round(macro_f1(t, read >= 0.5), 3),
        "zero_shot_test_roc_auc": round(float(roc_auc(t, zero) or 0), 3),
        "zero_shot_test_macro_f1_at_dev_threshold": round(macro_f1(t, zero >= zero_cut), 3),
        "dev_grouped_out_of_fold_roc_auc": round(float(roc_auc(d, dev_oof) or 0), 3),
    }
    return fitted.head, figures


def mtrag_table(run: Path, head: Head, shipped: Head) -> None:
    rows = {row.sample.key: row for row in load_mtrag(MTRAG)}
    scores = [s for s in read_scores(run)[0] if s.metric == "faithfulness" and s.scored]
    material, notes = gather(scores, SUPPORTED, head.states, lambda _: None)
    for note in notes:
        print("note:", note)
    verdicts = material.verdicts
    groups = verdicts.groups
    assert groups is not None
    keys = sorted(set(material.samples))
    ratings = {k: rows[k].human["faithfulness"] for k in keys if "faithfulness" in rows[k].human}
    keys = [k for k in keys if k in ratings]

    def spearman(predicted: np.ndarray) -> str:
        means = [predicted[groups == k].mean() for k in keys]
        found = correlation(means, [ratings[k] for k in keys], "spearman")
        return "—" if found is None else f"{found.value:.2f} [{found.low:.2f}, {found.high:.2f}]"

    print(f"\n## 3. MTRAG faithfulness, {len(keys)} answers with context, Spearman with people\n")
    print("| read | Spearman [95 % CI] |")
    print("|---|---|")
    print(f"| zero-shot | {spearman(verdicts.zero_shot)} |")
    print(f"| head fitted on AttributionBench's dev file | {spearman(predict(head, verdicts))} |")
    print(
        "| the shipped head (AttributionBench's dev file and test sample) | "
        f"{spearman(predict(shipped, verdicts))} |"
    )
    targets = {k: (ratings[k] - 1) / 3 for k in keys}
    chosen = np.isin(groups, keys)
    sub = verdicts.rows(np.flatnonzero(chosen))
    sub_groups = sub.groups
    assert sub_groups is not None

    def agreement(rows: np.ndarray, predicted: np.ndarray) -> float:
        members = sorted(set(sub_groups[rows].tolist()))
        means = [predicted[sub_groups[rows] == k].mean() for k in members]
        found = correlation(means, [targets[k] for k in members], "spearman", rounds=1)
        return -1.0 if found is None else found.value

    design = Design(SUPPORTED.name, SUPPORTED.version, head.states, "MTRAG ratings")
    # The answers of one conversation share its passages: they share a fold.
    conversations = [key.split("<::>")[0] for key in sub_groups]
    oof = Fitter(
        design, sub, targets=targets, score=agreement, together=conversations
    ).out_of_fold()
    full = np.full(len(verdicts), np.nan)
    full[chosen] = oof
    print(
        "| head fitted on MTRAG ratings through the mean, 5-fold out of fold (a conversation's "
        f"answers in one fold) | {spearman(full)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dev-run", type=Path, required=True)
    parser.add_argument("--test-run", type=Path, required=True)
    parser.add_argument("--mtrag-run", type=Path)
    parser.add_argument("--states", default="", help="the design to ship (default: best on dev)")
    parser.add_argument("--write", type=Path, help="write the shipped heads here")
    args = parser.parse_args()

    every = tuple(sorted({name for design in DESIGNS for name in design}))
    dev = attribution_verdicts(args.dev_run, DEV, every)
    test = attribution_verdicts(args.test_run, TEST, every)
    oof = designs_table(dev)
    if args.states:
        states = tuple(args.states.split(","))
    else:
        states = max((d for d in DESIGNS if d), key=lambda d: roc_auc(dev.truth > 0, oof[d]) or 0)
    head, figures = test_table(dev, test, states, oof[states])
    both = Labelled(
        Verdicts(
            np.concatenate([dev.verdicts.zero_shot, test.verdicts.zero_shot]),
            {n: np.concatenate([dev.verdicts.states[n], test.verdicts.states[n]]) for n in states},
        ),
        np.concatenate([dev.truth, test.truth]),
        [*dev.questions, *test.questions],
    )
    learned = (
        "AttributionBench (Li et al., 2024; dataset card: Apache-2.0): its in-domain dev file "
        f"({len(dev.truth)} claims) and test sample ({len(test.truth)}), human attribution "
        "labels; each claim shown as the answer to its question"
    )
    shipped = fitter(both, states, learned).fitted().head
    if args.mtrag_run:
        mtrag_table(args.mtrag_run, head, shipped)
    if args.write:
        heads = Heads(
            heads={SUPPORTED.name: replace(shipped, figures=figures)},
            judge={
                "name": f"local:{QWEN_CODER_1_5B.name}",
                "weights_sha256": QWEN_CODER_1_5B.sha256,
            },
        )
        heads.save(args.write)
        print(f"\nwritten to {args.write}: {json.dumps(figures)}")


if __name__ == "__main__":
    main()
