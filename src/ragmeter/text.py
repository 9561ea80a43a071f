"""How text is cut into sentences and words, the same way everywhere: the metrics, the claims,
the test sets' chunks and their copy checks."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

WORD = re.compile(r"\w+")
"""A word: a run of word characters (letters, digits, underscores, in any script)."""


def word_set(words: str) -> frozenset[str]:
    """The words of ``words``, split at whitespace."""
    return frozenset(words.split())


AUXILIARIES = word_set(
    "is are was were do does did can could will would should has have had may might must"
)
"""The verbs that open an English yes-or-no question."""

QUESTION_WORDS = word_set("what which who whom whose when where why how")

FUNCTION_WORDS = QUESTION_WORDS | word_set(
    """is are was were be been being do does did
    can could should would will shall may might must has have had the a an of for to in on at
    by with and or not from about as into onto than then that this these those there it its
    they them their you your i my we our he she his her me us if so such any some all each
    more most much many also only just very"""
)
"""Words that carry no subject of their own: question words, auxiliaries, articles, pronouns,
prepositions, conjunctions, quantifiers."""

GENERIC_WORDS = word_set(
    """purpose main difference differences type types kind kinds example examples way ways
    number name names role roles reason reasons benefit benefits advantage advantages need
    needed required allowed possible important different common available use used using
    thing things something information details detail happen happens true false else
    known"""
)
"""Words that name no particular thing: "purpose", "type", "information"."""

_FIRST_WORD = re.compile(r"^\W*(\w+)")


def asks_yes_or_no(question: str) -> bool:
    """Whether an English question asks yes or no: it opens with an auxiliary ("Is it...?",
    "Can I...?"), so that "Yes." or "No." answers it."""
    first = _FIRST_WORD.match(question)
    return bool(first) and first.group(1).lower() in AUXILIARIES


def answered_by_yes_or_no(question: str) -> bool:
    """Whether "Yes." can answer ``question``: it opens with an auxiliary ("Is it...?"), or it is
    a question with no question word ("freelancer: should I open a second account?")."""
    words = WORD.findall(question.lower())
    return asks_yes_or_no(question) or (
        question.rstrip().endswith("?") and not QUESTION_WORDS.intersection(words)
    )


def asks_for_something(question: str) -> bool:
    """Whether ``question`` asks for something its own words do not hold: it has a question
    word ("Who discovered penicillin?") and neither asks yes or no nor offers a choice ("Is it
    X?", "X or Y?", which an answer settles in the question's own words)."""
    words = WORD.findall(question.lower())
    return (
        bool(QUESTION_WORDS.intersection(words))
        and not asks_yes_or_no(question)
        and "or" not in words
    )


_local = threading.local()

SENTENCE_RULES = word_set("am ar bg da de el en es fa fr hi hy it ja kk mr my nl pl ru sk ur zh")
"""The languages pysbd has sentence rules for (``pysbd.languages.LANGUAGE_CODES``): their
abbreviations (with ``MORE_ABBREVIATIONS``), numbers and quotation marks. Chinese and Japanese,
written without spaces, are split at their ideographic full stop, question and exclamation
marks."""

UNDETERMINED = "und"
"""The code of a text whose language was not told (ISO 639-2's "undetermined")."""

DETECTED_SCRIPTS = word_set(
    """LATIN CYRILLIC GREEK ARABIC HEBREW DEVANAGARI BENGALI GURMUKHI GUJARATI ORIYA TAMIL
    TELUGU KANNADA MALAYALAM SINHALA THAI LAO KHMER MYANMAR TIBETAN GEORGIAN ARMENIAN HANGUL
    ETHIOPIC CJK HIRAGANA KATAKANA"""
)
"""The scripts the languages ``ragmeter.language`` detects are written in (as ``script_of``
names them). Text in another script is undetermined: the detector would name some language for
it anyway (Ol Chiki reads as Amharic with P 0.998)."""

_TERMINALS = (
    ".!?\u0589\u061f\u06d4\u0700-\u0702\u07f9\u0964\u0965\u104a\u104b\u1362\u1367\u1368"
    "\u166e\u17d4\u17d5\u1803\u1809\u1944\u1945\u1c7e\u1c7f\u203c\u203d\u2047-\u2049"
    "\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ufe52\ufe56\ufe57"
)
"""The sentence-final punctuation of the scripts that write one (Unicode's Sentence_Terminal
characters of the living scripts): the full stop, question and exclamation marks, the Armenian
full stop, the Arabic question mark and full stop, the Syriac, N'Ko, Devanagari (danda),
Myanmar, Ethiopic, Canadian syllabics, Khmer, Mongolian, Limbu, Ol Chiki, Lisu, Vai and Bamum
ones."""
_WIDE_TERMINALS = "\u3002\uff01\uff1f\uff61\ufe12\ufe15\ufe16"
"""The ideographic (CJK) full stop, question and exclamation marks: no space follows them."""
_CLOSERS = "\"')\\]}\u00bb\u2019\u201d\u203a\u300d\u300f\u3011\uff09\uff3d"
_SENTENCE_END = re.compile(
    rf"[{_TERMINALS}]+[{_CLOSERS}]*(?:\s+|$)|[{_WIDE_TERMINALS}]+[{_CLOSERS}]*\s*"
)

_SPLITS: ContextVar[dict[str, str] | None] = ContextVar("ragmeter_splits", default=None)


def script_of(text: str) -> str | None:
    """The script most of ``text``'s letters are written in, as Unicode names it ("LATIN",
    "CYRILLIC", "DEVANAGARI", "CJK", "HIRAGANA", "OL CHIKI", ...); None for text without
    letters."""
    counts = Counter(_script(ch) for ch in text if ch.isalpha())
    return counts.most_common(1)[0][0] if counts else None


_NAME_ENDS = frozenset(
    ["LETTER", "SYLLABLE", "SIGN", "CHARACTER", "VOWEL", "MARK", "DIGIT", "LIGATURE", "SYMBOL"]
)


@lru_cache(maxsize=8192)
def _script(letter: str) -> str:
    """The script of a letter: its Unicode name up to the word that says what it is ("OL CHIKI"
    of "OL CHIKI LETTER LA"), less the case ("LATIN" of "LATIN SMALL LETTER A")."""
    words = unicodedata.name(letter, "UNKNOWN").split()
    ends = [i for i, word in enumerate(words) if word in _NAME_ENDS or "IDEOGRAPH" in word]
    named = [w for w in words[: ends[0]] if w not in ("SMALL", "CAPITAL")] if ends else []
    if not named or named[0] == "CJK":
        return words[0]
    return " ".join(named)


def sentence_rule(language: str, text: str = "") -> str | None:
    """How text of ``language`` is split, in words, when not by its own language's rules (None
    where it is): said in the explanation of every score that split it.

    A language pysbd has no rules for is split at sentence-final punctuation of any script; so
    is text whose language was not told (``UNDETERMINED``), unless it is written in Latin
    letters (or none), which English rules split as they always did."""
    if language in SENTENCE_RULES:
        return None
    if language != UNDETERMINED:
        return f"no sentence rules for {language}: split at sentence-final punctuation"
    script = script_of(text)
    if script in (None, "LATIN"):
        return "language not determined: split by English rules"
    if script not in DETECTED_SCRIPTS:
        return f"no language is known in the {script} script: split at sentence-final punctuation"
    return f"language not determined ({script} script): split at sentence-final punctuation"


MORE_ABBREVIATIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "es": {"prepositive": ("sr", "sres", "dra", "gral", "sto", "sta", "ing")},
    "fr": {"abbreviations": ("p",), "number": ("p", "pp", "no", "vol", "chap", "fig", "art")},
}
"""What pysbd's abbreviation lists lack, by language: titles before a name ("El Sr. Pérez",
"la Dra. Ruiz": pysbd knows "Dr." and "Sra." but not these), and abbreviations before a number
("p. 12"). Without them a sentence ends after the abbreviation."""

