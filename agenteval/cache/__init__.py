"""A content-addressed cache of inferences and scores, so that unchanged work is never paid for twice.

:class:`Cache` stores entries (JSON text) by kind and key in one SQLite database; the functions of
:mod:`agenteval.cache.keys` make the keys from what an entry depends on.
"""

from agenteval.cache.identity import AgentIdentity, describe_agent
from agenteval.cache.keys import agent_identity, code_hash, evaluator_version, inference_key, score_key, value_hash
from agenteval.cache.store import Cache, CacheStats

__all__ = [
    "AgentIdentity",
    "Cache",
    "CacheStats",
    "agent_identity",
    "code_hash",
    "describe_agent",
    "evaluator_version",
    "inference_key",
    "score_key",
    "value_hash",
]
