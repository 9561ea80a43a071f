"""A small in-memory knowledge graph: entities with ``property: value`` pairs and a name index.

KaLMA attributes answers to triples ``(entity id, property, value)``. Graphs arrive in two shapes,
both loaded here: entity-centred records (BioKaLMA: one dict per person with ``qid``, ``name`` and
its properties) and plain triple files (JSONL or CSV rows of subject/predicate/object or
qid/property/value). Every comparison of a cited triple with the graph goes through
:func:`normalize`, so a citation is not marked wrong for case, accents or ``date_of_birth`` vs
``date of birth``.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.records import read_json_lines

ID_KEYS = ("qid", "id")
NAME_KEYS = ("name", "label")
TYPE_PROPERTY = "instance of"
TRIPLE_COLUMNS = (("subject", "predicate", "object"), ("qid", "property", "value"))

_QUOTES = re.compile("[\"'`\u2018\u2019\u201c\u201d]")
_SPACE = re.compile(r"\s+")
_MIDNIGHT = re.compile(r"t00:00:00z?$")


class GraphError(ValueError):
    """A graph file or record that cannot be read, with where the problem is."""


def normalize(text: str) -> str:
    """The form two strings are compared in: accents, case, quotes, underscores and spacing
    are ignored, as is a Wikidata timestamp's midnight suffix.

    Citations copy values from the prompt, so anything beyond these surface differences (a
    reworded value, another date format) is a real mismatch and stays one.
    """
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _QUOTES.sub("", text.casefold().replace("_", " "))
    text = _SPACE.sub(" ", text).strip(" .,;:")
    text = _MIDNIGHT.sub("", text)
    return text.removeprefix("+") if text[1:2].isdigit() else text


class Triple(BaseModel):
    """One piece of knowledge: ``entity`` (an id such as ``Q212657``), a property and a value."""

    model_config = ConfigDict(frozen=True)

    entity: str
    property: str
    value: str

    @property
    def key(self) -> tuple[str, str, str]:
        """The normalised identity used for every match against the graph."""
        return normalize(self.entity), normalize(self.property), normalize(self.value)

    @property
    def complete(self) -> bool:
        """Whether all three parts are present; the paper counts an incomplete one as wrong."""
        return all(part.strip() for part in (self.entity, self.property, self.value))

    def render(self) -> str:
        """The citation form the generation prompt asks for: ``[Q1, property: value]``."""
        return f"[{self.entity}, {self.property}: {self.value}]"


class Entity(BaseModel):
    """A node and its one-hop neighbourhood: every ``property: value`` pair of one entity."""

    id: str
    name: str
    properties: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def types(self) -> list[str]:
        """What the entity is an instance of (``human`` for BioKaLMA's people)."""
        return self.properties.get(TYPE_PROPERTY, [])

    def triples(self, *, with_name: bool = True) -> list[Triple]:
        """All the entity's triples; the name is one too, as the paper's prompts show it."""
        found = [Triple(entity=self.id, property="name", value=self.name)] if with_name else []
        for prop, values in self.properties.items():
            found.extend(Triple(entity=self.id, property=prop, value=v) for v in values)
        return found

    def render(self) -> str:
        """The entity flattened for a prompt: ``{qid: Q1, name: N, property: value, ...}``."""
        pairs = [f"qid: {self.id}", f"name: {self.name}"]
        pairs.extend(f"{p}: {v}" for p, values in self.properties.items() for v in values)
        return "{" + ", ".join(pairs) + "}"

    def to_record(self) -> dict[str, Any]:
        """The entity-centred record shape, which :func:`entity_from_record` reads back."""
        record: dict[str, Any] = {"qid": self.id, "name": self.name}
        for prop, values in self.properties.items():
            record[prop] = values[0] if len(values) == 1 else list(values)
        return record


def _values(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list | tuple) else [raw]
    return [str(v).strip() for v in items if v is not None and str(v).strip()]


def entity_from_record(record: Mapping[str, Any]) -> Entity:
    """An entity from one entity-centred dict; blank values (BioKaLMA has empty dates) are
    dropped rather than kept as knowledge that says nothing."""
    ident = next((str(record[k]).strip() for k in ID_KEYS if record.get(k)), "")
    if not ident:
        raise GraphError(f"entity record without a 'qid' or 'id': {sorted(record)[:6]}")
    name = next((str(record[k]).strip() for k in NAME_KEYS if record.get(k)), "") or ident
    properties: dict[str, list[str]] = {}
    for key, raw in record.items():
        if key in ID_KEYS or key in NAME_KEYS:
            continue
        values = _values(raw)
        if values:
            properties.setdefault(str(key).replace("_", " "), []).extend(values)
    return Entity(id=ident, name=name, properties=properties)


class KnowledgeGraph:
    """Entities by id, a name index (normalised name -> ids) and a set of triple keys.

    The triple set makes "does this cited triple exist" a set lookup; the name index is what
    retrieval matches recognised names against. Insertion order is kept so that every listing,
    and so every prompt, is deterministic.
    """

    def __init__(self, entities: Iterable[Entity] = ()) -> None:
        self._entities: dict[str, Entity] = {}
        self._names: dict[str, list[str]] = {}
        self._keys: set[tuple[str, str, str]] = set()
        for entity in entities:
            self.add(entity)

    def add(self, entity: Entity) -> None:
        """Add an entity; a second record for the same id adds its new pairs to the first."""
        known = self._entities.get(entity.id)
        if known is None:
            known = Entity(id=entity.id, name=entity.name)
            self._entities[entity.id] = known
            self._names.setdefault(normalize(entity.name), []).append(entity.id)
            self._keys.add(known.triples()[0].key)
        for prop, values in entity.properties.items():
            held = known.properties.setdefault(prop, [])
            for value in values:
                if value not in held:
                    held.append(value)
                    self._keys.add(Triple(entity=entity.id, property=prop, value=value).key)

    @property
    def entities(self) -> list[Entity]:
        return list(self._entities.values())

    def __len__(self) -> int:
        return len(self._entities)

    def __contains__(self, triple: object) -> bool:
        return isinstance(triple, Triple) and triple.complete and triple.key in self._keys

    def get(self, entity_id: str) -> Entity | None:
        return self._entities.get(entity_id)

    def find(self, name: str) -> list[Entity]:
        """Every entity whose name matches ``name`` after normalisation (namesakes included)."""
        return [self._entities[i] for i in self._names.get(normalize(name), [])]

    def names(self) -> list[str]:
        """The normalised names in the index."""
        return list(self._names)

    def name_of(self, entity_id: str) -> str:
        entity = self._entities.get(entity_id)
        return entity.name if entity else entity_id

    def triples(self, *, with_name: bool = True) -> list[Triple]:
        return [t for e in self._entities.values() for t in e.triples(with_name=with_name)]

    def subgraph(self, entity_ids: Iterable[str]) -> KnowledgeGraph:
        """The one-hop sub-graphs of the given entities (unknown ids are skipped)."""
        return KnowledgeGraph(self._entities[i] for i in entity_ids if i in self._entities)

    def without(self, triples: Iterable[Triple]) -> KnowledgeGraph:
        """A copy with the given triples removed: the conscious-incompetence setting."""
        gone = {t.key for t in triples}
        kept = []
        for entity in self._entities.values():
            properties = {
                prop: [
                    v
                    for v in values
                    if (normalize(entity.id), normalize(prop), normalize(v)) not in gone
                ]
                for prop, values in entity.properties.items()
            }
            kept.append(
                Entity(
                    id=entity.id,
                    name=entity.name,
                    properties={p: vs for p, vs in properties.items() if vs},
                )
            )
        return KnowledgeGraph(kept)

    def render(self) -> str:
        """The graph flattened into text for a prompt: one ``{...}`` line per entity."""
        return "\n".join(e.render() for e in self._entities.values())


def _triple_columns(row: Mapping[str, Any]) -> tuple[str, str, str] | None:
    for columns in TRIPLE_COLUMNS:
        if all(c in row for c in columns) and len(row) <= 4:
            return columns
    return None


def graph_from_triples(rows: Iterable[Mapping[str, Any]]) -> KnowledgeGraph:
    """Build entities from triple rows; a ``name`` (or ``label``) predicate names the subject."""
    names: dict[str, str] = {}
    properties: dict[str, dict[str, list[str]]] = {}
    for number, row in enumerate(rows, 1):
        columns = _triple_columns(row)
        if columns is None:
            raise GraphError(
                f"row {number}: expected subject/predicate/object or "
                f"qid/property/value columns, got {sorted(row)}"
            )
        subject, predicate, value = (str(row[c] or "").strip() for c in columns)
        if not subject or not predicate:
            raise GraphError(f"row {number}: empty subject or predicate")
        held = properties.setdefault(subject, {})
        if not value:
            continue
        if predicate.casefold() in NAME_KEYS and subject not in names:
            names[subject] = value
        else:
            held.setdefault(predicate.replace("_", " "), []).append(value)
    return KnowledgeGraph(
        Entity(id=s, name=names.get(s, s), properties=p) for s, p in properties.items()
    )


def _records(value: Any) -> Iterator[Mapping[str, Any]]:
    """Entity dicts inside whatever a row holds: a BioKaLMA row, a pair, a list, an entity."""
    if isinstance(value, Mapping):
        if isinstance(value.get("knowledge"), list):
            yield from _records(value["knowledge"])
        elif isinstance(value.get("entities"), list):
            yield from _records(value["entities"])
        else:
            yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping | list):
                yield from _records(item)


def graph_from_records(rows: Iterable[Any]) -> KnowledgeGraph:
    """Entity-centred rows, or rows that hold a list of them (``knowledge`` / ``entities``)."""
    return KnowledgeGraph(entity_from_record(r) for row in rows for r in _records(row))


def _read_rows(path: Path) -> list[Any]:
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    if path.suffix.lower() == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, list) else [data]
    return read_jsonl(path)


def read_jsonl(path: Path) -> list[Any]:
    """One JSON value per non-blank line; ``GraphError`` names the line that is not JSON."""
    try:
        return read_json_lines(path)
    except ValueError as exc:
        raise GraphError(str(exc)) from exc


def load_graph(path: str | Path) -> KnowledgeGraph:
    """Load a graph file: triples (CSV, or JSON/JSONL rows of triple columns) or entity records
    (JSON/JSONL, including BioKaLMA rows, whose ``knowledge`` lists are merged)."""
    path = Path(path)
    if not path.is_file():
        raise GraphError(f"no graph file at {path}")
    rows = _read_rows(path)
    if rows and isinstance(rows[0], Mapping) and _triple_columns(rows[0]) is not None:
        return graph_from_triples(rows)
    return graph_from_records(rows)
