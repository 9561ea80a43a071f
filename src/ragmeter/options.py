"""Typed options for providers and metrics: unknown names and wrong types are refused by name.

Every configurable part (a judge provider, an embedder provider, a metric) declares its options as
one ``Options`` model. The model is the single place that says what the part accepts, what each
option means, and which options change its outputs: everything not listed as ``operational`` is
part of the identity that cache and store keys hash, so no option can be forgotten there.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import UnionType
from typing import Annotated, Any, ClassVar, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Probability = Annotated[float, Field(ge=0, le=1)]
"""An option that is a probability, a share or a bar on one: from 0 to 1."""

_SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "credential")


def looks_secret(name: str) -> bool:
    """True for a name such as ``api_key`` or ``HF_TOKEN``; ``*_env`` names a variable, which
    is not itself secret."""
    lowered = name.lower()
    return not lowered.endswith("_env") and any(word in lowered for word in _SECRET_WORDS)


class OptionsError(ValueError):
    """An option that is unknown or has a value of the wrong type or range."""


def _admitted(annotation: Any) -> set[Any]:
    """The types a field's annotation admits, unions and ``Annotated`` unwrapped."""
    if get_origin(annotation) in (Union, UnionType, Annotated):
        return set().union(*(_admitted(arg) for arg in get_args(annotation)))
    return {get_origin(annotation) or annotation}


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
        for name, value in values.items():
            # pydantic would read True as 1: a yes/no given for a number is a mistake.
            if isinstance(value, bool) and bool not in _admitted(cls.model_fields[name].annotation):
                raise OptionsError(
                    f"option {name!r} of {owner}: {value!r} is not valid: a yes/no where a "
                    "value of another type is expected"
                )
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            message = str(error["msg"]).removeprefix("Value error, ")
            if not error["loc"]:  # a rule between options
                raise OptionsError(f"options of {owner}: {message}") from None
            name = str(error["loc"][0])
            raise OptionsError(
                f"option {name!r} of {owner}: {values.get(name)!r} is not valid: {message}"
            ) from None

    def identity(self) -> dict[str, Any]:
        """The options that change outputs, as plain JSON values. A credential never changes a
        reply and is never written down, so an option whose name looks like one stays out too."""
        secret = {name for name in type(self).model_fields if looks_secret(name)}
        return self.model_dump(mode="json", exclude=set(self.operational) | secret)
