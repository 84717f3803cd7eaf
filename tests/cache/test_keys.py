"""Cache keys: equal inputs give equal keys in every process; a change to code or definition gives a new key."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.cache import agent_identity, code_hash, evaluator_version, inference_key, score_key
from agenteval.cache import keys as keys_module
from agenteval.cache.keys import settings_hash
from agenteval.errors import ConfigError
from agenteval.evalresult.provenance import content_hash
from agenteval.evalset.models import EvalCase
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.runner.function import as_runner

REPO = Path(__file__).resolve().parents[2]

EXAMPLE = """
import functools

import pydantic

GREETING = "Hello"

def shout(text):
    return text.upper() + "!"

def agent(message, turn=None, *, style={"tone": "calm", "tags": frozenset({"a", "b", "c"})}):
    if message in {"rain", "sun", "snow", "fog"}:
        return shout(GREETING + " " + message)
    return message

class Base:
    def reply(self, message):
        return shout(message)

class Agent(Base):
    options = {"x": {1, 2, 3}, "y": ("p", "q"), "names": {"ann", "bob", "cy"}}

    def __call__(self, message, turn=None):
        return self.reply(message)

def make_agent(model):
    def helper(text):
        return f"{model}: {text}"

    def closure_agent(message, turn=None):
        return helper(message)

    return closure_agent

partial_agent = functools.partial(agent, style={"tone": "brisk", "words": {"a", "b", "c"}})

ROUTES = {"v1": shout, "v2": partial_agent, "tags": {"x", "y", "z"}}

def routed(message, turn=None):
    return ROUTES["v1"](message)

class Stateful:
    def __init__(self):
        self.prompt = "Be brief."
        self.stops = {"end", "stop", "halt"}
        self.settings = Settings(model="gpt-4o-mini")

    def __call__(self, message, turn=None):
        return self.prompt + message

class Settings(pydantic.BaseModel):
    model: str = "gpt-4o"
    api_key: str = "sk-proj-4f9a2b7c1d8e6f3a0b5c9d2e"

    def run(self, message):
        return message.title()
