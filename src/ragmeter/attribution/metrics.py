"""KaLMA's citation metrics (paper §4.2-4.4) for one answer.

- Citation quality needs no judge: each cited triple is *correct* when it is complete and exists
  in the graph the answer was generated from; *precise* when it is also in the question's minimum
  knowledge set; a minimum-set triple is *recalled* when a correct citation hits it.
- Text-citation alignment asks the judge whether each sentence entails each of its citations.
- Conscious incompetence ([NA]): a sentence marked [NA] is precise when it entails one of the
  triples removed from the graph; a removed triple is recalled when a [NA] sentence entails it.

Counts, not ratios, are kept per answer, so micro averages over a run can be computed exactly;
a ratio with nothing to count is None with the reason beside it, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from ragmeter.attribution.citations import ParsedAnswer
from ragmeter.attribution.graph import KnowledgeGraph, Triple
from ragmeter.attribution.probe import NextTokenProbe, token_messages
from ragmeter.prompts import Prompt
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def f1(precision: float | None, recall: float | None) -> float | None:
    """Harmonic mean; 0 when both are 0, None when either is unknown."""
    if precision is None or recall is None:
        return None
    total = precision + recall
    return 2 * precision * recall / total if total else 0.0


class CitationCounts(BaseModel):
    """The citation tallies of one answer."""

    citations: int = 0
    """Knowledge triples cited, incomplete ones included (they count as incorrect)."""
    correct: int = 0
    precise: int = 0
    minimum: int | None = None
    """Size of the minimum knowledge set; None when the question has none."""
    recalled: int = 0
    incomplete: int = 0
    na: int = 0
    documents: int = 0
    malformed: int = 0

    @property
    def correctness(self) -> float | None:
        return ratio(self.correct, self.citations)

    @property
    def precision(self) -> float | None:
        return None if self.minimum is None else ratio(self.precise, self.citations)

    @property
    def recall(self) -> float | None:
        return ratio(self.recalled, self.minimum or 0)


def count_citations(
    answer: ParsedAnswer, graph: KnowledgeGraph, minimum: Sequence[Triple] | None
) -> CitationCounts:
    """Tally one answer's citations against the graph it was given and its minimum set."""
    wanted = {t.key for t in minimum} if minimum is not None else set()
    counts = CitationCounts(minimum=len(wanted) if minimum is not None else None)
    hit: set[tuple[str, str, str]] = set()
    for triple in answer.triples:
        counts.citations += 1
        if not triple.complete:
            counts.incomplete += 1
            continue
        if triple in graph:
            counts.correct += 1
            if triple.key in wanted:
                counts.precise += 1
                hit.add(triple.key)
    counts.recalled = len(hit)
    for sentence in answer.sentences:
        counts.na += sum(c.kind == "na" for c in sentence.citations)
        counts.documents += sum(c.kind == "document" for c in sentence.citations)
        counts.malformed += sum(c.kind == "malformed" for c in sentence.citations)
    return counts


class EntailmentVerdict(BaseModel):
    reason: str
    verdict: Literal["yes", "no"]


ENTAILMENT = Prompt(
    name="kalma.entailment",
    instruction=(
        "Decide whether a sentence supports a piece of knowledge. The knowledge is one fact "
        "about an entity, written 'entity | property: value'. The sentence comes from a longer "
        "answer about that entity, so read pronouns such as 'he', 'she' or 'they' as the "
        "entity. Say yes if the sentence states the fact or directly implies it (in other "
        "words, or with the date written differently, still counts). Say no if the sentence "
        "does not mention the fact or says something different."
    ),
    output=EntailmentVerdict,
    examples=[
        (
            {
                "sentence": "Maren Holt was a cartographer born in Bergen on 14 March 1921.",
                "knowledge": "Maren Holt | date of birth: 1921-03-14",
            },
            EntailmentVerdict(reason="The sentence gives the same birth date.", verdict="yes"),
        ),
        (
            {
                "sentence": "She died in Tromsø in 1987.",
                "knowledge": "Maren Holt | country of citizenship: Norway",
            },
            EntailmentVerdict(
                reason="The sentence does not mention her citizenship.", verdict="no"
            ),
        ),
    ],
)

YES_NO = ("yes", "no")


class Entailment(BaseModel):
    """One sentence-knowledge check and how it was decided."""

    sentence: str
    knowledge: str
    entailed: bool | None = None
    p_yes: float | None = None
    p_no: float | None = None
    method: Literal["logprobs", "json"] | None = None
    reason: str | None = None
    unscored_reason: str | None = None


