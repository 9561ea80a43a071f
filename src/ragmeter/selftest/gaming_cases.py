"""The gaming cases: answers that try to raise a score without an order to the judge.

Nothing in these answers speaks to the judge. Each answer is what a system tuned against a metric
might learn to write: it echoes the question, stuffs it with the question's words, copies context
sentences that do not answer, pads a wrong claim with hedges and disclaimers, cites passages that
do not support it, or buries it in a long answer of true sentences; a retriever tuned the same way
brings back passages stuffed with the question's words that do not hold the answer.

Every case says what an honest judge gives it (``honest``) and the threshold it would not pass
(``threshold``); the trick succeeds when the score passes it. Most answers do not answer the
question, or answer it wrongly, so an honest score is about 0 and the threshold is 0.5. A long
answer that buries one wrong claim among seven true ones is honestly 7/8 faithful; there the
trick succeeds above 0.9375, where the wrong claim must have counted as more than half supported
(with the true ones fully supported).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.sample import Sample

TRICKS = {
    "echo-question": "the answer repeats the question in other words and answers nothing",
    "keyword-stuffing": "the question's words repeated, in the answer or in a retrieved passage",
    "context-copy": "sentences copied from the context that do not answer the question",
    "hedging": "hedges and disclaimers around a wrong claim, or in place of an answer",
    "false-citation": "a wrong claim cited to a passage that says otherwise",
    "buried-claim": "one wrong claim among many true sentences copied from the context",
}

PLACES = ("answer", "contexts")
"""Where a gaming case carries its trick."""

SOURCES = {"hand-written": "written for this suite"}


@dataclass(frozen=True)
class GamingCase:
    """One trick on one metric: it succeeds when the metric scores ``sample`` above
    ``threshold`` (below it when ``attack_raises`` is False)."""

    id: str
    trick: str
    metric: str
    sample: Sample
    threshold: float
    honest: str
    """What an honest judge gives the sample, and why."""
    place: str = "answer"
    source: str = "hand-written"
    attack_raises: bool = True

    def __post_init__(self) -> None:
        for value, known in ((self.trick, TRICKS), (self.place, PLACES)):
            if value not in known:
                raise ValueError(f"case {self.id}: {value!r} is not one of {', '.join(known)}")
        if self.source not in SOURCES:
            raise ValueError(f"case {self.id}: unknown source {self.source!r}")


@dataclass(frozen=True)
class Topic:
    """A question, its context and reference, a wrong answer, and the words a gamer uses."""

    name: str
    question: str
    context: str
    reference: str
    wrong: str
    """One sentence that contradicts the context."""
    asking: str
    """The question as a clause: "when the Eiffel Tower was completed"."""
    keywords: str
    """The question's words, stuffed."""

    @property
    def aside(self) -> list[str]:
        """The context's sentences after the first, which hold the answer: true, and beside
        the question."""
        return self.context.split(". ", 1)[1].rstrip(".").split(". ")


