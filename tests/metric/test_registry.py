"""The metric registry: named compares and tokenizers, and the check run before any evaluation."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import pytest
from pydantic import TypeAdapter

from agenteval.errors import ConfigError
from agenteval.evalset.models import EvalSet, Invocation
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import MetricRegistry, Tokenizer, active_metric_registry, use_metric_registry
from agenteval.status import EvalStatus
from tests.conftest import REFERENCE_EXAMPLES

METRIC_EXTENSION = REFERENCE_EXAMPLES / "metricextension" / "data" / "metric-extension-app"

# The reference's jieba example metric (examples/evaluation/jieba/data/jieba-eval-app/jieba-rouge-zh.metrics.json).
JIEBA_METRICS = """[
  {
    "metricName": "final_response_avg_score",
    "threshold": 1,
    "criterion": {
      "finalResponse": {
        "rouge": {
          "rougeType": "rouge1",
          "measure": "f1",
          "threshold": {"precision": 0.3, "recall": 0.6, "f1": 0.4},
          "tokenizerName": "jieba"
        }
      }
    }
  }
]"""

METRICS = TypeAdapter(list[EvalMetric])


class WhitespaceTokenizer:
    """Splits on whitespace, as the reference's registry tests do."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


def _always(actual: Any, expected: Any) -> bool:
    return True


def _metric(criterion: dict[str, Any], name: str = "m") -> EvalMetric:
    return EvalMetric.model_validate({"metricName": name, "threshold": 1, "criterion": criterion})


# --- registration and lookup ----------------------------------------------------------------------


def test_register_and_look_up_every_kind() -> None:
    registry = MetricRegistry()
    tokenizer = WhitespaceTokenizer()
    registry.register_text_compare("t", _always)
    registry.register_json_compare("j", _always)
    registry.register_xml_compare("x", _always)
    registry.register_tool_trajectory_compare("tt", _always)
    registry.register_final_response_compare("fr", _always)
    registry.register_rouge_tokenizer("ws", tokenizer)
    assert registry.text_compare("t") is _always
    assert registry.json_compare("j") is _always
    assert registry.xml_compare("x") is _always
    assert registry.tool_trajectory_compare("tt") is _always
    assert registry.final_response_compare("fr") is _always
    assert registry.rouge_tokenizer("ws") is tokenizer
    assert isinstance(tokenizer, Tokenizer)
    assert repr(registry) == (
        "MetricRegistry(text=1, json=1, xml=1, toolTrajectory=1, finalResponse=1, rougeTokenizer=1)"
    )


def test_kinds_are_separate_and_names_can_be_replaced() -> None:
    registry = MetricRegistry()
    registry.register_text_compare("same", _always)
    with pytest.raises(ConfigError, match='json compare "same" is not registered'):
        registry.json_compare("same")

    def other(actual: str, expected: str) -> bool:
        return False

    registry.register_text_compare("same", other)
    assert registry.text_compare("same") is other


