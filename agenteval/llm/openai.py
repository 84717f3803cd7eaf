"""A chat model behind any OpenAI-compatible chat-completions endpoint (the ``openai`` provider)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr

from agenteval._util.redaction import literal_secrets, redact, strip_userinfo
from agenteval.errors import ChatModelError, ConfigError, MissingDependencyError
from agenteval.evalset.message import Message, Role
from agenteval.llm.base import ChatRequest, ChatResponse, StructuredOutput, TokenLogprob, TopLogprob
from agenteval.metric.criterion import GenerationConfig, JudgeModelOptions

if TYPE_CHECKING:
    from types import ModuleType

    from openai import APIError, AsyncOpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["OpenAIChatModel", "resolve_api_key", "resolve_base_url"]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the ``openai`` client sends requests when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set."""

DEFAULT_TIMEOUT = 120.0
"""Seconds one request may take in total, retries included, unless the model is given another timeout."""
DEFAULT_MAX_RETRIES = 2
"""Retries after a failed attempt, unless the model is given another budget."""

_SAMPLING_FIELDS = (
    "max_tokens",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "top_logprobs",
    "reasoning_effort",
)
_THINKING_FIELDS = ("thinking_enabled", "thinking_tokens", "thinking_level")
_BODY_SHOWN = 200
"""Characters of a body that is not JSON shown in the error."""


def _openai() -> ModuleType:
    try:
        import openai
    except ImportError as exc:
        raise MissingDependencyError("the OpenAI-compatible judge", "openai", "openai") from exc
    return openai


@dataclass(frozen=True, slots=True)
class _Secrets:
    """The secrets a model knows, to keep out of its messages (never shown)."""

    values: tuple[str, ...] = field(repr=False)


@dataclass(slots=True)
class _LoopState:
    """The client and the concurrency gate of one event loop."""

    client: AsyncOpenAI
    gate: asyncio.Semaphore
    closer: AsyncGenerator[None, None]
    """Kept alive so that the loop's ``shutdown_asyncgens`` closes the client (see ``_close_at_shutdown``)."""


async def _close_at_shutdown(client: AsyncOpenAI, forget: Callable[[], None]) -> AsyncGenerator[None, None]:
    # An async generator that is started and never finished is closed by the loop's
    # shutdown_asyncgens(), which asyncio.run() and asyncio.Runner call before closing the loop. That is
    # the only hook asyncio gives: without it, the pooled connections outlive their loop (ResourceWarning).
    try:
        yield
    finally:
        forget()
        await client.close()


def resolve_api_key(api_key: str | None) -> str:
    """``api_key``, else the ``OPENAI_API_KEY`` environment variable as it is now (``""`` when unset)."""
    return api_key or os.environ.get("OPENAI_API_KEY", "")


def resolve_base_url(base_url: str | None) -> str | None:
    """``base_url``, else the ``OPENAI_BASE_URL`` environment variable as it is now (``None``: OpenAI)."""
    return base_url or os.environ.get("OPENAI_BASE_URL") or None


def _message_param(message: Message) -> dict[str, Any]:
    role = message.role.value if message.role != Role.UNSET else Role.USER.value
    param: dict[str, Any] = {"role": role, "content": message.content}
    if message.role == Role.TOOL and message.tool_id:
        param["tool_call_id"] = message.tool_id
    return param


def _sampling_params(generation: GenerationConfig | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request parameters and the ``extra_body`` fields a generation config asks for."""
    if generation is None:
        return {}, {}
    params = {name: value for name in _SAMPLING_FIELDS if (value := getattr(generation, name)) is not None}
    if generation.stop:
        params["stop"] = list(generation.stop)
    extra = {name: value for name in _THINKING_FIELDS if (value := getattr(generation, name)) is not None}
    return params, extra


def _response_format(output: StructuredOutput) -> dict[str, Any]:
    schema: dict[str, Any] = {"name": output.name, "schema": output.schema, "strict": output.strict}
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def _logprob(entry: object, where: str) -> float:
    value = getattr(entry, "logprob", None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} has no numeric logprob, got {value!r}")
    return float(value)


def _token(entry: object, where: str) -> str:
    token = getattr(entry, "token", None)
    if not isinstance(token, str):
        raise ValueError(f"{where} has no token text, got {token!r}")
    return token


def _top_logprob(entry: object, where: str) -> TopLogprob:
    return TopLogprob(token=_token(entry, where), logprob=_logprob(entry, where))


def _token_logprobs(choice: object) -> list[TokenLogprob] | None:
    """The first choice's ``logprobs.content``, or ``None`` when the provider sent none."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if content is None:
        return None
    if not isinstance(content, list):
        raise ValueError(f"the first choice's logprobs.content is not a list, got {type(content).__name__}")
    tokens = []
    for index, entry in enumerate(content):
        where = f"logprobs.content[{index}]"
        top = getattr(entry, "top_logprobs", None) or []
        tokens.append(
            TokenLogprob(
                token=_token(entry, where),
                logprob=_logprob(entry, where),
                top_logprobs=tuple(_top_logprob(alt, f"{where}.top_logprobs[{i}]") for i, alt in enumerate(top)),
            )
        )
    return tokens


def _to_response(completion: ChatCompletion) -> ChatResponse:
    # The client builds the completion from the body without validating it: any JSON can arrive here.
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list):
        raise ValueError("the response is not a chat completion: its body has no list of choices")
    if not choices:
        raise ValueError("the response has no choices")
    message = getattr(choices[0], "message", None)
    if not isinstance(message, BaseModel):
        raise ValueError("the first choice has no message")
    usage: dict[str, int] = {}
    if isinstance(completion.usage, BaseModel):
        usage = {key: value for key, value in completion.usage.model_dump().items() if isinstance(value, int)}
    content = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    if not content and refusal:
        raise ValueError(
            f"the model refused to answer: {refusal!r}; rephrase the prompt (or the judge template) or use "
            "another model"
        )
    return ChatResponse(content=content or "", usage=usage, logprobs=_token_logprobs(choices[0]))


