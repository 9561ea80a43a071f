"""A written question before its checks, and the verdict of a check it fails: what the
checks (``quality.py``, ``unanswerable.py``) read and raise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ragmeter.language import detect_language
from ragmeter.sample import asked_after, parse_turns


class Rejected(Exception):
    """A candidate that failed a check: ``reason`` is the check's short name (the summary
    counts by it), ``detail`` what was measured."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class Draft:
    """A written question with what it was written from, before the checks."""

    kind: str
    question: str
    reference: str
    chunks: list[str]
    """The texts the reference comes from (empty for an unanswerable question)."""
    history: list[dict[str, str]] = field(default_factory=list)
    expected: str | None = None
    """An unanswerable question's expected answer: what a user would expect to be told, which
    the documents must not say (``unanswerable.py``)."""

    def asked(self) -> dict[str, str]:
        """The question as the judge is shown it, after its conversation when it has one."""
        return asked_after(self.question, parse_turns(self.history))

    def language(self) -> str:
        """The language its texts are split by (``ragmeter.language``): detected from the
        reference, the expected answer, the chunks and, unlike a sample's, the question, all
        written in the documents' language (an unanswerable question has no chunks)."""
        return detect_language([self.reference, self.expected or "", *self.chunks, self.question])


Search = Callable[[str, int], list[str]]
"""The ``k`` chunk texts of the corpus closest to a question."""
