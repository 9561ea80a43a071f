"""Context relevance read at positions inside one pass, beside the separate layout's questions.

    python bench/one_read_positions.py ../shared/data/wikieval/wikieval_dev_pairs.jsonl --limit 5

The one pass shows the question, then the context one numbered sentence a line, each followed
by "Needed:"; P(needed) of a sentence is read from the next-token probabilities at its tag, so
the context is read once. Two ways are measured:

- ``open``: the tags are left unanswered (every verdict of the sample from one read);
- ``answered``: the judge's own verdict is written after each tag before the next sentence is
  read (one short decode per sentence, each reading only its new tokens).

The pass is written in the bundled judge's chat format (ChatML) and read on its engine.

Beside them the separate layout's per-sentence question (``context_relevance.sentence``), on
the same local judge. For each WikiEval context-relevance pair the context's score is the share
of sentences with P(needed) >= 0.5 (no repeat checks, the same for all three); a pair counts
when the focused context scores higher, a tie one half. Prints each pair's scores and times,
then the agreement and the total seconds of each way.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np

from ragmeter.judges.llama_engine import log_softmax
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.registry import get_judge
from ragmeter.meta.wikieval import load_wikieval
from ragmeter.metrics.context_relevance import SENTENCE_NEEDED
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession
from ragmeter.text import passage_sentences

INSTRUCTION = (
    "You judge which sentences of a retrieved context are needed to answer a question. A "
    "sentence is needed only if it gives information that the answer to this question must "
    "use; a sentence that is merely about the same subject is not needed. The context follows "
    "the question, one numbered sentence a line; after each sentence write Needed: Yes or "
    "Needed: No."
)


class Tags:
    """P(needed) at each sentence's tag, read on the local judge's engine."""

    def __init__(self, judge: LocalJudge) -> None:
        self.engine = judge._engine
        pieces = [
            self.engine.piece(t).decode(errors="ignore") for t in range(judge._engine.n_vocab)
        ]
        self.yes = [t for t, p in enumerate(pieces) if re.match(r"^\W*yes\b", p, re.I)]
        self.no = [t for t, p in enumerate(pieces) if re.match(r"^\W*no\b", p, re.I)]

    def p_yes(self, logits: np.ndarray) -> float:
        logprobs = log_softmax(logits)
        yes, no = np.logaddexp.reduce(logprobs[self.yes]), np.logaddexp.reduce(logprobs[self.no])
        return float(1 / (1 + np.exp(no - yes)))

    def read(self, sample: Sample, answered: bool) -> list[float]:
        tokens = self.engine.tokenize(
            f"<|im_start|>system\n{INSTRUCTION}<|im_end|>\n<|im_start|>user\n"
            f"Question: {sample.question}\n\nContext:\n"
        )
        found = []
        for number, sentence in enumerate(passage_sentences(sample.contexts), 1):
            tokens += self.engine.tokenize(f"[{number}] {sentence}\nNeeded:")
            # One prompt extending the last: the engine reads only the new tokens.
            p = self.p_yes(self.engine.probe([tokens])[0].logits)
            found.append(p)
            verdict = (" Yes" if p >= 0.5 else " No") if answered else ""
            tokens += self.engine.tokenize(f"{verdict}\n")
        return found


def separate(judge: LocalJudge, sample: Sample) -> list[float]:
    session = JudgeSession(judge)
    asked = [
        (SENTENCE_NEEDED, {**sample.asked(), "sentence": s}, {})
        for s in passage_sentences(sample.contexts)
    ]
    return session.ask_yes_no_all(asked)


def share_needed(probabilities: list[float]) -> float:
    return sum(p >= 0.5 for p in probabilities) / len(probabilities)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    parser.add_argument("--judge", default="local", help="a judge with an engine to read at")
    args = parser.parse_args()
    judge = get_judge(args.judge)
    if not hasattr(judge, "_engine"):
        parser.error(f"{args.judge}: the positions are read on a judge's engine, as local's")
    tags = Tags(judge)
    pairs = [p for p in load_wikieval(args.pairs) if p.dimension == "context_relevance"]
    ways = {
        "separate": lambda s: separate(judge, s),
        "open": lambda s: tags.read(s, answered=False),
        "answered": lambda s: tags.read(s, answered=True),
    }
    agreement = dict.fromkeys(ways, 0.0)
    seconds = dict.fromkeys(ways, 0.0)
    for pair in pairs[: args.limit]:
        line = [f"pair {pair.id}"]
        for name, way in ways.items():
            values = []
            for sample in (pair.preferred, pair.rejected):
                clock = time.perf_counter()
                values.append(share_needed(way(sample)))
                seconds[name] += time.perf_counter() - clock
            preferred, rejected = values
            agreement[name] += 1.0 if preferred > rejected else 0.5 if preferred == rejected else 0
            line.append(f"{name} {preferred:.2f}/{rejected:.2f}")
        print("  ".join(line), flush=True)
    n = len(pairs[: args.limit])
    for name in ways:
        print(f"{name:<10} agreement {agreement[name] / n:.2f} ({n} pairs), {seconds[name]:.0f} s")


if __name__ == "__main__":
    main()
