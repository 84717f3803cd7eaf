"""Who answers the cases: an agent's identity, what it rests on that cannot be seen, and what changed as it ran.

:func:`describe_agent` walks the agent once (see :func:`agenteval.cache.code_hash`) and gives its
:class:`AgentIdentity`: the digest the cache keys inferences by, the code hash a result records, what
counts by its type only (``unseen``) and a digest of the data at each named place (``parts``).
:func:`warn_unseen` and :func:`warn_changed` tell the user, once per process for each agent and place,
where a cache could serve a stale answer or miss every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from agenteval._util.callable_names import qualified_name
from agenteval.cache._hasher import CodeHasher, digest
from agenteval.errors import CacheIdentityWarning, ConfigError, warn_user

__all__ = ["AgentIdentity", "describe_agent", "warn_changed", "warn_unseen"]

_SHOWN: Final = 5
"""The most places one warning names; it says how many more there are."""

_warned: set[tuple[str, str]] = set()
"""(agent, place) pairs already warned about in this process."""


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """What identifies an agent for the cache and for a result's provenance.

    Attributes:
        name: The agent's qualified name (``my_agent``, ``mypkg.agents.WeatherAgent``).
        code_hash: :func:`agenteval.cache.code_hash` of the agent.
        version: The ``agent_version`` given.
        digest: The identity the cache keys inferences by (:func:`agenteval.cache.agent_identity`):
            a hash of the name, the code hash and the version.
        unseen: The places whose value counts by its type only (an object of a library class, such
            as a client), each as a phrase: ``global `client` read by `my_agent` (openai.OpenAI)``.
        parts: A digest of the data at each named place (a global, an attribute, a closed-over
            value), by the place's name; :meth:`changed_since` compares them.
        built_in: The named places that are what one of agenteval's own runners (a framework
            runner, a function runner) returns as its identity: the framework's configuration.
    """

    name: str
    code_hash: str
    version: str
    digest: str
    unseen: tuple[str, ...] = ()
    parts: Mapping[str, str] = field(default_factory=dict, repr=False)
    built_in: frozenset[str] = field(default=frozenset(), repr=False)
    _parents: Mapping[str, str | None] = field(default_factory=dict, repr=False)

    def changed_since(self, before: AgentIdentity) -> list[str]:
        """The places whose data differs from ``before``'s, innermost only (an attribute, not the object holding it)."""
        changed = {label for label, part in self.parts.items() if before.parts.get(label, part) != part}
        enclosing = {self._parents.get(label) for label in changed}
        return [label for label in self.parts if label in changed and label not in enclosing]


def describe_agent(agent: object, agent_version: str = "") -> AgentIdentity:
    """The identity of an agent: for the cache's keys and for recording which agent a result is of.

    It walks the agent's code and data once (a few milliseconds for an ordinary agent; see
    :func:`agenteval.cache.code_hash` for what counts).

    Args:
        agent: The agent: a function, partial, method, class or object (a Runner, a framework runner).
        agent_version: Anything the code hash cannot see that changes the agent's answers.

    Returns:
        Its :class:`AgentIdentity`; ``digest`` equals :func:`agenteval.cache.agent_identity`.

    Raises:
        ConfigError: ``agent_version`` is not a string.
    """
    if not isinstance(agent_version, str):
        raise ConfigError(f"agent_version must be a string, got {type(agent_version).__name__}")
    hasher = CodeHasher(observe=True)
    code = hasher.code(agent)
    name = qualified_name(agent)
    return AgentIdentity(
        name=name,
        code_hash=code,
        version=agent_version,
        digest=digest({"agent": name, "code": code, "version": agent_version}),
        unseen=tuple(hasher.unseen),
        parts=dict(hasher.parts),
        built_in=frozenset(hasher.built_in),
        _parents=dict(hasher.parents),
    )


def warn_unseen(identity: AgentIdentity) -> None:
    """Warn (a :class:`~agenteval.errors.CacheIdentityWarning`) about what the identity cannot see, once per place."""
    fresh = _not_yet_warned(identity, identity.unseen)
    if not fresh:
        return
    its = "its state changes" if len(fresh) == 1 else "their state changes"
    warn_user(
        f"the cache cannot see inside {_listed(fresh)}; if {its} the answers of `{identity.name}`, set"
        ' agent_version="..." and change it when it does (or give the agent a cache_identity() method that'
        " returns what decides its answers), or a cached answer may be stale",
        CacheIdentityWarning,
    )


def warn_changed(before: AgentIdentity, after: AgentIdentity) -> None:
    """Warn about data of the agent that changed while it ran, once per place: the next evaluation will miss.

    A change inside what one of agenteval's runners counts as its framework agent's configuration is
    said apart: the user cannot describe that agent, so either their code changes its configuration
    as it runs, or the runner counts state the framework writes (agenteval's bug).
    """
    fresh = _not_yet_warned(after, after.changed_since(before))
    runners = [place for place in fresh if place in after.built_in]
    users = [place for place in fresh if place not in after.built_in]
    if users:
        it, does = ("it", "does") if len(users) == 1 else ("they", "do")
        warn_user(
            f"{_listed(users)} changed while the agent ran, so the next evaluation will not find this one's work in"
            f" the cache (the agent's identity counts {'it' if it == 'it' else 'them'}); if {it} {does} not decide"
            f" the answers of `{after.name}`, give the agent a cache_identity() method that returns what does",
            CacheIdentityWarning,
        )
    if runners:
        warn_user(
            f"{_listed(runners)} changed while the agent ran, so the next evaluation will not find this one's work in"
            f" the cache: `{after.name}` counts the framework agent's configuration (instructions, model and its"
            " settings, tools), and part of it changed as the agent ran. If your code does not change the agent's"
            " configuration while it runs, this is a bug in agenteval's runner (it counts state the framework"
            " writes): please report it, with the framework's version. The cache does not serve stale answers"
            " because of it; it only misses",
            CacheIdentityWarning,
        )


def _not_yet_warned(identity: AgentIdentity, places: tuple[str, ...] | list[str]) -> list[str]:
    fresh = [place for place in places if (identity.name, place) not in _warned]
    _warned.update((identity.name, place) for place in fresh)
    return fresh


def _listed(places: list[str]) -> str:
    shown = "; ".join(places[:_SHOWN])
    more = len(places) - _SHOWN
    return shown + (f" (and {more} more)" if more > 0 else "")
