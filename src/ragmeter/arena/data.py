"""What the arena reads: questions with reference answers, a corpus, system answers, answer pairs.

Every loader goes through the core row reader (JSONL, JSON, CSV, Parquet), and a bad row raises
:class:`~ragmeter.data.DatasetError` with its row and field, as the sample loader does, so a broken
line in a 14,000-row annotation file can be found.

Formats:

* questions: ``{id, question, reference?, domain?}`` (``qid`` for ``id`` and ``answer`` for
  ``reference`` are accepted), or LFRQA annotation files
  ``annotations_<domain>_with_citation.jsonl`` (a file or the folder holding them);
* corpus: ``{id, text, title?}`` rows, or a folder of ``.txt`` / ``.md`` files (one document each);
* system answers: ``{id, answer, system?}`` rows, ``answer`` null where generation failed;
* pairs: ``{question, answer_a, answer_b, label?, domain?, id?, system_a?, system_b?,
  reference?, contexts?}`` with ``label`` -1 (A preferred), 0 (tie) or 1 (B preferred);
  ``overall_preference`` and ``answer_a_type`` / ``answer_b_type`` (the LFQA expert file's
  names) are recognised. ``reference`` (a reference answer) and ``contexts`` (the passages the
  answers were written from) are what the claims method checks the answers against.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ragmeter.data import DatasetError, read_rows

Label = Literal[-1, 0, 1]
"""A preference between answers A and B: -1 prefers A, 1 prefers B, 0 is a tie / not sure."""

NO_ANSWER = "I couldn't find an answer."
"""What the paper's answer prompt asks a system to say when the passages do not help."""

_NO_ANSWER_START = re.compile(r"^\W*i\s+(?:couldn[\u2019'`]?t|could\s+not)\s+find\s+an?\s+answer")
_LFRQA_FILE = re.compile(r"annotations_(?P<domain>\w+?)_with_citation\.jsonl$")


class Question(BaseModel):
    """A question put to every system, with the reference answer the systems are compared to."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    reference: str | None = None
    domain: str | None = None


class Document(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str | None = None


class SystemAnswers(BaseModel):
    """One system's answers by question id; ``None`` where the system produced none."""

    name: str
    answers: dict[str, str | None]


class Pair(BaseModel):
    """Two answers to one question, to be judged; ``label`` is a human's preference if known."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    answer_a: str
    answer_b: str
    system_a: str = "A"
    system_b: str = "B"
    question_id: str | None = None
    domain: str | None = None
    label: Label | None = None
    design: str = "pairs"
    """How the pair was made: ``reference`` (a system against the reference answer),
    ``complete`` (two systems), or ``pairs`` (read from a pairs file)."""
    reference: str | None = None
    """A reference answer to the question, neither of the two: what the claims method checks
    the answers' correctness and completeness against."""
    contexts: tuple[str, ...] = ()
    """The passages the answers were written from: a claim that neither these nor the reference
    support is unsupported (the claims method)."""


def is_no_answer(text: str | None) -> bool:
    """Whether an answer declines ("I couldn't find an answer."), however it is quoted or cased.

    Only a reply that starts by declining counts: an answer that mentions the phrase later on
    still answers something."""
    return text is not None and _NO_ANSWER_START.match(text.strip().lower()) is not None


# --- questions ----------------------------------------------------------------------------------


def load_questions(path: str | Path) -> list[Question]:
    """Questions from our format, or from LFRQA annotation files (a file or their folder)."""
    path = Path(path)
    if path.is_dir() or _LFRQA_FILE.search(path.name):
        return load_lfrqa(path)
    return [_to_question(row, record) for row, record in _records(path)]


