"""The metric contract: a small object, configured by its constructor, that scores one sample."""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ragmeter.prompts import Prompt
from ragmeter.sample import Sample
from ragmeter.score import Score, Unscorable
from ragmeter.session import JudgeSession


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

    @property
    def version(self) -> str:
        """Identifies everything that determines this metric's output besides the models."""
        material = json.dumps(
            [self.name, self.config(), [p.version for p in self.prompts]], sort_keys=True
        )
        return hashlib.sha256(material.encode()).hexdigest()[:12]

    def score(self, sample: Sample, session: JudgeSession) -> Score:
        started = time.perf_counter()
        try:
            value, explanation = self.measure(sample, session)
            reason = None
        except Unscorable as exc:
            value, explanation, reason = None, exc.explanation, exc.reason
        return Score(
            sample_id=sample.key,
            metric=self.name,
            value=value,
            unscored_reason=reason,
            explanation=explanation,
            exchanges=session.exchanges,
            usage=session.usage,
            seconds=time.perf_counter() - started,
        )