_CJK_CLOSERS = "\u201d\u2019\u300d\u300f\u3011\u3015\u3009\u300b\uff09\uff3d"
"""The closing quotes and brackets of Chinese and Japanese text (curly quotes, corner and
lenticular brackets, fullwidth parentheses), which pysbd leaves at the start of the next
sentence: a quotation that ends a sentence ("...\u3002\u201d") would open the next."""
_LEADING_CJK_CLOSERS = re.compile(f"^[{_CJK_CLOSERS}]+")


def _rules(language: str) -> Any:
    """pysbd's rules of ``language``, with what ``MORE_ABBREVIATIONS`` adds."""
    from pysbd.languages import Language

    base = Language.get_language_code(language)
    more = MORE_ABBREVIATIONS.get(language)
    if not more:
        return base
    known = base.Abbreviation
    lists = {
        "ABBREVIATIONS": [*known.ABBREVIATIONS, *more.get("abbreviations", ())],
        "PREPOSITIVE_ABBREVIATIONS": [
            *known.PREPOSITIVE_ABBREVIATIONS,
            *more.get("prepositive", ()),
        ],
        "NUMBER_ABBREVIATIONS": [*known.NUMBER_ABBREVIATIONS, *more.get("number", ())],
    }
    abbreviation = type("Abbreviation", (known,), lists)
    return type(base.__name__, (base,), {"Abbreviation": abbreviation})


