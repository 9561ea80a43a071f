"""How far the judge's relevance grades stand in for people's: the runs decided on the judge's
grades against the same runs decided on the people's qrels.

    ragmeter retrieval ../shared/data/retrieval/qrels.txt ../shared/data/retrieval/runs/*.trec \\
        --out runs/retrieval --metrics "nDCG@10,R(rel=2)@100,RR,AP,P@10" --grade \\
        --queries ../shared/data/retrieval/queries.jsonl \\
        --passages ../shared/data/retrieval/passages.jsonl
    python bench/bench_retrieval_grades.py runs/retrieval --measure nDCG@10

Reads the folder ``ragmeter retrieval --grade`` wrote and prints, per pair of runs, the
verdict on the people's qrels and on the judge's grades alone (each the paired test over
queries, Holm over the pairs), how many pairs the people's qrels separate that the judge's
separate the same way, and the other way; the Kendall tau between the runs' means on the two;
and the agreement of the grades themselves (``agreement.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from scipy.stats import kendalltau


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--measure", default="nDCG@10")
    parser.add_argument("--source", default="judge", help="The qrels held against people's.")
    args = parser.parse_args()

    rankings = json.loads((args.folder / "rankings.json").read_text())
    pairs = {}
    for source in ("human", args.source):
        (ranking,) = [r for r in rankings[source] if r["metric"] == args.measure]
        pairs[source] = {(p["a"], p["b"]): p for p in ranking["pairs"]}
    print(f"| pair | people's qrels | {args.source} | difference (people / {args.source}) |")
    print("|---|---|---|---|")
    same = other = separated = 0
    for key, theirs in pairs["human"].items():
        mine = pairs[args.source][key]
        print(
            f"| {key[1]} vs {key[0]} | {theirs['verdict']} | {mine['verdict']} | "
            f"{theirs['test']['difference']:+.3f} / {mine['test']['difference']:+.3f} |"
        )
        if theirs["verdict"] != "cannot tell":
            separated += 1
            same += mine["verdict"] == theirs["verdict"]
        if "cannot tell" not in (theirs["verdict"], mine["verdict"]):
            other += mine["verdict"] != theirs["verdict"]
    summary = json.loads((args.folder / "summary.json").read_text())["qrels"]
    runs = list(summary["human"])
    human = [summary["human"][r][args.measure]["mean"] for r in runs]
    judged = [summary[args.source][r][args.measure]["mean"] for r in runs]
    print(
        f"\n{args.measure}: of the {separated} pairs the people's qrels separate, the "
        f"{args.source} grades separate {same} the same way and {other} the other way; "
        f"Kendall tau of the {len(runs)} runs' means {kendalltau(human, judged).statistic:.3f}"
    )
    agreement = json.loads((args.folder / "agreement.json").read_text())
    for name in ("kappa", "kappa_relevant"):
        found = agreement[name]
        print(f"{name}: {found['value']:.3f} [{found['low']:.3f}, {found['high']:.3f}]")
    print(f"on {agreement['pairs']} pairs graded by both; people's grade -> the judge's:")
    print(json.dumps(agreement["confusion"], sort_keys=True))


if __name__ == "__main__":
    main()
