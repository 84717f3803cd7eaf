"""Read Google ADK eval files into eval sets: ``*.evalset.json`` (ADK's ``EvalSet``) and ``*.test.json``.

Needs ``pip install 'agenteval[adk]'``: the files are parsed with ADK's own models and converters
(``google.adk.evaluation``), then mapped to agenteval's. Example::

    import agenteval as ae
    from agenteval.adapters.adk import ADKRunner
    from agenteval.importers.adk import read_eval_set

    eval_set = read_eval_set("my_agent/weather.evalset.json")
    report = ae.Evaluator("weather-app", ADKRunner(root_agent)).evaluate(eval_set, metrics=metrics)

Three layouts are read, told apart by their content (as ADK's own loader does):

- ADK's ``EvalSet`` (a JSON object), what ``adk web`` and ``adk eval`` write;
- a test file (``*.test.json``): a JSON list of turns, each with ``query``, ``expected_tool_use``
  (``tool_name``, ``tool_input``, optionally ``mock_tool_output``), ``reference`` and
  ``expected_intermediate_agent_responses``; it is one case, named after the file, as ADK's
  ``AgentEvaluator`` reads it;
- the older eval-set list: cases as ``{"name", "data": [turns], "initial_session"}``.

What maps: case ids; each turn's user text, expected final response (``reference``), tool calls
(name, arguments, and the function response as result) and intermediate responses; the session
input (app name, user id, state); conversation scenarios (starting prompt and plan). A test file's
``mock_tool_output`` becomes a ``toolMock`` rule answering that call (ADK's early evaluator mocked
tools with it). Anything else the file holds (rubrics, expected final session state, timings,
token usage, non-text parts, …) has no place in agenteval: it is left out with one
:class:`~agenteval.errors.DroppedDataWarning` per file that names every such field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agenteval._util.files import load_foreign_json
from agenteval.errors import ConfigError, DroppedDataWarning, MissingDependencyError, warn_user
from agenteval.evalset.message import Message
from agenteval.evalset.models import (
    ArgumentsMatch,
    ConversationScenario,
    EvalCase,
    EvalSet,
    Invocation,
    MockTool,
    SessionInput,
    Tool,
    ToolMock,
)

try:
    from google.adk.evaluation import eval_case as adk_case
    from google.adk.evaluation.eval_set import EvalSet as ADKEvalSet
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
    from google.genai import types
except ImportError:
    raise MissingDependencyError("reading ADK eval files", "adk", "google-adk") from None

__all__ = ["read_eval_set", "read_eval_sets"]

EVAL_SET_SUFFIX = ".evalset.json"
TEST_FILE_SUFFIX = ".test.json"

_TURN_KEYS = {"query", "expected_tool_use", "expected_intermediate_agent_responses", "reference"}
_TOOL_USE_KEYS = {"tool_name", "tool_input", "mock_tool_output"}
_CASE_KEYS = {"name", "data", "initial_session"}
_SESSION_KEYS = {"app_name", "user_id", "state"}


def read_eval_set(path: str | Path, *, initial_session_file: str | Path | None = None) -> EvalSet:
    """Read one ADK eval file (see the module's description of the layouts read).

    Args:
        path: An ADK ``*.evalset.json`` or ``*.test.json`` file.
        initial_session_file: For a test file (or an older eval-set list) without a session: a
            JSON file with ``app_name``, ``user_id`` and ``state``, as ADK's
            ``AgentEvaluator.evaluate(initial_session_file=...)`` takes it.

    Returns:
        The eval set. An ADK ``EvalSet`` keeps its id; a test file's set and its one case are
        named after the file (``weather`` for ``weather.test.json``), an older list's set too.

    Raises:
        ConfigError: The file cannot be read or is not a regular file (a FIFO, a directory), is not
            JSON (or nests too deeply, or holds an integer of more digits than Python reads), is not
            in an ADK layout, or gives two cases the same id; the message names the file and the
            field at fault. An initial session file given with an ADK ``EvalSet``, whose cases hold
            their own sessions.
    """
    path = Path(path)
    data = load_foreign_json(path)
    dropped: list[str] = []
    if isinstance(data, dict):
        if initial_session_file is not None:
            raise ConfigError(
                f"{path}: an ADK EvalSet holds each case's session (session_input); "
                "initial_session_file applies to test files only"
            )
        eval_set = _mapped_set(_validated(path, data), dropped)
    else:
        initial = _initial_session(Path(initial_session_file)) if initial_session_file is not None else {}
        eval_set = _legacy_set(path, data, initial, dropped)
    _refuse_repeated_ids(path, eval_set)
    if dropped:
        warn_user(f"{path}: left out, as agenteval has no place for them: {', '.join(dropped)}", DroppedDataWarning)
    return eval_set


def read_eval_sets(directory: str | Path, *, initial_session_file: str | Path | None = None) -> list[EvalSet]:
    """Read every ADK eval file under a directory (recursively), as ADK's ``adk eval`` finds them.

    Args:
        directory: Where to look for ``*.evalset.json`` and ``*.test.json`` files.
        initial_session_file: As for :func:`read_eval_set`, for the test files.

    Returns:
        One eval set per file, in the order of their paths.

    Raises:
        ConfigError: ``directory`` is not a directory or holds no such file, two files give the
            same eval set id, or a file cannot be read (see :func:`read_eval_set`).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError(f"{directory} is not a directory; give the folder that holds the ADK eval files")
    paths = sorted(path for path in directory.rglob("*") if path.name.endswith((EVAL_SET_SUFFIX, TEST_FILE_SUFFIX)))
    if not paths:
        raise ConfigError(f"{directory} holds no *{EVAL_SET_SUFFIX} or *{TEST_FILE_SUFFIX} file")
    eval_sets: list[EvalSet] = []
    read_from: dict[str, Path] = {}
    for path in paths:
        eval_set = read_eval_set(
            path, initial_session_file=initial_session_file if path.name.endswith(TEST_FILE_SUFFIX) else None
        )
        if eval_set.eval_set_id in read_from:
            raise ConfigError(
                f"{path} and {read_from[eval_set.eval_set_id]} both give the eval set id {eval_set.eval_set_id!r}; "
                "rename one of them (or read them one at a time with read_eval_set)"
            )
        read_from[eval_set.eval_set_id] = path
        eval_sets.append(eval_set)
    return eval_sets


def _refuse_repeated_ids(path: Path, eval_set: EvalSet) -> None:
    # Results are matched to cases by id: agenteval refuses to evaluate a set that repeats one.
    counts = Counter(case.eval_id for case in eval_set.eval_cases)
    repeated = [eval_id for eval_id, count in counts.items() if count > 1]
    if repeated:
        raise ConfigError(
            f"{path}: more than one case has the id {' or '.join(map(repr, repeated))}: give each case its own eval id"
        )


def _initial_session(path: Path) -> dict[str, Any]:
    session = load_foreign_json(path)
    if not isinstance(session, dict):
        raise ConfigError(f"{path}: an initial session file holds an object with app_name, user_id and state")
    return session


def _validated(path: Path, data: dict[str, Any]) -> ADKEvalSet:
    try:
        return ADKEvalSet.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{path} is not an ADK EvalSet: {_problems(error)}") from None


def _problems(error: ValidationError) -> str:
    """The first few problems pydantic found, each as ``where: what``."""
    return "; ".join(f"{_location(issue['loc'])}: {issue['msg']}" for issue in error.errors(include_url=False)[:5])


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text.lstrip(".") or "(top level)"


# The older layouts: ADK's converter reads them (and fails with a bare KeyError on a missing key),
# so their shape is checked first, naming the field, and the keys the converter drops are collected.


def _legacy_set(path: Path, data: Any, initial_session: Any, dropped: list[str]) -> EvalSet:
    stem = path.name.removesuffix(TEST_FILE_SUFFIX).removesuffix(EVAL_SET_SUFFIX).removesuffix(".json")
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) for item in data):
        raise ConfigError(
            f"{path} is not an ADK eval file: expected an EvalSet object, a list of turns (a test file) "
            "or a list of cases"
        )
    if all("query" in item for item in data):
        cases = [{"name": stem, "data": data, "initial_session": initial_session}]
        wheres = [""]
    elif all("data" in item for item in data):
        cases = [{"initial_session": initial_session, **case} for case in data]
        wheres = [f"[{index}]." for index in range(len(data))]
    else:
        raise ConfigError(
            f"{path}: each item must be a turn (with a query, as in a test file) or a case (with its data), "
            "not a mix of them or neither"
        )
    mocks = [
        [_tool_mocks(turn) for turn in _checked_case(path, case, where, dropped)]
        for case, where in zip(cases, wheres, strict=True)
    ]
    try:
        adk_set = convert_eval_set_to_pydantic_schema(stem, cases)
    except ValidationError as error:
        raise ConfigError(f"{path}: {error.title}: {_problems(error)}") from None
    # The converter fills only fields that map, but the authors of intermediate responses, which
    # _checked_case has reported in the file's own terms.
    eval_set = _mapped_set(adk_set, [])
    for eval_case, case_mocks in zip(eval_set.eval_cases, mocks, strict=True):
        for turn, rules in zip(eval_case.conversation, case_mocks, strict=True):
            turn.tool_mock = ToolMock(actual=rules) if rules else None
    return eval_set


