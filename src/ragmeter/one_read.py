"""The one-read layout: every Yes/No verdict of a sample as a short continuation of the sample
read once.

In the separate layout (the default) each metric puts its own instruction before the data, so
the judge reads the sample once per metric, and context relevance shows each context sentence
again with the question. Here every question of every metric that asks one starts with the same
instruction and the same data: the question, the context with its sentences numbered, and the
answer. Only what follows differs, a line or two naming what is asked about (an answer's
statement quoted, a context sentence by its number and opening words) and the question. A
local judge reads that shared prefix once and keeps it for the rest of the sample's questions,
also across metrics (its engine keeps recent prefixes); a remote server with prompt caching
bills it once.

The instruction defines every kind of verdict, so it is the same for all of them. The scores
are other results than the separate layout's: the prompts differ, so their versions, and with
them every store and cache key, differ too. With the bundled 1.5B judge this layout agrees with
people less and is no faster (docs/agreement.md, "Reading a sample once"): it is an option, for
judges that can tell one sentence from another with the whole sample in view.

A sample whose data does not fit the judge's window is read in parts (``reading``): each part
holds the question, the answer and as many whole context passages (or sentences, where one
passage alone is too long) as fit, numbered as in the whole context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ragmeter.judges.base import window_of
from ragmeter.language import language_of
from ragmeter.limits import context_budget, packed
from ragmeter.prompts import Inputs, PlannedCalls, YesNoPrompt, yes_no_call
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession, Question
from ragmeter.text import WORD, split_sentences

Layout = Literal["separate", "one_read"]


def layout_option() -> Any:
    """The ``layout`` option of a metric that asks Yes/No questions: separate by default."""
    return Field(
        "separate",
        description="Ask this metric's questions after its own instruction ('separate'), or "
        "every Yes/No verdict of the sample as a continuation of the sample read once, shared "
        "with the other metrics' questions ('one_read').",
    )


INSTRUCTION = (
    "You judge one exchange of a question-answering assistant: the question it was asked, the "
    "context it retrieved to answer it, and the answer it gave. Read the data; after it comes "
    "one question about it. The context's sentences are numbered [1], [2] and so on.\n"
    "- A statement is supported only if the context states it or directly implies it. It is "
    "not supported if the context contradicts it or does not contain the information, even if "
    "it is true in general. A short statement is read as the answer's reply to the question.\n"
    "- A context sentence is needed only if it states information that the answer to the "
    "question must use; a sentence merely about the same subject is not needed.\n"
    "- An answer addresses the question only if it responds directly to every part of it; "
    "whether the answer is true does not matter for this."
)

SUPPORTED = YesNoPrompt(
    name="one_read.supported",
    instruction=INSTRUCTION,
    question="Is this statement of the answer supported by the context?",
)
NEEDED = YesNoPrompt(
    name="one_read.needed",
    instruction=INSTRUCTION,
    question="Is context sentence [{number}] needed to answer the question?",
)
NEW_INFORMATION = YesNoPrompt(
    name="one_read.new_information",
    instruction=INSTRUCTION,
    question=(
        "Does context sentence [{number}] state needed information that no earlier sentence "
        "of the context already states?"
    ),
)
COMPLETE = YesNoPrompt(
    name="one_read.complete",
    instruction=INSTRUCTION,
    question="Does the answer address every part of the question?",
)
CONTEXT_HOLDS = YesNoPrompt(
    name="one_read.context_holds",
    instruction=INSTRUCTION,
    question="Does the context state the information the question asks for?",
)
COVERS_CONTEXT = YesNoPrompt(
    name="one_read.covers_context",
    instruction=INSTRUCTION,
    question="Does the answer give everything the context says that the question asks for?",
)

OPENING_WORDS = 6
"""Words of a context sentence quoted after its number: enough to tell it from its neighbours
(a small judge does not find "[37]" among 60 sentences by the number alone), few enough that
the sentences are not read a second time."""


@dataclass(frozen=True)
class Part:
    """What the judge reads of a sample at once: the data every question of this part starts
    with, and the context sentences it holds, by their numbers in the whole context (from 1)."""

    data: Inputs
    numbers: range


@dataclass(frozen=True)
class Reading:
    """A sample as the one-read layout shows it: its context sentences, numbered through all
    passages, and the part (or parts, for a sample longer than the window) each is read in."""

    sentences: list[str]
    parts: list[Part]

    def part_of(self, number: int) -> Part:
        """The part that holds context sentence ``number``."""
        return next(part for part in self.parts if number in part.numbers)

    @property
    def note(self) -> str | None:
        """What a score's explanation says when the sample was read in parts."""
        if len(self.parts) == 1:
            return None
        return (
            f"the context exceeds the judge's window: read in {len(self.parts)} parts (context "
            f"sentences {', '.join(_span(p.numbers) for p in self.parts)}), each with the question "
            "and the answer"
        )


def _span(numbers: range) -> str:
    return f"[{numbers.start}]-[{numbers.stop - 1}]" if len(numbers) > 1 else f"[{numbers.start}]"