def _segmenter(language: str = "en") -> Any:
    """One pysbd segmenter per thread and language: a segmenter keeps state while it works, so
    sharing one between workers miscounts sentences."""
    segmenters: dict[str, Any] = _local.__dict__.setdefault("segmenters", {})
    if language not in segmenters:
        import pysbd

        segmenter = pysbd.Segmenter(language=language, clean=False)
        if language in MORE_ABBREVIATIONS:
            segmenter.language_module = _rules(language)
        segmenters[language] = segmenter
    return segmenters[language]


def split_sentences(text: str, language: str = "en") -> list[str]:
    """Sentences of ``text``, stripped, blanks dropped; newlines also end a sentence, so list
    items and headings count as one sentence each.

    Args:
        text: the text.
        language: its language (ISO 639-1, or ``UNDETERMINED``, as
            ``ragmeter.language.language_of`` gives a sample's): pysbd's rules of that
            language (``SENTENCE_RULES``), else the rule ``sentence_rule`` states. English
            when not given.
    """
    noted = _SPLITS.get()
    if noted is not None:
        noted["language"] = language
        rule = sentence_rule(language, text)
        if rule:
            noted["sentence_rule"] = rule
    return list(_split(text, language))


def passage_sentences(passages: Sequence[str], language: str = "en") -> list[str]:
    """The sentences of every passage in order, each passage split on its own (no sentence
    runs from one passage into the next)."""
    return [sentence for passage in passages for sentence in split_sentences(passage, language)]


@contextmanager
def splits_noted() -> Iterator[dict[str, str]]:
    """While open, the language every ``split_sentences`` in this context split by
    (``language``), with the rule where it was not that language's own (``sentence_rule``):
    what ``Metric.score`` adds to the explanation of a metric that split text. Empty when
    nothing was split."""
    noted: dict[str, str] = {}
    token = _SPLITS.set(noted)
    try:
        yield noted
    finally:
        _SPLITS.reset(token)


@lru_cache(maxsize=4096)
def _split(text: str, language: str = "en") -> tuple[str, ...]:
    """Remembered: the same passage is split by the metric that judges it and again by the
    explanation of its score (pysbd takes milliseconds a passage)."""
    by_punctuation = language not in SENTENCE_RULES and (
        language != UNDETERMINED or script_of(text) not in (None, "LATIN")
    )
    rules = "en" if language == UNDETERMINED else language
    sentences: list[str] = []
    for block in text.split("\n"):
        if block.strip():
            found = _at_punctuation(block) if by_punctuation else _segmenter(rules).segment(block)
            found = [s.strip() for s in found if s.strip()]
            sentences.extend(_closers_carried(found) if rules in ("zh", "ja") else found)
    return tuple(sentences)


def _closers_carried(sentences: list[str]) -> list[str]:
    """Chinese or Japanese sentences with the closing quotes and brackets that open one moved
    to the end of the sentence before, where they belong."""
    out: list[str] = []
    for sentence in sentences:
        closers = _LEADING_CJK_CLOSERS.match(sentence)
        if closers and out:
            out[-1] += closers.group(0)
            sentence = sentence[closers.end() :].strip()
        if sentence:
            out.append(sentence)
    return out


def _at_punctuation(block: str) -> list[str]:
    """``block`` cut after each run of sentence-final punctuation (with the closing quotes and
    brackets after it) that a space or the end follows; after ideographic punctuation, whatever
    follows."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(block):
        pieces.append(block[start : end.end()])
        start = end.end()
    return [*pieces, block[start:]]
