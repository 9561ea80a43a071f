"""People's labels where they already give them: human span annotations in Phoenix, human
feedback in MLflow, on the traces an application recorded.

Each source's module reads them (``phoenix.human_labels``, ``mlflow.human_labels``) as
:class:`HumanLabel` objects: the trace, the name the person gave the label, who gave it, and
the score or the label text. ``ragmeter.labels.pull`` keeps those of the traces a run scored in
the run's labels, as ratings ``calibrate`` and ``tune`` read.
"""

from __future__ import annotations

from dataclasses import dataclass

YES = frozenset({"yes", "true", "pass", "1"})
NO = frozenset({"no", "false", "fail", "0"})
"""Label texts read as 1 and 0 (case and surrounding spaces aside)."""


@dataclass(frozen=True)
class HumanLabel:
    """One label a person gave a trace (or one of its spans) on a tracing server."""

    trace_id: str
    name: str
    """The annotation's (feedback's) name: a metric's, or mapped to one."""
    annotator: str
    """Who gave it, with where: ``phoenix:<identifier or user id>``, ``mlflow:<source id>``."""
    score: float | None = None
    label: str | None = None
    """The label text, read where there is no score: yes/no (true/false, pass/fail) as 1/0."""
    note: str = ""
    """The person's explanation (Phoenix) or rationale (MLflow)."""
    at: float = 0.0
    """When it was last changed (seconds since the epoch), to keep the latest of one person's
    labels of a trace."""
    made: int = 0
    """Among labels changed in the same second (a server that keeps whole seconds), the later
    made is the larger (Phoenix's row number)."""
    where: str = ""
    """On what it was given (``span 1a2b...``, ``trace``), for messages."""

    @property
    def value(self) -> float | None:
        """The label as a number: the score, else yes/no as 1/0; None when it is neither."""
        if self.score is not None:
            return float(self.score)
        text = (self.label or "").strip().lower()
        if text in YES:
            return 1.0
        if text in NO:
            return 0.0
        return None


def feedback_value(value: object) -> tuple[float | None, str | None]:
    """A feedback value as (score, label text): a number is a score, ``True``/``False`` are 1/0,
    text is a label; anything else (a list, a mapping) is neither."""
    if isinstance(value, bool):
        return float(value), None
    if isinstance(value, int | float):
        return float(value), None
    if isinstance(value, str):
        return None, value
    return None, None if value is None else repr(value)[:80]