def opening(sentence: str) -> str:
    """The first ``OPENING_WORDS`` words of a sentence as quoted after its number."""
    words = list(WORD.finditer(sentence))
    if len(words) <= OPENING_WORDS:
        return sentence
    return sentence[: words[OPENING_WORDS - 1].end()] + " ..."


def reading(sample: Sample, window: int | None = None) -> Reading:
    """How the judge reads ``sample``: in one part, or in as many as a ``window`` of that many
    tokens needs (None: the judge's window is not known, one part)."""
    language = language_of(sample)
    passages = [split_sentences(passage, language) for passage in sample.contexts]
    fixed = {**sample.asked(), "answer": sample.answer}
    parts, first = [], 1
    for group in packed(passages, context_budget(window, *fixed.values())):
        parts.append(_part(fixed, group, first))
        first += sum(len(piece) for piece in group)
    return Reading([s for passage in passages for s in passage], parts)


def _part(fixed: dict[str, str], passages: Sequence[list[str]], first: int) -> Part:
    """The data of a part: the question, its passages with their sentences numbered on from
    ``first``, and the answer, in the order every question of the sample shares."""
    shown, number = [], first
    for passage in passages:
        shown.append("\n".join(f"[{number + i}] {s}" for i, s in enumerate(passage)))
        number += len(passage)
    question = {k: v for k, v in fixed.items() if k != "answer"}
    data = {**question, "context": shown, "answer": fixed["answer"]}
    return Part(data, range(first, number))


def read_sample(sample: Sample, session: JudgeSession) -> Reading:
    """``sample`` as ``session``'s judge reads it, in parts where its window needs them."""
    return reading(sample, window_of(session.judge))


def supported(session: JudgeSession, read: Reading, statements: Sequence[str]) -> list[float]:
    """P(supported) of each statement, asked in one batch: the highest over the parts, as a
    statement any part of the context supports is supported."""
    questions: list[Question] = [
        (SUPPORTED, {**part.data, "statement": statement}, {})
        for part in read.parts
        for statement in statements
    ]
    answers = session.ask_yes_no_all(questions)
    n = len(statements)
    return [max(answers[i::n]) for i in range(n)]


def needed(session: JudgeSession, read: Reading) -> list[float]:
    """P(needed) of each context sentence, asked in one batch, each in its part."""
    return session.ask_yes_no_all(
        [
            (
                NEEDED,
                {**read.part_of(n).data, "sentence": f"[{n}] {opening(s)}"},
                {"number": str(n)},
            )
            for n, s in enumerate(read.sentences, 1)
        ]
    )


def new_information(
    session: JudgeSession, read: Reading, candidates: Sequence[int]
) -> dict[int, float]:
    """P(adds needed information) of each candidate sentence (0-based indices, in order) after
    the first of its part, asked in one batch. The earlier sentences are in view above it, so
    the question names none of them: its length does not grow with the context."""
    asked = [
        index
        for position, index in enumerate(candidates)
        if any(read.part_of(i + 1) is read.part_of(index + 1) for i in candidates[:position])
    ]
    questions: list[Question] = [
        (
            NEW_INFORMATION,
            {**read.part_of(i + 1).data, "sentence": f"[{i + 1}] {opening(read.sentences[i])}"},
            {"number": str(i + 1)},
        )
        for i in asked
    ]
    answers = session.ask_yes_no_all(questions) if questions else []
    return dict(zip(asked, answers, strict=True))


def about_answer(session: JudgeSession, read: Reading, *prompts: YesNoPrompt) -> list[float]:
    """P(yes) to each question about the answer as a whole (``COMPLETE``), asked in one batch
    over the first part: the question and the answer are in every part."""
    data = read.parts[0].data
    return session.ask_yes_no_all([(prompt, data, {}) for prompt in prompts])


def about_context(session: JudgeSession, read: Reading, *prompts: YesNoPrompt) -> list[float]:
    """P(yes) to each question about what the context holds (``CONTEXT_HOLDS``,
    ``COVERS_CONTEXT``), the highest over the parts, asked in one batch."""
    questions: list[Question] = [(p, part.data, {}) for part in read.parts for p in prompts]
    answers = session.ask_yes_no_all(questions)
    return [max(answers[i :: len(prompts)]) for i in range(len(prompts))]


def planned_calls(sample: Sample, asked: Sequence[Question]) -> PlannedCalls:
    """The calls of ``asked`` (each prompt with the inputs that follow the sample's data, and
    its fields) as a metric's ``planned_calls`` counts them: each question's whole prompt, as a
    server without prompt caching bills it, and one token back."""
    data = reading(sample).parts[0].data
    return [
        yes_no_call(prompt.render({**data, **item}, **fields)) for prompt, item, fields in asked
    ]


__all__ = [
    "COMPLETE",
    "CONTEXT_HOLDS",
    "COVERS_CONTEXT",
    "INSTRUCTION",
    "NEEDED",
    "NEW_INFORMATION",
    "SUPPORTED",
    "Layout",
    "Part",
    "Reading",
    "about_answer",
    "about_context",
    "layout_option",
    "needed",
    "new_information",
    "opening",
    "planned_calls",
    "read_sample",
    "reading",
    "supported",
]
