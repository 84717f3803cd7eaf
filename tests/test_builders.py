"""Tests for writing eval sets and metrics in code: ``Invocation.of``, ``EvalCase.of``, ``EvalSet.of``,
the ``EvalMetric`` constructors and the ``agenteval.criteria`` namespace."""

from __future__ import annotations

import doctest
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest

import agenteval as ae
import agenteval.metric.criterion as criterion_module
from agenteval import ConfigError, EvalCase, EvalMetric, EvalSet, Invocation, Message, SessionInput, Tool
from agenteval.criteria import JSONCriterion, JSONMatchStrategy, TextCriterion, TextMatchStrategy

# ---------------------------------------------------------------------------------------------- a scripted agent


@dataclass
class Reply:
    """What the scripted agent does for one user message."""

    text: str
    tools: list[tuple[str, dict[str, Any], Any]] = field(default_factory=list)


def scripted(replies: dict[str, Reply]) -> Callable[[str, ae.Turn], Any]:
    """An async agent that answers each user message as scripted, recording its tool calls."""

    async def agent(message: str, turn: ae.Turn) -> str:
        reply = replies[message]
        for name, arguments, result in reply.tools:
            turn.record_tool(name, arguments, result)
        return reply.text

    return agent


def evaluate(
    cases: Sequence[EvalCase], metrics: Sequence[EvalMetric], replies: dict[str, Reply]
) -> dict[tuple[str, str], ae.EvalStatus]:
    """Run the agent on the cases; the status of each (case, metric)."""
    report = ae.Evaluator("app", scripted(replies), progress=False).evaluate(
        EvalSet.of("set", cases), metrics=list(metrics)
    )
    found: dict[tuple[str, str], ae.EvalStatus] = {}
    for case in report.result.eval_case_results:
        assert case.error_message == ""
        for result in case.overall_eval_metric_results:
            assert result.eval_status is not None
            found[case.eval_id, result.metric_name] = result.eval_status
    return found


PASSED = ae.EvalStatus.PASSED
FAILED = ae.EvalStatus.FAILED
WEATHER = Tool(name="weather", arguments={"city": "SF"})


# ---------------------------------------------------------------------------------------------- Invocation.of


def test_invocation_of_holds_the_user_message_the_expected_reply_and_tools() -> None:
    turn = Invocation.of("Weather in SF?", "Sunny", tools=[WEATHER])

    assert turn.user_content == Message.user("Weather in SF?")
    assert turn.final_response == Message.assistant("Sunny")
    assert turn.tools == [WEATHER]


def test_invocation_of_without_expect_expects_no_reply_and_no_tools() -> None:
    turn = Invocation.of("Hi")

    assert turn.final_response is None
    assert turn.tools == []


def test_invocation_of_with_an_empty_expect_expects_an_empty_reply() -> None:
    assert Invocation.of("Hi", "").final_response == Message.assistant("")


# ---------------------------------------------------------------------------------------------- EvalCase.of


def test_case_of_one_inline_turn() -> None:
    case = EvalCase.of("sf", "Weather in SF?", expect="Sunny", tools=[WEATHER])

    assert case.eval_id == "sf"
    assert case.conversation == [Invocation.of("Weather in SF?", "Sunny", tools=[WEATHER])]
    assert case.session_input == SessionInput(user_id="user")


def test_case_of_several_turns_with_session_and_context() -> None:
    state = {"units": "metric"}
    context = [Message.system("You are a weather bot.")]

    case = EvalCase.of(
        "chat",
        Invocation.of("Hi", "Hello!"),
        Invocation.of("Weather in SF?", "Sunny", tools=[WEATHER]),
        user_id="alice",
        state=state,
        context=context,
    )
    state["units"] = "imperial"

    assert [turn.user_content for turn in case.conversation] == [Message.user("Hi"), Message.user("Weather in SF?")]
    assert case.session_input == SessionInput(user_id="alice", state={"units": "metric"})
    assert case.context_messages == context


