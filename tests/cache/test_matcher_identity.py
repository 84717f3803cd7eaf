"""Custom matchers count by their code and their settings: a ROUGE tokenizer, a named compare, a judge, an evaluator.

A score is served from the cache only while everything that decides it is the same; each test edits one
matcher's code or one of its settings and checks that its hash (or the evaluation's score) changes, and
that what a matcher records as it runs does not count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.cache.keys import evaluator_version, settings_hash, value_hash
from agenteval.llm import ChatRequest
from agenteval.metric.criterion import TextCriterion
from agenteval.metric.registry import MetricRegistry
from tests.cache._metrics import judged, verdict
from tests.cache._user_code import define as define_module

define = functools.partial(define_module, module="user_matchers")

APP = "matcher-app"
CASES = ae.EvalSet.of("one", [ae.EvalCase.of("c", "The cat sat", expect="the cat sat")])


def registry_hash(register: Callable[[MetricRegistry], None]) -> str:
    """The hash the score keys take of a metric registry (its named compares and tokenizers)."""
    registry = MetricRegistry()
    register(registry)
    return value_hash(vars(registry))


def tokenizer_hash(tokenizer: object) -> str:
    return registry_hash(lambda registry: registry.register_rouge_tokenizer("mine", tokenizer))  # type: ignore[arg-type]


def compare_hash(compare: object) -> str:
    return registry_hash(lambda registry: registry.register_text_compare("mine", compare))  # type: ignore[arg-type]


# --- ROUGE tokenizers ------------------------------------------------------------------------------------


TOKENIZER = """
    import typing

    class Tokenizer:
        def __init__(self, lower=True, stop=("a",)):
            self.lower = lower
            self.stop = list(stop)

        def tokenize(self, text):
            words = (text.lower() if self.lower else text).split()
            return [word for word in words if word not in self.stop]

    class Fields(typing.NamedTuple):
        lower: bool = True

        def tokenize(self, text):
            return (text.lower() if self.lower else text).split()

    class Words(str):
        def tokenize(self, text):
            return text.split(self)
    """


@pytest.mark.parametrize(
    ("make", "edit"),
    [
        ("Tokenizer()", ("text.lower()", "text.casefold()")),
        ("Tokenizer", ("text.lower()", "text.casefold()")),
        ("Fields()", ("text.lower()", "text.casefold()")),
        ("Words(' ')", ("text.split(self)", "text.rsplit(self)")),
    ],
    ids=["object", "class", "NamedTuple", "str subclass"],
)
def test_a_tokenizers_code_counts(make: str, edit: tuple[str, str]) -> None:
    def made(source: str) -> object:
        return eval(make, vars(define(source)))

    assert tokenizer_hash(made(TOKENIZER)) == tokenizer_hash(made(TOKENIZER))
    assert tokenizer_hash(made(TOKENIZER.replace(*edit))) != tokenizer_hash(made(TOKENIZER))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Tokenizer(lower=True)", "Tokenizer(lower=False)"),
        ("Tokenizer(stop=['a'])", "Tokenizer(stop=['a', 'the'])"),
        ("Fields(True)", "Fields(False)"),
        ("Words(' ')", "Words(',')"),
    ],
    ids=["attribute", "list attribute", "NamedTuple field", "str subclass"],
)
def test_a_tokenizers_settings_count(first: str, second: str) -> None:
    namespace = vars(define(TOKENIZER))

    assert tokenizer_hash(eval(first, namespace)) != tokenizer_hash(eval(second, namespace))


def test_tokenizing_keeps_the_tokenizers_hash() -> None:
    source = """
        class Tokenizer:
            def __init__(self):
                self.seen = []
                self.memo = {}

            def tokenize(self, text):
                self.seen.append(text)
                if text not in self.memo:
                    self.memo[text] = text.split()
                return self.memo[text]
        """
    tokenizer = define(source).Tokenizer()
    before = tokenizer_hash(tokenizer)

    tokenizer.tokenize("the cat sat")

    assert tokenizer_hash(tokenizer) == before


def first_score(report: ae.EvaluationReport) -> tuple[Any, Any]:
    """The first metric's score and whether it came from the cache."""
    row = report.metrics.iloc[0]
    return row["score"], row["cached"]


def rouge_score(tmp_path: Path, tokenizer: object) -> tuple[Any, Any]:
    registry = MetricRegistry()
    registry.register_rouge_tokenizer("mine", tokenizer)  # type: ignore[arg-type]
    metric = ae.EvalMetric.rouge("rouge1", f1=0.9, tokenizer_name="mine")
    evaluator = ae.Evaluator(APP, lambda message: message, cache=tmp_path, progress=False, metric_registry=registry)
    return first_score(evaluator.evaluate(CASES, metrics=[metric]))


def test_another_tokenizer_setting_scores_again(tmp_path: Path) -> None:
    namespace = vars(define(TOKENIZER))

    scores = [rouge_score(tmp_path, eval(made, namespace)) for made in ("Tokenizer()", "Tokenizer(lower=False)")]

    assert scores == [(1.0, False), (0.0, False)]


# --- named compares written as callable objects ---------------------------------------------------------


COMPARE = """
    import enum

    class Loose:
        def __init__(self, strip=True, ignore=()):
            self.strip = strip
            self.ignore = list(ignore)

        def __call__(self, actual, expected):
            return actual.lower() == expected.lower()

    class Mode(enum.Enum):
        EXACT = "exact"

        def __call__(self, actual, expected):
            return actual == expected

    class Table(dict):
        def __call__(self, actual, expected):
            return self.get(actual, actual) == expected
    """


