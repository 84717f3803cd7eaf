"""read_dataset on files written by the real pydantic-evals, and an evaluation of a pydantic-ai agent on them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains, EqualsExpected, Evaluator, EvaluatorContext, IsInstance, LLMJudge

import agenteval as ae
from agenteval.adapters.pydantic_ai import PydanticAIRunner
from agenteval.errors import DroppedDataWarning
from agenteval.importers.pydantic_evals import read_dataset


@dataclass
class ShortAnswer(Evaluator[Any, Any, Any]):
    """An evaluator of the user's own, which agenteval has no metric for."""

    most: int = 10

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> bool:
        return len(str(ctx.output)) <= self.most


def _capitals(*evaluators: Evaluator[Any, Any, Any]) -> Dataset[Any, Any, Any]:
    return Dataset[Any, Any, Any](
        name="capitals",
        cases=[
            Case(
                name="france",
                inputs="What is the capital of France?",
                expected_output="Paris",
                metadata={"difficulty": "easy"},
                evaluators=(Contains("Paris", case_sensitive=False),),
            ),
            Case(inputs={"country": "Italy"}, expected_output={"city": "Rome"}),
            Case(name="open", inputs="Name a big city."),
        ],
        evaluators=list(evaluators),
    )


@pytest.mark.parametrize("file_name", ["capitals.yaml", "capitals.yml", "capitals.json"])
def test_a_dataset_file_becomes_an_eval_set_with_metrics_and_metadata(tmp_path: Path, file_name: str) -> None:
    path = tmp_path / file_name
    _capitals(EqualsExpected(), IsInstance("str"), LLMJudge(rubric="Is the answer right?")).to_file(path)

    with pytest.warns(DroppedDataWarning) as warned:
        imported = read_dataset(path)

    eval_set = imported.eval_set
    assert eval_set.eval_set_id == "capitals"
    turns = [(case.eval_id, case.conversation) for case in eval_set.eval_cases]
    assert [
        (eval_id, turn.user_content.content if turn.user_content else None, turn.final_response)
        for eval_id, (turn,) in turns
    ] == [
        ("france", "What is the capital of France?", ae.Message.assistant("Paris")),
        ("Case 2", '{"country":"Italy"}', ae.Message.assistant('{"city":"Rome"}')),
        ("open", "Name a big city.", None),
    ]
    assert imported.metrics == [ae.EvalMetric.final_response("exact", name="EqualsExpected")]
    assert imported.case_metadata == {"france": {"difficulty": "easy"}}
    (warning,) = warned
    assert str(warning.message) == (
        f"{path}: evaluators with no agenteval metric, left out: IsInstance (dataset), LLMJudge (dataset), "
        "Contains (case 'france')"
    )


def test_the_file_pydantic_evals_wrote_is_the_one_read(tmp_path: Path) -> None:
    # to_file points the files at a JSON schema it writes beside them; the reader takes both forms.
    _capitals().to_file(tmp_path / "capitals.yaml")
    _capitals().to_file(tmp_path / "capitals.json")

    assert (tmp_path / "capitals.yaml").read_text(encoding="utf-8").startswith("# yaml-language-server: $schema=")
    assert '"$schema"' in (tmp_path / "capitals.json").read_text(encoding="utf-8")
    with pytest.warns(DroppedDataWarning):
        from_yaml = read_dataset(tmp_path / "capitals.yaml")
    with pytest.warns(DroppedDataWarning):
        from_json = read_dataset(tmp_path / "capitals.json")
    assert from_yaml == from_json


def test_evaluators_of_the_users_own_are_read_without_their_class_and_named_in_the_warning(tmp_path: Path) -> None:
    path = tmp_path / "custom.yaml"
    dataset = Dataset[Any, Any, Any](
        name="custom", cases=[Case(name="c", inputs="hi", expected_output="hello")], evaluators=[ShortAnswer(5)]
    )
    dataset.to_file(path, custom_evaluator_types=[ShortAnswer])

    with pytest.warns(DroppedDataWarning, match=r"left out: ShortAnswer \(dataset\)$"):
        imported = read_dataset(path)

    assert [case.eval_id for case in imported.eval_set.eval_cases] == ["c"]
    assert imported.metrics == []


