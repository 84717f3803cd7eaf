"""The reference framework's JSON conventions (``_util.trpc_json``): omitempty, unknown keys, numbers, strictness."""

from __future__ import annotations

import copy
import importlib
import json
import math
import pickle
import pkgutil
import re
from typing import Any

import numpy as np
import pytest
from pydantic import Field, ValidationError
from pydantic_core import PydanticUndefined

import agenteval
from agenteval._util.files import parse_json
from agenteval._util.trpc_json import CamelModel, EpochTime, GoFloat, GoInt, WireModel, unknown_fields
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import EvalCase, EvalSet, Invocation, SessionInput, Tool
from agenteval.evalset.trace import TraceStep
from agenteval.metric.criterion import (
    CategoryScore,
    Criterion,
    FinalResponseCriterion,
    GenerationConfig,
    JudgeModelOptions,
    LengthCriterion,
    TextCriterion,
    ToolTrajectoryCriterion,
)
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus


class _Child(CamelModel):
    label: str = ""


class _Sample(CamelModel):
    """Every kind of field the omitempty rule distinguishes."""

    name: str = ""
    count: int = 0
    ratio: GoFloat = 0.0
    enabled: bool = False
    tags: list[str] = []
    attrs: dict[str, Any] = {}
    limit: int | None = None
    flag: bool | None = None
    tolerance: GoFloat | None = None
    child: _Child | None = None
    when: EpochTime | None = None


