"""The weather eval set the lazy-report tests share: a three-turn case, a passing one, one whose agent raises."""

from __future__ import annotations

import agenteval as ae

METRICS = [
    ae.EvalMetric.final_response(),
    ae.EvalMetric.final_response("contains", name="mentions", threshold=0.5),
    ae.EvalMetric.rouge("rouge1", f1=0.5, name="rouge"),
]
"""Exact reply, a reply containing the expected one, and ROUGE-1: reasons, measures and turn-level failures."""


def weather_cases(eval_set_id: str, *more: ae.EvalCase, rome: str = "Sunny and warm") -> ae.EvalSet:
    """``trip`` (three turns), ``paris``, ``boom`` (for an agent that raises) and ``rome``, then ``more``."""
    return ae.EvalSet.of(
        eval_set_id,
        [
            ae.EvalCase.of(
                "trip",
                ae.Invocation.of("Weather in Paris?", "Sunny"),
                ae.Invocation.of("And in Rome?", "Rain"),
                ae.Invocation.of("And in Oslo?", "Snow"),
                user_id="ada",
            ),
            ae.EvalCase.of("paris", "Weather in Paris?", expect="Sunny"),
            ae.EvalCase.of("boom", "Explode, please", expect="Bang"),
            ae.EvalCase.of("rome", "Weather in Rome?", expect=rome),
            *more,
        ],
    )
