"""The metric contract: a small object, configured by its constructor, that scores one sample.

A metric's options are one typed model (``options_model``): the constructor validates them (an
unknown name or a wrong value is an error that names it) and the metric's version hashes all of
them with its prompts, so a score is never reused under other options.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ragmeter.options import Options
from ragmeter.prompts import PlannedCalls, Prompt
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.session import JudgeSession, measured
from ragmeter.text import splits_noted


class Metric(ABC):
    """Subclasses implement ``measure`` and return ``(value, explanation)`` or raise
    ``Unscorable``. ``score`` adds timing, usage and the judge exchanges."""

    name: ClassVar[str]
    needs_embedder: bool = False
    """Whether ``measure`` embeds texts; a metric whose options decide it makes it a property."""
    needs_judge: ClassVar[bool] = True
    """False for a metric computed from the sample alone (the retrieval metrics of ids): its
    scores' keys hash no model, and a run of such metrics only starts no judge."""
    options_model: ClassVar[type[Options]] = Options
    """The metric's options; the constructor takes them as keyword arguments."""
    higher_is_better: ClassVar[bool] = True
    """False for a share of faults (hallucination): a comparison counts a fall as better."""
    rules: ClassVar[tuple[str, ...]] = ()
    """The rules in code (not a prompt or an option) that decide the output, each in words
    that change whenever the rule does (``claims.CLAIM_RULES``, ...): part of ``version``."""
    retired: ClassVar[dict[str, Any]] = {}
    """Options the metric had and no longer has, each with the value every score has been read
    under since: hashed into ``version`` as the option was, so that the scores stored and the
    run records written while it existed keep their keys and compare as the same version.
    ``config`` leaves them out: they are no options."""
    rated_on: ClassVar[str | None] = None
    """The scale people rate the metric's samples on in ``ragmeter label`` where the metric has
    one of its own (``"0-3"``: the passage grades); None: the page's default."""
    rating_guide: ClassVar[str] = ""
    """What the levels of ``rated_on`` mean, shown to the people who rate."""

    def __init__(self, **options: Any) -> None:
        self.options = self.options_model.parse(options, f"the metric {self.name}")

    @abstractmethod
    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]: ...

    @property
    def prompts(self) -> Sequence[Prompt[Any]]:
        return ()

    def config(self) -> dict[str, Any]:
        """Every option's value, defaults included: the run record, and part of ``version``."""
        return self.options.model_dump(mode="json")

    def unreadable(self, sample: Sample) -> str | None:
        """Why this metric cannot read ``sample`` at all (a field it reads is missing), said
        before any judging; None when it can."""
        return None

    def sample_material(self, sample: Sample) -> Any:
        """What else of ``sample`` decides its score, beyond the fields ``Sample.digest`` holds
        (a checklist carried in its metadata, say): part of the key its score is stored under,
        so that an edited one is judged afresh. None: nothing else."""
        return None

    def planned_calls(self, sample: Sample) -> PlannedCalls | None:
        """The judge calls ``measure`` is expected to make for ``sample``, as (prompt tokens,
        completion tokens), for cost estimates before a run; None when the metric cannot say
        (the estimate then guesses). Kept beside ``measure`` so the two change together."""
        return None

    def planned_embeddings(self, sample: Sample) -> int:
        """The embedding calls ``measure`` is expected to make for ``sample``: one, for a
        metric that embeds, where the answer says anything."""
        return int(self.needs_embedder and bool(sample.answer.strip()))

    @property
    def version(self) -> str:
        """Identifies everything that determines this metric's output besides the models."""
        config = {**self.config(), **self.retired}
        parts = [self.name, config, [p.version for p in self.prompts]]
        material = json.dumps([*parts, list(self.rules)] if self.rules else parts, sort_keys=True)
        return hashlib.sha256(material.encode()).hexdigest()[:12]

    def score(self, sample: Sample, session: JudgeSession) -> Score:
        """``measure`` made a ``Score``; where it split text into sentences, the explanation
        says by which language (``language``) and, where not by that language's own rules,
        by what rule (``sentence_rule``)."""
        with splits_noted() as noted:
            scored = measured(sample.key, self.name, session, lambda: self.measure(sample, session))
        scored.explanation.update(noted)
        return scored
