"""Test doubles for tests and notebooks: chat models and a user simulator that need no LLM.

- :class:`ScriptedChatModel` answers with scripted replies, in the order the requests arrive.
- :class:`FunctionChatModel` answers with whatever a function returns.
- :class:`ScriptedUserSimulator` says scripted user messages (or raises scripted errors), then stops.
- :func:`verifier_reply` builds an ``llm_verifier_pairwise`` judge answer with its token logprobs.

Example::

    judge = ScriptedChatModel(['{"score": 1}'])
    simulator = ScriptedUserSimulator(["Book a table for two", "Tonight at 8", None])
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from agenteval.errors import AgentEvalError, ConfigError, ScriptExhaustedError
from agenteval.evalset.message import Message, Role
from agenteval.llm.base import ChatRequest, ChatResponse, TokenLogprob, TopLogprob
from agenteval.runner.simulation import SimulationStart, SimulatorDecision

__all__ = [
    "ChatFunction",
    "FunctionChatModel",
    "ScriptedChatModel",
    "ScriptedConversation",
    "ScriptedUserSimulator",
    "verifier_reply",
]


def _as_response(reply: str | ChatResponse, source: str) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        return reply
    if isinstance(reply, str):
        return ChatResponse(content=reply)
    raise TypeError(f"{source} returned {type(reply).__name__}; return a str or a ChatResponse")


class ScriptedChatModel:
    """A chat model that answers with scripted replies, in the order the requests arrive.

    A ``str`` reply becomes a :class:`~agenteval.llm.ChatResponse`; an exception is raised instead
    of answering. Every request is kept in :attr:`requests`.

    Replies are handed out in request order, not case order: the n-th request gets the n-th reply,
    whichever case, turn or sample sent it. That is the case order only when everything runs one
    after another; with ``parallel_evaluation``, ``parallel_inference``, several runs
    (``num_runs``) or sample parallelism, requests interleave and a reply meant for one case may
    reach another. To choose each reply from the request (e.g. from the prompt), use
    :class:`FunctionChatModel`.

    Args:
        replies: The answers, in order.
        cycle: Start over after the last reply instead of raising :class:`ScriptExhaustedError`.

    Raises:
        ConfigError: ``cycle`` with no replies.
    """

    def __init__(self, replies: Iterable[str | ChatResponse | Exception], *, cycle: bool = False) -> None:
        self.replies: list[str | ChatResponse | Exception] = list(replies)
        self.cycle = cycle
        self.requests: list[ChatRequest] = []
        if cycle and not self.replies:
            raise ConfigError("ScriptedChatModel(cycle=True) needs at least one reply")

    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Record ``request`` and play the next reply."""
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.replies):
            if not self.cycle:
                raise ScriptExhaustedError(
                    f"ScriptedChatModel ran out of replies: {len(self.replies)} scripted, "
                    f"and this is request {index + 1}"
                )
            index %= len(self.replies)
        reply = self.replies[index]
        if isinstance(reply, Exception):
            raise reply
        return _as_response(reply, "the script")

    def cache_identity(self) -> object:
        """What decides the answers, for the cache's keys: the script."""
        return {
            "replies": [reply if isinstance(reply, str | ChatResponse) else repr(reply) for reply in self.replies],
            "cycle": self.cycle,
        }

    def __repr__(self) -> str:
        return f"ScriptedChatModel({len(self.replies)} replies, {len(self.requests)} requests)"


ChatFunction = Callable[[ChatRequest], str | ChatResponse | Awaitable[str | ChatResponse]]
"""``fn(request)``, plain or ``async``, returning the answer text or a full response."""