def test_a_case_from_of_survives_a_json_round_trip() -> None:
    case = EvalCase.of("sf", "Weather in SF?", expect="Sunny", tools=[WEATHER], state={"k": 1})

    assert EvalCase.from_json(case.to_json()) == case


@pytest.mark.parametrize(
    ("eval_id", "turns", "options", "message"),
    [
        ("", ("Hi",), {}, "eval_id is empty"),
        ("x", (), {}, "EvalCase.of('x'): no turns"),
        ("x", ("Hi", "Hello"), {}, "2 plain messages are ambiguous (is the second a reply, or another turn?)"),
        ("x", (Invocation.of("Hi"), "Bye"), {}, "a plain message among Invocation.of(...) turns is ambiguous"),
        ("x", ("Hi", Invocation.of("Bye")), {"expect": "Hello"}, "a plain message among Invocation.of(...) turns"),
        ("x", (Invocation.of("Hi"),), {"expect": "Hello"}, "expect= and tools= describe a single inline turn"),
        ("x", (Invocation.of("Hi"),), {"tools": [WEATHER]}, "give each turn its own"),
        ("x", (Message.user("Hi"),), {}, "turn 0 is a Message; give a user message (str) or Invocation.of"),
    ],
)
def test_case_of_refuses_what_it_cannot_read(
    eval_id: str, turns: tuple[Any, ...], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        EvalCase.of(eval_id, *turns, **options)


# ---------------------------------------------------------------------------------------------- EvalSet.of


def test_set_of_keeps_the_cases_in_order() -> None:
    cases = (EvalCase.of(name, f"say {name}", expect=name) for name in ("b", "a"))

    es = EvalSet.of("set", cases, name="Set", description="two cases")

    assert (es.eval_set_id, es.name, es.description) == ("set", "Set", "two cases")
    assert [case.eval_id for case in es.eval_cases] == ["b", "a"]


@pytest.mark.parametrize(
    ("eval_set_id", "ids", "message"),
    [
        ("", ["a"], "eval_set_id is empty"),
        ("set", ["a", "", "b", ""], "no eval_id on the case(s) at index 1, 3"),
        ("set", ["a", "b", "a", "c", "b"], "more than one case has the id 'a' or 'b'"),
    ],
)
def test_set_of_refuses_cases_that_cannot_be_told_apart(eval_set_id: str, ids: list[str], message: str) -> None:
    cases = [EvalCase(eval_id=eval_id, conversation=[Invocation.of("Hi")]) for eval_id in ids]

    with pytest.raises(ConfigError, match=re.escape(message)):
        EvalSet.of(eval_set_id, cases)


# ---------------------------------------------------------------------------------------------- EvalMetric constructors


FUZZY: Any = "fuzzy"
"""A value no ``Literal`` option allows, typed so that the type checker lets it through."""


def one_of_each() -> list[EvalMetric]:
    return [
        EvalMetric.tool_trajectory(),
        EvalMetric.final_response(),
        EvalMetric.rouge(f1=0.5),
        EvalMetric.json(),
    ]


def test_one_metric_of_each_kind_has_unique_names_threshold_one_and_an_evaluator() -> None:
    metrics = one_of_each()

    assert [metric.metric_name for metric in metrics] == [
        "tool_trajectory_avg_score",
        "final_response_avg_score",
        "final_response_rouge",
        "final_response_json",
    ]
    assert [metric.evaluator_name for metric in metrics] == [
        "tool_trajectory_avg_score",
        "final_response_avg_score",
        "final_response_avg_score",
        "final_response_avg_score",
    ]
    assert {metric.threshold for metric in metrics} == {1.0}


def test_name_and_threshold_can_be_overridden() -> None:
    metric = EvalMetric.final_response("contains", threshold=0.5, name="mentions")

    assert (metric.metric_name, metric.evaluator_name, metric.threshold) == (
        "mentions",
        "final_response_avg_score",
        0.5,
    )


@pytest.mark.parametrize("metric", one_of_each(), ids=lambda metric: metric.metric_name)
def test_constructed_metrics_survive_a_json_round_trip(metric: EvalMetric) -> None:
    assert EvalMetric.from_json(metric.to_json()) == metric


def test_tool_trajectory_defaults_compare_name_and_arguments_exactly_and_not_results() -> None:
    tool_trajectory = EvalMetric.tool_trajectory().criterion
    assert tool_trajectory is not None and tool_trajectory.tool_trajectory is not None
    strategy = tool_trajectory.tool_trajectory.default_strategy

    assert strategy is not None
    assert strategy.name == TextCriterion(match_strategy=TextMatchStrategy.EXACT)
    assert strategy.arguments == JSONCriterion(match_strategy=JSONMatchStrategy.EXACT)
    assert strategy.result is None


def test_json_keys_become_trees() -> None:
    ignoring = EvalMetric.json(ignore_keys=["id", "at"]).criterion
    only = EvalMetric.json(only_keys=["answer"]).criterion
    assert ignoring is not None and ignoring.final_response is not None and ignoring.final_response.json_ is not None
    assert only is not None and only.final_response is not None and only.final_response.json_ is not None

    assert ignoring.final_response.json_.ignore_tree == {"id": True, "at": True}
    assert only.final_response.json_.only_tree == {"answer": True}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: EvalMetric.final_response(FUZZY), "match='fuzzy' is not one of 'exact', 'contains', 'regex'"),
        (lambda: EvalMetric.tool_trajectory(arguments=FUZZY), "arguments='fuzzy' is not one of 'exact', 'ignore'"),
        (lambda: EvalMetric.tool_trajectory(results=FUZZY), "results='fuzzy' is not one of 'exact', 'ignore'"),
        (lambda: EvalMetric.tool_trajectory(threshold=80), "threshold must be between 0 and 1, got 80"),
        (lambda: EvalMetric.final_response(threshold=-0.1), "threshold must be between 0 and 1"),
        (lambda: EvalMetric.final_response(threshold=float("nan")), "threshold must be between 0 and 1, got nan"),
        (lambda: EvalMetric.final_response(name=""), "name is empty"),
        (lambda: EvalMetric.rouge("rougeX", f1=0.5), "unknown rouge_type 'rougeX'"),
        (lambda: EvalMetric.rouge(), "f1, precision and recall are all 0, so every reply would pass"),
        (lambda: EvalMetric.rouge(recall=1.5), "recall must be between 0 and 1, got 1.5"),
        (lambda: EvalMetric.json(ignore_keys=["a"], only_keys=["b"]), "give ignore_keys or only_keys, not both"),
        (
            lambda: EvalMetric.json(ignore_keys="id"),
            r"ignore_keys must be a list of str, got str 'id'; wrap it in a list: ignore_keys=\['id'\]",
        ),
        (lambda: EvalMetric.json(number_tolerance=-1), "number_tolerance must be a non-negative number, got -1"),
    ],
)
def test_metric_constructors_refuse_bad_arguments(build: Callable[[], EvalMetric], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build()


def wrong(value: object) -> Any:
    """``value``, for an argument its type does not fit (as an untyped notebook may pass it)."""
    return value


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: EvalMetric.rouge(wrong(0.7)), "EvalMetric.rouge: rouge_type must be a str, got float 0.7"),
        (lambda: EvalMetric.rouge(f1=wrong("0.5")), "EvalMetric.rouge: f1 must be a number, got str '0.5'"),
        (
            lambda: EvalMetric.rouge(f1=0.5, use_stemmer=wrong("yes")),
            "use_stemmer must be True or False, got str 'yes'",
        ),
        (
            lambda: EvalMetric.rouge(f1=0.5, tokenizer_name=wrong(None)),
            "tokenizer_name must be a str, got NoneType None",
        ),
        (
            lambda: EvalMetric.final_response(threshold=wrong("0.8")),
            "EvalMetric.final_response: threshold must be a number, got str '0.8'",
        ),
        (lambda: EvalMetric.final_response(threshold=True), "threshold must be a number, got bool True"),
        (lambda: EvalMetric.final_response(case_insensitive=wrong("no")), "case_insensitive must be True or False"),
        (lambda: EvalMetric.final_response(name=wrong(3)), "EvalMetric.final_response: name must be a str, got int 3"),
        (
            lambda: EvalMetric.tool_trajectory(threshold=wrong("1")),
            "EvalMetric.tool_trajectory: threshold must be a number, got str '1'",
        ),
        (lambda: EvalMetric.tool_trajectory(subset=wrong(1)), "subset must be True or False, got int 1"),
        (lambda: EvalMetric.json(threshold=wrong("1")), "EvalMetric.json: threshold must be a number, got str '1'"),
        (
            lambda: EvalMetric.json(number_tolerance=wrong("0.1")),
            "number_tolerance must be a number or None, got str '0.1'",
        ),
        (lambda: EvalMetric.json(only_keys=wrong(["a", 1])), "only_keys[1] must be a str, got int 1"),
    ],
)
def test_metric_constructors_refuse_an_argument_of_the_wrong_type(
    build: Callable[[], EvalMetric], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        build()


@pytest.mark.parametrize("threshold", [1, 0.5, np.float32(0.5), np.float64(0.5), np.int64(1)])
def test_a_threshold_may_be_any_real_number(threshold: Any) -> None:
    metrics = [
        EvalMetric.tool_trajectory(threshold=threshold),
        EvalMetric.final_response(threshold=threshold),
        EvalMetric.rouge(f1=threshold, threshold=threshold),
        EvalMetric.json(threshold=threshold),
    ]
    assert [metric.threshold for metric in metrics] == [float(threshold)] * 4


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: EvalCase.of("c", "hi", tools=wrong(WEATHER)),
            "EvalCase.of('c'): tools must be a list of Tool, got a Tool; wrap it in a list: tools=[Tool(...)]",
        ),
        (
            lambda: Invocation.of("hi", tools=wrong(WEATHER)),
            "Invocation.of: tools must be a list of Tool, got a Tool; wrap it in a list: tools=[Tool(...)]",
        ),
        (
            lambda: EvalCase.of("c", "hi", tools=wrong([WEATHER, "add"])),
            "EvalCase.of('c'): tools[1] must be a Tool, got str",
        ),
        (
            lambda: Invocation.of("hi", tools=wrong([{"name": "add"}])),
            "Invocation.of: tools[0] must be a Tool, got dict",
        ),
        (lambda: Invocation.of("hi", tools=wrong("weather")), "Invocation.of: tools must be a list of Tool, got str"),
        (lambda: Invocation.of(wrong(["hi"])), "Invocation.of: user must be a str, got list ['hi']"),
        (lambda: Invocation.of("hi", wrong(5)), "Invocation.of: expect must be a str or None, got int 5"),
        (lambda: EvalCase.of(wrong(1), "hi"), "EvalCase.of(1): eval_id must be a str, got int 1"),
        (lambda: EvalCase.of("c", "hi", expect=wrong(5)), "EvalCase.of('c'): expect must be a str or None, got int 5"),
        (lambda: EvalCase.of("c", "hi", user_id=wrong(7)), "EvalCase.of('c'): user_id must be a str, got int 7"),
        (
            lambda: EvalCase.of("c", "hi", state=wrong([("k", 1)])),
            "EvalCase.of('c'): state must be a dict or None, got list",
        ),
        (
            lambda: EvalCase.of("c", "hi", context=wrong(Message.system("Be brief"))),
            "context must be a list of Message, got a Message; wrap it in a list: context=[Message(...)]",
        ),
        (lambda: EvalSet.of("s", wrong(["hi"])), "EvalSet.of('s'): cases[0] must be an EvalCase, got str 'hi'"),
        (
            lambda: EvalSet.of("s", wrong(EvalCase.of("c", "hi"))),
            "EvalSet.of('s'): cases must be a list of EvalCase, got an EvalCase; "
            "wrap it in a list: cases=[EvalCase(...)]",
        ),
        (lambda: EvalSet.of("s", wrong(case for case in ["hi"])), "EvalSet.of('s'): cases[0] must be an EvalCase"),
        (lambda: EvalSet.of(wrong(None), []), "EvalSet.of(None): eval_set_id must be a str, got NoneType None"),
        (lambda: EvalSet.of("s", [], name=wrong(1)), "EvalSet.of('s'): name must be a str, got int 1"),
    ],
)
def test_eval_set_builders_refuse_an_argument_of_the_wrong_type(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        build()


def test_builders_take_any_mapping_and_any_sequence() -> None:
    case = EvalCase.of("c", "hi", tools=(WEATHER,), state=MappingProxyType({"k": 1}), context=(Message.system("x"),))

    assert (case.conversation[0].tools, case.session_input) == ([WEATHER], SessionInput(user_id="user", state={"k": 1}))
    assert EvalSet.of("s", (case,)).eval_cases == [case]


# ---------------------------------------------------------------------------------------------- scoring, end to end

SF = "Weather in SF?"


def weather_case(*tools: Tool) -> EvalCase:
    return EvalCase.of("sf", SF, expect="Sunny", tools=tools)


def called(*tools: tuple[str, dict[str, Any], Any]) -> dict[str, Reply]:
    return {SF: Reply("Sunny", list(tools))}


def test_constructed_metrics_pass_a_matching_agent_and_fail_another() -> None:
    forecast = '{"city": "SF", "temp": 20}'
    case = EvalCase.of("sf", SF, expect=forecast, tools=[WEATHER])
    matching = called(("weather", {"city": "SF"}, {"sky": "clear"}))
    matching[SF].text = forecast
    wrong = {SF: Reply('{"error": "unknown city"}', [("weather", {"city": "LA"}, None)])}
    names = [metric.metric_name for metric in one_of_each()]

    assert evaluate([case], one_of_each(), matching) == {("sf", name): PASSED for name in names}
    assert evaluate([case], one_of_each(), wrong) == {("sf", name): FAILED for name in names}


@pytest.mark.parametrize(
    ("metric", "actual", "status"),
    [
        (EvalMetric.tool_trajectory(), ("weather", {"city": "SF"}, "sunny"), PASSED),
        (EvalMetric.tool_trajectory(), ("weather", {"city": "LA"}, "sunny"), FAILED),
        (EvalMetric.tool_trajectory(), ("forecast", {"city": "SF"}, "sunny"), FAILED),
        (EvalMetric.tool_trajectory(arguments="ignore"), ("weather", {"city": "LA"}, "sunny"), PASSED),
        (EvalMetric.tool_trajectory(arguments="ignore"), ("forecast", {"city": "SF"}, "sunny"), FAILED),
        (EvalMetric.tool_trajectory(results="exact"), ("weather", {"city": "SF"}, "sunny"), FAILED),
        (EvalMetric.tool_trajectory(results="exact"), ("weather", {"city": "SF"}, None), PASSED),
    ],
)
def test_tool_trajectory_compares_names_arguments_and_results_as_asked(
    metric: EvalMetric, actual: tuple[str, dict[str, Any], Any], status: ae.EvalStatus
) -> None:
    statuses = evaluate([weather_case(WEATHER)], [metric], called(actual))

    assert statuses == {("sf", "tool_trajectory_avg_score"): status}


def test_tool_trajectory_order_and_subset() -> None:
    expected = [Tool(name="a"), Tool(name="b")]
    reversed_calls = called(("b", {}, None), ("a", {}, None))
    extra_call = called(("a", {}, None), ("c", {}, None), ("b", {}, None))
    name = "tool_trajectory_avg_score"
    any_order = EvalMetric.tool_trajectory(arguments="ignore")
    in_order = EvalMetric.tool_trajectory(arguments="ignore", order_sensitive=True)
    subset = EvalMetric.tool_trajectory(arguments="ignore", subset=True)

    assert evaluate([weather_case(*expected)], [any_order], reversed_calls) == {("sf", name): PASSED}
    assert evaluate([weather_case(*expected)], [in_order], reversed_calls) == {("sf", name): FAILED}
    assert evaluate([weather_case(*expected)], [any_order], extra_call) == {("sf", name): FAILED}
    assert evaluate([weather_case(*expected)], [subset], extra_call) == {("sf", name): PASSED}


@pytest.mark.parametrize(
    ("metric", "reply", "status"),
    [
        (EvalMetric.final_response(), "Sunny", PASSED),
        (EvalMetric.final_response(), "sunny", FAILED),
        (EvalMetric.final_response(case_insensitive=True), "SUNNY", PASSED),
        (EvalMetric.final_response("contains"), "It is Sunny today", PASSED),
        (EvalMetric.final_response("contains"), "It is sunny today", FAILED),
        (EvalMetric.final_response("contains", case_insensitive=True), "It is sunny today", PASSED),
        (EvalMetric.final_response("regex"), "Cloudy", FAILED),
    ],
)
def test_final_response_matches_text_as_asked(metric: EvalMetric, reply: str, status: ae.EvalStatus) -> None:
    statuses = evaluate([weather_case()], [metric], {SF: Reply(reply)})

    assert statuses == {("sf", "final_response_avg_score"): status}


def test_final_response_regex_uses_the_expected_text_as_the_pattern() -> None:
    case = EvalCase.of("sf", SF, expect=r"\d+ degrees")
    metric = EvalMetric.final_response("regex")

    assert evaluate([case], [metric], {SF: Reply("Sunny, 21 degrees")}) == {("sf", metric.metric_name): PASSED}
    assert evaluate([case], [metric], {SF: Reply("Sunny")}) == {("sf", metric.metric_name): FAILED}


def test_final_response_threshold_is_over_the_mean_of_the_turns() -> None:
    case = EvalCase.of("chat", Invocation.of("Hi", "Hello"), Invocation.of("Bye", "Goodbye"))
    replies = {"Hi": Reply("Hello"), "Bye": Reply("See you")}

    strict = evaluate([case], [EvalMetric.final_response()], replies)
    lenient = evaluate([case], [EvalMetric.final_response(threshold=0.5)], replies)

    assert strict == {("chat", "final_response_avg_score"): FAILED}
    assert lenient == {("chat", "final_response_avg_score"): PASSED}


@pytest.mark.parametrize(
    ("metric", "reply", "status"),
    [
        (EvalMetric.rouge(f1=0.8), "the weather in san francisco is sunny", PASSED),
        (EvalMetric.rouge(f1=0.8), "it will rain all week", FAILED),
        (EvalMetric.rouge("rouge1", recall=1.0), "today the weather in san francisco is sunny and warm", PASSED),
        (EvalMetric.rouge("rouge1", precision=1.0), "today the weather in san francisco is sunny and warm", FAILED),
    ],
)
def test_rouge_passes_when_every_minimum_is_met(metric: EvalMetric, reply: str, status: ae.EvalStatus) -> None:
    case = EvalCase.of("sf", SF, expect="The weather in San Francisco is sunny.")

    assert evaluate([case], [metric], {SF: Reply(reply)}) == {("sf", "final_response_rouge"): status}


def test_rouge_stemming_matches_word_forms() -> None:
    case = EvalCase.of("sf", SF, expect="running dogs")
    reply = {SF: Reply("runs dog")}

    assert evaluate([case], [EvalMetric.rouge("rouge1", f1=1.0)], reply) == {("sf", "final_response_rouge"): FAILED}
    assert evaluate([case], [EvalMetric.rouge("rouge1", f1=1.0, use_stemmer=True)], reply) == {
        ("sf", "final_response_rouge"): PASSED
    }


@pytest.mark.parametrize(
    ("metric", "reply", "status"),
    [
        (EvalMetric.json(), '{"temp": 20.0000001, "city": "SF", "id": 1}', PASSED),
        (EvalMetric.json(), '{"temp": 21, "city": "SF", "id": 1}', FAILED),
        (EvalMetric.json(), "It is 20 degrees in SF", FAILED),
        (EvalMetric.json(number_tolerance=1), '{"temp": 21, "city": "SF", "id": 1}', PASSED),
        (EvalMetric.json(), '{"temp": 20, "city": "SF", "id": 2}', FAILED),
        (EvalMetric.json(ignore_keys=["id"]), '{"temp": 20, "city": "SF", "id": 2}', PASSED),
        (EvalMetric.json(ignore_keys=["id"]), '{"temp": 20, "city": "SF"}', PASSED),
        (EvalMetric.json(only_keys=["temp"]), '{"temp": 20, "city": "LA", "rain": false}', PASSED),
        (EvalMetric.json(only_keys=["temp"]), '{"temp": 25, "city": "SF", "id": 1}', FAILED),
        (EvalMetric.json(schema={"required": ["wind"]}), '{"temp": 20, "city": "SF", "id": 1}', FAILED),
        (EvalMetric.json(schema={"required": ["temp"]}), '{"temp": 20, "city": "SF", "id": 1}', PASSED),
    ],
)
def test_json_compares_replies_as_json(metric: EvalMetric, reply: str, status: ae.EvalStatus) -> None:
    case = EvalCase.of("sf", SF, expect='{"city": "SF", "temp": 20, "id": 1}')

    assert evaluate([case], [metric], {SF: Reply(reply)}) == {("sf", "final_response_json"): status}


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (EvalMetric.json(schema={"type": "no-such-type"}), r"final_response_json.*schema is not a valid JSON Schema"),
        (EvalMetric.rouge(f1=0.5, tokenizer_name="nope"), r"final_response_rouge.*nope"),
    ],
)
def test_what_only_the_evaluation_can_check_is_refused_before_the_agent_runs(metric: EvalMetric, message: str) -> None:
    calls: list[str] = []

    def agent(text: str) -> str:
        calls.append(text)
        return text

    evaluator = ae.Evaluator("app", agent, progress=False)
    with pytest.raises(ConfigError, match=message):
        evaluator.evaluate(EvalSet.of("set", [weather_case()]), metrics=[metric])
    assert calls == []


