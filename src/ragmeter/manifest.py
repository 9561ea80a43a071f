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
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter import __version__
from ragmeter.data import LoadedDataset
from ragmeter.judges.weights import BUNDLED
from ragmeter.metrics import Metric
from ragmeter.sample import Sample

MANIFEST_SCHEMA = 1
RUN_FILE = "run.json"
HISTORY_FILE = "runs.jsonl"
_SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "credential")


def looks_secret(name: str) -> bool:
    """True for a name such as ``api_key`` or ``HF_TOKEN``; ``*_env`` names a variable, which
    is not itself secret."""
    lowered = name.lower()
    return not lowered.endswith("_env") and any(word in lowered for word in _SECRET_WORDS)


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


def model_record(model: Any) -> dict[str, Any] | None:
    """Who the judge or embedder is: provider, model, the weights' SHA-256 where it is pinned,
    and whatever the provider's optional ``describe()`` adds (endpoint, served snapshots)."""
    if model is None:
        return None
    provider, _, name = model.name.partition(":")
    record: dict[str, Any] = {"name": model.name, "provider": provider, "model": name}
    inner = unwrap(model)
    pinned = BUNDLED.get(name) if provider == "local" else None
    record["weights_sha256"] = pinned.sha256 if pinned else None
    path = getattr(inner, "model_path", None)
    if record["weights_sha256"] is None and isinstance(path, Path) and path.is_file():
        # A user's own GGUF: hashing gigabytes on every run is too slow; name it instead.
        record["weights_path"], record["weights_bytes"] = str(path), path.stat().st_size
    describe = getattr(inner, "describe", None)
    if callable(describe):
        record.update(describe())
    return record


def metric_record(metric: Metric) -> dict[str, Any]:
    return {
        "config": metric.config(),
        "version": metric.version,
        "prompts": {p.name: p.version for p in metric.prompts},
    }


def dataset_fingerprint(samples: Sequence[Sample]) -> str:
    """SHA-256 over the samples, so a resumed run can be checked against the same data."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(sample.model_dump_json().encode())
        digest.update(b"\n")
    return digest.hexdigest()


def environment() -> dict[str, str]:
    return {
        "ragmeter_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a kill) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_run_record(out_dir: Path, record: Mapping[str, Any]) -> None:
    """Replace ``run.json`` and add a line to ``runs.jsonl``; both scrubbed of secrets."""
    text = scrub(json.dumps(record, indent=2, default=str))
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
) -> dict[str, Any]:
    """The record of a run as it starts ("running"); ``finish_record`` completes it.

    The top-level ``judge``, ``embedder``, ``retries``, ``samples`` and ``invalid_rows`` keys are
    kept from the record's first version, which reports and scripts already read.
    """
    return {
        "schema": MANIFEST_SCHEMA,
        "status": "running",
        **environment(),
        "judge": judge.name,
        "embedder": embedder.name if embedder else None,
        "models": {"judge": model_record(judge), "embedder": model_record(embedder)},
        "metrics": {m.name: metric_record(m) for m in metrics},
        "parameters": dict(parameters),
        "retries": parameters.get("retries"),
        "seed": seed,
        "dataset": {
            "samples": len(dataset.samples),
            "invalid_rows": len(dataset.invalid),
            "sha256": dataset_fingerprint(dataset.samples),
        },
        "samples": len(dataset.samples),
        "invalid_rows": len(dataset.invalid),
        "started": datetime.now(UTC).isoformat(),
        "budget": budget,
    }


def finish_record(
    record: Mapping[str, Any],
    judge: Any,
    embedder: Any,
    *,
    status: str,
    seconds: float,
    counts: Mapping[str, Any],
    budget: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The record at the end: outcome, timing and counts, and the models described again
    (a remote judge reports the snapshots it served only once it has answered)."""
    return {
        **record,
        "status": status,
        "models": {"judge": model_record(judge), "embedder": model_record(embedder)},
        "ended": datetime.now(UTC).isoformat(),
        "seconds": round(seconds, 3),
        "counts": dict(counts),
        "budget": budget,
    }
