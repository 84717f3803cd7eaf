"""Decorated code counts by the code it decorates: a helper behind ``functools.lru_cache``, ``functools.cache``,
``functools.singledispatch`` or a ``@tool``-style wrapper object, wherever the agent reaches it.

Each test edits the helper (its code, or data it reads) and checks that the agent's identity changes,
so that the cache runs the agent again rather than serve the answer of the old helper.
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.cache import code_hash, describe_agent
from agenteval.cache import identity as identity_module
from tests.cache._user_code import define as define_module

define = functools.partial(define_module, module="decorated_agents")

APP = "decorated-app"
ONE = ae.EvalSet.of("one", [ae.EvalCase.of("c", "question", expect="QUESTION")])


@pytest.fixture(autouse=True)
def _nothing_warned_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity_module, "_warned", set())


def assert_edit_changes_the_hash(source: str, old: str, new: str, name: str = "agent") -> None:
    edited = source.replace(old, new)
    assert edited != source
    original = getattr(define(source), name)

    assert code_hash(getattr(define(source), name)) == code_hash(original)
    assert code_hash(getattr(define(edited), name)) != code_hash(original)
    assert describe_agent(getattr(define(edited), name)).digest != describe_agent(original).digest


# --- functools.lru_cache and functools.cache ----------------------------------------------------------


@pytest.mark.parametrize("decorator", ["functools.lru_cache", "functools.lru_cache(maxsize=64)", "functools.cache"])
def test_a_global_helper_behind_a_cache_counts_by_its_code(decorator: str) -> None:
    source = f"""
        import functools

        SUFFIX = "!"

        @{decorator}
        def lookup(city):
            return city.title() + SUFFIX

        def agent(message, turn=None):
            return lookup(message)
        """

    assert_edit_changes_the_hash(source, "city.title()", "city.upper()")
    assert_edit_changes_the_hash(source, 'SUFFIX = "!"', 'SUFFIX = "?"')


def test_a_cached_helper_a_factory_closes_over_counts_by_its_code() -> None:
    source = """
        import functools

        def make_agent(style):
            @functools.lru_cache(maxsize=None)
            def lookup(city):
                return city.title() + style

            def agent(message, turn=None):
                return lookup(message)

            return agent

        agent = make_agent("!")
        """

    assert_edit_changes_the_hash(source, "city.title()", "city.upper()")
    assert_edit_changes_the_hash(source, 'make_agent("!")', 'make_agent("?")')


def test_a_cached_global_helper_passed_to_a_factory_counts_by_its_code() -> None:
    source = """
        import functools

        @functools.cache
        def lookup(city):
            return city.title()

        def make_agent(step):
            def agent(message, turn=None):
                return step(message)

            return agent

        agent = make_agent(lookup)
        """

    assert_edit_changes_the_hash(source, "city.title()", "city.upper()")


def test_a_cached_method_counts_by_its_code() -> None:
    source = """
        import functools

        class Bot:
            @functools.lru_cache
            def lookup(self, city):
                return city.title()

            def __call__(self, message, turn=None):
                return self.lookup(message)

        agent = Bot()
        """

    assert_edit_changes_the_hash(source, "city.title()", "city.upper()")


def test_calling_a_cached_helper_keeps_the_hash() -> None:
    example = define("""
        import functools

        @functools.lru_cache
        def lookup(city):
            return city.title()

        def agent(message, turn=None):
            return lookup(message)
        """)
    before = code_hash(example.agent)

    for city in ("paris", "rome", "oslo"):
        example.agent(city)

    assert code_hash(example.agent) == before


# --- functools.singledispatch -----------------------------------------------------------------------------


SINGLE_DISPATCH = """
    import functools

    @functools.singledispatch
    def render(value):
        return repr(value)

    @render.register
    def _(value: str):
        return value.title()

    @render.register(int)
    def _(value):
        return f"#{value}"

    def agent(message, turn=None):
        return render(message)
    """


def test_a_singledispatch_helper_counts_by_the_code_of_each_implementation() -> None:
    assert_edit_changes_the_hash(SINGLE_DISPATCH, "return repr(value)", "return str(value)")
    assert_edit_changes_the_hash(SINGLE_DISPATCH, "value.title()", "value.upper()")
    assert_edit_changes_the_hash(SINGLE_DISPATCH, 'f"#{value}"', 'f"no. {value}"')


def test_calling_a_singledispatch_helper_keeps_the_hash() -> None:
    example = define(SINGLE_DISPATCH)
    before = code_hash(example.agent)

    example.agent("paris")
    example.render(3)

    assert code_hash(example.agent) == before


# --- a @tool-style wrapper object -------------------------------------------------------------------------


TOOL_CLASSES = {
    "attribute": """
        class Tool:
            def __init__(self, function):
                self.function = function
                self.name = "weather"

            def __call__(self, *args):
                return self.function(*args)
        """,
    "update_wrapper": """
        class Tool:
            def __init__(self, function):
                functools.update_wrapper(self, function)

            def __call__(self, *args):
                return self.__wrapped__(*args)
        """,
    "slots": """
        class Tool:
            __slots__ = ("function",)

            def __init__(self, function):
                self.function = function

            def __call__(self, *args):
                return self.function(*args)
        """,
    "dataclass": """
        @dataclasses.dataclass
        class Tool:
            function: typing.Callable[..., str]

            def __call__(self, *args):
                return self.function(*args)
        """,
    "counts its calls": """
        class Tool:
            def __init__(self, function):
                self.function = function
                self.calls = 0

            def __call__(self, *args):
                self.calls += 1
                return self.function(*args)
        """,
}

TOOL_USES = {
    "global": "def agent(message, turn=None):\n    return get_weather(message)\n",
    "list of tools": "TOOLS = [get_weather]\n\ndef agent(message, turn=None):\n    return TOOLS[0](message)\n",
    "factory": "def make(tool):\n    def agent(message, turn=None):\n        return tool(message)\n    return agent\n\n"
    "agent = make(get_weather)\n",
    "agent object": "class Bot:\n    def __init__(self, tools):\n        self.tools = {'weather': tools[0]}\n\n"
    "    def __call__(self, message, turn=None):\n        return self.tools['weather'](message)\n\n"
    "agent = Bot([get_weather])\n",
}


def tool_agent(tool_class: str, use: str) -> str:
    header = "import dataclasses\nimport functools\nimport typing\n\n"
    body = textwrap.dedent(TOOL_CLASSES[tool_class])
    tool = "def tool(function):\n    return Tool(function)"
    weather = '@tool\ndef get_weather(city):\n    return "sunny in " + city\n'
    return header + body + "\n\n" + tool + "\n\n\n" + weather + "\n\n" + TOOL_USES[use]


@pytest.mark.parametrize("use", list(TOOL_USES))
@pytest.mark.parametrize("tool_class", list(TOOL_CLASSES))
def test_a_function_behind_a_tool_object_counts_by_its_code(tool_class: str, use: str) -> None:
    source = tool_agent(tool_class, use)

    assert_edit_changes_the_hash(source, '"sunny in "', '"rain in "')
    assert_edit_changes_the_hash(source, '"sunny in "', '"rain in "', name="get_weather")


def test_a_tool_objects_call_counter_does_not_count() -> None:
    example = define(tool_agent("counts its calls", "global"))
    before = code_hash(example.agent)

    example.agent("Paris")

    assert example.get_weather.calls == 1
    assert code_hash(example.agent) == before


# --- end to end: the agent runs again --------------------------------------------------------------------


def answers(tmp_path: Path, source: str, edit: tuple[str, str]) -> list[tuple[str, bool]]:
    """The answer and whether it came from the cache, of the agent in ``source`` and then of the edited one."""
    found = []
    for version in (source, source.replace(*edit)):
        report = ae.Evaluator(APP, define(version).agent, cache=tmp_path, progress=False).evaluate(
            ONE, metrics=[ae.EvalMetric.final_response()]
        )
        found.append((str(report.turns.loc[0, "actual_response"]), bool(report.cases.loc[0, "cached_inference"])))
    return found


def test_editing_a_cached_helper_runs_the_agent_again(tmp_path: Path) -> None:
    source = """
        import functools

        @functools.lru_cache
        def shout(text):
            return text.upper()

        def make_agent():
            def agent(message):
                return shout(message)
            return agent

        agent = make_agent()
        """

    assert answers(tmp_path, source, ("text.upper()", "text.lower()")) == [("QUESTION", False), ("question", False)]


def test_editing_a_singledispatch_implementation_runs_the_agent_again(tmp_path: Path) -> None:
    source = """
        import functools

        @functools.singledispatch
        def render(value):
            return repr(value)

        @render.register
        def _(value: str):
            return value.upper()

        def agent(message):
            return render(message)
        """

    assert answers(tmp_path, source, ("value.upper()", "value.lower()")) == [("QUESTION", False), ("question", False)]


def test_editing_a_tool_objects_function_runs_the_agent_again(tmp_path: Path) -> None:
    source = tool_agent("update_wrapper", "agent object").replace('"sunny in " + city', "city.upper()")
    source = source.replace("def __call__(self, message, turn=None)", "def __call__(self, message)")

    assert answers(tmp_path, source, ("city.upper()", "city.lower()")) == [("QUESTION", False), ("question", False)]