# ---------------------------------------------------------------------------------------------- docstring examples


@pytest.mark.parametrize(
    "method",
    [
        Invocation.of,
        EvalCase.of,
        EvalSet.of,
        EvalMetric.tool_trajectory,
        EvalMetric.final_response,
        EvalMetric.rouge,
        EvalMetric.json,
    ],
    ids=lambda method: method.__qualname__,
)
def test_docstring_examples_run(method: Callable[..., Any]) -> None:
    module = inspect.getmodule(method)
    assert module is not None
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(method, method.__qualname__, globs=vars(module).copy())

    assert [test.examples for test in tests if test.examples], f"{method.__qualname__} has no example"
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


# ---------------------------------------------------------------------------------------------- ae.criteria


def test_criteria_namespace_has_every_criterion_class() -> None:
    classes = {name for name in criterion_module.__all__ if inspect.isclass(getattr(criterion_module, name))}

    assert classes <= set(ae.criteria.__all__)
    assert ae.criteria.__all__ == sorted(ae.criteria.__all__)
    for name in classes:
        assert getattr(ae.criteria, name) is getattr(criterion_module, name)
    assert ae.criteria.TextCriterion is TextCriterion


def test_error_type_is_exported() -> None:
    from agenteval.evalresult import ErrorType
    from agenteval.evalresult.models import ErrorType as DefinedErrorType

    assert ae.ErrorType is ErrorType is DefinedErrorType
