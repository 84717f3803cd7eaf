"""What makes two eval cases, or two eval sets, the same: hashes of behaviour and expectations only.

A case built in code and the same case saved to a store and read back must be one case to the
cache, to ``resume=``, to :func:`agenteval.analysis.compare` and to a result's provenance, although the
store stamps creation times on it. So the hashes here cover what decides how the agent is run and
what it is expected to do, and leave out what a store or a person adds for bookkeeping:

- :func:`case_hash` covers every field of the case as its JSON holds it (its id, mode, session
  input's user and state, context messages, each turn's user message, expected reply, tool calls and
  tool mocks, a scenario, rubrics, a trace-mode case's recorded turns, and keys the model does not
  know, which are kept from files), except the creation times of the case and of its turns and the
  session input's informational app name. A case without a session input counts as the one it runs
  with, user ``user`` and no state.
- :func:`eval_set_hash` covers the set's cases by their :func:`case_hash`, in any order: not the
  set's id, name, description or creation time, nor the order of its cases.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic_core import PydanticSerializationError

from agenteval.evalset.models import EvalCase, EvalSet

__all__ = ["case_hash", "case_hashes", "changed_cases", "eval_set_hash"]

_TIMESTAMP = "creationTimestamp"
_SESSION = "sessionInput"
_DEFAULT_SESSION = {"userId": "user"}
"""What a case without a session input runs with (see ``Evaluator``): it counts as this one."""
_TURN_LISTS = ("conversation", "actualConversation")


def case_hash(case: EvalCase) -> str:
    """The hash of what defines ``case`` (see the module's docstring), as ``sha256:<hex>``.

    Equal for a case built with :meth:`EvalCase.of` and the same case read back from any store.

    Raises:
        ConfigError: The case holds a value its JSON cannot (NaN, a lone surrogate); the message names it.
    """
    try:
        # The JSON values straight from the model: the text to_json writes, without writing and parsing it.
        data = case.model_dump(mode="json", exclude_defaults=True, warnings="error")
        canonical = json.dumps(
            _behaviour(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    except (ValueError, PydanticSerializationError):  # NaN, a lone surrogate (UnicodeEncodeError), a bad value
        # The writer says which field cannot be stored.
        return _hash(_behaviour(case.to_dict()))


def case_hashes(cases: Iterable[EvalCase]) -> dict[str, str]:
    """The :func:`case_hash` of each case, by id."""
    return {case.eval_id: case_hash(case) for case in cases}


def eval_set_hash(eval_set: EvalSet | Iterable[EvalCase], hashes: Mapping[str, str] | None = None) -> str:
    """The hash of an eval set's cases (see the module's docstring), as ``sha256:<hex>``.

    Args:
        eval_set: The eval set, or its cases.
        hashes: Their :func:`case_hashes`, when already made (the cases' ids are unique then).
    """
    cases = eval_set.eval_cases if isinstance(eval_set, EvalSet) else eval_set
    digests = hashes.values() if hashes is not None else (case_hash(case) for case in cases)
    return _hash({"cases": sorted(digests)})


def changed_cases(before: Iterable[EvalCase], after: Iterable[EvalCase]) -> list[str]:
    """The ids of the cases that differ between two versions of an eval set, in ``after``'s order then ``before``'s.

    A case differs when its :func:`case_hash` does, or when only one version has it; a case that is
    the same object in both is not hashed.
    """
    old = {case.eval_id: case for case in before}
    new = {case.eval_id: case for case in after}
    edited = [
        eval_id
        for eval_id, case in new.items()
        if (was := old.get(eval_id)) is None or (was is not case and case_hash(was) != case_hash(case))
    ]
    return edited + [eval_id for eval_id in old if eval_id not in new]


def _behaviour(data: dict[str, Any]) -> dict[str, Any]:
    """A case's JSON values (changed in place) without what a store or a person adds for bookkeeping."""
    data.pop(_TIMESTAMP, None)
    session = data.get(_SESSION)
    if isinstance(session, dict):
        session.pop("appName", None)
    data[_SESSION] = session or _DEFAULT_SESSION
    for name in _TURN_LISTS:
        turns = data.get(name)
        if isinstance(turns, list):
            for turn in turns:
                if isinstance(turn, dict):
                    turn.pop(_TIMESTAMP, None)
    return data


def _hash(data: object) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
