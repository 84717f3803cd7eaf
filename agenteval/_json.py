"""The reference framework's JSON conventions, in one place.

Every persisted model derives from :class:`WireModel` (keys as declared) or :class:`CamelModel`
(camelCase keys). Both reproduce Go's ``omitempty`` on write, keep unknown keys through a
load/save round trip, and load files strictly (a string is never silently read as a number).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
)
from pydantic.alias_generators import to_camel

__all__ = ["CamelModel", "EpochTime", "GoFloat", "WireModel", "non_finite_path"]


def _go_number(value: float) -> float | int:
    """Write an integral float without ``.0``, as Go's encoder does (``1`` rather than ``1.0``).

    Like Go's encoder, refuse NaN and infinities: JSON cannot hold them, and writing ``null``
    would silently turn them into ``0`` on the next read.
    """
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{value} cannot be written as JSON: scores and timestamps must be finite numbers")
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value} (JSON has no NaN or Infinity)")
    return value


def _reject_non_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number of seconds since the Unix epoch, got {value!r}")
    return value


GoFloat = Annotated[float, AfterValidator(_finite), PlainSerializer(_go_number, when_used="json")]
"""A float written the way Go writes a ``float64``."""

EpochTime = Annotated[float, BeforeValidator(_reject_non_number), PlainSerializer(_go_number, when_used="json")]
"""A timestamp in JSON: Unix seconds as a number (``1761134484.9804401``); strings are rejected."""


class WireModel(BaseModel):
    """Base of every persisted model: Go ``omitempty`` on write, unknown keys kept.

    :meth:`to_json` and :meth:`to_dict` leave out every field that holds its default. A field whose
    default is ``None`` is therefore written whenever it is set, even to ``0`` or ``False`` (a Go
    pointer), and any other field is left out at its zero value (``0``, ``False``, ``""``, an empty
    list or mapping) — Go's ``omitempty``. Fields are never ``null`` in a file: a ``null`` is only
    accepted where the default is ``None``.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        """Parse a JSON document strictly: types must match, enums must be known values.

        Args:
            data: The JSON text.

        Returns:
            The parsed model.

        Raises:
            pydantic.ValidationError: The JSON is malformed or does not fit the model.
        """
        return cls.model_validate_json(data, strict=True)

    def to_json(self, *, indent: int | None = 2) -> str:
        """Write the model as the reference framework would (``omitempty``, aliases, no api keys).

        Args:
            indent: Spaces per indentation level; ``None`` for a compact single line.

        Returns:
            The JSON text, without a trailing newline.
        """
        return self.model_dump_json(indent=indent, exclude_defaults=True)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dictionary that :meth:`to_json` would write."""
        data: dict[str, Any] = self.model_dump(mode="json", exclude_defaults=True)
        return data


class CamelModel(WireModel):
    """A :class:`WireModel` whose JSON keys are the camelCase form of its attribute names."""

    model_config = ConfigDict(alias_generator=to_camel)


def unknown_fields(value: Any, path: str = "") -> list[str]:
    """JSON paths of the keys that no model field took, in document order (e.g. ``[0].criterion.foo``).

    Such keys are kept (and written back), but a misspelt option silently means its default.
    """
    if isinstance(value, list | tuple):
        return [found for index, item in enumerate(value) for found in unknown_fields(item, f"{path}[{index}]")]
    if not isinstance(value, BaseModel):
        return []
    prefix = f"{path}." if path else ""
    found = [f"{prefix}{key}" for key in value.model_extra or {}]
    for name, info in type(value).model_fields.items():
        child = getattr(value, name)
        if isinstance(child, BaseModel | list | tuple):
            found.extend(unknown_fields(child, f"{prefix}{info.alias or name}"))
        elif isinstance(child, dict):
            for key, item in child.items():
                found.extend(unknown_fields(item, f"{prefix}{info.alias or name}.{key}"))
    return found


def non_finite_path(model: BaseModel) -> str | None:
    """Return the JSON path of the first NaN or infinite number in ``model`` (``None`` if there is none).

    Used to turn a failed serialisation into a message that names the field.
    """

    def walk(value: Any, path: str) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return path
        if isinstance(value, dict):
            items = value.items()
            return next((found for k, v in items if (found := walk(v, f"{path}.{k}" if path else str(k)))), None)
        if isinstance(value, list | tuple):
            return next((found for i, v in enumerate(value) if (found := walk(v, f"{path}[{i}]"))), None)
        return None

    return walk(model.model_dump(), "")
