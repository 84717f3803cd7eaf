"""Shared fakes and builders for the EVALUATE-phase, aggregation and callback tests of ``LocalService``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.context import EvalContext, current_context
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalMetricResultDetails
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalCase, Invocation, SessionInput
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.metric.models import EvalMetric
from agenteval.runner.base import TurnRequest, TurnResult
from agenteval.service.local import LocalService
from agenteval.service.types import EvaluateConfig, EvaluateRequest
from agenteval.status import EvalStatus

APP = "app"
SET = "set"
USER = "demo-user"
SESSION = "session-xyz"
CREATED = 1_700_000_000.0
"""Creation time of stored turns (a store fills a missing one with the current time)."""

PASSED = EvalStatus.PASSED
FAILED = EvalStatus.FAILED
NOT_EVALUATED = EvalStatus.NOT_EVALUATED


def make_case(case_id: str, *prompts: str, user_id: str = USER, **fields: Any) -> EvalCase:
    """A default-mode case with one conversation turn per prompt (expected reply ``expected <prompt>``)."""
    conversation = [
        Invocation(
            invocation_id=f"{case_id}-{index + 1}",
            user_content=Message.user(prompt),
            final_response=Message.assistant(f"expected {prompt}"),
            creation_timestamp=CREATED,
        )
        for index, prompt in enumerate(prompts or ("prompt",))
    ]
    values: dict[str, Any] = {
        "eval_id": case_id,
        "conversation": conversation,
        "session_input": SessionInput(app_name=APP, user_id=user_id),
    }
    values.update(fields)
    return EvalCase(**values)


async def make_manager(*cases: EvalCase, app: str = APP, eval_set_id: str = SET) -> InMemoryEvalSetManager:
    """An in-memory eval-set store holding ``cases`` in one eval set."""
    manager = InMemoryEvalSetManager()
    await manager.create(app, eval_set_id)
    for case in cases:
        await manager.add_case(app, eval_set_id, case)
    return manager


def actual(invocation_id: str, prompt: str, answer: str) -> Invocation:
    """An actual turn as inference would record it."""
    return Invocation(
        invocation_id=invocation_id,
        user_content=Message.user(prompt),
        final_response=Message.assistant(answer),
    )


def passed_inference(
    case_id: str,
    *invocations: Invocation,
    session_id: str = SESSION,
    user_id: str = "",
    **fields: Any,
) -> InferenceResult:
    """A successful inference result for ``case_id`` holding ``invocations`` (one default turn if none)."""
    values: dict[str, Any] = {
        "app_name": APP,
        "eval_set_id": SET,
        "eval_case_id": case_id,
        "inferences": list(invocations) if invocations else [actual(f"{case_id}-actual-1", "prompt", "answer")],
        "session_id": session_id,
        "user_id": user_id,
        "status": PASSED,
    }
    values.update(fields)
    return InferenceResult(**values)


def request(*inference_results: InferenceResult, metrics: Sequence[EvalMetric] = ()) -> EvaluateRequest:
    """An evaluate request for the standard app and eval set."""
    return EvaluateRequest(
        app_name=APP,
        eval_set_id=SET,
        inference_results=list(inference_results),
        evaluate_config=EvaluateConfig(eval_metrics=list(metrics)),
    )


def turn(
    score: float = 1.0,
    status: EvalStatus = PASSED,
    details: EvalMetricResultDetails | None = None,
) -> PerInvocationResult:
    """One per-invocation result."""
    return PerInvocationResult(score=score, status=status, details=details)


def uniform_result(count: int, score: float = 1.0, status: EvalStatus = PASSED) -> EvaluateResult:
    """``count`` identical turns and the same overall verdict."""
    return EvaluateResult(
        overall_score=score,
        overall_status=status,
        per_invocation_results=[turn(score, status) for _ in range(count)],
    )


@dataclass(slots=True)
class EvaluatorCall:
    """What one ``evaluate`` call received."""

    actuals: list[Invocation]
    expecteds: list[Invocation]
    metric: EvalMetric
    context: EvalContext


ResultFactory = Callable[[Sequence[Invocation], EvalMetric], EvaluateResult]


@dataclass
class _Recorder:
    """Records evaluator calls and computes the answer.

    It returns ``result`` when given, else ``factory(actuals, metric)``, else one passed turn per actual.
    ``error`` is raised instead when set.
    """

    result: EvaluateResult | None = None
    error: BaseException | None = None
    factory: ResultFactory | None = None
    calls: list[EvaluatorCall] = field(default_factory=list)

    def _record(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> None:
        self.calls.append(EvaluatorCall(list(actuals), list(expecteds), metric, current_context()))

    def _answer(self, actuals: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        if self.error is not None:
            raise self.error
        if self.result is not None:
            return self.result
        if self.factory is not None:
            return self.factory(actuals, metric)
        return uniform_result(len(actuals))


@dataclass
class FakeEvaluator(_Recorder):
    """A synchronous evaluator that records its calls."""

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        self._record(actuals, expecteds, metric)
        return self._answer(actuals, metric)


@dataclass
class AsyncFakeEvaluator(_Recorder):
    """An ``async`` evaluator that records its calls and sleeps first.

    ``delay`` is seconds, or a mapping from the first actual's invocation id to seconds.
    """

    delay: float | dict[str, float] = 0.0
    active: int = 0
    max_active: int = 0
    finished: list[str] = field(default_factory=list)

    async def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        self._record(actuals, expecteds, metric)
        key = actuals[0].invocation_id if actuals else ""
        delay = self.delay.get(key, 0.0) if isinstance(self.delay, dict) else self.delay
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(delay)
        finally:
            self.active -= 1
        self.finished.append(key)
        return self._answer(actuals, metric)


@dataclass
class EchoRunner:
    """An async runner replying ``reply`` (or ``echo: <text>``) and recording every turn request."""

    reply: str | None = None
    requests: list[TurnRequest] = field(default_factory=list)
    error: BaseException | None = None

    async def run(self, turn_request: TurnRequest) -> TurnResult:
        self.requests.append(turn_request)
        if self.error is not None:
            raise self.error
        text = self.reply if self.reply is not None else f"echo: {turn_request.message.content}"
        return TurnResult(final_response=Message.assistant(text))


def make_service(
    manager: InMemoryEvalSetManager,
    evaluators: dict[str, Any] | None = None,
    *,
    runner: EchoRunner | None = None,
    **overrides: Any,
) -> LocalService:
    """A service over ``manager`` whose registry holds exactly ``evaluators``."""
    overrides.setdefault("registry", EvaluatorRegistry(evaluators or {}))
    overrides.setdefault("session_id_supplier", lambda _context: SESSION)
    overrides["eval_set_manager"] = manager
    return LocalService(runner or EchoRunner(), **overrides)