def _body_start(body: str) -> str:
    return repr(body if len(body) <= _BODY_SHOWN else body[:_BODY_SHOWN] + "…")


class OpenAIChatModel:
    """A :class:`~agenteval.llm.ChatModel` for any OpenAI-compatible chat-completions endpoint.

    Built on the official ``openai`` package (``pip install 'agenteval[openai]'``). Its client does the
    retries: exponential backoff on connection errors, timeouts, 408, 409, 429 and 5xx, honouring
    ``Retry-After``, at most ``max_retries`` times and only while the request's ``timeout`` (its whole
    time, retries included) lasts. A call that still fails raises :class:`ChatModelError`, naming the
    model, the endpoint and the HTTP status. So does an answer that is not a chat completion (a body that
    is not JSON, a first choice without a message), and a refusal (an answer with a ``refusal`` text and
    no content), quoting the refusal, rather than passing an empty answer on to the judge's parser.
    Error messages never hold a secret the model knows (its API key, the credentials in its extra
    fields or base URL), even when the endpoint quotes them back (see :func:`agenteval._util.redaction.redact`).

    An ``AsyncOpenAI`` client (its connection pool) belongs to the event loop it first ran on, and
    each synchronous ``evaluate()`` may run on a new loop; so the model keeps one client, and one
    concurrency gate, per running loop, and closes a loop's client when that loop shuts down.

    Args:
        model: Model name sent to the endpoint.
        base_url: Endpoint, e.g. ``http://localhost:8000/v1``; defaults to ``OPENAI_BASE_URL`` or OpenAI.
            Credentials in it (``https://user:password@host/v1``) are used, never shown: :attr:`base_url`
            is the URL without them.
        api_key: API key; defaults to the ``OPENAI_API_KEY`` environment variable. Never logged or shown.
            Both fallbacks are read when the model is built; :func:`~agenteval.llm.chat_model_for` builds
            a new model when they change.
        extra_fields: Extra JSON fields merged into every request body.
        timeout: Seconds one request may take in total, every attempt and the waits between them
            included (120 by default).
        max_retries: Retries after a failed attempt (2 by default).
        max_concurrency: Most requests in flight at once (per event loop).

    Raises:
        ConfigError: An invalid argument, or no API key at all.
        MissingDependencyError: ``openai`` is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        extra_fields: dict[str, Any] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_concurrency: int = 8,
    ) -> None:
        _openai()
        if not model:
            raise ConfigError("OpenAI-compatible model: the model name is empty")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout}")
        if max_retries < 0:
            raise ConfigError(f"max retries must be greater than or equal to 0, got {max_retries}")
        if max_concurrency <= 0:
            raise ConfigError(f"max concurrency must be greater than 0, got {max_concurrency}")
        key = resolve_api_key(api_key)
        if not key:
            raise ConfigError(
                f'OpenAI-compatible model {model!r}: no API key; set judgeModel.apiKey (e.g. "${{MY_KEY}}") or '
                "OPENAI_API_KEY (an endpoint without authentication accepts any placeholder, such as 'EMPTY')"
            )
        endpoint = resolve_base_url(base_url)
        self.model = model
        self.base_url = strip_userinfo(endpoint) if endpoint else None
        self.extra_fields: dict[str, Any] = dict(extra_fields or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self._api_key = SecretStr(key)
        self._endpoint = SecretStr(endpoint or _DEFAULT_BASE_URL)
        password = urlsplit(endpoint).password if endpoint else None
        self._secrets = _Secrets((key, password or "", *(secret for _, secret in literal_secrets(self.extra_fields))))
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @classmethod
    def from_judge_model(cls, options: JudgeModelOptions) -> OpenAIChatModel:
        """Build the model a metric's ``judgeModel`` block describes.

        Reads ``modelName``, ``baseURL``, ``apiKey``, ``extraFields`` (its credentials' ``${VAR}``
        references expanded), ``timeoutSeconds`` and ``maxRetries``; other fields are ignored.

        Raises:
            ConfigError: ``modelName`` is empty, or there is no API key.
        """
        if not options.model_name:
            raise ConfigError("judgeModel.modelName is empty: name the model to judge with")
        return cls(
            options.model_name,
            base_url=options.base_url or None,
            api_key=options.api_key or None,
            extra_fields=options.request_extra_fields(),
            timeout=options.timeout_seconds if options.timeout_seconds is not None else DEFAULT_TIMEOUT,
            max_retries=options.max_retries if options.max_retries is not None else DEFAULT_MAX_RETRIES,
        )

    def cache_identity(self) -> object:
        """What decides the answers, for the cache's keys: the model, where it is and the request's extra fields.

        The api key is not part of it (a new key answers the same); credentials among the extra
        fields are left out by the key's maker.
        """
        return {"model": self.model, "base_url": self.base_url, "extra_fields": self.extra_fields}

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    async def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.get(loop)
            if state is not None:
                return state
            client: AsyncOpenAI = _openai().AsyncOpenAI(
                api_key=self._api_key.get_secret_value(),
                # Explicit, so the client does not read OPENAI_BASE_URL again (the model was built for one endpoint).
                base_url=self._endpoint.get_secret_value(),
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
            loop_ref = weakref.ref(loop)
            states = self._states

            def forget() -> None:
                current = loop_ref()
                if current is not None:
                    states.pop(current, None)

            closer = _close_at_shutdown(client, forget)
            state = _LoopState(client=client, gate=asyncio.Semaphore(self.max_concurrency), closer=closer)
            self._states[loop] = state
        await anext(closer)
        return state

    async def aclose(self) -> None:
        """Close the client of the running event loop (a later call opens a new one)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.pop(loop, None)
        if state is not None:
            await state.closer.aclose()

    def _create_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        params, extra_body = _sampling_params(request.generation)
        extra_body.update(self.extra_fields)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_message_param(message) for message in request.messages],
            "stream": False,
            **params,
        }
        if request.structured_output is not None:
            body["response_format"] = _response_format(request.structured_output)
        if extra_body:
            body["extra_body"] = extra_body
        return body

    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Send one chat-completions request and return the first choice.

        Raises:
            ChatModelError: The call failed after the client's retries, or its :attr:`timeout` ran out;
                the body is not JSON or not a chat completion, the answer has no choices or its first
                choice no message, or the model refused to answer (the message quotes its refusal).
        """
        body = self._create_kwargs(request)
        state = await self._state()
        base_url = strip_userinfo(str(state.client.base_url))
        openai = _openai()
        try:
            async with state.gate:
                # Waiting for a place at the gate is not part of the request's time.
                async with asyncio.timeout(self.timeout):
                    completion: ChatCompletion = await state.client.chat.completions.create(**body)
        except (TimeoutError, openai.APIError, json.JSONDecodeError) as exc:
            # Not chained: the client's exception may quote what the endpoint echoed (a key, a header).
            raise self._failure(exc, base_url) from None
        try:
            return _to_response(completion)
        except ValueError as exc:
            raise self._error(base_url, f": {exc}") from None

    def _failure(self, error: Exception, base_url: str) -> ChatModelError:
        """The :class:`ChatModelError` for a request to ``base_url`` that raised ``error``."""
        openai = _openai()
        if isinstance(error, TimeoutError | openai.APITimeoutError):
            return self._error(
                base_url,
                f": no answer within {self.timeout:g}s (the timeout of a whole request, retries included); raise it "
                "(judgeModel.timeoutSeconds, or judge_timeout=) for a slow endpoint",
            )
        if isinstance(error, openai.APIStatusError):
            return self._error(
                base_url, f": HTTP {error.status_code}{_retries(error)}: {error.message}", error.status_code
            )
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__
            detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            return self._error(base_url, f": connection failed{_retries(error)}{detail}")
        if isinstance(error, json.JSONDecodeError):
            # A success status whose body is not JSON: often a proxy's or a login page's HTML.
            return self._error(
                base_url, f" returned a body that is not JSON: {error}; the body starts with {_body_start(error.doc)}"
            )
        return self._error(base_url, f": {type(error).__name__}: {error}")

    def _error(self, base_url: str, problem: str, status_code: int | None = None) -> ChatModelError:
        """A :class:`ChatModelError` for ``problem`` at ``base_url``, without any secret this model knows."""
        message = f"OpenAI-compatible model {self.model!r} at {base_url}{problem}"
        return ChatModelError(
            redact(message, self._secrets.values), model=self.model, base_url=base_url, status_code=status_code
        )


def _retries(error: APIError) -> str:
    """`` after N retries`` for an ``openai.APIError`` whose request was retried, else ``""``."""
    taken = error.request.headers.get("x-stainless-retry-count", "0")
    if taken in ("", "0"):
        return ""
    return f" after {taken} {'retry' if taken == '1' else 'retries'}"
