"""The run record: what ran, on which models and data, with which settings, and what came of it.

A score is only as trustworthy as the record of how it was made, so every ``evaluate`` writes one
(``run.json`` in the results folder, also returned as ``Result.run``) at the start, marked
"running", and again at the end; ``runs.jsonl`` keeps one line per start and end, so a run that
was killed and resumed leaves its history. Nothing secret goes in: option values whose names look
like credentials are replaced, and any API key found in the environment is cut out of the text.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.data import LoadedDataset
from ragmeter.judges.base import heads_of, identity_of
from ragmeter.judges.weights import BUNDLED
from ragmeter.metrics import Metric
from ragmeter.options import looks_secret
from ragmeter.sample import Sample
from ragmeter.score import Usage
from ragmeter.version import __version__

MANIFEST_SCHEMA = 1
RUN_FILE = "run.json"
HISTORY_FILE = "runs.jsonl"


def redact_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: "[redacted]" if looks_secret(k) else v for k, v in (options or {}).items()}


def scrub(text: str, environ: Mapping[str, str] = os.environ) -> str:
    """``text`` with the value of every credential-like environment variable cut out."""
    for name, value in environ.items():
        if looks_secret(name) and len(value) >= 8:
            text = text.replace(value, "[redacted]")
    return text


def unwrap(model: Any) -> Any:
    """The provider object under the cache and budget wrappers."""
    while hasattr(model, "inner"):
        model = model.inner
    return model


class ModelRecord(BaseModel):
    """Who the judge or embedder is. Providers' ``describe()`` adds fields of their own (the
    endpoint, the snapshots a server reported), kept as extra fields."""

    model_config = ConfigDict(extra="allow")

    name: str
    provider: str
    model: str
    weights_sha256: str | None = None
    weights_path: str | None = None
    weights_bytes: int | None = None
    identity: str | None = None
    """The digest that cache and store keys hash (absent from records made before it)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """What besides provider and model determines the outputs (see ``ModelIdentity``)."""


def model_record(model: Any) -> ModelRecord | None:
    """Who the judge or embedder is: provider, model, the weights' SHA-256 where it is known,
    the identity the keys hash, and whatever the provider's optional ``describe()`` adds."""
    if model is None:
        return None
    identity = identity_of(model)
    inner = unwrap(model)
    pinned = BUNDLED.get(identity.model) if identity.provider == "local" else None
    weights = identity.settings.get("weights_sha256") or (pinned.sha256 if pinned else None)
    record = ModelRecord(
        name=model.name,
        provider=identity.provider,
        model=identity.model,
        weights_sha256=weights,
        identity=identity.digest,
        settings=identity.settings,
    )
    path = getattr(inner, "model_path", None)
    if pinned is None and isinstance(path, Path) and path.is_file():
        record.weights_path, record.weights_bytes = str(path), path.stat().st_size
    describe = getattr(inner, "describe", None)
    if callable(describe):
        record = ModelRecord.model_validate(record.model_dump() | describe())
    heads = heads_of(model)
    if heads is not None:
        record = ModelRecord.model_validate(record.model_dump() | {"heads": heads.describe()})
    return record


class MetricRecord(BaseModel):
    config: dict[str, Any]
    version: str
    prompts: dict[str, str]


def metric_record(metric: Metric) -> MetricRecord:
    return MetricRecord(
        config=metric.config(),
        version=metric.version,
        prompts={p.name: p.version for p in metric.prompts},
    )


