"""Does context relevance's repeat check tell a restated fact from a new one?

    python bench/repeat_check_cases.py [--judge local]
    python bench/repeat_check_cases.py --replay RUN_DIR

Each case is a question, the needed sentences found so far, a sentence that only restates them
and a sentence that adds needed information. A check that works gives the new sentence the
higher P(new information). The script asks the check as ragmeter does and in two other layouts,
and prints for each the mean P(new) of restated and of new sentences, and in how many cases the
new sentence scored higher:

- ``current``: the earlier sentences and the candidate in tags of their own (the default);
- ``last in list``: the candidate shown last in one list after the earlier ones, so that each
  check's prompt extends the previous one and a local judge reads only the new sentence;
- ``restates``: the question turned round ("does it only restate ...?"), P(new) = 1 - P(Yes).

The cases are written for this script (not taken from any benchmark), eight pairs: a small set,
enough to see whether a layout separates the two kinds at all.

``--replay RUN_DIR`` times the layouts instead: the repeat checks stored in a results folder of
context relevance (``RUN_DIR/scores.sqlite``, each distinct context once) are asked again one
after another, as the metric asks them, in the current layout, the list layout and the current
one again (the judge warmed up); it prints seconds, calls and prompt tokens read for each.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragmeter.judges.registry import get_judge
from ragmeter.metrics.context_relevance import NEW_INFORMATION
from ragmeter.prompts import Inputs, YesNoPrompt
from ragmeter.score import Score
from ragmeter.session import JudgeSession
from ragmeter.store import stored_payloads

# (question, needed sentences before, a restatement of them, a sentence with new needed facts)
CASES = [
    (
        "What is the capital of Australia and when was it founded?",
        ["Canberra is the capital city of Australia."],
        "The Australian capital is the city of Canberra.",
        "Canberra was founded in 1913.",
    ),
    (
        "How many people died in the Halifax explosion and when did it happen?",
        ["The Halifax explosion on 6 December 1917 killed about 2,000 people."],
        "Around 2,000 people lost their lives in the explosion.",
        "About 9,000 others were injured.",
    ),
    (
        "Who wrote Middlemarch and under what name was it published?",
        ["Middlemarch was written by Mary Ann Evans."],
        "The author of Middlemarch was Mary Ann Evans.",
        "She published it under the pen name George Eliot.",
    ),
    (
        "What is the boiling point of ethanol and its melting point?",
        ["Ethanol boils at 78.37 degrees Celsius."],
        "The boiling point of ethanol is 78.37 °C.",
        "Ethanol melts at -114.1 degrees Celsius.",
    ),
    (
        "Who founded the company and in what year?",
        ["The company was founded by Ada Okafor.", "Okafor started it in Lagos."],
        "Ada Okafor is the founder of the company.",
        "It was founded in 2009.",
    ),
    (
        "What did the study find about sleep and memory, and how many participants took part?",
        ["The study found that sleep improves memory consolidation."],
        "According to the study, memory consolidation is better after sleep.",
        "It involved 240 participants.",
    ),
    (
        "Which river flows through Budapest and how long is it?",
        ["The Danube flows through Budapest."],
        "Budapest lies on the Danube river.",
        "The Danube is 2,850 kilometres long.",
    ),
    (
        "When did the bridge open and what did it cost?",
        ["The bridge opened to traffic in March 2004.", "It spans the Tagus estuary."],
        "Traffic first crossed the bridge in March 2004.",
        "Its construction cost 900 million euros.",
    ),
]

LAST_IN_LIST = YesNoPrompt(
    name="context_relevance.new_information",
    instruction=(
        "You judge whether the last of some sentences taken from a retrieved context adds "
        "information needed to answer a question, beyond what the sentences before it already "
        "state. Say Yes if the last sentence states something the answer must use that the "
        "sentences before it do not state; say No if what it states is already given by the "
        "sentences before it, or is not needed."
    ),
    question=(
        "Does the last sentence add needed information that the sentences before it do not state?"
    ),
    asked_first=True,
)

RESTATES = YesNoPrompt(
    name="context_relevance.restates",
    instruction=(
        "You judge whether a sentence of a retrieved context only restates information that "
        "earlier sentences of the same context already state, in the same or other words. Say "
        "Yes if everything the sentence states is already given by the earlier sentences; say "
        "No if it states something they do not."
    ),
    question="Does this sentence only restate what the earlier sentences already state?",
    asked_first=True,
)


Check = tuple[str, list[str], str]
"""A repeat check's question, earlier sentences and candidate sentence."""


