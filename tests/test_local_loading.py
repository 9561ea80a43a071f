"""How the offline judge loads its model on CPUs whose AMX kernels crash (no model needed)."""

from __future__ import annotations

import pytest

from ragmeter.judges.local import without_amx_buffers

native = pytest.importorskip("llama_cpp.llama_cpp")


def _cpu(monkeypatch, features: bytes) -> None:
    monkeypatch.setattr(native, "llama_print_system_info", lambda: b"CPU : " + features)


def test_amx_cpus_load_without_extra_buffers_and_restore_the_defaults(monkeypatch):
    _cpu(monkeypatch, b"AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 | ")
    with without_amx_buffers():
        assert native.llama_model_default_params().use_extra_bufts is False
    assert native.llama_model_default_params().use_extra_bufts is True


def test_other_cpus_keep_the_extra_buffers(monkeypatch):
    _cpu(monkeypatch, b"AVX2 = 1 | AVX512 = 1 | REPACK = 1 | ")
    with without_amx_buffers():
        assert native.llama_model_default_params().use_extra_bufts is True


def test_defaults_are_restored_when_loading_fails(monkeypatch):
    _cpu(monkeypatch, b"AMX_INT8 = 1 | ")
    with pytest.raises(ValueError), without_amx_buffers():
        raise ValueError("no such model")
    assert native.llama_model_default_params().use_extra_bufts is True