def _checked_case(path: Path, case: dict[str, Any], where: str, dropped: list[str]) -> list[dict[str, Any]]:
    """Check one case of an older layout, collect the keys ADK's converter drops; return its turns."""
    if where:
        _require(path, case, "name", str, where)
        _require(path, case, "data", list, where)
        dropped.extend(f"{where}{key}" for key in case if key not in _CASE_KEYS)
    session = case.get("initial_session")
    if not isinstance(session, dict):
        raise ConfigError(f"{path}: {where}initial_session must be an object with app_name, user_id and state")
    dropped.extend(f"{where}initial_session.{key}" for key in session if key not in _SESSION_KEYS)
    turns: list[dict[str, Any]] = case["data"]
    for index, turn in enumerate(turns):
        at = f"{where}data[{index}]." if where else f"[{index}]."
        if not isinstance(turn, dict):
            raise ConfigError(f"{path}: {at.rstrip('.')} must be an object with a query")
        _require(path, turn, "query", str, at)
        dropped.extend(f"{at}{key}" for key in turn if key not in _TURN_KEYS)
        for number, tool_use in enumerate(_listed(path, turn, "expected_tool_use", at)):
            tool_at = f"{at}expected_tool_use[{number}]."
            _require(path, tool_use, "tool_name", str, tool_at)
            _require(path, tool_use, "tool_input", dict, tool_at)
            dropped.extend(f"{tool_at}{key}" for key in tool_use if key not in _TOOL_USE_KEYS)
        for number, response in enumerate(_listed(path, turn, "expected_intermediate_agent_responses", at)):
            response_at = f"{at}expected_intermediate_agent_responses[{number}]."
            _require(path, response, "author", str, response_at)
            _require(path, response, "text", str, response_at)
            dropped.extend(f"{response_at}{key}" for key in response if key != "text")
    return turns