def load_lfrqa(path: str | Path, domains: list[str] | None = None) -> list[Question]:
    """LFRQA questions with their human long-form answers as references.

    The reference is the ``answer`` field (one sentence per line) joined into one paragraph: the
    paper removes the citations before judging, and so do we by not using
    ``faithful_answer_w_citation``. A few rows have an empty answer (4 in lifestyle); they get no
    reference, and the reference design skips them. Ids are the qids where those are text (they
    name the domain, e.g. ``lifestyle-forum-test-279``) and ``<domain>-<qid>`` where they are
    numbers (FiQA's), because numbers repeat across domains.
    """
    path = Path(path)
    files = sorted(path.glob("annotations_*_with_citation.jsonl")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no annotations_<domain>_with_citation.jsonl files in {path}")
    questions: list[Question] = []
    for file in files:
        match = _LFRQA_FILE.search(file.name)
        domain = match["domain"] if match else file.stem
        if domains is not None and domain not in domains:
            continue
        for row, record in _records(file):
            qid = record.get("qid")
            if qid is None or qid == "":
                raise DatasetError(row, "qid", "missing")
            answer = record.get("answer") or ""
            if not isinstance(answer, str):
                raise DatasetError(row, "answer", f"expected text, got {type(answer).__name__}")
            reference = " ".join(ln.strip() for ln in answer.splitlines() if ln.strip())
            questions.append(
                Question(
                    id=qid if isinstance(qid, str) else f"{domain}-{qid}",
                    question=_text(row, record, "question", record.get("question")),
                    reference=reference or None,
                    domain=domain,
                )
            )
    return questions


def _to_question(row: int, record: Mapping[str, Any]) -> Question:
    question = _text(row, record, "question", record.get("question"))
    reference = record.get("reference", record.get("answer"))
    if reference is not None:
        reference = _text(row, record, "reference", reference)
    raw_id = record.get("id", record.get("qid"))
    return Question(
        id=str(raw_id) if raw_id is not None else _content_id(question),
        question=question,
        reference=reference,
        domain=_optional(record.get("domain")),
    )


# --- corpus and answers -------------------------------------------------------------------------


def load_corpus(path: str | Path) -> list[Document]:
    """Documents from ``{id, text, title?}`` rows, or one per ``.txt`` / ``.md`` file in a
    folder."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in {".txt", ".md"})
        return [Document(id=p.stem, text=p.read_text(encoding="utf-8")) for p in files]
    documents = []
    for row, record in _records(path):
        text = _text(row, record, "text", record.get("text"))
        raw_id = record.get("id")
        documents.append(
            Document(
                id=str(raw_id) if raw_id is not None else f"doc-{row}",
                text=text,
                title=_optional(record.get("title")),
            )
        )
    return documents


def load_answers(path: str | Path, system: str | None = None) -> SystemAnswers:
    """A system's answers. Its name: ``system`` if given, else the rows' ``system`` field, else the
    file name. A later row for the same id wins, so an appended retry replaces a failure."""
    path = Path(path)
    answers: dict[str, str | None] = {}
    names: set[str] = set()
    for row, record in _records(path):
        raw_id = record.get("id")
        if raw_id is None:
            raise DatasetError(row, "id", "missing: answers are matched to questions by id")
        answer = record.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise DatasetError(row, "answer", f"expected text or null, got {type(answer).__name__}")
        answers[str(raw_id)] = answer
        if record.get("system"):
            names.add(str(record["system"]))
    if system is None and len(names) > 1:
        raise ValueError(f"{path} holds answers of several systems: {sorted(names)}")
    return SystemAnswers(name=system or (names.pop() if names else path.stem), answers=answers)


# --- pairs --------------------------------------------------------------------------------------


def load_pairs(path: str | Path) -> list[Pair]:
    """Pairs of answers, with human labels where the file has them (see the module docstring).

    A pair without an id is named by its content. The same pair may appear on several rows, one
    per human who judged it (the expert file has 140 pairs on 260 rows); such rows are numbered
    (``sha-...``, ``sha-...-2``, ...) so that each human label is kept, while the judge sees
    the pair once: judgements are stored by content.
    """
    pairs = [_to_pair(row, record) for row, record in _records(Path(path))]
    seen: Counter[str] = Counter()
    for n, pair in enumerate(pairs):
        seen[pair.id] += 1
        if seen[pair.id] > 1:
            pairs[n] = pair.model_copy(update={"id": f"{pair.id}-{seen[pair.id]}"})
    return pairs


def load_expert_pairwise(path: str | Path) -> list[Pair]:
    """The LFQA expert preferences (Xu et al., 2023): 260 judgements of 140 pairs of ELI5 answers.

    ``overall_preference`` is -1 when the expert preferred answer A and 1 for B (checked against
    the PRD code that repackaged the file), which is our label convention as it stands. The answer
    types ("human" / "machine") become the system names.
    """
    return load_pairs(path)


def _to_pair(row: int, record: Mapping[str, Any]) -> Pair:
    question = _text(row, record, "question", record.get("question"))
    answer_a = _text(row, record, "answer_a", record.get("answer_a"))
    answer_b = _text(row, record, "answer_b", record.get("answer_b"))
    raw_label = record.get("label", record.get("overall_preference"))
    label: Any = None
    if raw_label is not None:
        try:
            label = int(raw_label)
        except (TypeError, ValueError):
            label = raw_label
        if label not in (-1, 0, 1) or isinstance(raw_label, bool):
            raise DatasetError(row, "label", f"expected -1, 0 or 1, got {raw_label!r}")
    reference = record.get("reference")
    if reference is not None:
        reference = _text(row, record, "reference", reference)
    contexts = record.get("contexts") or []
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise DatasetError(row, "contexts", "expected a list of passages (text)")
    raw_id = record.get("id")
    return Pair(
        id=str(raw_id) if raw_id is not None else _content_id(question, answer_a, answer_b),
        question=question,
        answer_a=answer_a,
        answer_b=answer_b,
        system_a=str(record.get("system_a") or record.get("answer_a_type") or "A"),
        system_b=str(record.get("system_b") or record.get("answer_b_type") or "B"),
        question_id=_optional(record.get("question_id")),
        domain=_optional(record.get("domain")),
        label=label,
        reference=reference,
        contexts=tuple(contexts),
    )


# --- helpers ------------------------------------------------------------------------------------


def _records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for row, record in read_rows(path):
        if isinstance(record, DatasetError):
            raise record
        if not isinstance(record, Mapping):
            raise DatasetError(row, "<row>", f"expected an object, got {type(record).__name__}")
        yield row, record


def _text(row: int, record: Mapping[str, Any], field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        found = "missing" if value is None else f"expected non-blank text, got {value!r}"[:120]
        raise DatasetError(row, field, found)
    return value


def _optional(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _content_id(*parts: str) -> str:
    """A stable id from content, so a reordered file resumes onto the same judgements."""
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()
    return "sha-" + digest[:16]