def tagged(question: str, earlier: list[str], sentence: str) -> Inputs:
    return {"question": question, "earlier sentences": "\n".join(earlier), "sentence": sentence}


def listed(question: str, earlier: list[str], sentence: str) -> Inputs:
    return {"question": question, "sentences": "\n".join([*earlier, sentence])}


@dataclass(frozen=True)
class Layout:
    prompt: YesNoPrompt
    inputs: Callable[[str, list[str], str], Inputs]
    asks_repeat: bool = False
    """Yes means a repeat, so P(new) = 1 - P(Yes)."""

    def p_new(self, session: JudgeSession, check: Check) -> float:
        p_yes = session.ask_yes_no(self.prompt, self.inputs(*check))
        return 1.0 - p_yes if self.asks_repeat else p_yes


LAYOUTS = {
    "current": Layout(NEW_INFORMATION, tagged),
    "last in list": Layout(LAST_IN_LIST, listed),
    "restates": Layout(RESTATES, tagged, asks_repeat=True),
}


def _between(tag: str, text: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    if found is None:
        raise ValueError(f"a stored repeat check has no <{tag}>")
    return found.group(1)


def stored_checks(run_dir: Path) -> list[list[Check]]:
    """The repeat checks of each distinct context scored in ``run_dir``, in the order asked."""
    chains: dict[str, list[Check]] = {}
    for payload in stored_payloads(run_dir / "scores.sqlite"):
        chain = []
        for exchange in Score.model_validate_json(payload).exchanges:
            if exchange.prompt != NEW_INFORMATION.name:
                continue
            text = exchange.messages[-1].content
            question, earlier, sentence = (
                _between(tag, text) for tag in ("question", "earlier sentences", "sentence")
            )
            chain.append((question, earlier.split("\n"), sentence))
        if chain:
            chains[repr(chain)] = chain
    return list(chains.values())


def replay(judge_spec: str, run_dir: Path) -> None:
    chains = stored_checks(run_dir)
    print(f"{len(chains)} contexts, {sum(map(len, chains))} repeat checks")
    judge = get_judge(judge_spec)
    for name in ("current", "last in list", "current again"):
        layout = LAYOUTS[name.removesuffix(" again")]
        session = JudgeSession(judge)
        start = time.perf_counter()
        for chain in chains:
            for check in chain:
                layout.p_new(session, check)
        print(
            f"{name:<14} {time.perf_counter() - start:7.1f} s  {session.usage.model_calls} calls  "
            f"{session.usage.prompt_tokens:,} prompt tokens read"
        )


def separation(judge_spec: str) -> None:
    session = JudgeSession(get_judge(judge_spec))
    print(f"{'layout':<14} {'P(new) restated':>16} {'P(new) new':>11} {'new higher':>11}")
    for name, layout in LAYOUTS.items():
        restated = [layout.p_new(session, (q, earlier, same)) for q, earlier, same, _ in CASES]
        new = [layout.p_new(session, (q, earlier, fresh)) for q, earlier, _, fresh in CASES]
        higher = sum(n > r for n, r in zip(new, restated, strict=True))
        print(
            f"{name:<14} {statistics.mean(restated):>16.3f} {statistics.mean(new):>11.3f} "
            f"{higher:>8}/{len(CASES)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="local")
    parser.add_argument("--replay", type=Path, metavar="RUN_DIR")
    args = parser.parse_args()
    if args.replay:
        replay(args.judge, args.replay)
    else:
        separation(args.judge)


if __name__ == "__main__":
    main()
