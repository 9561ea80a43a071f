"""The unit of evaluation: a question put to a RAG system, what it retrieved and answered."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

CONVERSATION = "conversation so far"
"""The tag the earlier turns are shown to the judge in, before the question."""


class Turn(BaseModel):
    """An earlier turn of a conversation: what the user asked or the assistant answered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    text: str


ROLES: dict[str, Literal["user", "assistant"]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "agent": "assistant",
}
"""The role names other tools give a turn (OpenAI, LangChain, ragas), each read as user or
assistant; compared without case."""


def parse_turns(value: object) -> list[Turn]:
    """Read earlier turns in any of the forms people write them, so that the constructor and the
    file loaders accept the same things.

    A turn is a :class:`Turn`, an object with a role under ``role`` (OpenAI), ``type`` (ragas,
    LangChain) or ``speaker`` and its text under ``content`` or ``text``, or a ``(role, text)``
    pair; the roles are the keys of :data:`ROLES`.

    Args:
        value: a list (or tuple) of turns; None for none.

    Returns:
        The turns, in order.

    Raises:
        ValueError: naming the turn (from 1) that is not one of these forms.
    """
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list of turns, got {type(value).__name__}")
    return [_parse_turn(number, item) for number, item in enumerate(value, 1)]


def _parse_turn(number: int, item: object) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, Mapping):
        role = next((item[k] for k in ("role", "type", "speaker") if k in item), None)
        text = next((item[k] for k in ("content", "text") if k in item), None)
    elif isinstance(item, list | tuple) and len(item) == 2:
        role, text = item
    else:
        raise ValueError(f"turn {number}: expected an object with a role and a text")
    if str(role).lower() not in ROLES:
        raise ValueError(f"turn {number}: the role {role!r} is not one of {', '.join(ROLES)}")
    if not isinstance(text, str):
        raise ValueError(f"turn {number}: expected its text as a string, got {type(text).__name__}")
    return Turn(role=ROLES[str(role).lower()], text=text)


def asked_after(question: str, history: Sequence[Turn]) -> dict[str, str]:
    """A question as the judge is shown it: after the conversation so far, when there is one,
    so that a follow-up is read as it was meant. Without one, the question alone, as before
    conversations were supported (prompts and keys of single-turn samples stay)."""
    if not history:
        return {"question": question}
    said = "\n".join(
        f"{'User' if turn.role == 'user' else 'Assistant'}: {turn.text}" for turn in history
    )
    return {CONVERSATION: said, "question": question}


def parse_ids(value: object) -> list[str]:
    """Read a list of context ids (``context_ids``, or ``reference_context_ids`` given as a
    list), so that the constructor and the file loaders accept the same things: strings, or
    integers written as strings (``8412683`` and ``"8412683"`` name one passage).

    Raises:
        ValueError: naming the id (from 1) that is not a string or an integer, is empty, or
            repeats an earlier one (a ranking lists each context once).
    """
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list of ids, got {type(value).__name__}")
    first: dict[str, int] = {}
    for position, item in enumerate(value, 1):
        text = _id_text(item, f"id {position}")
        if text in first:
            raise ValueError(f"id {position}: {text!r} is already id {first[text]}")
        first[text] = position
    return list(first)


def parse_grades(value: object) -> list[str] | dict[str, int]:
    """Read ``reference_context_ids``: a list of the relevant ids (:func:`parse_ids`), or the
    graded ids as ``{id: grade}`` with integer grades (0 not relevant; higher, more relevant),
    as a qrels file grades them.

    Raises:
        ValueError: naming the id whose grade is not an integer, or the id that is not valid.
    """
    if not isinstance(value, Mapping):
        return parse_ids(value)
    grades: dict[str, int] = {}
    for key, grade in value.items():
        text = _id_text(key, "an id")
        if isinstance(grade, float) and grade.is_integer():
            grade = int(grade)
        if isinstance(grade, bool) or not isinstance(grade, int):
            raise ValueError(f"the grade of {text!r} is {grade!r}: expected an integer")
        grades[text] = grade
    return grades


def parse_answers(value: object) -> list[str]:
    """Read ``reference`` given as a list of acceptable answers (any one is right), so that the
    constructor and the file loaders accept the same things: non-empty strings, each once.

    Raises:
        ValueError: naming the answer (from 1) that is not a string or is blank, or the list
            when it is empty.
    """
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list of answers, got {type(value).__name__}")
    if not value:
        raise ValueError("the list of acceptable answers is empty")
    for position, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise ValueError(f"answer {position}: expected a string, got {type(item).__name__}")
        if not item.strip():
            raise ValueError(f"answer {position} is blank")
    return list(dict.fromkeys(item.strip() for item in value))


ANSWERS_JOINED = " or "
"""How a list of acceptable answers is said as one reference text, as NQ shows its gold
answers to a judge ("FedExField or the Washington metropolitan area")."""


def _id_text(item: object, what: str) -> str:
    if isinstance(item, bool) or not isinstance(item, str | int):
        raise ValueError(f"{what}: expected a string or an integer, got {type(item).__name__}")
    text = str(item)
    if not text:
        raise ValueError(f"{what} is empty")
    return text


