"""The result journal of a running evaluation: each finished case run on disk at once, for a store that keeps one."""

from __future__ import annotations

import logging

from agenteval._util.terminal import printable
from agenteval.context import EvalContext
from agenteval.errors import AgentEvalError
from agenteval.evalresult.journal import ResultJournal
from agenteval.evalresult.provenance import Provenance
from agenteval.service.callbacks import AfterEvaluateCaseArgs, Callback, Callbacks

__all__ = ["journal_callbacks", "open_journal"]

_log = logging.getLogger("agenteval")


def open_journal(
    result_manager: object, app_name: str, result_id: str, *, eval_set_id: str, provenance: Provenance
) -> ResultJournal | None:
    """The journal of the result ``result_id``, when the store keeps journals (``open_journal``); else ``None``.

    A journal that cannot be created is logged and the evaluation goes on without one.
    """
    opener = getattr(result_manager, "open_journal", None)
    if not callable(opener):
        return None
    try:
        journal = opener(app_name, result_id, eval_set_id=eval_set_id, provenance=provenance)
    except AgentEvalError as exc:
        _log.warning("no result journal for this evaluation (its final save is unaffected): %s", printable(str(exc)))
        return None
    return journal if isinstance(journal, ResultJournal) else None


def journal_callbacks(journal: ResultJournal) -> Callbacks:
    """An observer that appends each scored case run to ``journal``; it never raises (a failure is logged once)."""

    def append(context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
        if args.result is None:
            return
        try:
            journal.append(args.result)
        except AgentEvalError as exc:
            # The journal stops after a write error; a case that cannot be written fails the final save, loudly.
            _log.warning("the result journal %s: %s", printable(str(journal.path)), printable(str(exc)))

    return Callbacks().register("agenteval.journal", Callback(after_evaluate_case=append))
