"""Named entities of chunks, for pairing chunks that speak of the same thing.

spaCy's small English model (the ``attribution`` extra, through KaLMA's ``SpacyRecognizer``)
when it is installed; without it no entities are found and chunks are paired by embedding
alone.
"""

from __future__ import annotations

import threading

from ragmeter.attribution.retrieval import RetrievalError, SpacyRecognizer

_KINDS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "FAC", "NORP"}
)
"""Labels that name a thing two chunks can share (not dates, amounts or ordinals)."""


class EntityFinder:
    """Entities of a text, lower-cased, cached per text; an empty set without spaCy."""

    def __init__(self, *, enabled: bool = True) -> None:
        self._recognize = SpacyRecognizer()
        self._missing = not enabled
        self._cache: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()  # a spaCy pipeline is not safe to share between threads

    @property
    def available(self) -> bool:
        self.of("")
        return not self._missing

    def of(self, text: str) -> frozenset[str]:
        with self._lock:
            if text not in self._cache:
                self._cache[text] = self._find(text)
            return self._cache[text]

    def _find(self, text: str) -> frozenset[str]:
        if self._missing:
            return frozenset()
        try:
            mentions = self._recognize(text)
        except RetrievalError:  # spaCy or its model is not installed
            self._missing = True
            return frozenset()
        return frozenset(m.text.casefold() for m in mentions if m.label in _KINDS and m.text)
