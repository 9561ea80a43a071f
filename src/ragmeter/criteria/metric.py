"""A criterion as a metric: scored, stored, reported and compared like any other.

Its name is the criterion's; its version hashes the whole definition and the prompts it renders,
so a changed word judges again and an unchanged criterion is served from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

import ragmeter.criteria.asking as asking
from ragmeter.criteria.definition import RUBRIC_FIELD, Criterion, Reading, Requirement
from ragmeter.language import language_of
from ragmeter.metrics.base import Metric
from ragmeter.metrics.faithfulness import Faithfulness, NothingToVerify
from ragmeter.prompts import PlannedCalls, rendered_tokens, yes_no_call
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession
from ragmeter.text import split_sentences

DEFAULT_READING: dict[str, Reading] = {
    "yes_no": "direct",
    "levels": "yes_no",
    "checklist": "direct",
}
"""The reading each kind gets when the criterion says ``auto``: the one that agreed best with
people (docs/criteria.md, "Which reading agrees with people")."""


Asked = tuple[asking.CriterionPrompt, dict[str, Any]]
"""A question about a sample: the prompt, and the inputs it is rendered with."""


class CriterionMetric(Metric):
    """Scores a sample on one ``Criterion``; 0-1, with the judge's distribution explained."""

    def __init__(self, criterion: Criterion, *, reading: Reading | None = None) -> None:
        if reading is not None:
            criterion = Criterion.model_validate({**criterion.described(), "reading": reading})
        self.criterion = criterion
        self.name = criterion.name  # type: ignore[misc]
        self.higher_is_better = criterion.higher_is_better  # type: ignore[misc]
        super().__init__()

    @property
    def reading(self) -> Reading:
        chosen = self.criterion.reading
        return DEFAULT_READING[self.criterion.kind] if chosen == "auto" else chosen

    def config(self) -> dict[str, Any]:
        config = {"criterion": self.criterion.described(read_alone=True), "reading": self.reading}
        if self.reading == "claims":  # the verifier's prompts and rules decide the score
            config["verifier"] = Faithfulness().version
        return config

    @property
    def rules(self) -> tuple[str, ...]:  # type: ignore[override]
        """How this reading turns the judge's probabilities into the score (the claim
        verifier's own rules are in its version, part of ``config``)."""
        c = self.criterion
        if self.reading == "claims":
            return ()
        found = []
        if c.kind == "levels":
            found.append(
                "levels asked as Yes or No: P(Yes) is the score on 0-1"
                if self.reading == "yes_no"
                else "levels: the expected level under the distribution over the levels' digits, "
                "on 0-1 by the scale's ends"
            )
        if c.kind == "checklist":
            found.append(
                "checklist: the sum of weight x P(met) over the sum of the positive weights, "
                "within 0-1"
            )
        if c.sample_rubric():
            found.append(
                "a sample's rubric: a list of texts or of {text|criterion|requirement, "
                "weight|points}, that list as JSON text, or else a requirement a line"
            )
        if self.reading == "per_sentence":
            found.append("per sentence: the mean of the sentences' scores")
        if self.reading == "reasoned":
            found.append(
                f"reasoned: the judge writes feedback first (at most {asking.FEEDBACK_TOKENS} "
                "tokens, greedy), then its verdict is read after it"
            )
        return tuple(found)

    @property
    def prompts(self) -> Sequence[asking.CriterionPrompt]:
        if self.reading == "per_sentence":
            return [asking.sentence_prompt(p) for p in self._whole_prompts()]
        return self._whole_prompts()

    def _whole_prompts(self) -> Sequence[asking.CriterionPrompt]:
        """The prompts that ask about the whole response."""
        c = self.criterion
        if self.reading == "claims":
            return ()
        if self.reading == "reasoned":
            return [asking.reasoned_prompt(c)]
        if c.kind == "levels" and self.reading != "yes_no":
            return [asking.levels_prompt(c)]
        if c.sample_rubric():
            return [asking.rubric_prompt(c)]
        if c.kind == "checklist":
            assert isinstance(c.requirements, tuple)
            return [asking.requirement_prompt(c, n, r) for n, r in enumerate(c.requirements, 1)]
        return [asking.yes_no_prompt(c)]

    def verdicts_prompt(self) -> asking.CriterionPrompt | None:
        """The Yes/No prompt whose verdicts' mean is this criterion's value, for a head fitted
        through it (``ragmeter tune``); None when the value is made otherwise."""
        levels_as_yes_no = self.criterion.kind == "levels" and self.reading == "yes_no"
        yes_no = self.criterion.kind == "yes_no" and self.reading in ("direct", "per_sentence")
        if not (levels_as_yes_no or yes_no):
            return None
        (prompt,) = self.prompts
        return prompt

    def sample_material(self, sample: Sample) -> Any:
        """A sample's own checklist decides its score: an edited one is judged afresh."""
        return sample.metadata.get(RUBRIC_FIELD) if self.criterion.sample_rubric() else None

    def unreadable(self, sample: Sample) -> str | None:
        field = asking.missing_field(self.criterion, sample)
        if field is None:
            return None
        return f"the criterion {self.name!r} reads {field!r}, which the sample lacks"

    def planned_calls(self, sample: Sample) -> PlannedCalls | None:
        if self.reading == "claims" or self.unreadable(sample):
            return None
        try:
            asked, _ = self._asked(sample)
        except Unscorable:  # a rubric that cannot be read: refused, so nothing asked
            return []
        if self.reading == "reasoned":  # the feedback written, then the verdict read after it
            ((prompt, inputs),) = asked
            written = rendered_tokens(prompt.render(inputs))
            verdict = rendered_tokens(prompt.render(inputs, feedback=""))
            return [(written, asking.FEEDBACK_TOKENS), (verdict + asking.FEEDBACK_TOKENS, 1)]
        # A choice among levels is one read where the judge gives log-probabilities; a judge
        # that does not is sampled (``session.ask_levels``), which an estimate cannot know.
        return [yes_no_call(prompt.render(inputs)) for prompt, inputs in asked]

    def _asked(self, sample: Sample) -> tuple[list[Asked], tuple[Requirement, ...]]:
        """The questions ``sample`` is asked (prompt, inputs): one a sentence of the answer
        (``per_sentence``), one a requirement of a checklist, else one a prompt; with the
        checklist's requirements in the order asked."""
        c = self.criterion
        inputs = asking.sample_inputs(c, sample)
        if self.reading == "per_sentence":
            (prompt,) = self.prompts
            sentences = split_sentences(sample.answer, language_of(sample))
            return [(prompt, {**inputs, "sentence": s}) for s in sentences], ()
        requirements = asking.sample_requirements(c, sample) if c.kind == "checklist" else ()
        if c.sample_rubric():
            (prompt,) = self.prompts
            return [(prompt, {**inputs, "requirement": r.text}) for r in requirements], requirements
        if self.reading == "reasoned":  # the feedback it writes, in the sample's language
            language = language_of(sample)
            return [(p.in_language(language), inputs) for p in self.prompts], requirements
        return [(p, inputs) for p in self.prompts], requirements

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        problem = self.unreadable(sample)
        if problem:
            raise Unscorable(problem)
        explanation: dict[str, Any] = {"reading": self.reading, "kind": self.criterion.kind}
        if self.reading == "claims":
            return self._by_claims(sample, session, explanation)
        asked, requirements = self._asked(sample)
        if self.reading == "per_sentence":
            if not asked:
                raise Unscorable("the answer has no sentence to judge")
            per_sentence = [self._read(session, [question]) for question in asked]
            explanation["sentences"] = [
                {"sentence": inputs["sentence"], "score": round(v, 4), **detail}
                for (_, inputs), (v, detail) in zip(asked, per_sentence, strict=True)
            ]
            return fmean(v for v, _ in per_sentence), explanation
        value, detail = self._read(session, asked, requirements)
        return value, {**explanation, **detail}

    def _read(
        self,
        session: JudgeSession,
        asked: Sequence[Asked],
        requirements: Sequence[Requirement] = (),
    ) -> tuple[float, dict[str, Any]]:
        """One read of the ``asked`` questions (prompt, inputs) on 0-1, with what the judge
        said; a checklist's ``requirements`` in the order asked."""
        c = self.criterion
        if self.reading == "reasoned":
            return self._reasoned(session, *asked[0])
        if c.kind == "levels" and self.reading != "yes_no":
            distribution, method = session.ask_levels(*asked[0], asking.level_digits(c))
            return self._levels(distribution, method)
        probabilities = session.ask_yes_no_all([(p, inputs, {}) for p, inputs in asked])
        if c.kind == "levels" and self.reading == "yes_no":
            low, high = c.scale
            p_yes = probabilities[0]
            return p_yes, {"p_yes": round(p_yes, 4), "level": round(low + p_yes * (high - low), 4)}
        if c.kind == "checklist":
            value = asking.checklist_score(requirements, probabilities)
            met = [
                {"requirement": r.text, "weight": r.weight, "p_met": round(p, 4)}
                for r, p in zip(requirements, probabilities, strict=True)
            ]
            return value, {"requirements": met}
        return probabilities[0], {"p_yes": round(probabilities[0], 4)}

    def _reasoned(
        self, session: JudgeSession, prompt: asking.CriterionPrompt, inputs: dict[str, Any]
    ) -> tuple[float, dict[str, Any]]:
        """The judge's feedback, then its verdict read after it, as ``direct`` reads one."""
        c = self.criterion
        feedback = session.ask_text(
            prompt.name, prompt.render(inputs), max_tokens=asking.FEEDBACK_TOKENS
        )
        if c.kind == "levels":
            distribution, method = session.ask_levels(
                prompt, inputs, asking.level_digits(c), feedback=feedback
            )
            value, detail = self._levels(distribution, method)
        else:
            value = session.ask_yes_no(prompt, inputs, feedback=feedback)
            detail = {"p_yes": round(value, 4)}
        return value, {"feedback": feedback, **detail}

    def _levels(self, distribution: dict[str, float], method: str) -> tuple[float, dict[str, Any]]:
        c = self.criterion
        expected = asking.expected_level(c, distribution)
        shown = {
            f"{level.score:g}": round(distribution[str(n)], 4)
            for n, level in enumerate(c.levels, 1)
        }
        return asking.on_unit_scale(c, expected), {
            "expected_level": round(expected, 4),
            "distribution": shown,
            "method": method,
        }

    def _by_claims(
        self, sample: Sample, session: JudgeSession, explanation: dict[str, Any]
    ) -> tuple[float, dict[str, Any]]:
        explanation = {**explanation, "verifier": "faithfulness"}
        try:
            value, verified = Faithfulness().measure(sample, session)
        except NothingToVerify as nothing:
            if self.criterion.when_nothing_to_check is None:
                raise
            return self.criterion.when_nothing_to_check, {
                **explanation,
                "nothing_to_check": nothing.reason,
            }
        return value, {**explanation, **verified}