def dataset_fingerprint(samples: Sequence[Sample]) -> str:
    """SHA-256 over the samples, so a resumed run can be checked against the same data."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(sample.model_dump_json().encode())
        digest.update(b"\n")
    return digest.hexdigest()


class DatasetRecord(BaseModel):
    samples: int
    invalid_rows: int
    sha256: str


class Counts(Usage):
    """What a run did with its items; the fields of ``Usage`` count the judge calls of the
    items judged now."""

    items: int = 0
    scored: int = 0
    unscored: int = 0
    pending: int = 0
    """Not judged because the budget ran out."""
    resumed: int = 0
    judged: int = 0
    internal_errors: int = 0
    truncated_samples: int = 0
    planted_samples: int = 0
    """Samples holding text addressed to the judge (``ragmeter.planted``)."""
    planted_fields: dict[str, int] = Field(default_factory=dict)
    """Those units of text by the kind of field that held them ("answer", "contexts"...)."""


class RunRecord(BaseModel):
    """``run.json``: what ran, on which models and data, with which settings, and what came of
    it. Unknown fields are kept, so a record written by another version opens and is rewritten
    whole; ``judge``, ``embedder``, ``retries``, ``samples`` and ``invalid_rows`` at the top are
    kept from the first version, which scripts already read."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = Field(MANIFEST_SCHEMA, alias="schema")
    status: Literal["running", "complete", "stopped"] = "running"
    ragmeter_version: str = ""
    python: str = ""
    platform: str = ""
    judge: str
    embedder: str | None = None
    models: dict[str, ModelRecord | None] = Field(default_factory=dict)
    metrics: dict[str, MetricRecord] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] | None = None
    """The run's whole configuration (``ragmeter.config.RunConfig``, secrets redacted), from
    which ``compare`` and a rerun say what differs; absent from records made before it."""
    retries: int | None = None
    seed: int | None = None
    dataset: DatasetRecord | None = None
    samples: int = 0
    invalid_rows: int = 0
    started: str = ""
    ended: str | None = None
    seconds: float | None = None
    counts: Counts | None = None
    budget: dict[str, Any] | None = None
    languages: dict[str, int] | None = None
    """How many samples' texts were split by each language's rules (``language.language_of``:
    given or detected; "und" where it could not be told), most first; absent from records made
    before languages were told apart."""
    planted: list[dict[str, str]] = Field(default_factory=list)
    """Each unit of text addressed to the judge (``ragmeter.planted``): its sample, field, rule
    and text; ``counts`` has how many samples held any."""

    @classmethod
    def read(cls, out_dir: Path) -> RunRecord:
        """The record in ``out_dir``; ``ValueError`` saying what is wrong if it cannot be read."""
        path = out_dir / RUN_FILE
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the run record ({exc})") from None
        except ValidationError as exc:
            raise ValueError(f"{path}: not a run record: {exc.errors()[0]['msg']}") from None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def environment() -> dict[str, str]:
    return {
        "ragmeter_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def atomic_write_text(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` to ``path`` so that a reader (or a kill) never sees half a file; given
    pieces of text, write each as it comes, so that a large file is never whole in memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.writelines([text] if isinstance(text, str) else text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_run_record(out_dir: Path, record: RunRecord) -> None:
    """Replace ``run.json`` and add a line to ``runs.jsonl``; both scrubbed of secrets."""
    text = scrub(record.to_json())
    atomic_write_text(out_dir / RUN_FILE, text + "\n")
    line = json.dumps(json.loads(text)) + "\n"
    with (out_dir / HISTORY_FILE).open("ab") as history:
        if history.tell() and not _ends_with_newline(out_dir / HISTORY_FILE):
            line = "\n" + line  # a run killed mid-append left half a line: start afresh
        history.write(line.encode())


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def start_record(
    judge: Any,
    embedder: Any,
    metrics: Sequence[Metric],
    dataset: LoadedDataset,
    parameters: Mapping[str, Any],
    seed: int | None,
    budget: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None = None,
    languages: Mapping[str, int] | None = None,
    planted: Sequence[Mapping[str, str]] = (),
) -> RunRecord:
    """The record of a run as it starts ("running"); ``finish_record`` completes it."""
    return RunRecord(
        **environment(),
        judge=judge.name,
        embedder=embedder.name if embedder else None,
        models={"judge": model_record(judge), "embedder": model_record(embedder)},
        metrics={m.name: metric_record(m) for m in metrics},
        parameters=dict(parameters),
        config=dict(config) if config is not None else None,
        retries=parameters.get("retries"),
        seed=seed,
        dataset=DatasetRecord(
            samples=len(dataset.samples),
            invalid_rows=len(dataset.invalid),
            sha256=dataset_fingerprint(dataset.samples),
        ),
        samples=len(dataset.samples),
        invalid_rows=len(dataset.invalid),
        started=datetime.now(UTC).isoformat(),
        budget=dict(budget) if budget else None,
        languages=dict(languages) if languages is not None else None,
        planted=[dict(unit) for unit in planted],
    )


def finish_record(
    record: RunRecord,
    judge: Any,
    embedder: Any,
    *,
    status: Literal["complete", "stopped"],
    seconds: float,
    counts: Counts,
    budget: Mapping[str, Any] | None,
) -> RunRecord:
    """The record at the end: outcome, timing and counts, and the models described again
    (a remote judge reports the snapshots it served only once it has answered)."""
    return record.model_copy(
        update={
            "status": status,
            "models": {"judge": model_record(judge), "embedder": model_record(embedder)},
            "ended": datetime.now(UTC).isoformat(),
            "seconds": round(seconds, 3),
            "counts": counts,
            "budget": dict(budget) if budget else None,
        }
    )


WHERE_AND_HOW_FAST = frozenset(
    {"data", "out", "html", "show_samples", "workers", "ray", "ray_actors", "ray_actor_cpus"}
)
"""The fields of a run's configuration that say where its files are and how fast it ran, not
how it judged: two runs compared differ there by design."""


def config_differences(
    before: Mapping[str, Any], after: Mapping[str, Any], ignore: Iterable[str] = ()
) -> list[str]:
    """What differs between two recorded configurations, a line per field:
    ``"judge: local -> openai:gpt-4o-mini"``. Fields only one side has count as differing."""
    skipped = set(ignore)
    return [
        f"{name}: {_shown(before.get(name))} -> {_shown(after.get(name))}"
        for name in sorted((set(before) | set(after)) - skipped)
        if before.get(name) != after.get(name)
    ]


def _shown(value: Any) -> str:
    return "(not set)" if value is None else json.dumps(value, sort_keys=True)
