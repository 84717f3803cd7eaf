"""Cache keys: hashes of what a cached inference or score depends on, equal in every process.

Every function here is pure and returns a SHA-256 hex digest of a canonical JSON form of its inputs
(sorted keys, no ``id()``, no ``hash()``: ``PYTHONHASHSEED`` differs between processes).

- :func:`inference_key`: the case (its content hash), the run index and the agent's identity
  (:func:`agent_identity`: its qualified name, :func:`code_hash` and a version its user sets).
- :func:`score_key`: what was scored, the metric's full definition (criterion, threshold, judge model
  and settings) and the evaluator's version (:func:`evaluator_version`: its code and agenteval's version).

Both hold :data:`ENTRY_FORMAT`, the shape of the entries they find.

:func:`code_hash` follows the code and the data an agent reaches; what it cannot see is listed there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from pydantic import BaseModel

from agenteval._util.redaction import strip_userinfo
from agenteval.cache._hasher import CodeHasher, digest
from agenteval.cache.identity import describe_agent
from agenteval.evalresult.provenance import package_version
from agenteval.metric.criterion import JudgeModelOptions
from agenteval.metric.models import EvalMetric

__all__ = [
    "ENTRY_FORMAT",
    "agent_identity",
    "code_hash",
    "definition_score_key",
    "evaluator_version",
    "inference_key",
    "metric_definition",
    "score_key",
    "settings_hash",
    "value_hash",
]

_JUDGE_CONNECTION: Final = ("provider_name", "model_name", "variant", "base_url")

ENTRY_FORMAT: Final = 2
"""The shape of the cache's entries (:mod:`agenteval.cache.reuse`), in every key: bumped when an entry's model
changes, so that an entry of an older shape is never looked up (it is evicted in time, as unused)."""


def code_hash(obj: object) -> str:
    """A hash of everything a function, class or object's code reaches: code by its bytecode, data by value.

    What it covers, followed from the object through everything its code can reach:

    - a function: its bytecode, constants (nested functions, lambdas and comprehensions included),
      names, arguments and flags (``async``, generator); and, each as below, its default arguments,
      the values it closes over, the globals it reads by name (a global it also assigns does not
      count: a counter would change the hash on every call), the attributes it reads of a module
      (``config.MODEL``, ``helpers.fmt``, ``getattr(config, "MODEL")``), and the modules it imports
      in its body (``from config import PROMPT``, ``import config as c``, ``from . import cfg``) with
      the attributes it reads of them: a module of the user's is imported if it is not yet, as the
      function would; one of the standard library or an installed package counts by its name;
    - a ``functools.partial``: its function and its arguments;
    - a bound method: its function, and its object as an object counts;
    - a class: the methods, properties, nested classes and plain attributes (a dataclass's or
      pydantic model's field defaults included) defined in it and in its bases outside the standard
      library and installed packages (those count by name);
    - an object of the user's class: its class, and its attributes (a pydantic model's fields and
      private attributes, slots) each as below; an object with a ``cache_identity()`` method counts by
      its class and what that method returns instead (agenteval's chat models, simulators, function
      runners and framework runners have one);
    - a built-in function, or a function or class of the standard library or an installed package:
      its qualified name, and the callables a library function closes over (a framework's decorator
      keeps the user's function there);
    - what ``functools.wraps`` or ``functools.lru_cache`` wraps (``__wrapped__``), and the callables
      an object of a library class holds in its attributes. A function or class made by ``exec``
      without a module name counts by its code like any other.

    A value counts wherever it is found (a global, a closed-over value, a default, an attribute, an
    item of a container at any depth): a callable by its code hash as above; text, numbers, lists,
    tuples, dicts, sets, enum members, dataclasses, pydantic models, bytes, dates, paths and compiled
    patterns by value; an object of the user's class as above. A secret does not count at all (see
    :func:`agenteval.cache._hasher.is_secret`): a pydantic ``SecretStr``, or a value under a
    credential's name (``api_key=``, ``token``: :func:`agenteval._util.redaction.is_credential_name`) that
    looks like a secret (:func:`agenteval._util.redaction.looks_like_secret`: ``sk-...``, a long key-like
    run); any other value counts whatever its name (``PROMPT_KEY = "v1"``, ``STOP_TOKEN = "</s>"``).
    A named place's data (a global, an attribute...) counts by its digest, made once from the
    digests of the places inside it, so the hash takes time with the data, not with its depth.

    State the code writes as it runs counts by its type only, so that calling the agent does not
    change its hash: what its functions, and the methods of its objects that run (those the code
    calls, ``__call__``, ``run``, and the overrides of a library's methods; for a library base class,
    those that read and assign an attribute) assign or change in place: ``self.calls += 1``,
    ``self.log.append(m)``, ``CALLS[key] += 1``, ``USAGE["tokens"] += len(m)``, ``LOG.append(m)``,
    ``nonlocal total; total += 1``; and a ``defaultdict`` it looks items up in, which adds them
    (``self.memory[session].append(m)``).

    What it cannot see counts by its type's name: an object of a library's class without a known
    identity (an HTTP client, a lock, a socket), a value past 50,000 counted values or nested more
    than 40 deep, a value changed through a function it is passed to; what it looks up by a name
    known only at run time (``globals()[name]``, ``getattr(config, name)``, ``vars(config)``) is
    named but not counted; and files, environment variables, the model behind an API name and the
    versions of installed packages are not seen at all. :func:`agenteval.cache.describe_agent` names
    what it cannot see; ``agent_version=`` is for it.
    Line numbers, file names and comments do not count, so moving a function, or defining it again
    from the same source, keeps its hash; a docstring does count. The hash of a function also differs
    between Python versions, whose bytecode differs.

    Args:
        obj: A function, ``functools.partial``, method, class or any object.

    Returns:
        A SHA-256 hex digest.
    """
    return CodeHasher().code(obj)


def value_hash(value: object) -> str:
    """A hash of a value as :func:`code_hash` counts values: data exactly, code by its hash, objects by their state.

    For settings that hold code, such as a registry of named compare functions.

    Args:
        value: Containers, scalars, enums, dataclasses, pydantic models, functions, classes and
            objects (an object of a library's class without a known identity counts by its type's name).

    Returns:
        A SHA-256 hex digest.
    """
    return digest(CodeHasher().value(value))


def settings_hash(obj: object) -> str:
    """A hash of an object's code and settings: for the judges, simulators and evaluators that take part.

    The object's code as :func:`code_hash` counts it: for an object without a ``cache_identity()``
    method, its class's code and its attributes by value (lists, dicts and sets included: a judge's
    ``stop=["###"]``), except what one of its methods writes or changes in place, which counts by its
    type (the requests it received, a call counter), so recording its calls does not make the next
    evaluation a miss.

    Args:
        obj: A function, class or object.

    Returns:
        A SHA-256 hex digest.
    """
    return CodeHasher(state=False).code(obj)


def agent_identity(agent: object, agent_version: str = "") -> str:
    """Who answers a case: the agent's qualified name, its :func:`code_hash` and ``agent_version``.

    Args:
        agent: The agent (a function, partial, method, class or object).
        agent_version: Anything the code hash cannot see that changes the agent's answers (a prompt
            file's version, a model name); change it to run the agent again.

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: ``agent_version`` is not a string.
    """
    return describe_agent(agent, agent_version).digest


def inference_key(case_hash: str, run_id: int, agent_identity: str) -> str:
    """The key of one run of one case by one agent.

    Args:
        case_hash: :func:`agenteval.evalset.identity.case_hash` of the case.
        run_id: The run's index.
        agent_identity: :func:`agent_identity` of the agent.

    Returns:
        A SHA-256 hex digest.
    """
    return digest(
        {"kind": "inference", "format": ENTRY_FORMAT, "case": case_hash, "run": run_id, "agent": agent_identity}
    )


def score_key(inference_hash: str, metric: EvalMetric, evaluator_version: str) -> str:
    """The key of one metric's score of one inference.

    The metric counts by its whole definition (see :func:`metric_definition`).

    Args:
        inference_hash: What is scored: it must change when the agent's output or the case
            (whose expected turns the score compares with) changes, e.g. a hash of the inference's
            key and its content. The inference key alone would keep a stale score when an entry is
            computed again with a different output.
        metric: The metric.
        evaluator_version: :func:`evaluator_version` of the evaluator that scores the metric, or a
            hash of it and other settings that change scores (a judge given in place of the metric's).

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: A number in the metric is NaN or infinite.
    """
    return definition_score_key(inference_hash, metric_definition(metric, evaluator_version))


def metric_definition(metric: EvalMetric, evaluator_version: str) -> str:
    """A hash of everything about a metric that decides its scores, for :func:`definition_score_key`.

    The metric counts by its whole definition as written to a file (name, evaluator, threshold,
    criterion with the judge's settings, extension), plus what its judge model's ``${VAR}``
    references expand to (a file keeps the reference). Its api key does not count: it is never
    written, and a new key scores the same.

    Args:
        metric: The metric.
        evaluator_version: As for :func:`score_key`.

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: A number in the metric is NaN or infinite.
    """
    return digest(
        {
            "metric": metric.to_dict(),
            "judges": list(_judge_connections(metric.criterion)),
            "evaluator": evaluator_version,
        }
    )


def definition_score_key(inference_hash: str, definition: str) -> str:
    """:func:`score_key` from a :func:`metric_definition` made once for many inferences."""
    return digest({"kind": "score", "format": ENTRY_FORMAT, "inference": inference_hash, "definition": definition})


def evaluator_version(evaluator: object) -> str:
    """The version of an evaluator's code and settings: its :func:`settings_hash` and agenteval's version.

    Args:
        evaluator: The evaluator (an object, by its class, or a function).

    Returns:
        A SHA-256 hex digest.
    """
    return digest({"code": settings_hash(evaluator), "agenteval": package_version()})


def _judge_connections(value: object) -> Iterator[dict[str, str]]:
    """What each judge model found in ``value`` is reached at, ``${VAR}`` references expanded."""
    if isinstance(value, JudgeModelOptions):
        yield {name: strip_userinfo(getattr(value, name)) for name in _JUDGE_CONNECTION}
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _judge_connections(getattr(value, name))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _judge_connections(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _judge_connections(item)
