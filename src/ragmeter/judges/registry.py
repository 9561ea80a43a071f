"""Judges and embedders by name: ``provider`` or ``provider:model``.

Providers are found through the ``ragmeter.judges`` / ``ragmeter.embedders`` entry points, so a
plugin package registers exactly as the built-ins do. The built-in table below is the fallback for
running from a source tree that was never installed.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from ragmeter.judges.base import Embedder, Judge

_BUILTIN_JUDGES = {
    "local": "ragmeter.judges.local:create_judge",
    "openai": "ragmeter.judges.openai:create_judge",
    "fake": "ragmeter.judges.fake:create_judge",
}
_BUILTIN_EMBEDDERS = {
    "minilm": "ragmeter.judges.minilm:create_embedder",
    "openai": "ragmeter.judges.openai:create_embedder",
    "fake": "ragmeter.judges.fake:create_embedder",
}


def _factories(group: str, builtins: dict[str, str]) -> dict[str, str]:
    found = dict(builtins)
    found.update({ep.name: ep.value for ep in entry_points(group=group)})
    return found


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def split_spec(spec: str) -> tuple[str, str]:
    provider, _, model = spec.partition(":")
    return provider.strip(), model.strip()


def get_judge(spec: str, **options: Any) -> Judge:
    provider, model = split_spec(spec)
    factories = _factories("ragmeter.judges", _BUILTIN_JUDGES)
    if provider not in factories:
        raise ValueError(
            f"unknown judge provider {provider!r}; known: {', '.join(sorted(factories))}"
        )
    judge: Judge = _load(factories[provider])(model, **options)
    return judge


def get_embedder(spec: str, **options: Any) -> Embedder:
    provider, model = split_spec(spec)
    factories = _factories("ragmeter.embedders", _BUILTIN_EMBEDDERS)
    if provider not in factories:
        raise ValueError(
            f"unknown embedder provider {provider!r}; known: {', '.join(sorted(factories))}"
        )
    embedder: Embedder = _load(factories[provider])(model, **options)
    return embedder