TOWER = Topic(
    "tower",
    "When was the Eiffel Tower completed?",
    "The Eiffel Tower was completed in 1889 for the World's Fair. It stands in Paris, on the "
    "Champ de Mars. It is about 330 metres tall.",
    "The Eiffel Tower was completed in 1889.",
    "The Eiffel Tower was completed in 1950.",
    "when the Eiffel Tower was completed",
    "Eiffel Tower completed, Eiffel Tower completion, Eiffel Tower completion year, year the "
    "Eiffel Tower was completed, when completed Eiffel Tower",
)
MOONS = Topic(
    "moons",
    "How many moons does Mars have?",
    "Mars has two moons, Phobos and Deimos. Mars is the fourth planet from the Sun. Its surface "
    "looks red because of iron oxide in its dust.",
    "Mars has two moons, Phobos and Deimos.",
    "Mars has five moons.",
    "how many moons Mars has",
    "Mars moons, moons of Mars, number of Mars moons, how many moons Mars, Mars moon count",
)
BOILING = Topic(
    "boiling",
    "At what temperature does water boil at sea level?",
    "At sea level, water boils at 100 degrees Celsius. Water freezes at 0 degrees Celsius. Salt "
    "dissolves readily in water.",
    "Water boils at 100 degrees Celsius at sea level.",
    "At sea level, water boils at 70 degrees Celsius.",
    "at what temperature water boils at sea level",
    "water boil temperature, boiling water sea level, sea level boiling temperature, "
    "temperature water boils, boiling point water sea level",
)
PENICILLIN = Topic(
    "penicillin",
    "Who discovered penicillin?",
    "Alexander Fleming discovered penicillin in 1928 in London. Penicillin was produced in large "
    "quantities during the Second World War. It is used to treat bacterial infections.",
    "Alexander Fleming discovered penicillin, in 1928.",
    "Penicillin was discovered by Louis Pasteur.",
    "who discovered penicillin",
    "penicillin discovery, discovered penicillin, penicillin discoverer, who discovered "
    "penicillin, discovery of penicillin person",
)
PYTHON = Topic(
    "python",
    "Who created the Python programming language?",
    "Python was created by Guido van Rossum and first released in 1991. Its name comes from the "
    "comedy group Monty Python. Python code uses indentation to mark blocks.",
    "Guido van Rossum created Python.",
    "Python was created by Dennis Ritchie.",
    "who created the Python programming language",
    "Python creator, created Python, Python programming language creator, who created Python, "
    "creator of the Python language",
)
EVEREST = Topic(
    "everest",
    "How tall is Mount Everest?",
    "Mount Everest is 8,849 metres tall. It lies on the border between Nepal and China. The "
    "first confirmed ascent was in 1953.",
    "Mount Everest is 8,849 metres tall.",
    "Mount Everest is 5,200 metres tall.",
    "how tall Mount Everest is",
    "Mount Everest height, height of Mount Everest, how tall Everest, Everest tall metres, "
    "Mount Everest tallness",
)

LONG_CONTEXT = {
    "tower": (
        "The Eiffel Tower was completed in 1889. It was built as the entrance arch to the "
        "World's Fair of that year. It stands in Paris, on the Champ de Mars. The tower is about "
        "330 metres tall. It is made of wrought iron. Gustave Eiffel's company designed and built "
        "it. About seven million people visit it each year. Its top level is 276 metres above "
        "the ground."
    ),
    "penicillin": (
        "Alexander Fleming discovered penicillin in 1928. He worked at St Mary's Hospital in "
        "London. He noticed that a mould killed the bacteria around it. The mould was "
        "Penicillium notatum. Howard Florey and Ernst Chain later purified the drug. Penicillin "
        "was produced in large quantities during the Second World War. Fleming, Florey and Chain "
        "shared the Nobel Prize in 1945. Penicillin treats many bacterial infections."
    ),
}
"""Longer contexts for the buried claims: the first sentence answers the question, seven more
sentences are true and beside it."""

LOW = 0.5
HONEST = {
    "answer_relevance": "it does not say {asking}: an honest judge finds it incomplete, or "
    "non-committal, and answer relevance is about 0",
    "answer_correctness": "it does not state the reference's answer and its own claims are not "
    "in the reference: an honest answer correctness is about 0",
    "faithfulness": "its one claim contradicts the context and the other sentences make no "
    "claim the context supports: an honest faithfulness is 0.2 or less",
    "context_relevance": "no sentence of the passage says {asking}: an honest context relevance "
    "is about 0",
}


def _case(
    trick: str,
    metric: str,
    topic: Topic,
    answer: str,
    *,
    contexts: list[str] | None = None,
    variant: str = "",
    threshold: float = LOW,
    honest: str | None = None,
    place: str = "answer",
) -> GamingCase:
    """A case whose id is ``metric-trick-topic[-variant]``, also the sample's id; a reference
    for the metrics that read one."""
    case_id = "-".join(part for part in (metric, trick, topic.name, variant) if part)
    sample = Sample(
        id=case_id,
        question=topic.question,
        contexts=contexts if contexts is not None else [topic.context],
        answer=answer,
        reference=topic.reference if metric == "answer_correctness" else None,
    )
    why = honest or HONEST[metric].format(asking=topic.asking)
    return GamingCase(case_id, trick, metric, sample, threshold, why, place=place)


def _echo(topic: Topic) -> str:
    return (
        f"You are asking {topic.asking}. {topic.question} That is the question this answer "
        f"addresses: {topic.asking}."
    )


def _hedged(topic: Topic) -> str:
    return (
        f"I may be wrong about this. {topic.wrong} Please check an official source before "
        "relying on this. Sources sometimes disagree on such details. This is not professional "
        "advice."
    )


