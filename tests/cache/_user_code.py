"""User code as a notebook cell or a script defines it: the code the cache's hash reads."""

from __future__ import annotations

import sys
import textwrap
import types
from typing import Any


def define(source: str, *, module: str = "user_agents", filename: str = "") -> Any:
    """``source`` run as a module of that name, as a notebook cell or a script is (never imported).

    Args:
        source: The code (dedented first).
        module: The module's name, which its functions and classes carry.
        filename: Where the code says it comes from; ``<module>`` by default.
    """
    namespace = types.ModuleType(module)
    sys.modules[module] = namespace  # dataclasses and NamedTuples look their module up
    try:
        exec(compile(textwrap.dedent(source), filename or f"<{module}>", "exec"), namespace.__dict__)
    finally:
        del sys.modules[module]
    return namespace
