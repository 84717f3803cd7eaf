"""An agent's identity follows everything that decides its answers: the code it reaches and the data it reads.

What the agent only writes while it runs (a counter, a call log) does not count, what the identity
cannot see is named, and what changed while the agent ran is named at the end of the evaluation.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

import agenteval as ae
from agenteval.cache import code_hash, describe_agent
from agenteval.cache import identity as identity_module
from agenteval.errors import CacheIdentityWarning
from tests.cache._user_code import define

APP = "identity-app"


@pytest.fixture(autouse=True)
def _nothing_warned_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each place is warned about once per process: every test starts as a new process would."""
    monkeypatch.setattr(identity_module, "_warned", set())


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on ``sys.path`` for modules the agent imports (a config module, helpers)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("agent_config", "agent_helpers", "agent_package", "agent_package.config", "agent_package.agent"):
        sys.modules.pop(name, None)


# --- data the agent reads counts by value ----------------------------------------------------------


CONFIG_AGENT = """
CONFIG = {"prefix": "Answer: ", "limits": [1, 2, 3]}

def agent(message, turn=None):
    return CONFIG["prefix"] + message
"""


def test_a_module_level_dict_the_agent_reads_counts_by_value() -> None:
    first = define(CONFIG_AGENT)
    edited = define(CONFIG_AGENT.replace('"Answer: "', '"Reply: "'))

    assert code_hash(define(CONFIG_AGENT).agent) == code_hash(first.agent)
    assert code_hash(edited.agent) != code_hash(first.agent)


def test_changing_the_dict_in_place_changes_the_hash() -> None:
    example = define(CONFIG_AGENT)
    before = code_hash(example.agent)

    example.CONFIG["limits"].append(4)

    assert code_hash(example.agent) != before


@pytest.mark.parametrize(
    "value",
    [
        '("a", "b")',
        '["a", "b"]',
        '{"a", "b"}',
        'frozenset({"a", "b"})',
        "Tone.CALM",
        'Settings(model="gpt-4o")',
        'Options(model="gpt-4o")',
        'Plain("gpt-4o")',
    ],
    ids=["tuple", "list", "set", "frozenset", "enum member", "dataclass", "pydantic model", "object"],
)
def test_module_level_values_count_by_value(value: str) -> None:
    source = f"""
        import dataclasses, enum, pydantic

        class Tone(enum.Enum):
            CALM = "calm"
            BRISK = "brisk"

        @dataclasses.dataclass
        class Settings:
            model: str

        class Options(pydantic.BaseModel):
            model: str

        class Plain:
            def __init__(self, model):
                self.model = model

        VALUE = {value}

        def agent(message, turn=None):
            return f"{{VALUE}} {{message}}"
        """
    edited = value.replace('"b"', '"c"').replace("CALM", "BRISK").replace("gpt-4o", "gpt-4o-mini")

    assert code_hash(define(source).agent) == code_hash(define(source).agent)
    assert code_hash(define(source.replace(value, edited)).agent) != code_hash(define(source).agent)


def test_a_closed_over_container_counts_by_value() -> None:
    source = """
        def make_agent(replies):
            def agent(message, turn=None):
                return replies.get(message, "?")
            return agent
        """
    example = define(source)

    assert code_hash(example.make_agent({"hi": "hello"})) == code_hash(example.make_agent({"hi": "hello"}))
    assert code_hash(example.make_agent({"hi": "hey"})) != code_hash(example.make_agent({"hi": "hello"}))


def test_an_agent_objects_attributes_count_by_value_recursively() -> None:
    source = """
        class Style:
            def __init__(self, tone):
                self.tone = tone

        class Bot:
            def __init__(self, prompt, tone):
                self.prompt = prompt
                self.style = Style(tone)

            def __call__(self, message, turn=None):
                return self.prompt + message
        """
    example = define(source)
    bot = example.Bot("Be brief.", "calm")

    assert code_hash(bot) == code_hash(example.Bot("Be brief.", "calm"))
    assert code_hash(example.Bot("Be thorough.", "calm")) != code_hash(bot)
    assert code_hash(example.Bot("Be brief.", "warm")) != code_hash(bot)


