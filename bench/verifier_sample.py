"""The verifier sample: which labelled claims are read for the verifier's heads, in which order.

    python bench/verifier_sample.py runs/verifier/sample.jsonl
    ragmeter meta attribution runs/verifier/sample.jsonl --out runs/verifier/read \\
        --judge-option heads=none \\
        --judge-option states=l_out-8,l_out-12,l_out-16,l_out-20,l_out-24,result_norm

Reading all ~14,000 items of ``../shared/data/verifier`` and AttributionBench takes tens of hours
on two cores, so a seeded sample is read, in rounds: each round takes the next few rows of every
source (each AttributionBench source, its dev file's and test sample's rows mixed; each SummEdits
domain; Factcheck-GPT; each BEGIN corpus; WiCE), so a read stopped at any point has every source
in it. Inside a round
a source's rows come in whole groups (the document, claim or dialogue turn they share), so rows
sharing evidence are read back to back and the judge reads the evidence once (it is the prompt's
prefix). ``--per-group`` caps the rows taken from one group, half of each label where it can.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def files_in(data: Path) -> dict[str, Path]:
    """The labelled files under ``data`` (``../shared/data``'s layout)."""
    return {
        "ab-dev": data / "attributionbench" / "dev_all_subset_balanced.jsonl",
        "ab-test": data / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl",
        "verifier": data / "verifier",
    }


FILES = files_in(DATA)
PER_GROUP = {"SummEdits": 8, "Factcheck-GPT": 2, "BEGIN": 2, "WiCE": 1}
"""Rows of one group at most: a SummEdits document has about 30 summaries, a Factcheck-GPT claim
four passages; more rows of one group add little that another group would not."""


def source_of(row: dict, split: str) -> str:
    """The unit a head is left out on (AttributionBench's sources named as such)."""
    source = row["src_dataset"]
    return f"AB-{source}" if split in ("dev", "test") else source


def group_of(row: dict) -> str:
    # AttributionBench has no group field: a question's claims share their references.
    return row.get("group") or f"q:{row['question']}"


def labelled_files(files: dict[str, Path] = FILES) -> list[tuple[str, Path]]:
    """Each labelled file with its split: AttributionBench's dev file and test sample, then
    the verifier's files."""
    paths = [("dev", files["ab-dev"]), ("test", files["ab-test"])]
    return paths + [("verifier", path) for path in sorted(files["verifier"].glob("*.jsonl"))]


def rows_by_source(files: dict[str, Path] = FILES) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = defaultdict(list)
    paths = labelled_files(files)
    for split, path in paths:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            found[source_of(row, split)].append(row)
    return found


def ordered(rows: list[dict], cap: int, rng: random.Random) -> list[list[dict]]:
    """The source's groups in a seeded order, each cut to ``cap`` rows (half of each label
    where the group has both)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[group_of(row)].append(row)
    names = sorted(groups)
    rng.shuffle(names)
    chosen = []
    for name in names:
        members = groups[name]
        rng.shuffle(members)
        yes = [r for r in members if r["attribution_label"] == "attributable"]
        no = [r for r in members if r["attribution_label"] != "attributable"]
        take = yes[: cap // 2] + no[: cap // 2]
        rest = [r for r in members if r not in take]
        chosen.append((take + rest)[:cap])
    return chosen


def rounds(per_source: dict[str, list[list[dict]]], per_round: int) -> list[dict]:
    """Each round: whole groups of every source until it holds ``per_round`` rows of it."""
    out: list[dict] = []
    cursors = dict.fromkeys(per_source, 0)
    while any(cursors[s] < len(groups) for s, groups in per_source.items()):
        for source, groups in per_source.items():
            taken = 0
            while cursors[source] < len(groups) and taken < per_round:
                group = groups[cursors[source]]
                cursors[source] += 1
                out.extend(group)
                taken += len(group)
    return out


def cap_for(source: str) -> int:
    for prefix, cap in PER_GROUP.items():
        if source.startswith(prefix):
            return cap
    return 6  # AttributionBench: a question's claims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    by_source = rows_by_source()
    per_source = {s: ordered(by_source[s], cap_for(s), rng) for s in sorted(by_source)}
    rows = rounds(per_source, args.per_round)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    print(f"{len(rows)} rows of {len(per_source)} sources in rounds of {args.per_round}")


if __name__ == "__main__":
    main()
