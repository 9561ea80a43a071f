"""Judges and embedders from specs (``provider`` or ``provider:model``): the one place that turns
what a user typed into models, used by every command that takes a judge.

Providers are found through entry points (see ``ragmeter.plugins``); each validates its own
options (an unknown name or a wrong type is a ``ValueError`` that names it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.judges.base import Embedder, Judge
from ragmeter.judges.cache import CachedEmbedder, CachedJudge, CallCache
from ragmeter.judges.heads import HEADS_OPTION, with_heads
from ragmeter.plugins import Kind, load

DEFAULT_EMBEDDER = "minilm"


def split_spec(spec: str) -> tuple[str, str]:
    provider, _, model = spec.partition(":")
    return provider.strip(), model.strip()


def get_judge(spec: str, **options: Any) -> Judge:
    judge: Judge = _create("judge", spec, options)
    return judge


def get_embedder(spec: str, **options: Any) -> Embedder:
    embedder: Embedder = _create("embedder", spec, options)
    return embedder


def _create(kind: Kind, spec: str, options: Mapping[str, Any]) -> Any:
    provider, model = split_spec(spec)
    factory = load(kind, provider)
    try:
        return factory(model, **options)
    except TypeError as exc:  # a plugin without an options model, given an option it lacks
        raise ValueError(f"options for the {kind} {spec!r}: {exc}") from None


def resolve_models(
    judge: str | Judge,
    embedder: str | Embedder | None = None,
    *,
    cache: bool | str | Path | CallCache = True,
    needs_embedder: bool = True,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    wrap_judge: Callable[[Judge], Judge] | None = None,
) -> tuple[Judge, Embedder | None]:
    """Build the judge and (if needed) the embedder, behind the call cache unless ``cache`` is
    False.

    Args:
        judge: a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``, or a ``Judge``.
        embedder: a spec or an ``Embedder``; MiniLM when None and one is needed.
        cache: True for the user cache folder, a path, an open ``CallCache``, or False.
        needs_embedder: False when no metric compares texts by embedding.
        judge_options: the provider's options (its ``Options`` model), for a judge given by spec,
            and ``heads`` (``ragmeter.judges.heads.HEADS_OPTION``) for any judge.
        embedder_options: the same for the embedder.
        wrap_judge: applied to the judge under the cache (the budget meter goes there, so that
            cached calls cost nothing).
    """
    judge_options = dict(judge_options or {})
    # A judge named by a spec gets the default heads; a Judge object is read as it comes, with
    # the heads it was resolved with (if any): resolving it again must not change how it reads.
    heads = judge_options.pop(HEADS_OPTION, None if isinstance(judge, str) else "none")
    if judge_options and not isinstance(judge, str):
        raise ValueError("judge options apply to a judge named by a spec, not to a Judge object")
    if embedder_options and not isinstance(embedder, str | None):
        raise ValueError("embedder options apply to an embedder named by a spec")
    judge_model = get_judge(judge, **(judge_options or {})) if isinstance(judge, str) else judge
    embed_model: Embedder | None = None
    if needs_embedder:
        embed_model = (
            embedder
            if embedder is not None and not isinstance(embedder, str)
            else get_embedder(embedder or DEFAULT_EMBEDDER, **(embedder_options or {}))
        )
    if wrap_judge is not None:
        judge_model = wrap_judge(judge_model)
    if cache is False:
        return with_heads(judge_model, heads), embed_model
    calls = cache if isinstance(cache, CallCache) else CallCache(None if cache is True else cache)
    cached_embedder = CachedEmbedder(embed_model, calls) if embed_model is not None else None
    # Outside the cache: it keeps the raw replies, which no head changes.
    return with_heads(CachedJudge(judge_model, calls), heads), cached_embedder
