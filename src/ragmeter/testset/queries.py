"""What kinds of question a test set holds, and the prompts the judge writes them with.

Six kinds, mixed by ``--mix``:

- ``specific``: a fact stated in one chunk (single-hop, specific): the chunk's sentence it asks
  about is chosen here (``fact_sentence``), the judge writes the question and restates the fact;
- ``abstract``: a summary, "why" or "how" over one chunk (single-hop, abstract);
- ``multi_hop``: a question that needs a fact from each of two related chunks;
- ``comparison``: how two things described in two chunks differ or compare (for both, a
  statement of each chunk is chosen by ``fact_sentence`` and given to the judge);
- ``follow_up``: the second turn of a conversation, which needs the first to be understood;
- ``unanswerable``: a plausible question on a chunk's topic that the documents do not answer,
  made by construction: it asks for a detail the chunk never mentions, and comes with the answer
  a user would expect, which the checks verify the nearest chunks do not support; its
  reference is the decline a good system gives (``DECLINE``).

Styles change how a question is phrased: ``full`` (a complete sentence), ``keywords`` (a short
query, as typed into a search box) and ``misspelt`` (a full sentence with a typo, made by
swapping two letters of a word, chosen from the seed: a small judge does not misspell on
request, and this way the typo is certain and repeatable).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Annotated

from pydantic import AfterValidator, BaseModel

from ragmeter.language import detect_language
from ragmeter.prompts import Prompt
from ragmeter.text import split_sentences

KINDS = ("specific", "abstract", "multi_hop", "comparison", "follow_up", "unanswerable")
PAIRED = frozenset({"multi_hop", "comparison"})
"""Kinds written from two chunks."""
FACT_KINDS = frozenset({"specific", "multi_hop", "comparison"})
"""Kinds written about a statement of each chunk chosen by rule (``fact_sentence``)."""

DEFAULT_MIX: dict[str, float] = {
    "specific": 0.30,
    "abstract": 0.20,
    "multi_hop": 0.15,
    "comparison": 0.10,
    "follow_up": 0.15,
    "unanswerable": 0.10,
}

STYLES = ("full", "keywords", "misspelt")
DEFAULT_STYLES: dict[str, float] = {"full": 1.0}

DECLINE = "The documents do not contain the answer to this question."
"""The reference of an unanswerable question: what a system grounded in the documents says."""


def parse_mix(
    text: str | Mapping[str, float] | None, names: tuple[str, ...], what: str
) -> dict[str, float]:
    """``"specific=0.5,abstract=0.5"`` (or a mapping) as shares that sum to 1.

    Raises:
        ValueError: an unknown name, a negative or non-numeric share, or no positive share.
    """
    if text is None:
        raise ValueError(f"no {what} given")
    if isinstance(text, str):
        given: dict[str, float] = {}
        for item in text.split(","):
            if not item.strip():
                continue
            name, sep, value = item.partition("=")
            try:
                given[name.strip()] = float(value) if sep else 1.0
            except ValueError:
                raise ValueError(f"{what} {item.strip()!r}: the share is not a number") from None
    else:
        given = {k: float(v) for k, v in text.items()}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}: choose from {', '.join(names)}")
    if any(v < 0 for v in given.values()) or sum(given.values()) <= 0:
        raise ValueError(f"{what} shares must be >= 0 and not all 0: {given}")
    total = sum(given.values())
    return {name: given[name] / total for name in names if given.get(name, 0) > 0}


def quotas(mix: Mapping[str, float], n: int) -> dict[str, int]:
    """How many accepted samples of each kind make ``n``: shares rounded by largest remainder
    (ties to the kind listed first), so they sum to ``n``."""
    exact = {kind: share * n for kind, share in mix.items()}
    counts = {kind: int(value) for kind, value in exact.items()}
    order = sorted(exact, key=lambda k: -(exact[k] - counts[k]))
    for kind in order[: n - sum(counts.values())]:
        counts[kind] += 1
    return counts


# --- what the judge writes --------------------------------------------------------------------


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is blank: write the text")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]
"""A text the judge must write. Checked after parsing, not in the JSON schema: a length
bound in the schema becomes a grammar too large for llama.cpp to build (a 1,500-character
limit is 1,500 nested rules)."""


class Written(BaseModel):
    question: Text
    answer: Text


class FollowUp(BaseModel):
    first_question: Text
    first_answer: Text
    question: Text
    answer: Text


class Unanswered(BaseModel):
    question: Text
    expected_answer: Text
    """What a user would expect to be told: a plausible detail the passage does not give. The
    checks verify that the documents do not say it (``unanswerable.py``)."""


class Answer(BaseModel):
    """An answer the judge writes while checking a question (closed-book, or from passages)."""

    answer: Text


ANSWER_MAX_TOKENS = 160
"""The most tokens an answer written while checking may take: one to three sentences."""


_STANDALONE = (
    "The question must make sense to someone who has never seen the passage: name what it is "
    "about (the passage's title, when given, says what that is), and never write 'the "
    "passage', 'the text', 'the document' or 'according to'."
)
_ANSWER = (
    "The answer must be complete and correct, use only what the passage says, and be one to "
    "three sentences."
)
_PERSONA = " If a persona is given, write the question as that person would ask it."

_STYLE_RULES = {
    "full": "Write the question as one complete sentence.",
    "keywords": "Write the question as a short search query of two to six keywords, "
    "without a question mark, as typed into a search box.",
    "misspelt": "Write the question as one complete sentence.",
}

_EXAMPLE_TITLE = "Hubble Space Telescope"
_EXAMPLE_OTHER_TITLE = "James Webb Space Telescope"
_EXAMPLE_PASSAGE = (
    "The Hubble Space Telescope was launched in 1990 aboard the Space Shuttle Discovery. Its "
    "main mirror is 2.4 metres across. Because it orbits above the atmosphere, its images are "
    "not blurred by air turbulence."
)
_EXAMPLE_OTHER_FACT = (
    "The James Webb Space Telescope, launched in December 2021, has a main mirror 6.5 metres "
    "across made of 18 gold-coated segments."
)
_EXAMPLE_OTHER = f"{_EXAMPLE_OTHER_FACT} It observes mainly in the infrared."
_EXAMPLE_PASSAGES = {
    "title 1": _EXAMPLE_TITLE,
    "passage 1": _EXAMPLE_PASSAGE,
    "title 2": _EXAMPLE_OTHER_TITLE,
    "passage 2": _EXAMPLE_OTHER,
}
"""The two passages of the multi-hop and comparison examples, before the fact of each."""

_INSTRUCTIONS = {
    "specific": (
        "You write test questions for a search system from a passage of its documents. You "
        "are given the passage and one of its sentences, the fact to ask about. Write one "
        "question that this fact answers, completely and exactly, and its answer: the fact "
        "restated so that it makes sense on its own, adding nothing the passage does not say."
    ),
    "abstract": (
        "You write test questions for a search system from a passage of its documents. Write "
        "one question that asks why or how something happens, or asks for a summary of the "
        "passage's main point, and its answer."
    ),
    "multi_hop": (
        "You write test questions for a search system from two passages of its documents. You "
        "are given the passages and one sentence of each, fact 1 and fact 2. Write one "
        "question that can only be answered by combining fact 1 with fact 2, and its answer, "
        "which states both facts."
    ),
    "comparison": (
        "You write test questions for a search system from two passages of its documents. You "
        "are given the passages and one sentence of each, fact 1 and fact 2. Write one "
        "question that compares what fact 1 says with what fact 2 says (which is larger, "
        "older, how they differ), and its answer, which states both facts."
    ),
    "follow_up": (
        "You write test conversations for a search system from a passage of its documents. "
        "Write a first question answered by the passage and its answer, then a second "
        "question about the same subject, naming that subject again in the same words, that "
        "asks for another fact of the passage, and the second question's answer."
    ),
    "unanswerable": (
        "You write test questions for a search system from a passage of its documents. Write "
        "one question on the passage's topic that a user might plausibly ask but that the "
        "passage does NOT answer: it asks for a detail of the passage's subject that the "
        "passage never mentions (such as a size, a price, a date, a person or a place). Then "
        "write the answer the user would expect, as one sentence with a plausible detail that "
        "the passage does not give."
    ),
}

_EXAMPLES: dict[str, list[tuple[dict[str, str], BaseModel]]] = {
    "specific": [
        (
            {
                "title": _EXAMPLE_TITLE,
                "passage": _EXAMPLE_PASSAGE,
                "fact": "Its main mirror is 2.4 metres across.",
            },
            Written(
                question="How wide is the main mirror of the Hubble Space Telescope?",
                answer="The main mirror of the Hubble Space Telescope is 2.4 metres across.",
            ),
        )
    ],
    "abstract": [
        (
            {"title": _EXAMPLE_TITLE, "passage": _EXAMPLE_PASSAGE},
            Written(
                question="Why are the Hubble Space Telescope's images not blurred by the air?",
                answer="Because Hubble orbits above the atmosphere, so air turbulence does not "
                "blur its images.",
            ),
        )
    ],
    "multi_hop": [
        (
            {
                **_EXAMPLE_PASSAGES,
                "fact 1": "The Hubble Space Telescope was launched in 1990 aboard the Space "
                "Shuttle Discovery.",
                "fact 2": _EXAMPLE_OTHER_FACT,
            },
            Written(
                question="How many years after the Hubble Space Telescope was the James Webb "
                "Space Telescope launched?",
                answer="31 years: Hubble was launched in 1990 and James Webb in December 2021.",
            ),
        )
    ],
    "comparison": [
        (
            {
                **_EXAMPLE_PASSAGES,
                "fact 1": "Its main mirror is 2.4 metres across.",
                "fact 2": _EXAMPLE_OTHER_FACT,
            },
            Written(
                question="Which has the larger main mirror, the Hubble Space Telescope or the "
                "James Webb Space Telescope?",
                answer="The James Webb Space Telescope: its main mirror is 6.5 metres across, "
                "against 2.4 metres for Hubble.",
            ),
        )
    ],
    "follow_up": [
        (
            {"title": _EXAMPLE_TITLE, "passage": _EXAMPLE_PASSAGE},
            FollowUp(
                first_question="When was the Hubble Space Telescope launched?",
                first_answer="The Hubble Space Telescope was launched in 1990.",
                question="Which shuttle carried the Hubble Space Telescope into orbit?",
                answer="The Hubble Space Telescope was launched aboard the Space Shuttle "
                "Discovery.",
            ),
        )
    ],
    "unanswerable": [
        (
            {"title": _EXAMPLE_TITLE, "passage": _EXAMPLE_PASSAGE},
            Unanswered(
                question="How much did it cost to build the Hubble Space Telescope?",
                expected_answer="The Hubble Space Telescope cost about 1.5 billion dollars to "
                "build.",
            ),
        )
    ],
}

_OUTPUTS: dict[str, type[BaseModel]] = {
    "specific": Written,
    "abstract": Written,
    "multi_hop": Written,
    "comparison": Written,
    "follow_up": FollowUp,
    "unanswerable": Unanswered,
}


@cache
def writing_prompt(kind: str, style: str = "full") -> Prompt[BaseModel]:
    """The prompt that writes a question of ``kind`` in ``style``."""
    if kind not in _OUTPUTS:
        raise ValueError(f"unknown question kind {kind!r}: choose from {', '.join(KINDS)}")
    if style not in _STYLE_RULES:
        raise ValueError(f"unknown question style {style!r}: choose from {', '.join(STYLES)}")
    rules = [_STYLE_RULES[style] if kind != "follow_up" else "", _STANDALONE]
    if kind != "unanswerable":
        rules.append(_ANSWER)
    instruction = " ".join(r for r in [_INSTRUCTIONS[kind], *rules] if r) + _PERSONA
    examples = [] if style == "keywords" else _EXAMPLES[kind]
    return Prompt(
        name=f"testset.{kind}" + ("" if style != "keywords" else ".keywords"),
        instruction=instruction,
        output=_OUTPUTS[kind],
        examples=examples,  # type: ignore[arg-type]
    )


_FACT_WORDS = (8, 45)
_NAME_OR_NUMBER = re.compile(r"\d|(?<=\w )[A-Z]")
_ENDS_A_STATEMENT = re.compile(r"[.!][\"')\u201d]*$")


@lru_cache(maxsize=4096)  # the planner asks of each chunk again on every round
def fact_sentences(passage: str) -> tuple[str, ...]:
    """The sentences of ``passage`` a ``specific``, ``multi_hop`` or ``comparison`` question may
    ask about, in the order they are asked about: statements of 8 to 45 words ending with a full
    stop (not a title, a list item, a question or a link), those that hold a number or a name
    first (a fact someone would look up), each group starting at a hash of the passage, so a
    passage always gives the same order.

    A small judge left to choose a fact picks vague ones and writes references that restate
    the question ("the default namespace is the default namespace", docs/testsets.md); given the
    sentence, it has only to turn it into a question. The passage is split by the rules of its
    language, detected from it (``ragmeter.language``).
    """
    eligible = [
        sentence
        for sentence in split_sentences(passage, detect_language([passage]))
        if _FACT_WORDS[0] <= len(sentence.split()) <= _FACT_WORDS[1]
        and "http" not in sentence
        and _ENDS_A_STATEMENT.search(sentence)
    ]
    named = [s for s in eligible if _NAME_OR_NUMBER.search(s)]
    pick = int(hashlib.sha256(passage.encode()).hexdigest()[:8], 16)
    ordered: list[str] = []
    for group in (named, [s for s in eligible if s not in named]):
        if group:
            start = pick % len(group)
            ordered += group[start:] + group[:start]
    return tuple(ordered)


def fact_sentence(passage: str, turn: int = 0) -> str | None:
    """The ``turn``-th fact of ``passage`` to ask about (``fact_sentences``), None when it has
    no more: a run asks about a chunk's first fact, and goes round the chunks again for the next
    one when a kind still needs questions."""
    facts = fact_sentences(passage)
    return facts[turn] if turn < len(facts) else None


_LONG_WORD = re.compile(r"\b[^\W\d_]{5,}\b")


def misspell(question: str, seed: str) -> str:
    """``question`` with two inner letters of one longer word swapped (of two words in a
    question over ten words), chosen from ``seed``; unchanged when no word is long enough."""
    words = [m for m in _LONG_WORD.finditer(question) if len(set(m.group(0).lower())) > 2]
    if not words:
        return question
    pick = random.Random(seed)
    chosen = pick.sample(words, k=min(len(words), 2 if len(question.split()) > 10 else 1))
    letters = list(question)
    for match in chosen:
        word = match.group(0)
        spots = [i for i in range(1, len(word) - 2) if word[i] != word[i + 1]]
        if spots:
            at = match.start() + pick.choice(spots)
            letters[at], letters[at + 1] = letters[at + 1], letters[at]
    return "".join(letters)
