"""Which chat model judges: chat_model_for, register_provider, JudgeOverride and use_judge."""

from __future__ import annotations

import asyncio

import pytest

from agenteval.errors import ConfigError
from agenteval.llm import ChatModel, JudgeOverride, OpenAIChatModel, chat_model_for, register_provider
from agenteval.llm import judge as judge_module
from agenteval.llm.judge import active_judge, use_judge
from agenteval.metric.criterion import JudgeModelOptions
from agenteval.testing import ScriptedChatModel


@pytest.fixture(autouse=True)
def _isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give each test an empty provider registry and model cache."""
    monkeypatch.setattr(judge_module, "_providers", {})
    monkeypatch.setattr(judge_module, "_models", {})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def openai_block(**fields: object) -> JudgeModelOptions:
    values: dict[str, object] = {
        "providerName": "openai",
        "modelName": "judge",
        "baseURL": "http://127.0.0.1:9/v1",
        "apiKey": "sk-a",
    }
    values.update(fields)
    return JudgeModelOptions.model_validate(values)


def test_openai_blocks_build_one_model_per_distinct_block() -> None:
    first = chat_model_for(openai_block())
    again = chat_model_for(openai_block())
    other_key = chat_model_for(openai_block(apiKey="sk-b"))
    other_model = chat_model_for(openai_block(modelName="judge-2"))

    assert isinstance(first, OpenAIChatModel)
    assert (first.model, first.base_url) == ("judge", "http://127.0.0.1:9/v1")
    assert again is first
    assert other_key is not first
    assert isinstance(other_model, OpenAIChatModel)
    assert other_model.model == "judge-2"


def test_an_incomplete_openai_block_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"judgeModel\.modelName"):
        chat_model_for(openai_block(modelName=""))


def test_an_unknown_provider_lists_the_known_ones() -> None:
    register_provider("mine", lambda options: ScriptedChatModel([]))

    with pytest.raises(ConfigError) as caught:
        chat_model_for(openai_block(providerName="anthropic"))

    message = str(caught.value)
    assert "'anthropic' is not supported" in message
    assert "['mine', 'openai']" in message
    assert "register_provider" in message


def test_a_registered_provider_builds_and_caches_its_models() -> None:
    built: list[JudgeModelOptions] = []

    def factory(options: JudgeModelOptions) -> ChatModel:
        built.append(options)
        return ScriptedChatModel(["ok"])

    register_provider("scripted", factory)
    block = openai_block(providerName="scripted", modelName="x")

    model = chat_model_for(block)

    assert isinstance(model, ScriptedChatModel)
    assert chat_model_for(block) is model
    assert [options.model_name for options in built] == ["x"]


def test_registering_a_provider_clears_the_cache_and_may_replace_openai() -> None:
    before = chat_model_for(openai_block())
    replacement = ScriptedChatModel(["ok"])

    register_provider("openai", lambda options: replacement)

    assert chat_model_for(openai_block()) is replacement
    assert before is not replacement


def test_a_provider_needs_a_name() -> None:
    with pytest.raises(ConfigError, match="provider name is empty"):
        register_provider("", lambda options: ScriptedChatModel([]))


@pytest.mark.parametrize("samples", [0, -1])
def test_a_judge_override_needs_a_positive_sample_count(samples: int) -> None:
    with pytest.raises(ConfigError, match=f"num samples must be greater than 0, got {samples}"):
        JudgeOverride(ScriptedChatModel([]), num_samples=samples)


def test_use_judge_sets_the_active_judge_inside_the_block_only() -> None:
    outer = JudgeOverride(ScriptedChatModel([]))
    inner = JudgeOverride(ScriptedChatModel([]), num_samples=3)

    assert active_judge() is None
    with use_judge(outer):
        assert active_judge() is outer
        with use_judge(inner):
            assert active_judge() is inner
        assert active_judge() is outer
        with use_judge(None):
            assert active_judge() is None
    assert active_judge() is None


@pytest.mark.asyncio
async def test_the_active_judge_is_seen_by_tasks_started_inside_the_block() -> None:
    override = JudgeOverride(ScriptedChatModel([]))

    async def read() -> JudgeOverride | None:
        return active_judge()

    with use_judge(override):
        seen = await asyncio.create_task(read())

    assert seen is override
    assert await asyncio.create_task(read()) is None
