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
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


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


def test_blocks_differing_only_in_samples_or_generation_share_one_model() -> None:
    plain = chat_model_for(openai_block())
    sampled = chat_model_for(openai_block(numSamples=3))
    tuned = chat_model_for(openai_block(generationConfig={"temperature": 0.0, "maxTokens": 64}))

    assert sampled is plain
    assert tuned is plain


def test_blocks_differing_in_variant_or_extra_fields_get_their_own_model() -> None:
    plain = chat_model_for(openai_block())

    assert chat_model_for(openai_block(variant="deepseek")) is not plain
    assert chat_model_for(openai_block(extraFields={"user": "eval"})) is not plain
    assert chat_model_for(openai_block(extraFields={"user": "eval"})) is chat_model_for(
        openai_block(extraFields={"user": "eval"})
    )


def test_a_changed_openai_api_key_gives_a_new_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    wrong = chat_model_for(openai_block(apiKey=""))
    assert chat_model_for(openai_block(apiKey="")) is wrong

    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    right = chat_model_for(openai_block(apiKey=""))

    assert right is not wrong
    assert isinstance(right, OpenAIChatModel)
    assert right._api_key.get_secret_value() == "sk-right"
    # The same key given in the block is the same connection.
    assert chat_model_for(openai_block(apiKey="sk-right")) is right


def test_a_changed_openai_base_url_gives_a_new_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    first = chat_model_for(openai_block(baseURL=""))
    assert isinstance(first, OpenAIChatModel)
    assert first.base_url == "http://127.0.0.1:9/v1"
    assert chat_model_for(openai_block()) is first

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:10/v1")
    second = chat_model_for(openai_block(baseURL=""))

    assert second is not first
    assert isinstance(second, OpenAIChatModel)
    assert second.base_url == "http://127.0.0.1:10/v1"


def test_the_model_cache_does_not_hold_the_api_key() -> None:
    chat_model_for(openai_block(apiKey="sk-secret-value"))

    assert "sk-secret-value" not in repr(judge_module._models.keys())


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
