"""Short reference answers: which answers a reference accepts, and matching them as QA does.

QA gold answers are short and come with alternatives ("Guwahati"; "14 December 1972 UTC" or
"December 1972"): any one of them is right. A reference given as a list is such a list
(``Sample.alternatives``); a reference text that is one short phrase is one answer, and "X or
Y" in NQ's style is read as the alternatives X and Y as well as the whole. Such a reference is
checked as the answer to its question (``ragmeter.metrics.answer_reading``); a longer one is
read as claims (``ragmeter.claims``).

Exact match and token F1 are SQuAD's (Rajpurkar et al., 2016: lower-cased, ASCII punctuation
and the articles a, an, the dropped, spaces folded), each the best over the alternatives, as
the QA literature reports them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from ragmeter.claims import STANDS_ALONE_WORDS, stands_alone
from ragmeter.language import language_of
from ragmeter.sample import Sample
from ragmeter.text import WORD, split_sentences

_OR = re.compile(r"\s+or\s+")
_EITHER_OR = re.compile(r"\beither\b[^.;!?]*?\bor\b", re.IGNORECASE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

SHORT_REFERENCE_RULE = (
    "short reference: a list of answers, or one sentence whose parts split at "
    f"{_OR.pattern!r} each have under {STANDS_ALONE_WORDS} words or open with yes or no; "
    f"accepted: the list, or the whole and its parts; hedged: {_EITHER_OR.pattern!r}, or one "
    "sentence of such parts, where no accepted answer has 'or'"
)
"""What ``short_answers`` and ``hedged`` decide, in words, for the keys of the metrics that
read short references: change it whenever either does."""


def squad_normalised(text: str) -> str:
    """``text`` as SQuAD compares answers: lower-cased, without ASCII punctuation and the
    articles a, an and the, its spaces folded."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(answer: str, accepted: Sequence[str]) -> float:
    """1.0 where ``answer`` equals one of ``accepted`` once both are SQuAD-normalised."""
    said = squad_normalised(answer)
    return float(any(said == squad_normalised(gold) for gold in accepted))


def token_f1(answer: str, accepted: Sequence[str]) -> float:
    """The best, over ``accepted``, of SQuAD's F1 between the normalised answer's words and the
    accepted answer's: the words they share, as a harmonic mean of both shares."""
    said = squad_normalised(answer).split()
    return max((_f1(said, squad_normalised(gold).split()) for gold in accepted), default=0.0)


def _f1(said: list[str], gold: list[str]) -> float:
    shared = sum((Counter(said) & Counter(gold)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(said), shared / len(gold)
    return 2 * precision * recall / (precision + recall)


def polarity(text: str) -> str | None:
    """ "yes" or "no" where ``text`` opens with that word ("No, cars must be booked."), else
    None."""
    found = re.match(r"\W*(yes|no)\b(?!\s+one\b)", text, re.IGNORECASE)
    return found.group(1).lower() if found else None


def short_answers(sample: Sample) -> list[str] | None:
    """The answers ``sample``'s reference accepts where it is short, any one of them right;
    None where the reference is longer and read as claims.

    A list of answers is always short. A reference text is when it is one sentence whose parts
    (split at " or ") each do not stand alone (``claims.stands_alone``: under
    ``STANDS_ALONE_WORDS`` words, or a bare yes or no with little after it): "3 euros.", "No.",
    "14 December 1972 UTC or December 1972". Its answers are then the whole and, where it has
    several, each part."""
    if sample.alternatives is not None:
        return list(sample.alternatives)
    text = (sample.reference or "").strip()
    if not text or len(split_sentences(text, language_of(sample))) != 1:
        return None
    parts = _parts(text)
    if not parts or any(stands_alone(part) for part in parts):
        return None
    return [text, *parts] if len(parts) > 1 else [text]


def accepted_answers(sample: Sample) -> list[str]:
    """Every answer ``sample``'s reference accepts: its short answers, else the whole text
    (empty without a reference)."""
    short = short_answers(sample)
    if short is not None:
        return short
    return [sample.reference.strip()] if (sample.reference or "").strip() else []


def _parts(text: str) -> list[str]:
    return [part.strip() for part in _OR.split(text) if WORD.search(part)]


def hedged(answer: str, accepted: Sequence[str]) -> str | None:
    """The words with which ``answer`` leaves the question open between answers ("either 1998
    or 1999"; "Paris or Lyon"), or None. Offering two answers is not giving one, even where
    one of them is right. Not a hedge where an accepted answer itself says "or" ("heads or
    tails")."""
    if any(re.search(r"\bor\b", gold, re.IGNORECASE) for gold in accepted):
        return None
    found = _EITHER_OR.search(answer)
    if found:
        return found.group(0)
    text = answer.strip()
    parts = _parts(text)
    if len(parts) > 1 and len(split_sentences(text)) == 1 and not any(map(stands_alone, parts)):
        return text
    return None


__all__ = [
    "SHORT_REFERENCE_RULE",
    "accepted_answers",
    "exact_match",
    "hedged",
    "polarity",
    "short_answers",
    "squad_normalised",
    "token_f1",
]