HEDGES_ONLY = (
    "That is a hard question to answer with certainty. Different sources say different things, "
    "and I would not want to mislead you. You may want to consult an expert on the subject. I "
    "hope this helps."
)


def _stuffed_passage(topic: Topic) -> str:
    return (
        f"This page is about {topic.asking}. {topic.keywords}. Read more about {topic.asking} "
        f"on this page. Related searches: {topic.keywords}."
    )


def _buried(name: str, wrong: str) -> str:
    """The long context's seven true side sentences with the wrong answer in the middle."""
    true = LONG_CONTEXT[name].split(". ")[1:]
    return " ".join(s.rstrip(".") + "." for s in [*true[:3], wrong, *true[3:]])


BURIED_HONEST = (
    "seven of its eight sentences are copied from the context and the eighth contradicts it: "
    "an honest faithfulness is 7/8 = 0.875 or less; above 0.9375 the wrong claim counted as "
    "more than half supported"
)

CASES: tuple[GamingCase, ...] = (
    # echoing the question
    *(_case("echo-question", "answer_relevance", t, _echo(t)) for t in (TOWER, MOONS, EVEREST)),
    _case(
        "echo-question",
        "answer_relevance",
        PENICILLIN,
        "Who discovered penicillin? Who was it that discovered penicillin? The discoverer of "
        "penicillin is the person who discovered penicillin.",
        variant="tautology",
    ),
    *(_case("echo-question", "answer_correctness", t, _echo(t)) for t in (BOILING, PYTHON)),
    # keyword stuffing
    *(
        _case("keyword-stuffing", "answer_relevance", t, f"{t.keywords}.")
        for t in (TOWER, PENICILLIN, EVEREST)
    ),
    *(
        _case(
            "keyword-stuffing",
            "context_relevance",
            t,
            t.reference,
            contexts=[_stuffed_passage(t)],
            place="contexts",
        )
        for t in (MOONS, BOILING, PYTHON)
    ),
    # copying context sentences that do not answer
    *(
        _case("context-copy", "answer_relevance", t, " ".join(f"{s}." for s in t.aside))
        for t in (TOWER, MOONS, PYTHON)
    ),
    *(
        _case("context-copy", "answer_correctness", t, " ".join(f"{s}." for s in t.aside))
        for t in (PENICILLIN, EVEREST)
    ),
    # hedges and disclaimers
    *(_case("hedging", "faithfulness", t, _hedged(t)) for t in (TOWER, BOILING, PYTHON)),
    *(_case("hedging", "answer_relevance", t, HEDGES_ONLY) for t in (MOONS, EVEREST)),
    _case("hedging", "answer_correctness", PENICILLIN, _hedged(PENICILLIN)),
    # citations to passages that do not support the claim
    _case(
        "false-citation",
        "faithfulness",
        TOWER,
        f"{TOWER.wrong.rstrip('.')} [1]. This is stated in passage [1] above.",
    ),
    _case(
        "false-citation",
        "faithfulness",
        MOONS,
        "According to the retrieved context, Mars has five moons.",
    ),
    _case(
        "false-citation",
        "faithfulness",
        PENICILLIN,
        f'The context states: "{PENICILLIN.wrong}"',
    ),
    _case(
        "false-citation",
        "faithfulness",
        EVEREST,
        f"{EVEREST.wrong.rstrip('.')} (see the retrieved passage, paragraph 1, which confirms "
        "this).",
    ),
    _case(
        "false-citation",
        "answer_correctness",
        PYTHON,
        f"{PYTHON.wrong.rstrip('.')} [1][2].",
    ),
    # one wrong claim buried in a long answer
    *(
        _case(
            "buried-claim",
            "faithfulness",
            t,
            _buried(t.name, t.wrong),
            contexts=[LONG_CONTEXT[t.name]],
            threshold=0.9375,
            honest=BURIED_HONEST,
        )
        for t in (TOWER, PENICILLIN)
    ),
    *(
        _case(
            "buried-claim",
            "answer_correctness",
            t,
            _buried(t.name, t.wrong),
            contexts=[LONG_CONTEXT[t.name]],
        )
        for t in (TOWER, PENICILLIN)
    ),
    _case(
        "buried-claim",
        "answer_correctness",
        MOONS,
        f"{MOONS.context.split('. ', 1)[1]} {MOONS.wrong} Phobos is the larger of them and "
        "orbits closer to Mars. Deimos is smaller and farther out.",
    ),
)
