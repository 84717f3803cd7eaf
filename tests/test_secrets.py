"""What counts as a secret (agenteval._util.redaction), and the judge options that never write one."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.files import dump_models
from agenteval._util.redaction import (
    REDACTED,
    is_credential_name,
    is_env_reference,
    literal_secrets,
    redact,
    strip_userinfo,
    without_secrets,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import UnknownFieldWarning
from agenteval.metric.criterion import JudgeModelOptions

SECRET = "s3cr3t-value-4711"


@pytest.mark.parametrize(
    "name",
    [
        "apiKey",
        "api_key",
        "API-KEY",
        "key",
        "token",
        "api_token",
        "accessToken",
        "secretKey",
        "client_secret",
        "password",
        "Authorization",
        "X-Api-Key",
        "credentials",
        "basicAuth",
        "apiKye",
        "openaiApiKey",
        "jwt",
        "id_jwt",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name", ["maxTokens", "max_tokens", "thinking_tokens", "keyPrefix", "tokenizer", "monkey", "modelName", "user", ""]
)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not is_credential_name(name)


@pytest.mark.parametrize("value", ["${JUDGE_KEY}", "$JUDGE_KEY", "Bearer ${TOKEN}", " ${A}${B} ", "basic $AUTH"])
def test_environment_references(value: str) -> None:
    assert is_env_reference(value)


@pytest.mark.parametrize("value", ["sk-abc", "sk-abc${KEY}", "${KEY}-suffix", "", "$", "${}", None, 1, {"a": "${A}"}])
def test_values_that_are_not_references(value: Any) -> None:
    assert not is_env_reference(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:pass@host/v1", "https://host/v1"),
        ("see http://u@h:8080/x and ftp://a:b@c/d", "see http://h:8080/x and ftp://c/d"),
        ("https://host/v1?mail=a@b.c", "https://host/v1?mail=a@b.c"),
        ("mail me at a@b.c", "mail me at a@b.c"),
        ("https://judge:${JUDGE_PASSWORD}@host/v1", "https://judge:${JUDGE_PASSWORD}@host/v1"),
        ("https://${GIT_TOKEN}@host/v1", "https://${GIT_TOKEN}@host/v1"),
        ("https://ghp_abcdef@host/v1", "https://host/v1"),
    ],
)
def test_strip_userinfo(text: str, expected: str) -> None:
    assert strip_userinfo(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"the key {SECRET} is invalid", f"the key {REDACTED} is invalid"),
        ("Authorization: Bearer abcdef123456", f"Authorization: Bearer {REDACTED}"),
        (f"Weighted(api_key='{SECRET}', weights={{}})", f"Weighted(api_key='{REDACTED}', weights={{}})"),
        (f'{{"token": "{SECRET}", "user": "me"}}', f'{{"token": "{REDACTED}", "user": "me"}}'),
        (f"password={SECRET}&user=me", f"password={REDACTED}&user=me"),
        ("https://u:p@host/v1 failed", "https://host/v1 failed"),
        ("an sk-proj-ABCDEFGHIJKLMNOPQRST key", f"an {REDACTED} key"),
        (
            "GET /bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe failed",
            f"GET /bot{REDACTED}/getMe failed",
        ),
        ("at 2024-06-11 12:30:45 the build 20240611:done", "at 2024-06-11 12:30:45 the build 20240611:done"),
        ("api_key='${JUDGE_KEY}'", "api_key='${JUDGE_KEY}'"),
        ("max_tokens=2000, tokenizer: jieba", "max_tokens=2000, tokenizer: jieba"),
        ("tests.agents.WeatherAgent", "tests.agents.WeatherAgent"),
        ("AllPassAggregator()", "AllPassAggregator()"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text, [SECRET]) == expected


def test_redact_ignores_known_values_too_short_to_be_secrets() -> None:
    assert redact("EMPTY response", ["EMPTY"]) == "EMPTY response"


def test_without_secrets_and_literal_secrets_walk_every_level() -> None:
    value = {
        "headers": {"Authorization": f"Bearer {SECRET}", "X-Trace": "t"},
        "api_key": "${EXTRA_KEY}",
        "items": [{"password": SECRET}, "https://u:p@h/v1"],
        "credentials": {"id": "me", "pin": SECRET},
    }

    assert without_secrets(value) == {
        "headers": {"X-Trace": "t"},
        "api_key": "${EXTRA_KEY}",
        "items": [{}, "https://h/v1"],
    }
    assert literal_secrets(value, "extraFields") == [
        ("extraFields.headers.Authorization", f"Bearer {SECRET}"),
        ("extraFields.items[0].password", SECRET),
        ("extraFields.credentials.id", "me"),
        ("extraFields.credentials.pin", SECRET),
    ]


# --- Judge model options: credentials are written only as references. ---


def _options(**fields: Any) -> JudgeModelOptions:
    return JudgeModelOptions.model_validate({"providerName": "openai", "modelName": "judge", **fields})


def _shown(options: JudgeModelOptions) -> list[str]:
    metric = ae.EvalMetric.model_validate(
        {"metricName": "m", "criterion": {"llmJudge": {"judgeModel": options.model_dump(by_alias=True)}}}
    )
    return [
        options.to_json(),
        json.dumps(options.to_dict()),
        repr(options.model_dump()),
        repr(options),
        dump_models([metric]),
    ]


@pytest.mark.parametrize(
    "fields",
    [
        {"headers": {"Authorization": f"Bearer {SECRET}"}},
        {"extraFields": {"api_key": SECRET}},
        {"extraFields": {"nested": [{"secretKey": SECRET}]}},
        {"baseURL": f"https://judge:{SECRET}@judge.example/v1"},
        {"apiKey": SECRET},
    ],
    ids=["headers.Authorization", "extraFields.api_key", "nested secretKey", "baseURL credentials", "apiKey"],
)
def test_a_literal_credential_is_kept_in_memory_and_never_written_or_shown(fields: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownFieldWarning)
        options = _options(**fields)

    assert SECRET in json.dumps({**options.__dict__, **(options.model_extra or {})})
    for text in _shown(options):
        assert SECRET not in text


def test_a_base_url_is_written_without_its_credentials() -> None:
    options = _options(baseURL=f"https://judge:{SECRET}@judge.example/v1")

    assert options.base_url == f"https://judge:{SECRET}@judge.example/v1"
    assert json.loads(options.to_json())["baseURL"] == "https://judge.example/v1"


@pytest.mark.parametrize("key", ["token", "api_token", "secretKey", "password", "Authorization"])
def test_an_unknown_top_level_literal_credential_is_dropped_with_a_warning(key: str) -> None:
    with pytest.warns(UnknownFieldWarning) as warned:
        options = JudgeModelOptions.from_json(json.dumps({"modelName": "judge", key: SECRET}))

    assert [str(w.message) for w in warned] == [
        f"judgeModel key {key!r} was dropped because it looks like a secret: unknown keys are written back to files, "
        "so it is neither used nor kept; to keep it, put it in an environment variable and write "
        f'"{key}": "${{YOUR_VARIABLE}}"'
    ]
    assert options.model_extra == {}


@pytest.mark.parametrize("key", ["token", "api_token", "secretKey"])
def test_an_unknown_top_level_credential_reference_is_kept(key: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        options = JudgeModelOptions.from_json(json.dumps({"modelName": "judge", key: "${JUDGE_SECRET}"}))

    assert json.loads(options.to_json())[key] == "${JUDGE_SECRET}"


def test_literal_credentials_read_from_a_file_are_named_in_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "app" / "set.metrics.json"
    path.parent.mkdir()
    judge = {
        "modelName": "judge",
        "baseURL": f"https://judge:{SECRET}@judge.example/v1",
        "extraFields": {"api_key": SECRET, "user": "eval", "tenant": {"token": "${TENANT_TOKEN}"}},
        "headers": {"Authorization": f"Bearer {SECRET}"},
    }
    path.write_text(json.dumps([{"metricName": "m", "criterion": {"llmJudge": {"judgeModel": judge}}}]))

    with pytest.warns(UnknownFieldWarning) as warned:
        metric = run_sync(ae.LocalMetricManager(tmp_path).get("app", "set", "m"))

    assert [str(w.message) for w in warned if "literal secrets" in str(w.message)] == [
        (
            f"metrics file {path}: judgeModel holds literal secrets at headers.Authorization, extraFields.api_key, "
            "baseURL (the user:password@ of the URL): they are used, but never written to metrics files, results or "
            "reports, so rewriting this file loses them; put each in an environment variable and write a reference "
            'instead, e.g. "${YOUR_VARIABLE}"'
        )
    ]
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    options = metric.criterion.llm_judge.judge_model
    assert options is not None and options.request_extra_fields()["api_key"] == SECRET
