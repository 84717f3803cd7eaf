"""Save-side logic shared by every result store: validation, id, defaults, deep copies."""

from __future__ import annotations

import time
import uuid

from pydantic import ValidationError

from agenteval._files import describe_validation_error
from agenteval._gc import fewer_collections
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalSetResult

__all__ = [
    "clone_result",
    "new_result_id",
    "prepare_result",
    "prepared_json",
    "validate_get",
    "validate_list",
    "validate_save",
]


def validate_save(app_name: str, result: EvalSetResult | None) -> EvalSetResult:
    """Check the arguments of ``save`` in the reference order.

    Returns:
        The result, narrowed to not ``None``.

    Raises:
        ConfigError: ``app name is empty``, ``eval set result is None`` or
            ``the eval set id of eval set result is empty``.
    """
    if not app_name:
        raise ConfigError("app name is empty")
    if result is None:
        raise ConfigError("eval set result is None")
    if not result.eval_set_id:
        raise ConfigError("the eval set id of eval set result is empty")
    return result


def validate_get(app_name: str, eval_set_result_id: str) -> None:
    """Check the arguments of ``get`` in the reference order.

    Raises:
        ConfigError: ``app name is empty`` or ``eval set result id is empty``.
    """
    if not app_name:
        raise ConfigError("app name is empty")
    if not eval_set_result_id:
        raise ConfigError("eval set result id is empty")


def validate_list(app_name: str) -> None:
    """Check the argument of ``list``.

    Raises:
        ConfigError: ``app name is empty``.
    """
    if not app_name:
        raise ConfigError("app name is empty")


def new_result_id(app_name: str, eval_set_id: str) -> str:
    """Return a fresh result id, ``<app>_<evalSetId>_<uuid4>``."""
    return f"{app_name}_{eval_set_id}_{uuid.uuid4()}"


def clone_result(result: EvalSetResult, context: str = "clone result") -> EvalSetResult:
    """Deep-copy a result through its JSON form, which also proves it can be stored.

    Args:
        result: The result to copy.
        context: Prefix of the error message.

    Returns:
        An independent copy.

    Raises:
        ConfigError: The result holds a value JSON cannot represent, such as a NaN anywhere
            (``<context>: field <path> is not a finite number ...``) or a function.
    """
    try:
        with fewer_collections():
            return EvalSetResult.from_json(result.to_json(indent=None))
    except ConfigError as exc:
        raise ConfigError(f"{context}: {exc}") from None
    except ValidationError as exc:
        # The JSON form reloads differently, e.g. a value that no longer fits its field.
        raise ConfigError(f"{context}: {describe_validation_error(exc)}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{context}: {exc}") from exc


def prepare_result(app_name: str, result: EvalSetResult | None, *, set_timestamp: bool = True) -> EvalSetResult:
    """Validate a result and return the copy a store should persist.

    The copy gets a generated id when it has none, the id as its name when it has none and, when
    ``set_timestamp`` is true, the current time when it has no creation time (a provided value,
    even ``0``, is kept). The caller's object is never changed.

    Args:
        app_name: The app the result belongs to.
        result: The result to save.
        set_timestamp: Whether to fill a missing ``creation_timestamp`` (a database may do it).

    Returns:
        The prepared copy; its ``eval_set_result_id`` is the id ``save`` returns.

    Raises:
        ConfigError: A validation failure (see :func:`validate_save`), or ``clone result: ...``
            when the result cannot be serialised.
    """
    return clone_result(_filled(app_name, result, set_timestamp=set_timestamp))


def prepared_json(app_name: str, result: EvalSetResult | None) -> tuple[str, str]:
    """What :func:`prepare_result` would give, as its id and compact JSON, without building the copy.

    Raises:
        ConfigError: As :func:`prepare_result`.
    """
    filled = _filled(app_name, result, set_timestamp=True)
    try:
        text = filled.to_json(indent=None)
        # Proves the text reads back, as the copy of prepare_result does, without keeping the objects.
        with fewer_collections():
            EvalSetResult.from_json(text)
    except ConfigError as exc:
        raise ConfigError(f"clone result: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"clone result: {describe_validation_error(exc)}") from None
    return filled.eval_set_result_id, text


def _filled(app_name: str, result: EvalSetResult | None, *, set_timestamp: bool) -> EvalSetResult:
    """A shallow copy of a valid result with its missing id, name and (optionally) creation time filled."""
    checked = validate_save(app_name, result)
    result_id = checked.eval_set_result_id or new_result_id(app_name, checked.eval_set_id)
    filled: dict[str, object] = {
        "eval_set_result_id": result_id,
        "eval_set_result_name": checked.eval_set_result_name or result_id,
    }
    if set_timestamp and checked.creation_timestamp is None:
        filled["creation_timestamp"] = time.time()
    return checked.model_copy(update=filled)
