"""The reference framework's JSON conventions, in one place.

Every persisted model derives from :class:`WireModel` (keys as declared) or :class:`CamelModel`
(camelCase keys). Both reproduce Go's ``omitempty`` on write, keep unknown keys through a
load/save round trip, and load files strictly (a string is never silently read as a number).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.alias_generators import to_camel

__all__ = ["CamelModel", "EpochTime", "GoFloat", "WireModel"]


def _go_number(value: float) -> float | int:
    """Write an integral float without ``.0``, as Go's encoder does (``1`` rather than ``1.0``)."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _reject_non_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number of seconds since the Unix epoch, got {value!r}")
    return value


GoFloat = Annotated[float, PlainSerializer(_go_number, when_used="json")]
"""A float written the way Go writes a ``float64``."""

EpochTime = Annotated[float, BeforeValidator(_reject_non_number), PlainSerializer(_go_number, when_used="json")]
"""A timestamp in JSON: Unix seconds as a number (``1761134484.9804401``); strings are rejected."""


def _is_zero(value: object) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str | list | dict | tuple):
        return len(value) == 0
    return False


class WireModel(BaseModel):
    """Base of every persisted model: Go ``omitempty`` on write, unknown keys kept.

    A field whose default is ``None`` is written whenever it is set, even to ``0`` or ``False``
    (a Go pointer). Any other field is left out when it holds its zero value (``0``, ``False``,
    ``""``, an empty list or mapping), unless it is named in ``_always_emit``.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        validate_assignment=False,
    )

    _always_emit: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        by_alias = info.by_alias is not False
        for name, field in type(self).model_fields.items():
            if name in self._always_emit:
                continue
            key = field.alias if by_alias and field.alias else name
            if key not in data:
                continue
            value = getattr(self, name)
            if value is None or (field.default is not None and _is_zero(value)):
                del data[key]
        return data

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
        return self.model_dump_json(indent=indent)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dictionary that :meth:`to_json` would write."""
        data: dict[str, Any] = self.model_dump(mode="json")
        return data


class CamelModel(WireModel):
    """A :class:`WireModel` whose JSON keys are the camelCase form of its attribute names."""

    model_config = ConfigDict(alias_generator=to_camel)