def _typed(value: Any) -> Any:
    """Tag every JSON scalar with its type, so ``1`` vs ``1.0`` and ``0`` vs ``false`` compare unequal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _strict_case_id(value: object) -> str:
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, dict):
        return json.dumps(value)
    return "at-" + ".".join(map(str, value)) if isinstance(value, tuple) else str(value)


def test_zero_values_are_left_out() -> None:
    assert _Sample().to_dict() == {}
    assert json.loads(_Sample().to_json()) == {}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("limit", 0, {"limit": 0}),
        ("flag", False, {"flag": False}),
        ("tolerance", 0.0, {"tolerance": 0}),
        ("child", _Child(), {"child": {}}),
        ("when", 0.0, {"when": 0}),
    ],
)
def test_field_defaulting_to_none_is_written_when_set_even_to_a_zero_value(
    field: str, value: Any, expected: dict[str, Any]
) -> None:
    data = _Sample(**{field: value}).to_dict()
    assert _typed(data) == _typed(expected)


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("name", "x", "name"),
        ("count", -1, "count"),
        ("ratio", 0.5, "ratio"),
        ("enabled", True, "enabled"),
        ("tags", [""], "tags"),
        ("attrs", {"k": 0}, "attrs"),
    ],
)
def test_non_zero_value_of_omitempty_field_is_written(field: str, value: Any, key: str) -> None:
    assert _Sample(**{field: value}).to_dict()[key] == value


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (Message(), {}),
        (Message.user("hi"), {"role": "user", "content": "hi"}),
        (GenerationConfig(), {"stream": False}),
        (GenerationConfig(max_tokens=0, temperature=0.0), {"max_tokens": 0, "temperature": 0, "stream": False}),
        (CategoryScore(label="bad"), {"label": "bad", "score": 0}),
    ],
    ids=["message-role", "message-user", "stream", "generation-pointers", "category-score"],
)
def test_fields_go_always_writes_are_written(model: WireModel, expected: dict[str, Any]) -> None:
    assert _typed(model.to_dict()) == _typed(expected)
    assert _typed(json.loads(model.to_json())) == _typed(expected)


def test_plain_model_dump_keeps_every_field_for_python_use() -> None:
    assert _Sample(limit=0).model_dump(by_alias=False)["count"] == 0


def test_to_json_is_indented_by_two_spaces_or_compact() -> None:
    model = _Sample(name="a", child=_Child(label="b"))
    assert model.to_json() == '{\n  "name": "a",\n  "child": {\n    "label": "b"\n  }\n}'
    assert model.to_json(indent=None) == '{"name":"a","child":{"label":"b"}}'


UNKNOWN_KEYS_DOCUMENT: dict[str, Any] = {
    "evalSetId": "set",
    "futureTopLevel": {"nested": [1, 2.5, None]},
    "evalCases": [
        {
            "evalId": "c1",
            "futureCaseField": "",
            "futureFlag": False,
            "conversation": [
                {
                    "invocationId": "t1",
                    "futureTurnField": [],
                    "userContent": {"role": "user", "content": "hi", "future_message_field": {"a": 1}},
                    "executionTrace": {
                        "RootAgentName": "agent",
                        "FutureTraceField": 0,
                        "Steps": [{"StepID": "s1", "X": 1}],
                    },
                }
            ],
            "sessionInput": {"userId": "u", "futureSessionField": True},
        }
    ],
}


def test_unknown_keys_are_kept_verbatim_through_a_round_trip() -> None:
    loaded = EvalSet.from_json(json.dumps(UNKNOWN_KEYS_DOCUMENT))
    assert _typed(loaded.to_dict()) == _typed(UNKNOWN_KEYS_DOCUMENT)
    assert _typed(json.loads(loaded.to_json())) == _typed(UNKNOWN_KEYS_DOCUMENT)


def test_unknown_keys_of_a_loaded_dict_are_kept_at_every_level_too() -> None:
    loaded = EvalSet.model_validate(UNKNOWN_KEYS_DOCUMENT)
    assert _typed(loaded.to_dict()) == _typed(UNKNOWN_KEYS_DOCUMENT)
    assert _typed(EvalSet.from_json(loaded.to_json()).to_dict()) == _typed(UNKNOWN_KEYS_DOCUMENT)


# --- constructors: a misspelt keyword is an error, not a silently ignored option


@pytest.mark.parametrize(
    ("model", "keywords", "wrong", "meant"),
    [
        (EvalMetric, {"metric_name": "m", "threshhold": 0.5}, "threshhold", "threshold"),
        (TextCriterion, {"match_stratgy": "contains"}, "match_stratgy", "match_strategy"),
        (Tool, {"name": "x", "args": {"q": 1}}, "args", "arguments"),
        (EvalMetric, {"metricNme": "m"}, "metricNme", "metricName"),
    ],
    ids=["threshold", "match-strategy", "tool-arguments", "json-key"],
)
def test_a_misspelt_keyword_is_refused_naming_the_closest_field(
    model: type[WireModel], keywords: dict[str, Any], wrong: str, meant: str
) -> None:
    with pytest.raises(ConfigError) as info:
        model(**keywords)
    message = str(info.value)
    assert message.startswith(f"{model.__name__}() got an unknown field {wrong!r} (did you mean {meant!r}?); ")
    assert message.endswith(f"its fields are: {', '.join(model.model_fields)}")


def test_every_unknown_keyword_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        _Sample(nmae="a", zzz=1, count=2)
    assert str(info.value) == (
        "_Sample() got unknown fields 'nmae' (did you mean 'name'?), 'zzz'; its fields are: "
        "name, count, ratio, enabled, tags, attrs, limit, flag, tolerance, child, when"
    )


def test_python_names_and_json_keys_are_both_keywords() -> None:
    assert EvalMetric(metricName="m", evaluatorName="e") == EvalMetric(metric_name="m", evaluator_name="e")
    assert JudgeModelOptions(baseURL="u", apiKey="k") == JudgeModelOptions(base_url="u", api_key="k")
    assert TraceStep(StepID="s", AgentName="a") == TraceStep(step_id="s", agent_name="a")


def test_a_subclass_takes_its_own_and_its_parents_fields_as_keywords() -> None:
    class Extended(_Sample):
        extra_count: int = 0

    assert Extended(name="a", extraCount=1).to_dict() == {"name": "a", "extraCount": 1}
    with pytest.raises(ConfigError, match=r"^_Sample\(\) got an unknown field 'extra_count'"):
        _Sample(extra_count=1)


# --- constructors: a misspelt key inside a dict given to a constructor is an error too

MISSPELT_OPTION: dict[str, Any] = {"finalResponse": {"text": {"matchStrategy": "contains", "caseInsensitve": True}}}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: EvalMetric(metric_name="final_response_avg_score", threshold=1, criterion=MISSPELT_OPTION),
            "EvalMetric(criterion=...): unknown key finalResponse.text.caseInsensitve "
            "(did you mean 'caseInsensitive'?)",
        ),
        (
            lambda: EvalMetric(metric_name="m", criterion={"finalResponse": {"txt": {}}}),
            "EvalMetric(criterion=...): unknown key finalResponse.txt (did you mean 'text'?)",
        ),
        (
            lambda: EvalMetric(metric_name="m", criterion={"final_response": {"text": {"case_insensitve": True}}}),
            "EvalMetric(criterion=...): unknown key final_response.text.case_insensitve "
            "(did you mean 'case_insensitive'?)",
        ),
        (
            lambda: EvalCase(eval_id="c", conversation=[{"userContent": {"role": "user", "contnet": "hi"}}]),
            "EvalCase(conversation=...): unknown key [0].userContent.contnet (did you mean 'content'?)",
        ),
        (
            lambda: Invocation(tools=[Tool(name="a"), {"name": "b", "reslt": 1}]),
            "Invocation(tools=...): unknown key [1].reslt (did you mean 'result'?)",
        ),
        (
            lambda: ToolTrajectoryCriterion(tool_strategy={"weather": {"argumnts": {}}}),
            "ToolTrajectoryCriterion(tool_strategy=...): unknown key weather.argumnts (did you mean 'arguments'?)",
        ),
        (
            lambda: EvalMetric(metric_name="m", criterion={"finalResponse": {"fuzzy": {}}}),
            "EvalMetric(criterion=...): unknown key finalResponse.fuzzy "
            "(FinalResponseCriterion takes: text, json, rouge, xml, compareName)",
        ),
    ],
    ids=["camel-case", "unknown-criterion", "snake-case", "list", "list-with-a-model", "mapping", "no-close-key"],
)
def test_a_misspelt_key_in_a_dict_given_to_a_constructor_is_refused_naming_its_path(build: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()
    assert str(info.value) == message


def test_every_misspelt_key_in_every_argument_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        EvalCase(
            conversation=[{"userContent": {"contnet": "hi"}, "tols": []}],
            session_input={"userID": "u"},
        )
    assert str(info.value) == (
        "EvalCase(conversation=...): unknown keys [0].tols (did you mean 'tools'?), "
        "[0].userContent.contnet (did you mean 'content'?); "
        "EvalCase(session_input=...): unknown key userID (did you mean 'userId'?)"
    )


def test_model_objects_given_to_a_constructor_keep_their_unknown_keys() -> None:
    # A model loaded from a newer file legitimately holds keys this version does not know.
    loaded = Criterion.model_validate(MISSPELT_OPTION)
    final = FinalResponseCriterion.model_validate({"txt": {}})
    case = EvalCase.model_validate({"evalId": "c", "futureField": 1})

    metrics = [
        EvalMetric(metric_name="m", criterion=loaded),
        EvalMetric(metric_name="m", criterion={"finalResponse": final}),
    ]
    es = EvalSet(eval_set_id="s", eval_cases=[case])

    assert [unknown_fields(metric) for metric in metrics] == [
        ["criterion.finalResponse.text.caseInsensitve"],
        ["criterion.finalResponse.txt"],
    ]
    assert unknown_fields(es) == ["evalCases[0].futureField"]


def test_free_form_values_given_to_a_constructor_are_data_not_checked() -> None:
    metric = EvalMetric(
        metric_name="m",
        extension={"weihgt": {"nested": [{"anything": 1}]}},
        criterion={"finalResponse": {"json": {"schema": {"propertes": {}}, "ignoreTree": {"idd": True}}}},
    )
    tool = Tool(name="t", arguments={"qurey": 1}, result=[{"any": "thing"}])
    session = SessionInput(state={"anything": {"at": "all"}})
    message = Message(content_parts=[{"type": "txt"}], tool_calls=[{"fn": {}}])

    assert unknown_fields([metric, tool, session, message]) == []


def test_loading_keeps_misspelt_keys_as_before() -> None:
    document = {"metricName": "m", "criterion": MISSPELT_OPTION}
    for metric in (EvalMetric.model_validate(document), EvalMetric.from_json(json.dumps(document))):
        assert unknown_fields(metric) == ["criterion.finalResponse.text.caseInsensitve"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.0, "0"),
        (-3.0, "-3"),
        (0.25, "0.25"),
        (0.1, "0.1"),
        (1700000000.0, "1700000000"),
        (1761134484.9804401, "1761134484.9804401"),
        (1e20, "100000000000000000000"),
    ],
)
def test_floats_are_written_as_go_writes_a_float64(value: float, text: str) -> None:
    model = _Sample(tolerance=value, when=value)
    compact = model.to_json(indent=None)
    assert compact == f'{{"tolerance":{text},"when":{text}}}'
    data = model.to_dict()
    assert _typed([data["tolerance"], data["when"]]) == _typed([json.loads(text)] * 2)


def test_go_float_without_pointer_is_written_without_fraction() -> None:
    assert _Sample(ratio=2.0).to_json(indent=None) == '{"ratio":2}'
    assert _typed(EvalMetric(threshold=1.0).to_dict()) == _typed({"threshold": 1})


@pytest.mark.parametrize("value", [1700000000, 1761134484.9804401, 0])
def test_epoch_time_accepts_json_numbers(value: float) -> None:
    loaded = Invocation.from_json(json.dumps({"creationTimestamp": value}))
    assert loaded.creation_timestamp == value
    assert json.loads(loaded.to_json()) == {"creationTimestamp": value}


def test_epoch_time_null_is_unset() -> None:
    assert Invocation.from_json('{"creationTimestamp": null}').creation_timestamp is None


@pytest.mark.parametrize("raw", ['"1700000000"', '"2025-10-22T12:00:00Z"', "true", "false", "{}", "[1]"])
def test_epoch_time_rejects_anything_but_a_number_in_a_file(raw: str) -> None:
    with pytest.raises(ValidationError) as info:
        EvalSet.from_json('{"creationTimestamp": ' + raw + "}")
    assert info.value.errors()[0]["loc"] == ("creationTimestamp",)


@pytest.mark.parametrize("value", ["1700000000", True, False])
def test_epoch_time_rejects_strings_and_booleans_from_python_too(value: object) -> None:
    with pytest.raises(ValidationError):
        Invocation.model_validate({"creationTimestamp": value})


@pytest.mark.parametrize(
    ("model", "document", "loc"),
    [
        (EvalMetric, {"threshold": "1"}, ("threshold",)),
        (EvalMetric, {"threshold": True}, ("threshold",)),
        (EvalCaseResult, {"score": "0.5"}, ("score",)),
        (EvalCaseResult, {"runId": "1"}, ("runId",)),
        (EvalCaseResult, {"runId": 1.5}, ("runId",)),
        (JudgeModelOptions, {"numSamples": 2.0}, ("numSamples",)),
        (TextCriterion, {"caseInsensitive": "true"}, ("caseInsensitive",)),
        (TextCriterion, {"ignore": 1}, ("ignore",)),
        (EvalCase, {"expectedRunnerEnabled": "false"}, ("expectedRunnerEnabled",)),
        (EvalCase, {"evalId": 5}, ("evalId",)),
        (SessionInput, {"userId": 42}, ("userId",)),
        (Message, {"role": "user", "content": 1}, ("content",)),
        (LengthCriterion, {"max": "10"}, ("max",)),
        (EvalSet, {"evalCases": {}}, ("evalCases",)),
    ],
    ids=_strict_case_id,
)
def test_loading_is_strict_about_types(model: type[WireModel], document: dict[str, Any], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as info:
        model.from_json(json.dumps(document))
    assert [error["loc"] for error in info.value.errors()] == [loc]


class _Counter(CamelModel):
    count: GoInt = 0


@pytest.mark.parametrize("value", [-(2**63), -1, 0, 2**53 + 1, 2**63 - 1])
def test_go_int_takes_every_int64_exactly(value: int) -> None:
    text = json.dumps({"count": value})
    assert _Counter.from_json(text).count == value
    assert _Counter.from_json(text).to_json(indent=None) == ("{}" if value == 0 else text.replace(" ", ""))


@pytest.mark.parametrize("value", [2**63, 2**64, 10**310, -(2**63) - 1])
def test_go_int_refuses_what_would_wrap_around_in_go(value: int) -> None:
    with pytest.raises(ValidationError, match=r"count\n  Input should be (less|greater) than or equal to"):
        _Counter.from_json(json.dumps({"count": value}))
    with pytest.raises(ValidationError):
        _Counter(count=value)


def test_integral_numbers_written_by_go_load_into_float_fields() -> None:
    metric = EvalMetric.from_json('{"metricName": "m", "threshold": 1}')
    assert metric.threshold == 1.0
    assert isinstance(metric.threshold, float)


def test_from_json_accepts_bytes() -> None:
    assert EvalSet.from_json(b'{"evalSetId": "s"}').eval_set_id == "s"


def test_null_is_accepted_only_where_a_field_may_be_unset() -> None:
    result = EvalMetricResult.from_json('{"details": null, "evalStatus": null, "futureKey": null}')
    assert result.details is None
    assert result.to_dict() == {"futureKey": None}
    with pytest.raises(ValidationError) as info:
        EvalMetricResult.from_json('{"metricName": null}')
    assert info.value.errors()[0]["loc"] == ("metricName",)


def _wire_models() -> list[type[WireModel]]:
    """Every WireModel subclass defined in agenteval (all modules imported first)."""
    for module in pkgutil.walk_packages(agenteval.__path__, "agenteval."):
        if not module.name.endswith(".__main__"):  # importing it would run the command line
            importlib.import_module(module.name)
    found: list[type[WireModel]] = []
    pending: list[type[WireModel]] = [WireModel]
    while pending:
        for subclass in pending.pop().__subclasses__():
            if subclass not in found:
                found.append(subclass)
                pending.append(subclass)
    return [model for model in found if model.__module__.startswith("agenteval.")]


def _is_zero(value: object) -> bool:
    return value is None or (isinstance(value, str | int | float | list | dict) and not value)


def _non_zero_defaults(model: type[WireModel]) -> list[str]:
    found = []
    for name, info in model.model_fields.items():
        if info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        elif info.default is PydanticUndefined:
            continue
        else:
            default = info.default
        if not _is_zero(default):
            found.append(f"{model.__module__}.{model.__qualname__}.{name} = {default!r}")
    return found


def test_every_wire_model_default_is_a_zero_value_so_exclude_defaults_is_omitempty() -> None:
    models = _wire_models()
    assert EvalSet in models and Message in models  # the walk reached the data model
    offenders = [offender for model in models for offender in _non_zero_defaults(model)]
    assert offenders == [], "to_json would leave out these non-zero defaults, which Go's omitempty writes"


def test_the_default_check_sees_computed_defaults() -> None:
    class Stamped(CamelModel):
        version: str = Field(default_factory=lambda: "1.2")
        count: int = 3
        empty: list[str] = Field(default_factory=list)

    assert [found.rsplit("Stamped.", 1)[1] for found in _non_zero_defaults(Stamped)] == ["version = '1.2'", "count = 3"]
    assert Stamped().to_dict() == {}  # what the check guards against: set values silently left out


NON_FINITE = [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")]


@pytest.mark.parametrize(("number", "token"), NON_FINITE)
def test_writing_refuses_a_non_finite_number_in_a_free_form_value(number: float, token: str) -> None:
    case = EvalCase(
        eval_id="c",
        conversation=[Invocation(tools=[Tool(name="t", arguments={"ok": 1, "x": [number]})])],
    )
    expected = (
        f"field conversation[0].tools[0].arguments.x[0] is not a finite number ({token}); "
        "JSON has no NaN or Infinity, so store a finite number (or a string) instead"
    )
    with pytest.raises(ConfigError) as info:
        case.to_json()
    assert str(info.value) == expected
    with pytest.raises(ConfigError, match=re.escape(expected)):
        case.to_dict()


@pytest.mark.parametrize(
    "model",
    [
        SessionInput(state={"k": {"deep": math.nan}}),
        EvalMetric(metric_name="m", extension=math.inf),
        Message.model_validate({"role": Role.USER, "content": "hi", "future_key": math.nan}),
        EvalCaseResult().model_copy(update={"score": math.nan}),
        EvalSet().model_copy(update={"creation_timestamp": -math.inf}),
    ],
    ids=["state", "extension", "unknown-key", "typed-score", "typed-timestamp"],
)
def test_every_kind_of_field_refuses_a_non_finite_number(model: WireModel) -> None:
    with pytest.raises(ConfigError, match="is not a finite number"):
        model.to_json()


@pytest.mark.parametrize(
    ("model", "path"),
    [
        (EvalCaseResult(eval_id="c").model_copy(update={"user_id": None}), "userId"),
        (Message(role=Role.USER, content="hi").model_copy(update={"role": None}), "role"),
        (Invocation(invocation_id="i").model_copy(update={"tools": [Tool(name="t"), None]}), "tools[1]"),
        (GenerationConfig(stop=["a"]).model_copy(update={"stop": ["a", None]}), "stop[1]"),
    ],
    ids=["text-field", "enum-field", "list-of-models", "list-of-text"],
)
def test_writing_refuses_none_where_its_type_has_none(model: WireModel, path: str) -> None:
    # pydantic writes such a None as null, which no reader takes back: a file nothing could read.
    with pytest.raises(ConfigError, match=rf"^field {re.escape(path)} holds None, which its type does not allow"):
        model.to_json(indent=None)


def test_nulls_in_free_form_values_and_fields_never_written_are_fine() -> None:
    tool = Tool(name="null", arguments={"a": None, "b": [None]}, result="null")
    assert json.loads(tool.to_json(indent=None)) == {
        "name": "null",
        "arguments": {"a": None, "b": [None]},
        "result": "null",
    }
    judge = JudgeModelOptions(model_name="gpt", extra_fields={"seed": None})
    judge.api_key = None  # type: ignore[assignment]  # never written (a secret)
    assert json.loads(judge.to_json(indent=None)) == {"modelName": "gpt", "extraFields": {"seed": None}}
    scaled = EvalCaseResult(eval_id="null").model_copy(update={"score": np.float32(0.5)})
    assert json.loads(scaled.to_json(indent=None)) == {"evalId": "null", "score": 0.5}
    assert json.loads(_Required(details=None).to_json(indent=None)) == {"details": None}  # its type allows None


class _Required(WireModel):
    details: EvalMetricResult | None


def test_the_words_nan_and_infinity_in_text_are_fine() -> None:
    message = Message(role=Role.USER, content="NaN and Infinity", tool_calls=[{"NaN": "-Infinity"}])
    assert json.loads(message.to_json()) == message.to_dict()
    assert message.to_dict()["content"] == "NaN and Infinity"


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_epoch_time_rejects_a_non_finite_number(raw: str) -> None:
    with pytest.raises(ValidationError) as info:
        EvalSet.from_json('{"creationTimestamp": ' + raw + "}")
    assert info.value.errors()[0]["loc"] == ("creationTimestamp",)
    assert "expected a finite number" in str(info.value)


def test_a_trusted_model_is_the_validated_one_without_validation() -> None:
    given = {"metric_name": "m", "score": 0.5, "eval_status": EvalStatus.FAILED, "threshold": 1.0}
    trusted = EvalMetricResult.trusted(**given)
    validated = EvalMetricResult(**given)

    assert trusted == validated
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.to_json() == validated.to_json()
    first, second = EvalCaseResult.trusted(eval_id="a"), EvalCaseResult.trusted(eval_id="b")
    first.overall_eval_metric_results.append(trusted)
    assert second.overall_eval_metric_results == []  # each gets its own default list
    with pytest.raises(TypeError, match=r"unknown fields \['scor'\]"):
        EvalMetricResult.trusted(metric_name="m", scor=1.0)


def test_trusted_models_made_alike_share_their_field_names_until_one_is_changed() -> None:
    # Shared to save memory (tens of result models per case); no model's fields ever change another's.
    first = EvalMetricResult.trusted(metric_name="a", score=1.0)
    second = EvalMetricResult.trusted(metric_name="b", score=0.0)
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__

    first.threshold = 0.5
    second.model_copy(update={"threshold": 0.7})

    assert first.model_fields_set == {"metric_name", "score", "threshold"}
    assert second.model_fields_set == {"metric_name", "score"}
    assert EvalMetricResult.trusted(metric_name="c", score=1.0).model_fields_set == {"metric_name", "score"}


def test_models_read_from_json_share_their_field_names_until_one_is_changed() -> None:
    # A parsed eval set or result holds several models per case: each validated one shared its set too.
    text = '[{"metricName": "a", "score": 1}, {"metricName": "b", "score": 0}]'
    first, second = (EvalMetricResult.from_json(json.dumps(item)) for item in json.loads(text))
    built = EvalMetricResult(metric_name="c", score=0.5)
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__ is built.__pydantic_fields_set__

    second.threshold = 0.5

    assert first.model_fields_set == built.model_fields_set == {"metric_name", "score"}
    assert second.model_fields_set == {"metric_name", "score", "threshold"}
    assert json.loads(second.to_json()) == {"metricName": "b", "threshold": 0.5}


def test_models_filled_in_alike_by_assignment_still_share_one_fields_set() -> None:
    # The service fills in every case's pending inference result field by field: one set for all of them.
    first = EvalMetricResult.trusted(metric_name="a")
    second = EvalMetricResult.trusted(metric_name="b")
    for model in (first, second):
        model.score = 1.0
        model.threshold = 0.5
        model.score = 0.5  # a field already in the set changes nothing

    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.model_fields_set == {"metric_name", "score", "threshold"}
    assert EvalMetricResult.trusted(metric_name="c").model_fields_set == {"metric_name"}

    second.fromANewerVersion = 1  # type: ignore[attr-defined]  # an unknown key: a set of its own
    assert second.model_fields_set == {"metric_name", "score", "threshold", "fromANewerVersion"}
    assert first.model_fields_set == {"metric_name", "score", "threshold"}


def test_pydantics_deprecated_fields_set_gives_no_other_model_a_change() -> None:
    first = EvalMetricResult.from_json('{"metricName": "a"}')
    second = EvalMetricResult.from_json('{"metricName": "b"}')
    with pytest.warns(DeprecationWarning, match="model_fields_set"):
        first.__fields_set__.add("score")

    assert first.model_fields_set == {"metric_name", "score"}
    assert second.model_fields_set == EvalMetricResult(metric_name="c").model_fields_set == {"metric_name"}


def test_changing_the_fields_set_one_model_gives_changes_no_other_model() -> None:
    first = EvalCaseResult.from_json('{"evalId": "a", "score": 1}')
    second = EvalCaseResult.from_json('{"evalId": "b", "score": 0.5}')
    first.model_fields_set.discard("score")
    later = EvalCaseResult(eval_id="c", score=0.25)

    assert first.model_dump(exclude_unset=True) == {"evalId": "a"}
    assert second.model_dump(exclude_unset=True) == {"evalId": "b", "score": 0.5}
    assert later.model_fields_set == {"eval_id", "score"}


def test_a_model_with_unknown_keys_keeps_a_fields_set_of_its_own() -> None:
    # Unknown keys' names are open-ended: sharing sets of them would keep one per document read.
    first = EvalMetricResult.from_json('{"metricName": "a", "fromANewerVersion": 1}')
    second = EvalMetricResult.from_json('{"metricName": "b", "fromANewerVersion": 2}')
    assert first.__pydantic_fields_set__ is not second.__pydantic_fields_set__
    assert first.model_fields_set == {"metric_name", "fromANewerVersion"}


def test_a_trusted_model_takes_an_unknown_attribute_copies_and_pickles_as_a_validated_one() -> None:
    trusted = EvalMetricResult.trusted(metric_name="m", score=1.0)
    validated = EvalMetricResult(metric_name="m", score=1.0)
    assert trusted == validated and validated == trusted

    trusted.future_key = 1  # type: ignore[attr-defined]
    validated.future_key = 1  # type: ignore[attr-defined]

    assert trusted.model_extra == validated.model_extra == {"future_key": 1}
    assert EvalMetricResult.trusted(metric_name="m", score=1.0).model_extra in (None, {})
    assert pickle.loads(pickle.dumps(trusted)) == trusted
    assert copy.deepcopy(trusted) == trusted and copy.copy(trusted) == trusted
    assert trusted.to_json() == validated.to_json()


def test_replaced_is_model_copy_with_an_update() -> None:
    original = EvalMetricResult.model_validate({"metricName": "m", "score": 1, "threshold": 1, "futureKey": {"a": 1}})
    replaced = original.replaced(threshold=0.5)

    assert replaced == original.model_copy(update={"threshold": 0.5})
    assert replaced.model_fields_set == original.model_copy(update={"threshold": 0.5}).model_fields_set
    assert (original.threshold, replaced.threshold) == (1.0, 0.5)
    assert replaced.model_extra == {"futureKey": {"a": 1}}
    assert replaced.model_extra is not original.model_extra
    with pytest.raises(TypeError, match=r"unknown fields \['treshold'\]"):
        original.replaced(treshold=0.5)


def test_a_parsed_document_shares_equal_criteria() -> None:
    # A metric's criterion repeats in every result of that metric: a loaded result holds it once.
    criterion = {"finalResponse": {"text": {"caseInsensitive": True}}}
    other: dict[str, Any] = {"finalResponse": {"text": {}}}
    results = [
        {"metricName": "m", "score": 1, "threshold": 1, "criterion": criterion},
        {"metricName": "m", "score": 0, "threshold": 1, "criterion": dict(criterion)},
        {"metricName": "n", "score": 1, "threshold": 1, "criterion": other},
    ]
    text = json.dumps({"evalSetId": "s", "evalCaseResults": [{"evalId": "c", "overallEvalMetricResults": results}]})

    for parsed in (EvalSetResult.from_json(text), parse_json(text, EvalSetResult, "result")):
        first, second, third = parsed.eval_case_results[0].overall_eval_metric_results
        assert first.criterion is second.criterion
        assert first.criterion is not None and first.criterion.final_response is not None
        assert first.criterion.final_response.text == TextCriterion(case_insensitive=True)
        assert third.criterion is not first.criterion
        assert third.criterion == Criterion(final_response=FinalResponseCriterion(text=TextCriterion()))
    unshared = EvalSetResult.model_validate_json(text).eval_case_results[0].overall_eval_metric_results
    assert unshared[0].criterion == unshared[1].criterion and unshared[0].criterion is not unshared[1].criterion