def test_a_module_attribute_the_agent_reads_counts(importable: Path) -> None:
    (importable / "agent_config.py").write_text('MODEL = "gpt-4o"\n')
    (importable / "agent_helpers.py").write_text("def fmt(text):\n    return text.upper()\n")
    source = """
        import agent_config
        import agent_helpers

        def agent(message, turn=None):
            return agent_helpers.fmt(agent_config.MODEL + message)
        """
    example = define(source)
    before = code_hash(example.agent)
    config = sys.modules["agent_config"]

    config.MODEL = "gpt-4o-mini"  # type: ignore[attr-defined]
    assert code_hash(example.agent) != before
    config.MODEL = "gpt-4o"  # type: ignore[attr-defined]
    assert code_hash(example.agent) == before

    helpers = sys.modules["agent_helpers"]
    helpers.fmt = define("def fmt(text):\n    return text.lower()\n").fmt  # type: ignore[attr-defined]
    assert code_hash(example.agent) != before


FIRST_KEY = "sk-proj-4f9a2b7c1d8e6f3a0b5c9d2e"
ROTATED_KEY = "sk-proj-8e1c5a9f3b7d2c6e0a4f8b1d"


@pytest.mark.parametrize(
    "body",
    [
        "from agent_config import PROMPT\n    return PROMPT + message",
        "import agent_config as config\n    return config.PROMPT + message",
        "import agent_config\n    return agent_config.PROMPT + message",
        "def inner():\n        from agent_config import PROMPT\n        return PROMPT\n    return inner() + message",
    ],
    ids=["from import", "import as", "import", "in a nested function"],
)
def test_a_module_the_agent_imports_inside_its_function_counts(importable: Path, body: str) -> None:
    (importable / "agent_config.py").write_text('PROMPT = "alpha"\n')
    agent = define(f"def agent(message, turn=None):\n    {body}\n").agent
    before = code_hash(agent)
    config = sys.modules["agent_config"]

    config.PROMPT = "beta"  # type: ignore[attr-defined]
    assert code_hash(agent) != before
    config.PROMPT = "alpha"  # type: ignore[attr-defined]
    assert code_hash(agent) == before


def test_a_relative_import_inside_the_agent_counts(importable: Path) -> None:
    package = importable / "agent_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text('PROMPT = "alpha"\n')
    (package / "agent.py").write_text(
        "def agent(message, turn=None):\n    from .config import PROMPT\n    return PROMPT + message\n"
    )
    from agent_package.agent import agent  # type: ignore[import-not-found]

    before = describe_agent(agent)
    sys.modules["agent_package.config"].PROMPT = "beta"  # type: ignore[attr-defined]

    assert describe_agent(agent).code_hash != before.code_hash
    assert before.unseen == ()


