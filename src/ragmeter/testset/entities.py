"""Named entities of chunks, for pairing chunks that speak of the same thing.

spaCy's small English model (the ``attribution`` extra) when it is installed; without it no
entities are found and chunks are paired by embedding alone.
"""

from __future__ import annotations

import threading
from typing import Any

from ragmeter.attribution.retrieval import SPACY_MODEL, RetrievalError, _spacy_pipeline

_KINDS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "FAC", "NORP"}
)
"""Labels that name a thing two chunks can share (not dates, amounts or ordinals)."""


class EntityFinder:
    """Entities of a text, lower-cased, cached per text; an empty set without spaCy."""

    def __init__(self, model: str = SPACY_MODEL, *, enabled: bool = True) -> None:
        self.model = model
        self._pipeline: Any = None
        self._missing = not enabled
        self._cache: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self._load() is not None

    def _load(self) -> Any:
        if self._pipeline is None and not self._missing:
            try:
                self._pipeline = _spacy_pipeline(self.model)
            except RetrievalError:
                self._missing = True
        return self._pipeline

    def of(self, text: str) -> frozenset[str]:
        with self._lock:  # spaCy pipelines are not safe to share between threads
            if text not in self._cache:
                pipeline = self._load()
                found = (
                    frozenset(
                        e.text.strip().casefold()
                        for e in pipeline(text).ents
                        if e.label_ in _KINDS and e.text.strip()
                    )
                    if pipeline is not None
                    else frozenset()
                )
                self._cache[text] = found
            return self._cache[text]
