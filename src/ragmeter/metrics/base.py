"""The metric contract: a small object, configured by its constructor, that scores one sample."""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ragmeter.prompts import PlannedCalls, Prompt
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.session import JudgeSession, measured


class Metric(ABC):
    """Subclasses implement ``measure`` and return ``(value, explanation)`` or raise
    ``Unscorable``. ``score`` adds timing, usage and the judge exchanges."""

    name: ClassVar[str]
    needs_embedder: ClassVar[bool] = False

    @abstractmethod
    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]: ...

    @property
    def prompts(self) -> Sequence[Prompt[Any]]:
        return ()

    def config(self) -> dict[str, Any]:
        """Constructor arguments, for the run record."""
        return {}

    def planned_calls(self, sample: Sample) -> PlannedCalls | None:
        """The judge calls ``measure`` is expected to make for ``sample``, as (prompt tokens,
        completion tokens), for cost estimates before a run; None when the metric cannot say
        (the estimate then guesses). Kept beside ``measure`` so the two change together."""
        return None

    @property
    def version(self) -> str:
        """Identifies everything that determines this metric's output besides the models."""
        material = json.dumps(
            [self.name, self.config(), [p.version for p in self.prompts]], sort_keys=True
        )
        return hashlib.sha256(material.encode()).hexdigest()[:12]

    def score(self, sample: Sample, session: JudgeSession) -> Score:
        return measured(sample.key, self.name, session, lambda: self.measure(sample, session))
