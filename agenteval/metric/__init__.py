"""Metrics: the metric model, the registry of named compares and tokenizers, and the stores.

The criterion classes a metric is configured with are in :mod:`agenteval.criteria`.
"""

from agenteval.metric.local import LocalMetricManager
from agenteval.metric.manager import MetricManager
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.metric.models import EvalMetric
from agenteval.metric.mysql import MySQLMetricManager
from agenteval.metric.registry import MetricRegistry

__all__ = [
    "EvalMetric",
    "InMemoryMetricManager",
    "LocalMetricManager",
    "MetricManager",
    "MetricRegistry",
    "MySQLMetricManager",
]
