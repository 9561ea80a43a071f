"""Typed options for providers and metrics: unknown names and wrong types are refused by name.

Every configurable part (a judge provider, an embedder provider, a metric) declares its options as
one ``Options`` model. The model is the single place that says what the part accepts, what each
option means, and which options change its outputs: everything not listed as ``operational`` is
part of the identity that cache and store keys hash, so no option can be forgotten there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError


class OptionsError(ValueError):
    """An option that is unknown or has a value of the wrong type or range."""


class Options(BaseModel):
    """Base of every options model: frozen, and refusing names it does not declare."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operational: ClassVar[frozenset[str]] = frozenset()
    """Options that do not change outputs (timeouts, retries, concurrency, where a key is read
    from); they stay out of ``identity()``."""

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None, owner: str) -> Self:
        """Validate ``values`` for ``owner`` (e.g. "the openai judge"), naming the first
        offending option, its value and, for an unknown name, the valid ones."""
        values = dict(values or {})
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            valid = ", ".join(sorted(cls.model_fields)) or "none"
            raise OptionsError(f"unknown option {unknown[0]!r} for {owner}; valid options: {valid}")
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            name = ".".join(str(part) for part in error["loc"]) or "?"
            given = values.get(str(error["loc"][0]), error.get("input")) if error["loc"] else None
            raise OptionsError(
                f"option {name!r} of {owner}: {given!r} is not valid: {error['msg']}"
            ) from None

    def identity(self) -> dict[str, Any]:
        """The options that change outputs, as plain JSON values."""
        return self.model_dump(mode="json", exclude=set(self.operational))
