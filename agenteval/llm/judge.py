"""Which chat model judges a metric: an override set for the whole evaluation, or the metric's judgeModel."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from agenteval.errors import ConfigError
from agenteval.llm.base import ChatModel
from agenteval.metric.criterion import GenerationConfig, JudgeModelOptions

__all__ = [
    "DEFAULT_GENERATION",
    "JudgeOverride",
    "ProviderFactory",
    "active_judge",
    "chat_model_for",
    "register_provider",
    "use_judge",
]

DEFAULT_GENERATION = GenerationConfig(max_tokens=2000, temperature=0.8, stream=False)
"""Sampling options for a judge whose ``judgeModel`` has no ``generationConfig``."""


@dataclass(frozen=True, slots=True)
class JudgeOverride:
    """What an evaluation sets for every ``llmJudge`` metric in place of its ``judgeModel``.

    With a :attr:`model`, every metric is judged by it: the reference's judge runner (``judgeModel``,
    and its ``numSamples``, are ignored). Without one, each metric's ``judgeModel`` builds its judge,
    with :attr:`timeout` and :attr:`max_retries`, where set, in place of its ``timeoutSeconds`` and
    ``maxRetries``.
    """

    model: ChatModel | None = None
    """The judge of every metric (``None``: each metric's ``judgeModel``)."""
    num_samples: int = 1
    """Judge samples per turn with :attr:`model`."""
    timeout: float | None = None
    """Seconds one request to a judge built from a ``judgeModel`` may take in total, retries included."""
    max_retries: int | None = None
    """Retries after a failed attempt of a judge built from a ``judgeModel``."""

    def __post_init__(self) -> None:
        if self.num_samples <= 0:
            raise ConfigError(f"judge runner num samples must be greater than 0, got {self.num_samples}")
        if self.timeout is not None and not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ConfigError(f"judge timeout must be a positive number of seconds, got {self.timeout}")
        if self.max_retries is not None and self.max_retries < 0:
            raise ConfigError(f"judge max retries must be 0 or more, got {self.max_retries}")

    def applied_to(self, options: JudgeModelOptions) -> JudgeModelOptions:
        """``options`` with this override's timeout and retry budget, where set, in place of its own."""
        update: dict[str, float | int] = {}
        if self.timeout is not None:
            update["timeout_seconds"] = self.timeout
        if self.max_retries is not None:
            update["max_retries"] = self.max_retries
        return options.model_copy(update=update) if update else options


_ACTIVE_JUDGE: ContextVar[JudgeOverride | None] = ContextVar("agenteval_judge", default=None)


def active_judge() -> JudgeOverride | None:
    """The judge override of the running evaluation, if any."""
    return _ACTIVE_JUDGE.get()


@contextlib.contextmanager
def use_judge(override: JudgeOverride | None) -> Iterator[None]:
    """Make ``override`` the :func:`active_judge` inside the ``with`` block."""
    token = _ACTIVE_JUDGE.set(override)
    try:
        yield
    finally:
        _ACTIVE_JUDGE.reset(token)


ProviderFactory = Callable[[JudgeModelOptions], ChatModel]
"""Builds a chat model from a metric's ``judgeModel`` block."""

_providers: dict[str, ProviderFactory] = {}
_models: dict[tuple[str, ...], ChatModel] = {}
_lock = threading.Lock()


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Let ``judgeModel.providerName == name`` build its model with ``factory``.

    ``openai`` is built in (any OpenAI-compatible endpoint, through ``baseURL``).
    """
    if not name:
        raise ConfigError("provider name is empty")
    with _lock:
        _providers[name] = factory
        _models.clear()


def _builtin(name: str) -> ProviderFactory | None:
    if name == "openai":
        from agenteval.llm.openai import OpenAIChatModel

        return OpenAIChatModel.from_judge_model
    return None


def _connection_key(options: JudgeModelOptions) -> tuple[str, ...]:
    """What identifies a judge's connection: blocks that agree on it share one model.

    ``numSamples`` and ``generationConfig`` are per request, so they are left out; the ``OPENAI_*``
    environment fallbacks and the references in ``extraFields`` are resolved now, so changing them
    gives a new model.
    """
    from agenteval.llm.openai import resolve_api_key, resolve_base_url

    api_key = resolve_api_key(options.api_key)
    return (
        options.provider_name,
        options.model_name,
        options.variant,
        resolve_base_url(options.base_url) or "",
        # Digests, so that the cache never holds a secret itself.
        hashlib.sha256(api_key.encode()).hexdigest() if api_key else "",
        hashlib.sha256(json.dumps(options.request_extra_fields(), sort_keys=True, default=str).encode()).hexdigest(),
        repr(options.timeout_seconds),
        repr(options.max_retries),
    )


def chat_model_for(options: JudgeModelOptions) -> ChatModel:
    """Return the chat model a ``judgeModel`` block describes.

    Blocks naming the same connection (provider, model, variant, base URL, API key, extra fields,
    timeout and retry budget, after the ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` fallbacks) share
    one instance, and so one client and one concurrency limit, whatever their ``numSamples`` or
    ``generationConfig``.

    Raises:
        ConfigError: The provider is unknown or the block is incomplete.
    """
    key = _connection_key(options)
    with _lock:
        model = _models.get(key)
        if model is not None:
            return model
        name = options.provider_name
        factory = _providers.get(name) or _builtin(name)
        if factory is None:
            known = sorted({"openai", *_providers})
            raise ConfigError(
                f"judgeModel.providerName {name!r} is not supported: use one of {known} (any OpenAI-compatible "
                "endpoint works as 'openai' with baseURL), or register a factory with "
                "agenteval.llm.register_provider"
            )
        model = factory(options)
        _models[key] = model
        return model