def _listed(path: Path, turn: dict[str, Any], key: str, at: str) -> list[dict[str, Any]]:
    items = turn.get(key, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ConfigError(f"{path}: {at}{key} must be a list of objects")
    return items


_KIND_NAMES: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}


def _require(path: Path, item: dict[str, Any], key: str, kind: type, at: str) -> None:
    if key not in item:
        raise ConfigError(f"{path}: {at}{key} is missing")
    if not isinstance(item[key], kind):
        raise ConfigError(f"{path}: {at}{key} must be {_KIND_NAMES[kind]}, got {type(item[key]).__name__}")


def _tool_mocks(turn: dict[str, Any]) -> list[MockTool]:
    return [
        MockTool(
            name=tool_use["tool_name"],
            arguments=ArgumentsMatch(expected=tool_use["tool_input"]),
            result=tool_use["mock_tool_output"],
        )
        for tool_use in turn.get("expected_tool_use", [])
        if "mock_tool_output" in tool_use
    ]


# ADK's models → agenteval's. Each _mapped_* lists the fields it maps; any other field that holds
# something (including fields of future ADK versions) is reported by _unmapped.


def _mapped_set(adk_set: ADKEvalSet, dropped: list[str]) -> EvalSet:
    _unmapped(adk_set, {"eval_set_id", "name", "description", "eval_cases", "creation_timestamp"}, "", dropped)
    return EvalSet(
        eval_set_id=adk_set.eval_set_id,
        name=adk_set.name or "",
        description=adk_set.description or "",
        eval_cases=[
            _mapped_case(case, f"eval_cases[{index}].", dropped) for index, case in enumerate(adk_set.eval_cases)
        ],
        creation_timestamp=adk_set.creation_timestamp or None,
    )


