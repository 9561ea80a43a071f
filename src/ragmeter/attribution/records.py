"""What a KaLMA run writes: one JSON line per generated answer and per scored answer.

Each record is appended and flushed as soon as it is complete (see :mod:`ragmeter.records`), so
an interrupted run loses at most the item in progress, and a rerun with the same folder skips
every record whose key is already there (a failed generation is retried; a line that cannot be
read is reported and its record done again). Keys hash everything that changes the outcome:
the item, the condition, the models' identities, the prompt versions and, for a score, the
answer itself. A record is filed under the identities its models had once they were done with
it: a judge that learned midway to ask its server another way made it as that other model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.attribution.graph import Entity, Triple
from ragmeter.attribution.metrics import AlignmentResult, NAResult
from ragmeter.attribution.retrieval import Retrieval
from ragmeter.score import Exchange, Score, Usage

SCHEMA_VERSION = 1


class Condition(BaseModel):
    """The setting an answer is generated under.

    ``removed``: minimum-set triples taken out of the graph (conscious incompetence);
    ``accuracy``: share of the item's graphs left correct (retrieval ablation);
    ``retrieval``: ``gold`` graphs, or ``retrieve`` them from the store by the question.
    """

    model_config = ConfigDict(frozen=True)

    name: str = "main"
    removed: int = 0
    accuracy: float = 1.0
    retrieval: str = "gold"


class Keyed(BaseModel):
    """A record filed under ``key`` in a :class:`~ragmeter.records.RecordLog` (its default key),
    stamped with the schema version it was written under."""

    schema_version: int = SCHEMA_VERSION
    key: str


class GenerationRecord(Keyed):
    item_id: str
    condition: Condition
    question: str
    minimum: list[Triple] | None
    absent: list[Triple] = Field(default_factory=list)
    """Minimum-set triples removed from the graph: the [NA] ground truth."""
    graph: list[Entity]
    """The knowledge the generator was given (after retrieval, removal or replacement)."""
    names: dict[str, str] = Field(default_factory=dict)
    """Names of the item's own entities, to show absent triples to the judge by name."""
    retrieval: Retrieval | None = None
    generator: str
    answer: str | None = None
    error: str | None = None
    seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    exchanges: list[Exchange] = Field(default_factory=list)


class ScoreRecord(Keyed):
    generation_key: str
    item_id: str
    condition: Condition
    judge: str
    alignment: AlignmentResult | None = None
    na: NAResult | None = None
    quality: dict[str, Score] = Field(default_factory=dict)
    seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    exchanges: list[Exchange] = Field(default_factory=list)
    """The entailment calls (alignment and [NA]); quality scores carry their own."""
