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
    field_validator,
    model_serializer,
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


class Sample(BaseModel):
    """One RAG interaction to be scored.

    ``id`` is optional: when absent, a stable id is derived from the content, so that a resumed run
    recognises the sample even if the file was reordered. ``history`` holds the turns before
    ``question`` in a conversation ("and the second one?" means nothing without them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1)
    contexts: list[str] = Field(default_factory=list)
    answer: str
    reference: str | None = None
    history: list[Turn] = Field(default_factory=list)
    id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_empty_history(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A single-turn sample is written as it was before conversations were supported, so
        files and dataset fingerprints of single-turn data do not change."""
        data: dict[str, Any] = handler(self)
        if not self.history:
            data.pop("history", None)
        return data

    @field_validator("history", mode="before")
    @classmethod
    def _turns_in_any_form(cls, value: object) -> list[Turn]:
        """``history`` may be given as OpenAI messages, ragas/LangChain messages or
        ``(role, text)`` pairs, as files may; each is read as the same :class:`Turn`."""
        return parse_turns(value)

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
        """SHA-256 of what a metric reads (question, contexts, answer, reference, the earlier
        turns; not the id), so that a stored result is reused only for the same content under
        the same id. A sample without earlier turns hashes as it did before they existed."""
        read: list[Any] = [self.question, self.contexts, self.answer, self.reference]
        if self.history:
            read.append([[turn.role, turn.text] for turn in self.history])
        content = json.dumps(read, ensure_ascii=False)
        return hashlib.sha256(content.encode()).hexdigest()

    def asked(self) -> dict[str, str]:
        """The question as the judge is shown it (``asked_after``)."""
        return asked_after(self.question, self.history)
