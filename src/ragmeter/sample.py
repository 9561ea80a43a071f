"""The unit of evaluation: a question put to a RAG system, what it retrieved and answered."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Sample(BaseModel):
    """One RAG interaction to be scored.

    ``id`` is optional: when absent, a stable id is derived from the content, so that a resumed run
    recognises the sample even if the file was reordered.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1)
    contexts: list[str] = Field(default_factory=list)
    answer: str
    reference: str | None = None
    id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

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
        """SHA-256 of what a metric reads (question, contexts, answer, reference; not the id), so
        that a stored result is reused only for the same content under the same id."""
        content = json.dumps(
            [self.question, self.contexts, self.answer, self.reference], ensure_ascii=False
        )
        return hashlib.sha256(content.encode()).hexdigest()
