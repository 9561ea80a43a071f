"""Faithfulness's two ways of finding statements, on AttributionBench's human-labelled claims.

    python bench/faithfulness_statements_ab.py \\
        ../shared/data/attributionbench/dev_all_subset_balanced.jsonl --limit 120 [--seed 19]

Each claim is read as an answer (its question, its references as the context) and scored by
faithfulness twice: verifying the claim's own sentences (``statements=sentences``, the default)
and having the judge write statements first (``statements=generate``, the paper). People
labelled each claim supported or not by its references, so the better way ranks supported
claims above the others: the script prints each way's ROC AUC on the claims both scored, the
difference with a bootstrap 95 % interval (claims resampled), unscored claims and the median
seconds per claim. ``--limit`` takes a seeded random sample of the file's claims.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import numpy as np

from ragmeter import evaluate
from ragmeter.meta.attribution import Claim, load_attribution, references_context
from ragmeter.metrics import Faithfulness
from ragmeter.sample import Sample
from ragmeter.stats import roc_auc

WAYS = ("sentences", "generate")


def as_sample(claim: Claim) -> Sample:
    return Sample(
        id=claim.id,
        question=claim.question or "(no question)",
        contexts=[references_context(claim)[0]],  # cut to fit, as the verifier's benchmark does
        answer=claim.claim,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--cache", default=True, help="call cache file (default: the user's)")
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()

    claims = load_attribution(args.path)
    random.Random(args.seed).shuffle(claims)
    claims = claims[: args.limit]
    samples = [as_sample(c) for c in claims]
    scores = {}
    for way in WAYS:
        metric = Faithfulness(statements=way)
        result = evaluate(samples, [metric], judge=args.judge, cache=args.cache)
        scores[way] = {s.sample_id: s for s in result.scores}

    both = [c for c in claims if all(scores[w][c.id].scored for w in WAYS)]
    truth = np.array([c.label for c in both])
    values = {w: np.array([scores[w][c.id].value for c in both]) for w in WAYS}
    supported = sum(c.label for c in claims)
    print(f"{len(claims)} claims ({supported} supported), {len(both)} scored both ways")
    for way in WAYS:
        unscored = sum(not s.scored for s in scores[way].values())
        seconds = statistics.median(s.seconds for s in scores[way].values())
        print(
            f"statements={way:<10} ROC AUC {roc_auc(truth, values[way]):.3f}  "
            f"unscored {unscored}  median {seconds:.1f} s per claim"
        )
    rng = np.random.default_rng(0)
    differences = []
    for _ in range(args.rounds):
        drawn = rng.integers(0, len(both), len(both))
        if truth[drawn].all() or not truth[drawn].any():
            continue
        differences.append(
            roc_auc(truth[drawn], values["sentences"][drawn])
            - roc_auc(truth[drawn], values["generate"][drawn])
        )
    low, high = np.percentile(differences, [2.5, 97.5])
    gain = roc_auc(truth, values["sentences"]) - roc_auc(truth, values["generate"])
    print(f"sentences - generate: {gain:+.3f} (95 % interval {low:+.3f} to {high:+.3f})")


if __name__ == "__main__":
    main()
