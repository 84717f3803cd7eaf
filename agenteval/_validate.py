"""Argument checks shared by the eval-set and metric stores."""

from __future__ import annotations

from agenteval.errors import ConfigError

__all__ = ["check_set", "not_empty"]


def not_empty(kind: str, value: str) -> str:
    """Reject an empty name or id.

    Args:
        kind: What the value is, for the message (``"app name"``, ``"metric name"``).
        value: The name or id.

    Returns:
        The value, unchanged.

    Raises:
        ConfigError: ``<kind> is empty``.
    """
    if not value:
        raise ConfigError(f"{kind} is empty")
    return value


def check_set(app_name: str, eval_set_id: str) -> None:
    """Reject an empty app name or eval set id, in that order.

    Raises:
        ConfigError: ``app name is empty`` or ``eval set id is empty``.
    """
    not_empty("app name", app_name)
    not_empty("eval set id", eval_set_id)