class EntailmentChecker:
    """Asks the judge whether a sentence entails a piece of knowledge.

    First by the next-token probabilities of "yes" and "no" (one forward pass; entailed when
    P(yes) > P(no)), else by a parsed JSON verdict with a reason. Sentence before knowledge in
    the prompt, so a local judge reuses the evaluated sentence for each of its citations.
    Results are memoised: alignment and [NA] checks of the same pair cost one call.
    """

    def __init__(self, session: JudgeSession, probe: NextTokenProbe | None = None) -> None:
        self.session = session
        self.probe = probe or NextTokenProbe()
        self._seen: dict[tuple[str, str], Entailment] = {}

    def check(self, sentence: str, knowledge: str) -> Entailment:
        key = (sentence, knowledge)
        if key not in self._seen:
            self._seen[key] = self._decide(sentence, knowledge)
        return self._seen[key]

    def _decide(self, sentence: str, knowledge: str) -> Entailment:
        result = Entailment(sentence=sentence, knowledge=knowledge)
        inputs = {"sentence": sentence, "knowledge": knowledge}
        messages = token_messages(
            ENTAILMENT, inputs, "Reply with one word: yes or no.", lambda v: v.verdict
        )
        probabilities = self.probe.distribution(
            self.session, ENTAILMENT.name + ".token", messages, YES_NO
        )
        if probabilities and (probabilities["yes"] or probabilities["no"]):
            result.p_yes, result.p_no = probabilities["yes"], probabilities["no"]
            result.entailed, result.method = result.p_yes > result.p_no, "logprobs"
            return result
        try:
            verdict = self.session.ask(ENTAILMENT, inputs, max_tokens=160)
        except Unscorable as exc:
            result.unscored_reason = exc.reason
            return result
        result.entailed, result.method = verdict.verdict == "yes", "json"
        result.reason = verdict.reason
        return result


def knowledge_text(triple: Triple, names: Mapping[str, str]) -> str:
    """A triple as the judge reads it: the entity's name rather than its opaque id."""
    return f"{names.get(triple.entity, triple.entity)} | {triple.property}: {triple.value}"


class AlignmentResult(BaseModel):
    """Sentence-citation pairs of one answer and whether each sentence entails its citation."""

    pairs: list[Entailment] = Field(default_factory=list)
    incomplete: int = 0
    """Citations too incomplete to check (no property or value); not in ``pairs``."""

    @property
    def checked(self) -> int:
        return sum(p.entailed is not None for p in self.pairs)

    @property
    def entailed(self) -> int:
        return sum(p.entailed is True for p in self.pairs)

    @property
    def value(self) -> float | None:
        return ratio(self.entailed, self.checked)


def alignment(
    answer: ParsedAnswer, graph: KnowledgeGraph, checker: EntailmentChecker
) -> AlignmentResult:
    """Check every (sentence, cited triple) pair; a triple cited twice in a sentence once."""
    names = {e.id: e.name for e in graph.entities}
    result = AlignmentResult()
    for sentence in answer.sentences:
        for triple in dict.fromkeys(sentence.triples):
            if not triple.complete:
                result.incomplete += 1
                continue
            result.pairs.append(checker.check(sentence.text, knowledge_text(triple, names)))
    return result


def _any_entailed(verdicts: Sequence[bool | None]) -> bool | None:
    """True if any check says yes, False if all say no, None if it hangs on unscored ones."""
    if any(v is True for v in verdicts):
        return True
    return False if all(v is False for v in verdicts) else None


class NAResult(BaseModel):
    """[NA] precision and recall of one answer against the knowledge removed from its graph."""

    absent: list[Triple]
    na_sentences: list[str]
    pairs: list[Entailment] = Field(default_factory=list)
    sentence_hits: list[bool | None] = Field(default_factory=list)
    """Per [NA] sentence: entails some absent triple (None: undecided, a check was unscored)."""
    absent_hits: list[bool | None] = Field(default_factory=list)
    """Per absent triple: entailed by some [NA] sentence."""

    @property
    def precision(self) -> float | None:
        decided = [h for h in self.sentence_hits if h is not None]
        return ratio(sum(decided), len(decided))

    @property
    def recall(self) -> float | None:
        decided = [h for h in self.absent_hits if h is not None]
        return ratio(sum(decided), len(decided))


def na_scores(
    answer: ParsedAnswer,
    absent: Sequence[Triple],
    names: Mapping[str, str],
    checker: EntailmentChecker,
) -> NAResult:
    """Check each [NA] sentence against each absent triple (the paper's Figure 3); ``names``
    maps entity ids to the names the judge is shown."""
    sentences = [s.text for s in answer.sentences if s.na and s.text]
    result = NAResult(absent=list(absent), na_sentences=sentences)
    matrix: list[list[bool | None]] = []
    for sentence in sentences:
        row = []
        for triple in absent:
            verdict = checker.check(sentence, knowledge_text(triple, names))
            result.pairs.append(verdict)
            row.append(verdict.entailed)
        matrix.append(row)
    result.sentence_hits = [_any_entailed(row) for row in matrix]
    result.absent_hits = [
        _any_entailed([row[j] for row in matrix]) if matrix else False for j in range(len(absent))
    ]
    return result