def test_a_named_equals_expected_gives_its_metric_that_name(tmp_path: Path) -> None:
    path = tmp_path / "named.json"
    Dataset[Any, Any, Any](
        name="named", cases=[Case(name="c", inputs="hi", expected_output="hello")], evaluators=[EqualsExpected("same")]
    ).to_file(path)

    imported = read_dataset(path)

    assert [metric.metric_name for metric in imported.metrics] == ["same"]


@pytest.mark.parametrize(
    ("file_name", "text", "message"),
    [
        ("d.txt", "name: x", r"d\.txt: a pydantic-evals dataset file ends in \.yaml, \.yml or \.json"),
        ("d.yaml", "cases: [", r"d\.yaml is not YAML"),
        ("d.json", "{", r"d\.json is malformed: not valid JSON"),
        ("d.yaml", "- a list", r"d\.yaml is not a pydantic-evals dataset: it holds a list"),
        (
            "d.yaml",
            "cases:\n- name: c\ncolour: red",
            r"d\.yaml is not a pydantic-evals dataset: cases\[0\]\.inputs: Field required; colour: Extra inputs",
        ),
        ("d.yaml", "cases:\n- inputs: hi\nevaluators: [{}]", r"d\.yaml: evaluators\[0\] is not an evaluator"),
        (
            "d.yaml",
            "cases: []\nevaluators: [{EqualsExpected: {colour: red}}]",
            r"d\.yaml: evaluator EqualsExpected: .*colour",
        ),
    ],
)
def test_a_file_that_is_not_a_dataset_is_a_config_error_naming_it(
    tmp_path: Path, file_name: str, text: str, message: str
) -> None:
    path = tmp_path / file_name
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ae.ConfigError, match=message):
        read_dataset(path)


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ae.ConfigError, match=r"cannot read .*nowhere\.yaml"):
        read_dataset(tmp_path / "nowhere.yaml")


class City(BaseModel):
    city: str


CAPITALS = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid"}


def _capital_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers through the output tool: the capital of the country named in the question."""
    (question,) = [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]
    country = next((name for name in CAPITALS if name in question), "Spain")
    (output_tool,) = info.output_tools
    return ModelResponse(parts=[ToolCallPart(output_tool.name, {"city": CAPITALS[country]})])


def test_a_pydantic_ai_agent_is_evaluated_on_an_imported_dataset(tmp_path: Path) -> None:
    path = tmp_path / "cities.yaml"
    Dataset[Any, Any, Any](
        name="cities",
        cases=[
            Case(name="france", inputs={"country": "France"}, expected_output={"city": "Paris"}),
            Case(name="italy", inputs={"country": "Italy"}, expected_output={"city": "Rome"}),
            Case(name="portugal", inputs={"country": "Portugal"}, expected_output={"city": "Lisbon"}),
        ],
        evaluators=[EqualsExpected()],
    ).to_file(path)
    imported = read_dataset(path)
    agent = Agent(FunctionModel(_capital_model), output_type=City)

    report = ae.Evaluator("cities-app", PydanticAIRunner(agent), progress=False).evaluate(
        imported.eval_set, metrics=imported.metrics
    )

    statuses = dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))
    assert statuses == {"france": "passed", "italy": "passed", "portugal": "failed"}
    assert list(report.turns["actual_response"]) == ['{"city":"Paris"}', '{"city":"Rome"}', '{"city":"Madrid"}']


@pytest.mark.asyncio
async def test_the_evaluators_it_maps_judge_as_pydantic_evals_does(tmp_path: Path) -> None:
    # The same answers, scored by pydantic-evals itself and by agenteval on the imported file.
    path = tmp_path / "answers.json"
    answers = {"a": "Paris", "b": "paris", "c": "Rome"}
    dataset = Dataset[Any, Any, Any](
        name="answers",
        cases=[Case(name=name, inputs=name, expected_output="Paris") for name in answers],
        evaluators=[EqualsExpected()],
    )
    dataset.to_file(path)
    theirs = await dataset.evaluate(lambda name: answers[name], progress=False)
    imported = read_dataset(path)

    ours = await ae.Evaluator("answers", lambda name: answers[name], progress=False).aevaluate(
        imported.eval_set, metrics=imported.metrics
    )

    their_verdicts = {case.name: case.assertions["EqualsExpected"].value for case in theirs.cases}
    our_verdicts = dict(zip(ours.cases["eval_id"], ours.cases["status"] == "passed", strict=True))
    assert our_verdicts == their_verdicts == {"a": True, "b": False, "c": False}