@pytest.mark.parametrize(
    ("make", "edit"),
    [
        ("Loose()", ("actual.lower() == expected.lower()", "actual.casefold() == expected.casefold()")),
        ("Mode.EXACT", ("return actual == expected", "return actual.strip() == expected")),
        ("Table(a='b')", ("self.get(actual, actual)", "self.get(actual, '')")),
        ("[Loose().__call__]", ("actual.lower() == expected.lower()", "actual.casefold() == expected.casefold()")),
    ],
    ids=["object", "enum member", "dict subclass", "bound method"],
)
def test_a_compare_objects_code_counts(make: str, edit: tuple[str, str]) -> None:
    def made(source: str) -> object:
        compare = eval(make, vars(define(source)))
        return compare[0] if isinstance(compare, list) else compare

    assert compare_hash(made(COMPARE)) == compare_hash(made(COMPARE))
    assert compare_hash(made(COMPARE.replace(*edit))) != compare_hash(made(COMPARE))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Loose(strip=True)", "Loose(strip=False)"),
        ("Loose(ignore=['x'])", "Loose(ignore=['y'])"),
        ("Table(a='b')", "Table(a='c')"),
    ],
    ids=["attribute", "list attribute", "dict subclass's items"],
)
def test_a_compare_objects_settings_count(first: str, second: str) -> None:
    namespace = vars(define(COMPARE))

    assert compare_hash(eval(first, namespace)) != compare_hash(eval(second, namespace))


def text_score(tmp_path: Path, compare: object) -> tuple[Any, Any]:
    registry = MetricRegistry()
    registry.register_text_compare("mine", compare)  # type: ignore[arg-type]
    metric = ae.EvalMetric.final_response()
    assert metric.criterion is not None and metric.criterion.final_response is not None
    final = metric.criterion.final_response
    criterion = metric.criterion.model_copy(
        update={"final_response": final.model_copy(update={"text": TextCriterion(compare_name="mine")})}
    )
    evaluator = ae.Evaluator(APP, lambda message: message, cache=tmp_path, progress=False, metric_registry=registry)
    return first_score(evaluator.evaluate(CASES, metrics=[metric.model_copy(update={"criterion": criterion})]))


def test_another_compare_objects_code_scores_again(tmp_path: Path) -> None:
    scores = [
        text_score(tmp_path, define(source).Loose())
        for source in (COMPARE, COMPARE.replace("actual.lower() == expected.lower()", "actual == expected"))
    ]

    assert scores == [(1.0, False), (0.0, False)]


# --- judges ----------------------------------------------------------------------------------------------


JUDGE = """
    from agenteval.llm import ChatResponse

    class Judge:
        def __init__(self, stop, options=None):
            self.stop = stop
            self.options = options or {}
            self.requests = []

        async def generate(self, request):
            self.requests.append(request)
            return ChatResponse(content=VERDICT(0 if "no" in self.stop else 1))
    """


def judge_class() -> Any:
    judge = define(JUDGE).Judge
    judge.generate.__globals__["VERDICT"] = verdict
    return judge


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"stop": ["x"]}, {"stop": ["y"]}),
        ({"stop": ("x",)}, {"stop": ("y",)}),
        ({"stop": [], "options": {"temperature": 0}}, {"stop": [], "options": {"temperature": 1}}),
    ],
    ids=["list", "tuple", "dict"],
)
def test_a_judges_settings_in_containers_count(first: dict[str, Any], second: dict[str, Any]) -> None:
    judge = judge_class()

    assert settings_hash(judge(**first)) == settings_hash(judge(**first))
    assert settings_hash(judge(**second)) != settings_hash(judge(**first))


@pytest.mark.asyncio
async def test_what_a_judge_records_as_it_answers_keeps_its_hash() -> None:
    judge = judge_class()(["x"], {"temperature": 0})
    before = settings_hash(judge)

    await judge.generate(ChatRequest(messages=[]))

    assert len(judge.requests) == 1
    assert settings_hash(judge) == before


def test_another_judge_setting_in_a_list_scores_again(tmp_path: Path) -> None:
    judge = judge_class()
    found = []
    for stop in (["yes"], ["no"]):
        evaluator = ae.Evaluator(APP, lambda message: message, cache=tmp_path, progress=False, judge=judge(stop))
        found.append(first_score(evaluator.evaluate(CASES, metrics=[judged()])))

    assert found == [(1.0, False), (0.0, False)]


# --- evaluators ------------------------------------------------------------------------------------------


EVALUATOR = """
    def exact(actual, expected):
        return actual == expected

    class Scorer:
        def __init__(self, compares, weights):
            self.compares = compares
            self.weights = weights

        def evaluate(self, actuals, expecteds, metric):
            raise NotImplementedError

        @staticmethod
        def tidy(text):
            return text.strip()
    """


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Scorer([exact], {'a': 1})", "Scorer([exact], {'a': 2})"),
        ("Scorer({'exact': exact}, {})", "Scorer({'exact': tidy}, {})"),
        ("Scorer([Scorer.tidy], {})", "Scorer([exact], {})"),
    ],
    ids=["dict of weights", "dict of compares", "list of compares"],
)
def test_an_evaluators_settings_in_containers_count(first: str, second: str) -> None:
    namespace = vars(define(EVALUATOR))
    namespace["tidy"] = namespace["Scorer"].tidy

    assert evaluator_version(eval(first, namespace)) != evaluator_version(eval(second, namespace))


def test_an_evaluators_compare_in_a_list_counts_by_its_code() -> None:
    def version(source: str) -> str:
        namespace = vars(define(source))
        return evaluator_version(namespace["Scorer"]([namespace["exact"]], {}))

    assert version(EVALUATOR.replace("actual == expected", "actual.strip() == expected")) != version(EVALUATOR)