class FunctionChatModel:
    """A chat model whose answers come from a function.

    The function gets each :class:`~agenteval.llm.ChatRequest` and returns the answer as a ``str``
    or a :class:`~agenteval.llm.ChatResponse`; it may be ``async``, and may raise to fail the call.
    A plain function runs on the event loop, so keep it quick. Every request is kept in :attr:`requests`.

    Args:
        function: Produces the answers.
    """

    def __init__(self, function: ChatFunction) -> None:
        if not callable(function):
            raise ConfigError(f"FunctionChatModel needs a callable, got {function!r}")
        self.function = function
        self.requests: list[ChatRequest] = []

    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Record ``request`` and answer with the function's result."""
        self.requests.append(request)
        reply = self.function(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return _as_response(reply, getattr(self.function, "__qualname__", "the function"))

    def cache_identity(self) -> object:
        """What decides the answers, for the cache's keys: the function (by its code)."""
        return {"function": self.function}

    def __repr__(self) -> str:
        return f"FunctionChatModel({getattr(self.function, '__qualname__', self.function)!r})"


class ScriptedConversation:
    """One conversation of a :class:`ScriptedUserSimulator`.

    Attributes:
        seen: The agent replies passed to :meth:`next`, in order (the ``None`` of the first call left out).
        closed: Whether :meth:`close` was called.
    """

    def __init__(self, turns: Sequence[Message | Exception | None]) -> None:
        self.seen: list[Message] = []
        self.closed = False
        self._turns = turns
        self._index = 0

    async def next(self, last_target_response: Message | None) -> SimulatorDecision:
        """Say the next scripted message, raise the next scripted exception, or stop at the end or at a ``None``."""
        if self.closed:
            raise AgentEvalError("conversation is closed")
        if last_target_response is not None:
            self.seen.append(last_target_response)
        if self._index >= len(self._turns):
            return SimulatorDecision(stop=True)
        message = self._turns[self._index]
        self._index += 1
        if message is None:
            self._index = len(self._turns)
            return SimulatorDecision(stop=True)
        if isinstance(message, Exception):
            raise message
        return SimulatorDecision(message=message.model_copy())

    async def close(self) -> None:
        """Mark the conversation closed."""
        self.closed = True


class ScriptedUserSimulator:
    """A user simulator that says scripted user messages in order, then stops.

    Each case gets its own :class:`ScriptedConversation` playing the same script from the start. A
    ``None`` entry stops the conversation there; an exception entry is raised from ``next`` instead of
    answering (e.g. to see how a failing simulator is reported), and the script goes on after it.

    Args:
        turns: The user messages (text or :class:`~agenteval.Message`) and exceptions, in order.

    Attributes:
        starts: The start requests received, one per case.
        conversations: The conversations started, in order.
    """

    def __init__(self, turns: Sequence[str | Message | Exception | None]) -> None:
        self.turns: list[Message | Exception | None] = [_user_turn(turn) for turn in turns]
        self.starts: list[SimulationStart] = []
        self.conversations: list[ScriptedConversation] = []

    async def start(self, request: SimulationStart) -> ScriptedConversation:
        """Start a fresh conversation for one case."""
        self.starts.append(request)
        conversation = ScriptedConversation(self.turns)
        self.conversations.append(conversation)
        return conversation

    @property
    def seen(self) -> list[Message]:
        """The agent replies seen by the latest conversation (``[]`` before any)."""
        return self.conversations[-1].seen if self.conversations else []

    @property
    def closed(self) -> bool:
        """Whether the latest conversation was closed."""
        return bool(self.conversations) and self.conversations[-1].closed

    def cache_identity(self) -> object:
        """What decides the conversation, for the cache's keys: the script."""
        return {"turns": [turn if isinstance(turn, Message) or turn is None else repr(turn) for turn in self.turns]}

    def __repr__(self) -> str:
        return f"ScriptedUserSimulator({len(self.turns)} turns, {len(self.conversations)} conversations)"


def _user_turn(turn: str | Message | Exception | None) -> Message | Exception | None:
    if turn is None or isinstance(turn, Message | Exception):
        return turn
    if isinstance(turn, str):
        return Message(role=Role.USER, content=turn)
    raise ConfigError(f"a scripted user turn must be a str, a Message, an exception or None, got {type(turn).__name__}")


def _label_token(grades: str | Mapping[str, float]) -> TokenLogprob:
    probabilities = {grades: 1.0} if isinstance(grades, str) else dict(grades)
    if not probabilities or any(not 0 < p <= 1 for p in probabilities.values()):
        raise ConfigError(f"verifier_reply: give a label or labels with probabilities in (0, 1], got {grades!r}")
    ranked = sorted(probabilities.items(), key=lambda item: -item[1])
    top = tuple(TopLogprob(token=label, logprob=math.log(p)) for label, p in ranked)
    return TokenLogprob(token=top[0].token, logprob=top[0].logprob, top_logprobs=top)


def verifier_reply(
    score_a: str | Mapping[str, float], score_b: str | Mapping[str, float], *, analysis: str = "Analysis."
) -> ChatResponse:
    """An ``llm_verifier_pairwise`` judge answer, with the token logprobs a real judge would return.

    Args:
        score_a: Candidate A's label (``"A"`` best … ``"T"`` worst), or labels with their probabilities.
        score_b: The same for candidate B.
        analysis: The text before the score tags.

    Returns:
        A response whose most likely labels appear in its text and whose logprobs hold every given label.

    Raises:
        ConfigError: No label, or a probability outside ``(0, 1]``.

    Example::

        judge = ScriptedChatModel([verifier_reply({"A": 0.7, "T": 0.3}, "T")])
    """
    label_a, label_b = _label_token(score_a), _label_token(score_b)
    tokens = [
        TokenLogprob(token=f"{analysis}\n<score_A>", logprob=0.0),
        label_a,
        TokenLogprob(token="</score_A>\n<score_B>", logprob=0.0),
        label_b,
        TokenLogprob(token="</score_B>", logprob=0.0),
    ]
    return ChatResponse(content="".join(token.token for token in tokens), logprobs=tokens)