def test_credentials_the_agent_reads_do_not_count() -> None:
    source = f"""
        import pydantic

        API_KEY = "{FIRST_KEY}"
        SETTINGS = {{"model": "gpt-4o", "token": "ghp_k3Jd8sLq0Zx7Vb2Nm5Rt9Yw4"}}

        class Bot:
            def __init__(self, api_key, secret=pydantic.SecretStr("hunter2")):
                self.api_key = api_key
                self.secret = secret

            def __call__(self, message, turn=None):
                return message + API_KEY + SETTINGS["model"] + self.api_key + str(self.secret)
        """
    rotated = source.replace(FIRST_KEY, ROTATED_KEY).replace(
        "ghp_k3Jd8sLq0Zx7Vb2Nm5Rt9Yw4", "ghp_Qw8eR2tY6uI0oP4aS7dF1gH5"
    )
    first = describe_agent(define(source).Bot("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))

    assert describe_agent(define(rotated).Bot("AKIAIOSFODNN7EXAMPLE")).digest == first.digest
    assert first.unseen == ()
    assert describe_agent(define(source.replace('"gpt-4o"', '"gpt-4o-mini"')).Bot("k" * 40)).digest != first.digest


@pytest.mark.parametrize(
    ("source", "edit"),
    [
        (
            'PROMPTS = {"v1": "upper", "v2": "lower"}\nPROMPT_KEY = "v1"\n\n'
            "def agent(message, turn=None):\n    return PROMPTS[PROMPT_KEY] + message\n",
            ('PROMPT_KEY = "v1"', 'PROMPT_KEY = "v2"'),
        ),
        (
            'STOP_TOKEN = ""\n\ndef agent(message, turn=None):\n    return message + STOP_TOKEN\n',
            ('STOP_TOKEN = ""', 'STOP_TOKEN = "</s>"'),
        ),
        (
            'def make_agent(model, sort_key="asc"):\n    def agent(message, turn=None):\n'
            '        return model + str(sorted(message, reverse=sort_key == "desc"))\n    return agent\n\n'
            'agent = make_agent("m")\n',
            ('make_agent("m")', 'make_agent("m", "desc")'),
        ),
        (
            'def answer(message, turn=None, *, answer_key="final"):\n    return message + answer_key\n\n'
            'agent = functools.partial(answer, answer_key="final")\n',
            ('answer_key="final")', 'answer_key="draft")'),
        ),
        (
            'def agent(message, turn=None, auth="none"):\n    return message + auth\n',
            ('auth="none"', 'auth="basic"'),
        ),
        (
            'OPTIONS = {"sort_key": "name", "model": "gpt-4o"}\n\n'
            "def agent(message, turn=None):\n    return message + OPTIONS['sort_key']\n",
            ('"sort_key": "name"', '"sort_key": "date"'),
        ),
        (
            "class Bot:\n    def __init__(self, stop):\n        self.stop_token = stop\n\n"
            "    def __call__(self, message, turn=None):\n        return message + self.stop_token\n\n"
            "agent = Bot('</s>')\n",
            ("'</s>'", "'<|end|>'"),
        ),
        (
            "class Options(pydantic.BaseModel):\n    cache_key: str = 'v1'\n\n"
            "def agent(message, turn=None):\n    return message + Options().cache_key\n",
            ("'v1'", "'v2'"),
        ),
    ],
    ids=["global", "global text", "closure", "partial", "default", "dict key", "attribute", "field default"],
)
def test_a_setting_named_like_a_credential_counts_by_its_value(source: str, edit: tuple[str, str]) -> None:
    source = "import functools\nimport pydantic\n\n" + source
    edited = source.replace(*edit)
    assert edited != source

    assert code_hash(define(edited).agent) != code_hash(define(source).agent)
    assert code_hash(define(source).agent) == code_hash(define(source).agent)


# --- callables reachable from the agent count by their code ---------------------------------------


WRAPPER = """
def agent_v1(message, turn=None):
    return message.upper()

_agents = {"v1": agent_v1}

def agent(message, turn=None):
    return _agents["v1"](message, turn)
"""


def test_a_wrapper_that_picks_the_agent_from_a_dict_follows_the_agents_code() -> None:
    edited = define(WRAPPER.replace("message.upper()", "message.lower()"))

    assert code_hash(edited.agent) != code_hash(define(WRAPPER).agent)


def test_callables_count_at_any_depth_of_containers() -> None:
    source = """
        def helper(text):
            return text.strip()

        PIPELINE = [("clean", {"steps": (helper,)}), ("sets", frozenset({"a"}))]

        def agent(message, turn=None):
            return PIPELINE[0][1]["steps"][0](message)
        """
    edited = define(source.replace("text.strip()", "text.strip().lower()"))

    assert code_hash(edited.agent) != code_hash(define(source).agent)


@pytest.mark.parametrize(
    "reach",
    [
        "def agent(message, turn=None, *, step=helper):\n    return step(message)",
        "agent = functools.partial(lambda message, step: step(message), step=helper)",
        "agent = functools.partial(lambda message, steps: steps[0](message), steps=[helper])",
        "def make():\n    steps = {'only': helper}\n    def agent(message, turn=None):\n"
        "        return steps['only'](message)\n    return agent\nagent = make()",
        "class Bot:\n    def __init__(self):\n        self.steps = [helper]\n"
        "    def __call__(self, message, turn=None):\n        return self.steps[0](message)\nagent = Bot()",
        "class Bot:\n    def __init__(self):\n        self.step = helper\n    def reply(self, message, turn=None):\n"
        "        return self.step(message)\nagent = Bot().reply",
    ],
    ids=["default argument", "partial", "partial's list", "closure's dict", "object's list", "bound method"],
)
def test_a_helper_reached_through_any_route_counts_by_its_code(reach: str) -> None:
    source = "import functools\n\ndef helper(text):\n    return text.strip()\n\n" + reach + "\n"
    edited = define(source.replace("text.strip()", "text.strip().lower()"))

    assert code_hash(edited.agent) != code_hash(define(source).agent)


def test_a_helper_behind_lru_cache_counts_by_its_code() -> None:
    source = """
        import functools

        @functools.lru_cache(maxsize=None)
        def lookup(city):
            return city.title()

        @functools.cache
        def other(city):
            return city

        def agent(message, turn=None):
            return lookup(message) + other(message)
        """
    edited = define(source.replace("city.title()", "city.upper()"))
    edited_other = define(source.replace("return city\n", "return city * 2\n"))

    assert code_hash(edited.agent) != code_hash(define(source).agent)
    assert code_hash(edited_other.agent) != code_hash(define(source).agent)


@pytest.mark.parametrize("attribute", ["self.function = function", "functools.update_wrapper(self, function)"])
def test_a_tool_object_that_wraps_a_function_counts_by_the_functions_code(attribute: str) -> None:
    source = f"""
        import functools

        class tool:
            def __init__(self, function):
                {attribute}

            def __call__(self, *args):
                return getattr(self, "function", None) or self.__wrapped__

        @tool
        def get_weather(city):
            return "sunny in " + city

        def agent(message, turn=None):
            return get_weather(message)
        """
    edited = define(source.replace('"sunny in "', '"rain in "'))

    assert code_hash(edited.agent) != code_hash(define(source).agent)
    assert code_hash(edited.get_weather) != code_hash(define(source).get_weather)


# --- what the agent writes as it runs does not count -------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        """
        class Bot:
            def __init__(self):
                self.prompt = "Be brief."
                self.calls = 0
                self.log = []

            def __call__(self, message, turn=None):
                self.calls += 1
                self._remember(message)
                return self.prompt + message

            def _remember(self, message):
                self.log.append(message)

        agent = Bot()
        """,
        """
        SEEN = []
        COUNTS = {}

        def agent(message, turn=None):
            SEEN.append(message)
            COUNTS[message] = COUNTS.get(message, 0) + 1
            return message
        """,
        """
        def make():
            calls = {"n": 0}
            total = 0
            def agent(message, turn=None):
                nonlocal total
                calls["n"] += 1
                total += 1
                return message
            return agent

        agent = make()
        """,
        """
        class Calls:
            def __init__(self):
                self.messages = []

        CALLS = Calls()

        def agent(message, turn=None):
            CALLS.messages.append(message)
            return message
        """,
        """
        class Bot:
            def __init__(self):
                self.memo = {}

            def reply(self, message, turn=None):
                memo = self.memo
                memo[message] = message.upper()
                return memo[message]

        agent = Bot().reply
        """,
        """
        class Memory:
            def __init__(self):
                self.items = []

            def remember(self, item):
                self.items.append(item)

        class Bot:
            def __init__(self):
                self.memory = Memory()

            def __call__(self, message, turn=None):
                self.memory.remember(message)
                return message

        agent = Bot()
        """,
        """
        USAGE = {"tokens": 0}
        TOTALS = [0]
        MEMO = {}

        def key(message):
            return message.lower()

        def agent(message, turn=None):
            USAGE["tokens"] += len(message)
            TOTALS[0] += len(message.split())
            MEMO[key(message)] = message
            return message
        """,
        """
        class Bot:
            def __init__(self):
                self.prompt = "Be brief."
                self.total = 0
                self.stats = {"tokens": 0}

            def __call__(self, message, turn=None):
                self.total += len(message)
                self.stats["tokens"] += len(message)
                return self.prompt + message

        agent = Bot()
        """,
        """
        import collections

        class Bot:
            def __init__(self):
                self.prompt = "Be brief."
                self.memory = collections.defaultdict(list)

            def __call__(self, message, turn=None):
                self.memory[str(turn)].append(message)
                return self.prompt + message

        agent = Bot()
        """,
        """
        import collections

        MEMORY = collections.defaultdict(list)

        def agent(message, turn=None):
            MEMORY[message[:1]].append(message)
            return message
        """,
    ],
    ids=[
        "object's counter and log",
        "global log and counts",
        "closure's counter",
        "global object's log",
        "alias",
        "attribute's method",
        "global counters updated with a call",
        "object's counters updated with a call",
        "object's defaultdict memory",
        "global defaultdict memory",
    ],
)
def test_state_the_agent_changes_as_it_runs_does_not_count(source: str) -> None:
    example = define(source)
    before = describe_agent(example.agent)

    example.agent("hi")
    example.agent("there")
    after = describe_agent(example.agent)

    assert after.digest == before.digest
    assert after.changed_since(before) == []


def test_a_setting_changed_by_a_method_the_agent_does_not_call_counts() -> None:
    example = define(
        """
        class Bot:
            def __init__(self):
                self.prompt = "Be brief."

            def set_prompt(self, prompt):
                self.prompt = prompt

            def __call__(self, message, turn=None):
                return self.prompt + message
        """
    )
    bot = example.Bot()
    before = code_hash(bot)

    bot.set_prompt("Be thorough.")

    assert code_hash(bot) != before


# --- what the identity cannot see is named ---------------------------------------------------------------


def test_an_object_of_a_library_class_is_named_as_unseen() -> None:
    example = define(
        """
        import threading

        LOCK = threading.Lock()
        CONFIG = {"model": "gpt-4o"}

        class Bot:
            def __init__(self):
                self.event = threading.Event()

            def __call__(self, message, turn=None):
                with LOCK:
                    return CONFIG["model"] + message + str(self.event.is_set())

        agent = Bot()
        """
    )

    unseen = describe_agent(example.agent).unseen

    assert any(note.startswith("global `LOCK` read by `Bot.__call__`") and "lock" in note for note in unseen)
    assert "attribute `event` of `Bot` (threading.Event)" in unseen
    assert not any("CONFIG" in note for note in unseen)


def test_a_value_that_cannot_be_read_is_named_and_does_not_stop_the_evaluation() -> None:
    example = define(
        """
        class Proxy:
            def __getattr__(self, name):
                raise RuntimeError("not connected")

        CLIENT = Proxy()

        def agent(message, turn=None):
            return CLIENT.ask(message)
        """
    )

    unseen = describe_agent(example.agent).unseen

    assert unseen == ("global `CLIENT` read by `agent` (user_agents.Proxy, which could not be read: RuntimeError)",)


def test_a_function_made_by_exec_without_a_module_name_counts_by_its_code() -> None:
    def made(source: str) -> Any:
        namespace: dict[str, Any] = {}
        exec(source, namespace)  # no __name__: the function's __module__ is None
        return namespace["real"]

    example = define(WRAPPER)
    example._agents["v1"] = made("def real(message, turn=None):\n    return message.upper()\n")
    first = describe_agent(example.agent)
    example._agents["v1"] = made("def real(message, turn=None):\n    return message.lower()\n")
    second = describe_agent(example.agent)

    assert first.unseen == second.unseen == ()
    assert first.code_hash != second.code_hash


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('return globals()["PROMPT"] + message', "the globals `agent` looks up by name (globals())"),
        ('return vars(config)["PROMPT"] + message', "global `config` read by `agent`"),
        ("return getattr(config, turn or 'PROMPT') + message", "global `config` read by `agent`"),
    ],
    ids=["globals()", "vars(module)", "getattr(module, name)"],
)
def test_globals_looked_up_by_a_name_known_at_run_time_are_named(importable: Path, body: str, named: str) -> None:
    (importable / "agent_config.py").write_text('PROMPT = "alpha"\n')
    example = define(f'import agent_config as config\nPROMPT = "alpha"\n\ndef agent(message, turn=None):\n    {body}\n')

    unseen = describe_agent(example.agent).unseen

    assert len(unseen) == 1 and unseen[0].startswith(named), unseen


def test_an_attribute_read_with_getattr_and_a_constant_name_counts(importable: Path) -> None:
    (importable / "agent_config.py").write_text('PROMPT = "alpha"\n')
    example = define(
        'import agent_config\n\ndef agent(message, turn=None):\n    return getattr(agent_config, "PROMPT")\n'
    )
    before = describe_agent(example.agent)

    sys.modules["agent_config"].PROMPT = "beta"  # type: ignore[attr-defined]

    assert describe_agent(example.agent).digest != before.digest
    assert before.unseen == ()


def test_globals_looked_up_at_run_time_warn_once_with_a_cache(tmp_path: Path) -> None:
    example = define(
        'PROMPT = "Answer: "\n\ndef agent(message, turn=None):\n    return globals()["PROMPT"] + message\n'
    )

    with pytest.warns(CacheIdentityWarning, match=r"the globals `agent` looks up by name") as caught:
        cached_inferences(tmp_path, example.agent)
    assert "agent_version=" in str(caught[0].message)


def test_a_plain_agent_has_nothing_unseen() -> None:
    from agenteval.examples.math import calculator_agent

    assert describe_agent(calculator_agent).unseen == ()


def test_the_identity_digest_is_the_agent_identity() -> None:
    from agenteval.cache import agent_identity
    from agenteval.examples.math import calculator_agent

    described = describe_agent(calculator_agent, "v2")

    assert described.digest == agent_identity(calculator_agent, "v2")
    assert described.code_hash == code_hash(calculator_agent)
    assert described.name == "agenteval.examples.math.agent.calculator_agent"
    assert described.version == "v2"


# --- in an evaluation ------------------------------------------------------------------------------------


ONE = ae.EvalSet.of("one", [ae.EvalCase.of("c1", "hi", expect="Answer: hi"), ae.EvalCase.of("c2", "yo")])
FINAL = [ae.EvalMetric.final_response("contains")]


def cached_inferences(cache: Path, agent: Any, **options: Any) -> list[bool]:
    report = ae.Evaluator(APP, agent, cache=cache, progress=False, **options).evaluate(ONE, metrics=FINAL)
    return [bool(cached) for cached in report.cases["cached_inference"]]


def test_an_edited_config_dict_runs_the_agent_again(tmp_path: Path) -> None:
    example = define(CONFIG_AGENT)
    assert cached_inferences(tmp_path, example.agent) == [False, False]
    assert cached_inferences(tmp_path, example.agent) == [True, True]

    example.CONFIG["prefix"] = "Reply: "

    assert cached_inferences(tmp_path, example.agent) == [False, False]


def test_an_edited_agent_behind_a_wrapper_runs_again(tmp_path: Path) -> None:
    assert cached_inferences(tmp_path, define(WRAPPER).agent) == [False, False]
    assert cached_inferences(tmp_path, define(WRAPPER).agent) == [True, True]

    edited = define(WRAPPER.replace("message.upper()", "message.lower()"))

    assert cached_inferences(tmp_path, edited.agent) == [False, False]


def test_an_agent_reading_an_opaque_object_warns_once_naming_it(tmp_path: Path) -> None:
    example = define(
        """
        import threading

        CLIENT = threading.Event()

        def agent(message, turn=None):
            return message if not CLIENT.is_set() else message.upper()
        """,
        module="opaque_agents",
    )

    with pytest.warns(CacheIdentityWarning, match=r"cannot see inside global `CLIENT` read by `agent`") as caught:
        cached_inferences(tmp_path, example.agent)
    assert "agent_version=" in str(caught[0].message)
    assert len(caught) == 1

    cached_inferences(tmp_path, example.agent)  # said once: no warning (filterwarnings=error)


def test_without_a_cache_nothing_warns() -> None:
    example = define(
        "import threading\nCLIENT = threading.Event()\ndef agent(m, turn=None):\n    return m + str(CLIENT)"
    )

    ae.Evaluator(APP, example.agent, progress=False).evaluate(ONE, metrics=FINAL)


MEMORY = """
def remember(store, item):
    store.append(item)

class Bot:
    def __init__(self):
        self.prompt = "Answer: "
        self.items = []

    def __call__(self, message, turn=None):
        remember(self.items, message)
        return self.prompt + message
"""


def test_state_changed_while_the_agent_ran_is_named_at_the_end(tmp_path: Path) -> None:
    bot = define(MEMORY).Bot()

    with pytest.warns(CacheIdentityWarning, match=r"attribute `items` of `Bot` changed while the agent ran") as caught:
        cached_inferences(tmp_path, bot)
    assert "cache_identity()" in str(caught[0].message)

    assert cached_inferences(tmp_path, bot) == [False, False]  # said once


def test_cache_identity_says_what_decides_the_answers(tmp_path: Path) -> None:
    source = MEMORY + "\n    def cache_identity(self):\n        return {'prompt': self.prompt}\n"
    bot = define(source).Bot()

    assert cached_inferences(tmp_path, bot) == [False, False]
    assert cached_inferences(tmp_path, bot) == [True, True]
    bot.prompt = "Reply: "
    assert cached_inferences(tmp_path, bot) == [False, False]


def test_enum_dataclass_and_pydantic_values_do_not_warn() -> None:
    class Tone(enum.Enum):
        CALM = "calm"

    @dataclasses.dataclass
    class Settings:
        tone: Tone

    class Options(pydantic.BaseModel):
        model: str = "gpt-4o"

    values = {"settings": Settings(Tone.CALM), "options": Options(), "count": functools.partial(len)}

    def agent(message: str) -> str:
        return message + str(values)

    assert describe_agent(agent).unseen == ()


def test_classes_with_slots_or_named_fields_do_not_warn() -> None:
    example = define(
        """
        import typing

        class Point(typing.NamedTuple):
            x: int
            y: int = 0

        class Bot:
            __slots__ = ("prompt", "origin")

            def __init__(self):
                self.prompt = "Answer: "
                self.origin = Point(1)

            def __call__(self, message, turn=None):
                return self.prompt + message + str(self.origin.x)

        agent = Bot()
        """
    )

    assert describe_agent(example.agent).unseen == ()


def test_describing_an_agent_takes_time_with_its_data_not_with_how_deep_it_lies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agenteval.cache import _hasher

    serialized: list[int] = []

    def dumps(value: object, **options: Any) -> str:
        text = json.dumps(value, **options)
        serialized.append(len(text))
        return text

    monkeypatch.setattr(_hasher, "json", types.SimpleNamespace(dumps=dumps))
    example = define(
        """
        class Node:
            def __init__(self, child, payload=None):
                self.child = child
                self.payload = payload

        def tree(depth):
            node = Node(None, {"text": ["z" * 200_000]})
            for _ in range(depth - 1):
                node = Node(node)
            return node

        class Bot:
            def __init__(self, depth):
                self.tree = tree(depth)

            def __call__(self, message, turn=None):
                return message
        """
    )

    def work(depth: int) -> int:
        serialized.clear()
        describe_agent(example.Bot(depth))
        return sum(serialized)

    shallow, deep = work(1), work(30)

    assert 200_000 < shallow < 3 * 200_000
    assert deep < 3 * 200_000