@pytest.mark.parametrize(
    ("lookup", "message"),
    [
        (MetricRegistry.text_compare, 'text compare "missing" is not registered'),
        (MetricRegistry.json_compare, 'json compare "missing" is not registered'),
        (MetricRegistry.xml_compare, 'xml compare "missing" is not registered'),
        (MetricRegistry.tool_trajectory_compare, 'tool trajectory compare "missing" is not registered'),
        (MetricRegistry.final_response_compare, 'final response compare "missing" is not registered'),
        (MetricRegistry.rouge_tokenizer, 'rouge tokenizer "missing" is not registered'),
    ],
)
def test_unknown_names(lookup: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        lookup(MetricRegistry(), "missing")


@pytest.mark.parametrize(
    ("register", "message"),
    [
        (MetricRegistry.register_text_compare, "text compare"),
        (MetricRegistry.register_json_compare, "json compare"),
        (MetricRegistry.register_xml_compare, "xml compare"),
        (MetricRegistry.register_tool_trajectory_compare, "tool trajectory compare"),
        (MetricRegistry.register_final_response_compare, "final response compare"),
    ],
)
def test_registration_validation(register: Any, message: str) -> None:
    registry = MetricRegistry()
    with pytest.raises(ConfigError, match=f"^{message} name is empty$"):
        register(registry, "", _always)
    with pytest.raises(ConfigError, match=f'^{message} "x" is not callable$'):
        register(registry, "x", None)


def test_tokenizer_registration_validation() -> None:
    registry = MetricRegistry()
    with pytest.raises(ConfigError, match="rouge tokenizer name is empty"):
        registry.register_rouge_tokenizer("", WhitespaceTokenizer())
    with pytest.raises(ConfigError, match='rouge tokenizer "x" has no tokenize'):
        registry.register_rouge_tokenizer("x", object())  # type: ignore[arg-type]


# --- check ----------------------------------------------------------------------------------------

CHECK_CASES: list[tuple[str, dict[str, Any] | None, list[str]]] = [
    ("no criterion", None, []),
    ("no names", {"toolTrajectory": {}, "finalResponse": {"text": {}}}, []),
    ("registered names", {"finalResponse": {"text": {"compareName": "trim_equal"}}}, []),
    (
        "text compare",
        {"finalResponse": {"text": {"compareName": "missing"}}},
        ['criterion.finalResponse.text.compareName "missing" is not registered as a text compare'],
    ),
    (
        "every location at once",
        {
            "toolTrajectory": {
                "defaultStrategy": {
                    "name": {"compareName": "a"},
                    "arguments": {"compareName": "b"},
                    "result": {"compareName": "c"},
                },
                "toolStrategy": {
                    "get_ticket": {"arguments": {"compareName": "loose"}},
                    "get.time": {"name": {"compareName": "trim_equal"}, "result": {"compareName": "d"}},
                },
            },
            "finalResponse": {
                "text": {"compareName": "e"},
                "json": {"compareName": "f"},
                "xml": {"compareName": "g"},
                "rouge": {"rougeType": "rouge1", "tokenizerName": "jieba"},
            },
        },
        [
            'criterion.toolTrajectory.defaultStrategy.name.compareName "a" is not registered as a text compare',
            'criterion.toolTrajectory.defaultStrategy.arguments.compareName "b" is not registered as a JSON compare',
            'criterion.toolTrajectory.defaultStrategy.result.compareName "c" is not registered as a JSON compare',
            'criterion.toolTrajectory.toolStrategy.get_ticket.arguments.compareName "loose" '
            "is not registered as a JSON compare",
            'criterion.toolTrajectory.toolStrategy["get.time"].result.compareName "d" '
            "is not registered as a JSON compare",
            'criterion.finalResponse.text.compareName "e" is not registered as a text compare',
            'criterion.finalResponse.json.compareName "f" is not registered as a JSON compare',
            'criterion.finalResponse.xml.compareName "g" is not registered as an XML compare',
            'criterion.finalResponse.rouge.tokenizerName "jieba" is not registered as a ROUGE tokenizer',
        ],
    ),
    (
        "an unknown parent hides its children",
        {
            "toolTrajectory": {"compareName": "x", "defaultStrategy": {"name": {"compareName": "y"}}},
            "finalResponse": {"compareName": "z", "text": {"compareName": "w"}},
        },
        [
            'criterion.toolTrajectory.compareName "x" is not registered as a tool trajectory compare',
            'criterion.finalResponse.compareName "z" is not registered as a final response compare',
        ],
    ),
    (
        "a registered parent replaces its children",
        {
            "toolTrajectory": {"compareName": "turns", "defaultStrategy": {"name": {"compareName": "y"}}},
            "finalResponse": {"compareName": "turns", "rouge": {"tokenizerName": "jieba"}},
        },
        [],
    ),
    ("names under ignore still count", {"finalResponse": {"json": {"ignore": True, "compareName": "q"}}}, ["q"]),
]


@pytest.mark.parametrize(("criterion", "problems"), [c[1:] for c in CHECK_CASES], ids=[c[0] for c in CHECK_CASES])
def test_check(criterion: dict[str, Any] | None, problems: list[str]) -> None:
    registry = MetricRegistry()
    registry.register_text_compare("trim_equal", _always)
    registry.register_tool_trajectory_compare("turns", _always)
    registry.register_final_response_compare("turns", _always)
    metric = _metric(criterion, "my_metric") if criterion is not None else EvalMetric(metric_name="my_metric")
    found = registry.unregistered_names(metric.criterion)
    assert len(found) == len(problems)
    for line, problem in zip(found, problems, strict=True):
        assert problem in line
    if not problems:
        registry.check(metric)
        return
    with pytest.raises(ConfigError) as raised:
        registry.check(metric)
    assert str(raised.value) == 'metric "my_metric": ' + "; ".join(found)


def test_unregistered_names_of_a_part() -> None:
    registry = MetricRegistry()
    metric = _metric({"toolTrajectory": {"compareName": "x"}, "finalResponse": {"compareName": "y"}})
    assert metric.criterion is not None
    assert registry.unregistered_names(metric.criterion.tool_trajectory) == [
        'criterion.toolTrajectory.compareName "x" is not registered as a tool trajectory compare'
    ]
    assert registry.unregistered_names(metric.criterion.final_response) == [
        'criterion.finalResponse.compareName "y" is not registered as a final response compare'
    ]
    assert registry.unregistered_names(None) == []


def test_check_does_not_change_the_metric() -> None:
    metric = _metric({"finalResponse": {"text": {"compareName": "missing"}}})
    before = metric.model_dump(by_alias=True)
    with pytest.raises(ConfigError):
        MetricRegistry().check(metric)
    assert metric.model_dump(by_alias=True) == before


# --- the active registry --------------------------------------------------------------------------


def test_active_registry_scopes() -> None:
    outside = active_metric_registry()
    assert isinstance(outside, MetricRegistry)
    first, second = MetricRegistry(), MetricRegistry()
    with use_metric_registry(first) as active:
        assert active is first
        assert active_metric_registry() is first
        with use_metric_registry(second):
            assert active_metric_registry() is second
        assert active_metric_registry() is first
    assert active_metric_registry() is outside


def test_active_registry_is_reset_on_errors() -> None:
    outside = active_metric_registry()
    with pytest.raises(RuntimeError), use_metric_registry(MetricRegistry()):
        raise RuntimeError
    assert active_metric_registry() is outside


def test_use_metric_registry_rejects_other_objects() -> None:
    with (
        pytest.raises(ConfigError, match="metric registry must be a MetricRegistry, got dict"),
        use_metric_registry({}),  # type: ignore[arg-type]
    ):
        pass


def test_active_registry_follows_the_context_into_threads() -> None:
    registry = MetricRegistry()
    seen: list[MetricRegistry] = []
    with use_metric_registry(registry):
        context = contextvars.copy_context()
    thread = threading.Thread(target=lambda: seen.append(context.run(active_metric_registry)))
    thread.start()
    thread.join()
    assert seen == [registry]


def test_rouge_tokenizer_lookup_through_the_active_registry() -> None:
    registry = MetricRegistry()
    registry.register_rouge_tokenizer("whitespace", WhitespaceTokenizer())
    with use_metric_registry(registry):
        assert active_metric_registry().rouge_tokenizer("whitespace").tokenize("a-b  c") == ["a-b", "c"]
    with pytest.raises(ConfigError, match='rouge tokenizer "whitespace" is not registered'):
        active_metric_registry().rouge_tokenizer("whitespace")


# --- the reference's example files ----------------------------------------------------------------


def test_metric_extension_example_has_no_names_to_resolve() -> None:
    # The metricextension example configures its custom evaluator through `extension`, not compareName.
    metrics = METRICS.validate_json((METRIC_EXTENSION / "support-policy-basic.metrics.json").read_text())
    assert [m.metric_name for m in metrics] == ["support_response_policy"]
    for metric in metrics:
        MetricRegistry().check(metric)


def _support_policy(required_phrase: str) -> Any:
    """The example's policy evaluator as a final-response compare: the answer must mention the phrase."""

    def compare(actual: Invocation, expected: Invocation) -> bool:
        content = "" if actual.final_response is None else actual.final_response.content
        return required_phrase.lower() in content.lower()

    return compare


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (None, EvalStatus.PASSED),  # the reference output: sign_in_help passed with score 1.00
        ("I cannot help with sign-in problems.", EvalStatus.FAILED),
    ],
)
def test_metric_extension_policy_as_a_named_compare(answer: str | None, status: EvalStatus) -> None:
    eval_set = EvalSet.model_validate_json((METRIC_EXTENSION / "support-policy-basic.evalset.json").read_text())
    (extension_metric,) = METRICS.validate_json((METRIC_EXTENSION / "support-policy-basic.metrics.json").read_text())
    registry = MetricRegistry()
    registry.register_final_response_compare(
        "support_response_policy", _support_policy(extension_metric.extension["requiredPhrase"])
    )
    metric = EvalMetric.model_validate(
        {
            "metricName": "support_response_policy",
            "evaluatorName": "final_response_avg_score",
            "threshold": extension_metric.threshold,
            "criterion": {"finalResponse": {"compareName": "support_response_policy"}},
        }
    )
    registry.check(metric)
    expecteds = eval_set.eval_cases[0].conversation
    # Without a live agent, the expected answer stands in for the one the reference's agent gave.
    actuals = (
        expecteds
        if answer is None
        else [Invocation.model_validate({"finalResponse": {"role": "assistant", "content": answer}})]
    )
    with use_metric_registry(registry):
        result = FinalResponseEvaluator().evaluate(actuals, expecteds, metric)
    assert result.overall_status == status
    assert result.overall_score == (1.0 if status == EvalStatus.PASSED else 0.0)


def test_jieba_example_needs_its_tokenizer() -> None:
    (metric,) = METRICS.validate_json(JIEBA_METRICS)
    with pytest.raises(
        ConfigError,
        match='^metric "final_response_avg_score": criterion.finalResponse.rouge.tokenizerName "jieba" '
        "is not registered as a ROUGE tokenizer$",
    ):
        MetricRegistry().check(metric)
    registry = MetricRegistry()
    registry.register_rouge_tokenizer("jieba", WhitespaceTokenizer())
    registry.check(metric)


def test_every_metric_is_checked_before_evaluating() -> None:
    registry = MetricRegistry()
    registry.register_final_response_compare("known", _always)
    metrics = [
        _metric({"finalResponse": {"compareName": "known"}}, "first"),
        _metric(
            {"toolTrajectory": {"toolStrategy": {"get_ticket": {"arguments": {"compareName": "loose"}}}}}, "second"
        ),
    ]
    problems = []
    for metric in metrics:
        try:
            registry.check(metric)
        except ConfigError as err:
            problems.append(str(err))
    assert problems == [
        'metric "second": criterion.toolTrajectory.toolStrategy.get_ticket.arguments.compareName "loose" '
        "is not registered as a JSON compare"
    ]
