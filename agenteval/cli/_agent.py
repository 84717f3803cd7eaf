"""``--agent package.module:function``: the agent, imported from the current directory or the installed packages."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from agenteval.errors import ConfigError, describe_exception
from agenteval.runner.function import AgentFunction

__all__ = ["importable_working_directory", "load_agent"]


def importable_working_directory() -> None:
    """Let the modules of the current directory be imported, as ``python -m`` does."""
    sys.path.insert(0, str(Path.cwd()))


def load_agent(spec: str) -> AgentFunction:
    """The agent ``spec`` names.

    Raises:
        ConfigError: ``spec`` is not ``module:attribute``, the module cannot be imported (or raised when
            imported), or it has no such attribute.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"--agent must look like 'package.module:function', got {spec!r}")
    importable_working_directory()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} for --agent: {exc}") from exc
    except Exception as exc:  # the module itself is broken: a syntax error, or its code raised
        problem = describe_exception(exc).splitlines()[0]
        raise ConfigError(
            f"cannot import {module_name!r} for --agent: importing it raised {problem}; fix the module"
        ) from exc
    try:
        agent: AgentFunction = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no attribute {attribute!r} (from --agent {spec})") from None
    return agent
