"""Read the citations out of an attributed answer, sentence by sentence.

Three kinds are recognised in square brackets:

- knowledge: ``[Q212657, place of birth: Rome, occupation: painter]`` (the paper also writes
  ``[qid: Q212657, ...]``); one bracket may cite several triples of one entity;
- ``[NA]``: the sentence needs knowledge that the graph does not hold (conscious incompetence);
- documents: ``[1]``, ``[2, 3]``, ``[2-4]``, as document-attributed systems write them.

Anything else in brackets is kept as *malformed* with the problem named, and never silently
dropped: a bracket that opens an entity citation but lacks a property or value still counts as a
(wrong) citation, because the paper requires all three parts for correctness.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from ragmeter.attribution.graph import Triple
from ragmeter.text import split_sentences

CitationKind = Literal["knowledge", "na", "document", "malformed"]

# Citations are swapped for private-use markers before sentence splitting, so that the splitter
# never sees the periods, colons and commas inside them.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_NA = re.compile(r"^\s*n\s*/?\s*a\s*$", re.IGNORECASE)
_DOCUMENTS = re.compile(r"^\s*\d+(\s*[-\u2013]\s*\d+)?(\s*[,;]\s*\d+(\s*[-\u2013]\s*\d+)?)*\s*$")
_ENTITY_ID = re.compile(r"^[A-Za-z][\w.\-]*\d[\w.\-]*$")
_QID_PREFIX = re.compile(r"^\s*qid\s*:\s*", re.IGNORECASE)


class Citation(BaseModel):
    """One bracket: what it cites, or why it could not be read."""

    raw: str
    kind: CitationKind
    triples: list[Triple] = Field(default_factory=list)
    documents: list[int] = Field(default_factory=list)
    problem: str | None = None


class CitedSentence(BaseModel):
    """A sentence with its citations taken out of the text and listed beside it."""

    text: str
    citations: list[Citation] = Field(default_factory=list)

    @property
    def na(self) -> bool:
        return any(c.kind == "na" for c in self.citations)

    @property
    def triples(self) -> list[Triple]:
        return [t for c in self.citations if c.kind == "knowledge" for t in c.triples]

    @property
    def documents(self) -> list[int]:
        return [d for c in self.citations if c.kind == "document" for d in c.documents]


class ParsedAnswer(BaseModel):
    sentences: list[CitedSentence]

    @property
    def triples(self) -> list[Triple]:
        return [t for s in self.sentences for t in s.triples]

    @property
    def malformed(self) -> list[Citation]:
        return [c for s in self.sentences for c in s.citations if c.kind == "malformed"]

    @property
    def text(self) -> str:
        """The answer without its citations."""
        return " ".join(s.text for s in self.sentences if s.text)


def _documents(content: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"[,;]", content):
        low, _, high = part.replace("\u2013", "-").partition("-")
        start = int(low)
        numbers.extend(range(start, int(high) + 1) if high.strip() else [start])
    return numbers


def _pairs(parts: list[str]) -> list[tuple[str, str]]:
    """``property: value`` pairs; a part without a colon continues the previous value, since
    values such as titles may themselves contain commas."""
    pairs: list[tuple[str, str]] = []
    for part in parts:
        if ":" in part or not pairs:
            prop, _, value = part.partition(":")
            pairs.append((prop.strip(), value.strip()))
        else:
            prop, value = pairs[-1]
            pairs[-1] = (prop, f"{value}, {part.strip()}" if value else part.strip())
    return pairs


def parse_citation(raw: str) -> Citation:
    """Classify one bracket (``raw`` includes the brackets)."""
    if not raw.startswith("["):
        return Citation(raw=raw, kind="malformed", problem="closing bracket without an opening one")
    if not raw.endswith("]"):
        return Citation(raw=raw, kind="malformed", problem="unclosed bracket")
    content = raw[1:-1].strip()
    if _NA.match(content):
        return Citation(raw=raw, kind="na")
    if _DOCUMENTS.match(content):
        return Citation(raw=raw, kind="document", documents=_documents(content))
    parts = content.split(",")
    head = _QID_PREFIX.sub("", parts[0]).strip()
    # The entity id comes first; a first part that is already a pair means it is missing.
    entity, rest = ("", parts) if ":" in head else (head, parts[1:])
    pairs = _pairs([p for p in rest if p.strip()])
    # "qid: X" may also stand among the pairs rather than first.
    entity = entity or next((v for p, v in pairs if p.casefold() == "qid"), "")
    pairs = [(p, v) for p, v in pairs if p.casefold() != "qid"]
    if not pairs:
        if _ENTITY_ID.match(entity):
            return Citation(
                raw=raw,
                kind="knowledge",
                triples=[Triple(entity=entity, property="", value="")],
                problem="incomplete: entity id without a property and value",
            )
        return Citation(raw=raw, kind="malformed", problem="not a citation")
    triples = [Triple(entity=entity, property=p, value=v) for p, v in pairs]
    missing = [
        name
        for name, absent in (
            ("entity id", not entity),
            ("property", any(not p for p, _ in pairs)),
            ("value", any(not v for _, v in pairs)),
        )
        if absent
    ]
    problem = f"incomplete: missing {', '.join(missing)}" if missing else None
    return Citation(raw=raw, kind="knowledge", triples=triples, problem=problem)


def _brackets(text: str) -> tuple[str, list[Citation]]:
    """Replace each bracket with a marker; an unclosed ``[`` runs to the next ``[``, line end or
    the end of the text (a reply cut off at the token limit ends that way)."""
    out: list[str] = []
    citations: list[Citation] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "]":  # a closing bracket with no opening one
            out.append(f"{_OPEN}{len(citations)}{_CLOSE}")
            citations.append(parse_citation(char))
            index += 1
            continue
        if char != "[":
            out.append(char)
            index += 1
            continue
        stops = [p for p in (text.find(c, index + 1) for c in "[]\n") if p != -1]
        end = min(stops) if stops else len(text)
        closed = end < len(text) and text[end] == "]"
        raw = text[index : end + 1] if closed else text[index:end]
        out.append(f"{_OPEN}{len(citations)}{_CLOSE}")
        citations.append(parse_citation(raw))
        index = end + 1 if closed else end
    return "".join(out), citations


def _clean(text: str) -> str:
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def parse_answer(text: str) -> ParsedAnswer:
    """Split an answer into sentences, each with its citations.

    A citation placed after the full stop (``... in Rome. [Q1, ...] She ...``) belongs to the
    sentence before it, the way people read it.
    """
    marked, citations = _brackets(text)
    sentences: list[CitedSentence] = []
    for chunk in split_sentences(marked):
        leading = re.match(rf"^(\s*{_OPEN}\d+{_CLOSE})+", chunk)
        if leading and sentences:
            sentences[-1].citations.extend(
                citations[int(i)] for i in _MARKER.findall(leading.group(0))
            )
            chunk = chunk[leading.end() :]
        cited = [citations[int(i)] for i in _MARKER.findall(chunk)]
        words = _clean(_MARKER.sub(" ", chunk))
        if words or cited:
            sentences.append(CitedSentence(text=words, citations=cited))
    stray = [i for i, s in enumerate(sentences) if not s.text]
    for i in reversed(stray):
        if i > 0:  # a sentence of citations only: they belong to the one before
            sentences[i - 1].citations.extend(sentences.pop(i).citations)
    return ParsedAnswer(sentences=sentences)