def _mapped_case(case: adk_case.EvalCase, at: str, dropped: list[str]) -> EvalCase:
    _unmapped(
        case, {"eval_id", "conversation", "conversation_scenario", "session_input", "creation_timestamp"}, at, dropped
    )
    scenario = case.conversation_scenario
    if scenario is not None:
        _unmapped(scenario, {"starting_prompt", "conversation_plan"}, f"{at}conversation_scenario.", dropped)
    session = case.session_input
    if session is not None:
        _unmapped(session, {"app_name", "user_id", "state"}, f"{at}session_input.", dropped)
    return EvalCase(
        eval_id=case.eval_id,
        conversation=[
            _mapped_turn(turn, f"{at}conversation[{index}].", dropped)
            for index, turn in enumerate(case.conversation or [])
        ],
        conversation_scenario=ConversationScenario(
            starting_prompt=scenario.starting_prompt, conversation_plan=scenario.conversation_plan
        )
        if scenario is not None
        else None,
        session_input=SessionInput(app_name=session.app_name, user_id=session.user_id, state=dict(session.state))
        if session is not None
        else None,
        creation_timestamp=case.creation_timestamp or None,
    )


def _mapped_turn(turn: adk_case.Invocation, at: str, dropped: list[str]) -> Invocation:
    _unmapped(
        turn,
        {"invocation_id", "user_content", "final_response", "intermediate_data", "creation_timestamp"},
        at,
        dropped,
    )
    tools, intermediate = _intermediate(turn.intermediate_data, f"{at}intermediate_data.", dropped)
    final = turn.final_response
    return Invocation(
        invocation_id=turn.invocation_id,
        user_content=Message.user(_text(turn.user_content, f"{at}user_content", dropped)),
        final_response=Message.assistant(_text(final, f"{at}final_response", dropped)) if final is not None else None,
        tools=tools,
        intermediate_responses=intermediate,
        creation_timestamp=turn.creation_timestamp or None,
    )


def _intermediate(
    data: adk_case.IntermediateDataType | None, at: str, dropped: list[str]
) -> tuple[list[Tool], list[Message]]:
    """The tool calls (with their responses as results) and the intermediate responses of a turn."""
    if data is None:
        return [], []
    if isinstance(data, adk_case.IntermediateData):
        replies = []
        for index, (author, parts) in enumerate(data.intermediate_responses):
            content = types.Content(role="model", parts=parts)
            replies.append(Message.assistant(_text(content, f"{at}intermediate_responses[{index}]", dropped)))
            if author:
                dropped.append(f"{at}intermediate_responses[{index}][0] (its author)")
        return _paired(data.tool_uses, data.tool_responses), replies
    calls: list[types.FunctionCall] = []
    responses: list[types.FunctionResponse] = []
    replies = []
    for index, event in enumerate(data.invocation_events):
        event_at = f"{at}invocation_events[{index}]"
        _unmapped(event, {"author", "content"}, f"{event_at}.", dropped)
        parts = (event.content.parts or []) if event.content is not None else []
        calls.extend(part.function_call for part in parts if part.function_call is not None)
        responses.extend(part.function_response for part in parts if part.function_response is not None)
        said = [part for part in parts if part.function_call is None and part.function_response is None]
        if said:
            replies.append(Message.assistant(_text(types.Content(parts=said), f"{event_at}.content", dropped)))
    return _paired(calls, responses), replies


def _paired(calls: list[types.FunctionCall], responses: list[types.FunctionResponse]) -> list[Tool]:
    """The calls as tools, each with its response as result.

    A call's response is the one with its id, else the next unclaimed response of the same name
    without an id (ADK pairs by id alone, which pairs every call without an id with one response).
    """
    by_id = {response.id: response for response in responses if response.id}
    unnamed = [response for response in responses if not response.id]
    tools = []
    for call in calls:
        response = by_id.get(call.id) if call.id else None
        if response is None:
            response = next((candidate for candidate in unnamed if candidate.name == call.name), None)
            if response is not None:
                unnamed.remove(response)
        tools.append(
            Tool(
                id=call.id or "",
                name=call.name or "",
                arguments=dict(call.args or {}),
                result=response.response if response is not None else None,
            )
        )
    return tools


def _text(content: types.Content, at: str, dropped: list[str]) -> str:
    """The text of a content's parts; other parts (files, images, thoughts, …) are reported."""
    texts = []
    for index, part in enumerate(content.parts or []):
        if part.text is not None and not part.thought:
            texts.append(part.text)
        else:
            dropped.append(f"{at}.parts[{index}]")
    return "".join(texts)


def _unmapped(model: BaseModel, mapped: set[str], at: str, dropped: list[str]) -> None:
    """Report the fields of ``model`` that hold a value and are not in ``mapped``, extra keys included."""
    for name, info in type(model).model_fields.items():
        if name in mapped:
            continue
        value = getattr(model, name)
        if value not in (None, "", [], {}) and value != info.get_default(call_default_factory=True):
            dropped.append(f"{at}{name}")
    dropped.extend(f"{at}{key}" for key in (model.model_extra or {}))