class Sample(BaseModel):
    """One RAG interaction to be scored.

    ``id`` is optional: when absent, a stable id is derived from the content, so that a resumed run
    recognises the sample even if the file was reordered. ``history`` holds the turns before
    ``question`` in a conversation ("and the second one?" means nothing without them).

    ``context_ids`` names the retrieved contexts in rank order (one id per context when both
    are given) and ``reference_context_ids`` the relevant ones, as a list or graded
    ``{id: grade}``: what the retrieval metrics (``ragmeter.metrics.ir``) read.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1)
    contexts: list[str] = Field(default_factory=list)
    answer: str
    reference: str | None = None
    alternatives: list[str] | None = None
    """The acceptable answers where ``reference`` was given as a list of them (any one is
    right); ``reference`` is then their text, joined with " or ". Written back as the list."""
    history: list[Turn] = Field(default_factory=list)
    context_ids: list[str] | None = None
    reference_context_ids: list[str] | dict[str, int] | None = None
    id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_empty_history(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A single-turn sample is written as it was before conversations were supported, so
        files and dataset fingerprints of single-turn data do not change."""
        data: dict[str, Any] = handler(self)
        alternatives = data.pop("alternatives", None)
        if alternatives is not None:  # written as it was given: the list, under reference
            data["reference"] = alternatives
        if not self.history:
            data.pop("history", None)
        for field in ("context_ids", "reference_context_ids"):  # likewise samples without ids
            if data.get(field, ()) is None:
                del data[field]
        return data

    @model_validator(mode="before")
    @classmethod
    def _reference_as_answers(cls, data: Any) -> Any:
        """``reference`` may be a list of acceptable answers (QA gold answers): kept as
        ``alternatives``, with ``reference`` their text joined with " or " for whatever reads
        one text."""
        if not isinstance(data, Mapping):
            return data
        given, listed = data.get("reference"), data.get("alternatives")
        if isinstance(given, list | tuple) or hasattr(given, "tolist"):
            listed = given.tolist() if hasattr(given, "tolist") else given
            if data.get("alternatives") is not None and list(data["alternatives"]) != list(listed):
                raise ValueError("reference is a list and alternatives another: give one of them")
        elif listed is None:
            return data
        try:
            answers = parse_answers(listed)
        except ValueError as error:
            raise ValueError(f"reference: {error}") from None
        joined = ANSWERS_JOINED.join(answers)
        if isinstance(given, str) and given != joined:
            raise ValueError(
                f"reference {given!r} is not the alternatives joined with {ANSWERS_JOINED!r}: "
                "give the answers as a list under reference"
            )
        return {**data, "reference": joined, "alternatives": answers}

    @field_validator("history", mode="before")
    @classmethod
    def _turns_in_any_form(cls, value: object) -> list[Turn]:
        """``history`` may be given as OpenAI messages, ragas/LangChain messages or
        ``(role, text)`` pairs, as files may; each is read as the same :class:`Turn`."""
        return parse_turns(value)

    @field_validator("context_ids", mode="before")
    @classmethod
    def _ids_in_rank_order(cls, value: object, info: ValidationInfo) -> list[str] | None:
        """One id per retrieved context, each once; the contexts, when given, in the same
        order."""
        if value is None:
            return None
        ids = parse_ids(value)
        contexts = info.data.get("contexts")
        if contexts and len(contexts) != len(ids):
            raise ValueError(
                f"{len(ids)} ids for {len(contexts)} contexts: give one id per context, in the "
                "order retrieved"
            )
        return ids

    @field_validator("reference_context_ids", mode="before")
    @classmethod
    def _relevant_ids(cls, value: object) -> list[str] | dict[str, int] | None:
        return None if value is None else parse_grades(value)

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        return value

    @property
    def key(self) -> str:
        """The id to file results under: the given id, else a hash of the content."""
        return self.id if self.id is not None else "sha-" + self.digest[:16]

    @property
    def digest(self) -> str:
        """SHA-256 of what a metric reads (question, contexts, answer, reference or its list of
        alternatives, the earlier turns, the retrieved and relevant ids; not the id), so that a
        stored result is reused only for the same content under the same id. A sample without
        earlier turns or ids, or with a reference text, hashes as it did before those existed."""
        reference = self.alternatives if self.alternatives is not None else self.reference
        read: list[Any] = [self.question, self.contexts, self.answer, reference]
        if self.history:
            read.append([[turn.role, turn.text] for turn in self.history])
        if self.context_ids is not None or self.reference_context_ids is not None:
            relevance = self.relevance
            read.append(
                {
                    "context_ids": self.context_ids,
                    "reference_context_ids": None
                    if relevance is None
                    else sorted(relevance.items()),
                }
            )
        content = json.dumps(read, ensure_ascii=False)
        return hashlib.sha256(content.encode()).hexdigest()

    @property
    def relevance(self) -> dict[str, int] | None:
        """``reference_context_ids`` as ``{id: grade}``: a listed id has grade 1. None when the
        sample does not say which contexts are relevant."""
        given = self.reference_context_ids
        if given is None:
            return None
        return dict(given) if isinstance(given, dict) else dict.fromkeys(given, 1)

    def asked(self) -> dict[str, str]:
        """The question as the judge is shown it (``asked_after``)."""
        return asked_after(self.question, self.history)