"""


SECRET_IN_THE_CODE = "sk-proj-4f9a2b7c1d8e6f3a0b5c9d2e"


def define(source: str = EXAMPLE, *, filename: str = "<notebook cell 1>", module: str = "user_agents") -> Any:
    """``source`` run as a module of that name, as a notebook cell or a script is (never imported)."""
    namespace = types.ModuleType(module)
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace.__dict__)
    return namespace


def judged_metric(**judge: Any) -> EvalMetric:
    return EvalMetric(
        metric_name="llm_final_response",
        threshold=0.5,
        criterion={"llm_judge": {"judge_model": {"provider_name": "openai", "model_name": "gpt-4o", **judge}}},
    )


def keys_of_the_example() -> dict[str, str]:
    """Every kind of key, for the example: computed here and in other processes, they must be equal."""
    example = define()
    identity = agent_identity(example.agent, "v1")
    case = EvalCase.of("paris", "Weather in Paris?", expect="Sunny")
    return {
        "function": code_hash(example.agent),
        "class": code_hash(example.Agent),
        "object": code_hash(example.Agent()),
        "closure": code_hash(example.make_agent("gpt-4o")),
        "partial": code_hash(example.partial_agent),
        "routed": code_hash(example.routed),
        "stateful object": code_hash(example.Stateful()),
        "pydantic model": code_hash(example.Settings),
        "identity": identity,
        "inference": inference_key(content_hash(case), 2, identity),
        "score": score_key("sha256:abc", judged_metric(), evaluator_version(FinalResponseEvaluator())),
    }


def keys_in_a_process(seed: str) -> dict[str, str]:
    script = (
        "import json; from tests.cache.test_keys import keys_of_the_example; print(json.dumps(keys_of_the_example()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        timeout=100,
        check=True,
    )
    keys: dict[str, str] = json.loads(result.stdout)
    return keys


# --- stable ---------------------------------------------------------------------------------------


def test_equal_inputs_give_equal_keys_in_processes_with_different_hash_seeds() -> None:
    here = keys_of_the_example()

    assert keys_in_a_process("1") == here
    assert keys_in_a_process("2") == here


def test_every_key_is_a_sha256_hex_digest() -> None:
    for name, key in keys_of_the_example().items():
        assert re.fullmatch(r"[0-9a-f]{64}", key), name


def test_the_same_source_defined_again_elsewhere_has_the_same_hash() -> None:
    first = define(filename="<cell 1>")
    again = define("\n\n\n" + EXAMPLE, filename="/elsewhere/agents.py")  # other file, other line numbers

    assert first.agent is not again.agent
    assert code_hash(again.agent) == code_hash(first.agent)
    assert code_hash(again.Agent) == code_hash(first.Agent)
    assert code_hash(again.make_agent("m")) == code_hash(first.make_agent("m"))
    assert code_hash(again.partial_agent) == code_hash(first.partial_agent)


def test_comments_do_not_count() -> None:
    edited = EXAMPLE.replace("def shout(text):", "def shout(text):  # louder")

    assert code_hash(define(edited).agent) == code_hash(define().agent)


def test_builtins_count_by_their_qualified_name() -> None:
    assert code_hash(len) == code_hash(len)
    assert code_hash(len) != code_hash(print)
    assert code_hash(str.join) != code_hash(bytes.join)


# --- code changes change the hash -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("agent", ("return message\n", "return message.strip()\n")),  # the function's body
        ("agent", ('"snow", "fog"', '"snow", "hail"')),  # a constant (a set)
        ("agent", ('"tone": "calm"', '"tone": "warm"')),  # a default argument
        ("agent", ('return text.upper() + "!"', 'return text.upper() + "!!"')),  # a global helper it calls
        ("agent", ('GREETING = "Hello"', 'GREETING = "Hi"')),  # a global constant it reads
        ("Agent", ("return self.reply(message)", "return self.reply(message.lower())")),  # a method
        ("Agent", ("return shout(message)", "return shout(message) * 2")),  # a base class's method
        ("Agent", ('"y": ("p", "q")', '"y": ("p", "r")')),  # a class attribute
        ("Settings", ('model: str = "gpt-4o"', 'model: str = "gpt-4o-mini"')),  # a pydantic field's default
    ],
)
def test_editing_the_code_changes_the_hash(name: str, edit: tuple[str, str]) -> None:
    old, new = edit
    assert EXAMPLE.count(old) == 1

    assert code_hash(getattr(define(EXAMPLE.replace(old, new)), name)) != code_hash(getattr(define(), name))


def test_editing_a_closed_over_helper_or_value_changes_the_hash() -> None:
    example = define()
    edited = define(EXAMPLE.replace('return f"{model}: {text}"', 'return f"{model} says: {text}"'))

    assert code_hash(edited.make_agent("m")) != code_hash(example.make_agent("m"))
    assert code_hash(example.make_agent("other model")) != code_hash(example.make_agent("m"))


def test_a_partials_function_and_arguments_count() -> None:
    example = define()

    assert code_hash(functools.partial(example.agent, style={"tone": "soft"})) != code_hash(example.partial_agent)
    assert code_hash(functools.partial(example.agent, "positional")) != code_hash(functools.partial(example.agent))
    assert code_hash(functools.partial(example.shout)) != code_hash(functools.partial(example.agent))


def test_a_credential_passed_to_a_partial_does_not_count() -> None:
    example = define()

    first, second = "sk-proj-4f9a2b7c1d8e6f3a0b5c9d2e", "sk-proj-8e1c5a9f3b7d2c6e0a4f8b1d"
    with_key = functools.partial(
        example.agent, api_key=first, options={"token": "xoxb-1234-5678-abcdef", "temperature": 0}
    )
    with_other_key = functools.partial(
        example.agent, api_key=second, options={"token": "xoxb-9876-5432-fedcba", "temperature": 0}
    )
    warmer = functools.partial(
        example.agent, api_key=first, options={"token": "xoxb-1234-5678-abcdef", "temperature": 1}
    )

    assert code_hash(with_key) == code_hash(with_other_key)
    assert code_hash(warmer) != code_hash(with_key)


def test_a_setting_under_a_credentials_name_that_is_not_a_secret_counts() -> None:
    example = define()

    def keyed(sort_key: str) -> str:
        return code_hash(functools.partial(example.agent, sort_key=sort_key, options={"stop_token": sort_key}))

    assert keyed("name") != keyed("date")


def test_a_default_under_a_credentials_name_does_not_count() -> None:
    edited = define(EXAMPLE.replace(SECRET_IN_THE_CODE, "sk-proj-8e1c5a9f3b7d2c6e0a4f8b1d"))

    assert code_hash(edited.Settings) == code_hash(define().Settings)


def test_an_object_counts_by_its_class_and_its_state() -> None:
    example = define()
    first, second, same = example.Agent(), example.Agent(), example.Agent()
    second.model = "another model"
    same.model = "another model"

    assert code_hash(first) == code_hash(example.Agent())
    assert code_hash(second) == code_hash(same)
    assert code_hash(second) != code_hash(first)
    assert code_hash(first) != code_hash(example.Agent)
    assert code_hash(first.__call__) != code_hash(example.agent)


def test_a_bound_method_counts_its_objects_state() -> None:
    example = define()
    first, second = example.Agent(), example.Agent()
    second.model = "another model"

    assert code_hash(second.__call__) != code_hash(first.__call__)
    assert code_hash(example.Agent().__call__) == code_hash(first.__call__)


def test_a_bound_method_sees_the_other_methods_of_its_class() -> None:
    edited = define(EXAMPLE.replace("return shout(message)", "return shout(message) * 2"))

    assert code_hash(edited.Agent().__call__) != code_hash(define().Agent().__call__)


def test_a_global_the_function_assigns_does_not_count() -> None:
    counter = define(
        """
        CALLS = 0

        def agent(message, turn=None):
            global CALLS
            CALLS += 1
            return message
        """
    )
    before = code_hash(counter.agent)
    counter.agent("hi")

    assert counter.CALLS == 1
    assert code_hash(counter.agent) == before


def test_recursive_code_hashes_without_end() -> None:
    example = define(
        """
        def countdown(n):
            return n if n <= 0 else countdown(n - 1)

        def outer():
            def inner(n):
                return n if n <= 0 else inner(n - 1)
            return inner

        class Node:
            def child(self):
                return Node()
        """
    )

    assert code_hash(example.countdown) == code_hash(example.countdown)
    assert code_hash(example.outer()) == code_hash(example.outer())
    assert code_hash(example.Node) == code_hash(example.Node)


def test_what_a_decorator_wraps_counts() -> None:
    source = """
        import functools

        @functools.lru_cache
        def cached(message):
            return message.upper()

        def logged(function):
            @functools.wraps(function)
            def wrapper(*args):
                return function(*args)
            return wrapper

        @logged
        def agent(message, turn=None):
            return message
        """
    first = define(source)
    edited = define(
        source.replace("return message.upper()", "return message.lower()").replace(
            "return message\n", "return message * 2\n"
        )
    )

    assert code_hash(edited.cached) != code_hash(first.cached)
    assert code_hash(edited.agent) != code_hash(first.agent)
    assert code_hash(define(source).cached) == code_hash(first.cached)


# --- agent identity, and the keys ----------------------------------------------------------------


def test_agent_identity_has_the_name_the_code_and_the_version() -> None:
    example = define()
    renamed = define(EXAMPLE.replace("def agent(", "def respond(").replace("(agent,", "(respond,"))

    assert agent_identity(example.agent) == agent_identity(define().agent)
    assert agent_identity(example.agent, "prompt v2") != agent_identity(example.agent)
    assert code_hash(renamed.respond) == code_hash(example.agent)
    assert agent_identity(renamed.respond) != agent_identity(example.agent)


def test_agent_version_must_be_a_string() -> None:
    with pytest.raises(ConfigError, match="agent_version must be a string, got int"):
        agent_identity(len, 2)  # type: ignore[arg-type]


def test_the_inference_key_changes_with_the_case_the_run_and_the_agent() -> None:
    identity = agent_identity(define().agent)
    case = content_hash(EvalCase.of("paris", "Weather in Paris?", expect="Sunny"))
    edited_case = content_hash(EvalCase.of("paris", "Weather in Paris?", expect="Sunny, 21°C"))
    key = inference_key(case, 0, identity)

    assert inference_key(case, 0, identity) == key
    assert inference_key(edited_case, 0, identity) != key
    assert inference_key(case, 1, identity) != key
    assert inference_key(case, 0, agent_identity(define().agent, "v2")) != key


EVALUATOR = evaluator_version(FinalResponseEvaluator())


@pytest.mark.parametrize(
    "changed",
    [
        judged_metric().model_copy(update={"threshold": 0.6}),
        judged_metric(model_name="gpt-4o-mini"),
        judged_metric(base_url="https://judge.example/v1"),
        judged_metric(generation_config={"temperature": 0.2}),
        judged_metric(num_samples=3),
        EvalMetric(
            metric_name="llm_final_response",
            threshold=0.5,
            criterion={
                "llm_judge": {
                    "judge_model": {"provider_name": "openai", "model_name": "gpt-4o"},
                    "rubrics": [{"id": "1", "content": {"text": "Is it polite?"}}],
                }
            },
        ),
        EvalMetric.final_response("contains"),
    ],
    ids=["threshold", "judge model", "judge url", "generation config", "samples", "rubric", "another metric"],
)
def test_a_change_to_the_metric_definition_changes_the_score_key(changed: EvalMetric) -> None:
    assert score_key("sha256:abc", changed, EVALUATOR) != score_key("sha256:abc", judged_metric(), EVALUATOR)


def test_the_criterion_counts() -> None:
    exact = EvalMetric.final_response("exact")

    assert score_key("i", EvalMetric.final_response("contains"), EVALUATOR) != score_key("i", exact, EVALUATOR)
    assert score_key("i", EvalMetric.final_response("exact", case_insensitive=True), EVALUATOR) != score_key(
        "i", exact, EVALUATOR
    )


def test_the_judges_api_key_does_not_count() -> None:
    assert score_key("sha256:abc", judged_metric(api_key="sk-one"), EVALUATOR) == score_key(
        "sha256:abc", judged_metric(api_key="sk-two"), EVALUATOR
    )
    assert score_key("sha256:abc", judged_metric(base_url="https://user:pw1@judge/v1"), EVALUATOR) == score_key(
        "sha256:abc", judged_metric(base_url="https://user:pw2@judge/v1"), EVALUATOR
    )


def test_a_judge_model_named_by_an_environment_variable_counts_by_what_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_MODEL", "gpt-4o")
    first = judged_metric(model_name="${JUDGE_MODEL}")
    monkeypatch.setenv("JUDGE_MODEL", "gpt-4o-mini")
    second = judged_metric(model_name="${JUDGE_MODEL}")

    assert first.to_dict() == second.to_dict()  # a file keeps the reference
    assert score_key("i", first, EVALUATOR) != score_key("i", second, EVALUATOR)


def test_the_score_key_changes_with_the_inference_and_the_evaluator() -> None:
    metric = judged_metric()
    key = score_key("sha256:abc", metric, EVALUATOR)

    assert score_key("sha256:abd", metric, EVALUATOR) != key
    assert score_key("sha256:abc", metric, evaluator_version(define().Agent())) != key


def test_the_evaluator_version_has_its_code_and_agentevals_version(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator = define(
        """
        class MyEvaluator:
            def evaluate(self, actuals, expecteds, metric):
                return 1.0
        """
    ).MyEvaluator()
    edited = define(
        """
        class MyEvaluator:
            def evaluate(self, actuals, expecteds, metric):
                return 0.5
        """
    ).MyEvaluator()
    version = evaluator_version(evaluator)

    assert evaluator_version(edited) != version
    monkeypatch.setattr(keys_module, "package_version", lambda: "99.0.0")
    assert evaluator_version(evaluator) != version


@pytest.mark.parametrize(
    "reach",
    [
        "prompter.reply",
        "functools.partial(prompter)",
        "functools.update_wrapper(lambda message: prompter(message), prompter)",
        "as_runner(prompter.reply)",
    ],
    ids=["bound method", "partial", "wrapper", "runner of a bound method"],
)
def test_settings_count_the_object_behind_a_method_partial_or_wrapper(reach: str) -> None:
    """An expected runner or simulator given as ``bot.reply``: the settings of ``bot`` decide its answers."""
    source = """
        class Prompter:
            def __init__(self, prompt):
                self.prompt = prompt

            def __call__(self, message):
                return self.reply(message)

            def reply(self, message):
                return self.prompt + message
        """

    def made(prompt: str) -> object:
        namespace = vars(define(source))
        namespace.update(functools=functools, as_runner=as_runner, prompter=namespace["Prompter"](prompt))
        return eval(reach, namespace)

    assert settings_hash(made("Answer: ")) == settings_hash(made("Answer: "))
    assert settings_hash(made("Reply: ")) != settings_hash(made("Answer: "))


class _CountingJudge:
    def __init__(self, model: str) -> None:
        self.model = model
        self.calls = 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        return prompt


def test_a_judge_counting_its_calls_keeps_its_settings_hash() -> None:
    """What a judge writes as it runs is state, not a setting: counting calls does not re-score everything."""
    judge = _CountingJudge("m1")
    before = settings_hash(judge)
    judge.complete("x")
    assert settings_hash(judge) == before
    assert settings_hash(_CountingJudge("m2")) != before


def test_an_evaluation_in_this_process_does_not_change_the_keys() -> None:
    # The result models an evaluation makes once kept state in their classes, which an evaluator's code hash read.
    before = keys_of_the_example()
    ae.Evaluator("keys-app", str.upper, progress=False).evaluate(
        ae.EvalSet.of("s", [ae.EvalCase.of("c", "x", expect="X")]), metrics=[ae.EvalMetric.final_response()]
    )

    assert keys_of_the_example() == before
