"""The language of a sample: given, or detected once from the texts its metrics split.

A sample's language decides how its texts are cut into sentences (``text.split_sentences``):
its contexts for context relevance, its answer's statements and claims, its reference's claims.
It is

- given: ``language`` in the sample's metadata (a ``language`` column or field of the data
  file lands there), else the run's (``evaluate(language=...)``, ``--language``), which
  ``evaluate`` writes into the metadata of the samples that have none;
- else detected by py3langid (a naive Bayes model over byte n-grams, shipped in its wheel, no
  download) from the answer, the reference and the contexts read together, up to
  ``DETECTED_CHARS`` characters in that order: the texts that are split, the answer first, as
  what the user reads. The question is left out: it is not split, and it is short, often too
  short to tell;
- ``UNDETERMINED`` ("und") where the text has fewer than ``MIN_LETTERS`` letters
  (``MIN_SYLLABLES`` Chinese characters, kana or Hangul), the detector is less sure than
  ``MIN_CONFIDENCE``, or the letters are of a script no language the detector knows is written
  in (Cherokee, Ol Chiki, Tifinagh...): ``text.sentence_rule`` says how such text is split.

Detection reads each sample once (remembered by its text), in a few milliseconds.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ragmeter.sample import Sample
from ragmeter.text import DETECTED_SCRIPTS, UNDETERMINED, script_of

LANGUAGE = "language"
"""The metadata key (and data column) a sample's language is given under."""
DETECTED_CHARS = 2000
"""Characters read to detect a language: a few sentences tell it, and the cost is linear."""
MIN_LETTERS = 40
"""Fewer letters (counted with their vowel signs and accents, which Devanagari writes apart)
are too few to tell a language by: "Raskolnikov meets Svidrigaïlov in the tavern." (39) reads
as Slovenian with P 0.62."""
MIN_SYLLABLES = 10
"""The same for text in Chinese characters, kana or Hangul, each of which is a syllable or a
word: fewer of them tell a language than letters of an alphabet do."""
_SYLLABIC = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL"})

MIN_CONFIDENCE = 0.5
"""The detector's probability (over its languages) below which the language is undetermined."""

_CODE = re.compile(r"[a-z]{2,3}")


def language_code(value: object) -> str:
    """A language as the splitting reads it: an ISO 639 code, lowercased, less its region or
    script ("pt-BR" is "pt", "zh_Hans" is "zh").

    Raises:
        ValueError: for anything else ("German", "").
    """
    code = re.split(r"[-_]", str(value).strip().lower(), maxsplit=1)[0]
    if not isinstance(value, str) or not _CODE.fullmatch(code):
        raise ValueError(
            f"language {value!r} is not a language code: give an ISO 639-1 code such as "
            "'de' or 'zh' (a region, as in 'pt-BR', is dropped)"
        )
    return code


def given_language(sample: Sample) -> str | None:
    """The language ``sample`` is given under ``language`` in its metadata; None when none is
    (or it says "auto")."""
    value = sample.metadata.get(LANGUAGE)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    return language_code(value)


def language_of(sample: Sample) -> str:
    """The language ``sample``'s texts are split by: given, else detected (see the module)."""
    given = given_language(sample)
    return given if given is not None else _detected(_read(sample))[0]


def detect_language(texts: Iterable[str]) -> str:
    """The language of ``texts`` read together (up to ``DETECTED_CHARS`` characters), as for a
    sample: ``UNDETERMINED`` where it cannot be told. For texts that are no sample's: a test
    set's chunks and references."""
    return _detected(_joined(texts))[0]


def keyed_language(sample: Sample) -> str | None:
    """What ``sample``'s language adds to the keys its scores are stored under: None where its
    texts are split as they were before languages were told apart (English, or undetermined
    text in Latin letters), so that those keys stay; else the language, so that a score made
    under other rules is not reused."""
    language, script = given_language(sample), None
    if language is None or language == UNDETERMINED:
        detected, script = _detected(_read(sample))
        language = language or detected
    if language == "en" or (language == UNDETERMINED and script in (None, "LATIN")):
        return None
    return language


def _read(sample: Sample) -> str:
    return _joined([sample.answer, sample.reference or "", *sample.contexts])


def _joined(texts: Iterable[str]) -> str:
    read, size = [], 0
    for text in texts:
        if text and size < DETECTED_CHARS:
            read.append(text[: DETECTED_CHARS - size])
            size += len(read[-1]) + 1
    return "\n".join(read)


@lru_cache(maxsize=4096)
def _detected(text: str) -> tuple[str, str | None]:
    """(language, script) of ``text``; remembered, so a sample is read once whatever asks."""
    script = script_of(text)
    letters = sum(1 for ch in text if ch.isalpha() or unicodedata.category(ch)[0] == "M")
    least = MIN_SYLLABLES if script in _SYLLABIC else MIN_LETTERS
    if script not in DETECTED_SCRIPTS or letters < least:
        return UNDETERMINED, script
    language, confidence = _identifier().classify(text)
    return (language if confidence >= MIN_CONFIDENCE else UNDETERMINED), script


_loading = threading.Lock()
_loaded: list[Any] = []


def _identifier() -> Any:
    """py3langid's model (4.6 MB, about a second to read), loaded once, restricted to the
    languages with a two-letter code: its three-letter ones are regional languages and
    dialects (Extremaduran, Wu Chinese, Cantonese) that take short Spanish or Chinese text."""
    with _loading:
        if not _loaded:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages([code for code in identifier.labels if len(code) == 2])
            _loaded.append(identifier)
    return _loaded[0]


__all__ = [
    "DETECTED_CHARS",
    "LANGUAGE",
    "MIN_CONFIDENCE",
    "MIN_LETTERS",
    "MIN_SYLLABLES",
    "UNDETERMINED",
    "detect_language",
    "given_language",
    "keyed_language",
    "language_code",
    "language_of",
]
