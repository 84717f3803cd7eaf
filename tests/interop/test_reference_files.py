"""Interop: every file written by the reference framework loads, and dumps back to the same JSON.

The files under ``trpc-examples/`` are copied verbatim from trpc-agent-go's ``examples/evaluation``: eval sets and
metrics written by hand for the examples, and eval-set results written by the Go framework itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from agenteval._util.files import dump_models, write_atomic
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset.models import EvalSet
from agenteval.metric.models import EvalMetric

EXAMPLES = Path(__file__).parent / "trpc-examples"
MIN_FILES = 45
"""A floor a little under the snapshot's file count, so a broken glob cannot pass vacuously."""

METRICS = TypeAdapter(list[EvalMetric])
Loaded = EvalSet | EvalSetResult | list[EvalMetric]

FILES = sorted(
    path
    for pattern in ("*.evalset.json", "*.metrics.json", "*.evalset_result.json")
    for path in EXAMPLES.rglob(pattern)
)
FILE_IDS = [path.relative_to(EXAMPLES).as_posix() for path in FILES]

KNOWN_INEXACT: dict[str, str] = {
    # Hand-written metrics with an "apiKey": it is loaded (env-expanded) but never written.
    "contextmessage/data/contextmessage-app/contextmessage-basic.metrics.json": "apiKey dropped; `1.0` written as `1`",
    "llm/caselevelrubric/data/case-level-rubric-app/case-level-rubric-basic.metrics.json": (
        "apiKey dropped; explicit `false` omitted"
    ),
    "llm/finalresponse/data/final-response-app/final-response-basic.metrics.json": "apiKey dropped; `1.0` as `1`",
    "llm/knowledgerecall/data/knowledge-recall-app/knowledge-recall-basic.metrics.json": "apiKey dropped; `1.0` as `1`",
    "llm/rubricresponse/data/rubric-response-app/rubric-response-basic.metrics.json": "apiKey dropped; `1.0` as `1`",
    "llm/template/data/template-eval-app/template-basic.metrics.json": "apiKey dropped; `1.0` written as `1`",
    "llm/templatetrace/data/template-trace-eval-app/template-trace-basic.metrics.json": "apiKey dropped; `1.0` as `1`",
    # Hand-written metrics: `"threshold": 1.0` is written as `1`, as Go writes a float64.
    "trpcagent/data/trpcagent-travel-agent/travel-advice-basic.metrics.json": "`1.0` written as `1`",
    # Hand-written metrics with `"orderSensitive": false`: omitempty leaves it out, as Go does.
    "callbacks/data/math-eval-app/math-basic.metrics.json": "explicit `false` omitted",
    "local/data/math-eval-app/math-basic.metrics.json": "explicit `false` omitted",
    "server/data/math-eval-app/math-basic.metrics.json": "explicit `false` omitted",
    # Go's trace.Trace has no json tags, so Go writes zero fields ("Error": "", "Tools": null); agenteval omits them.
    "llm/templatetrace/output/template-trace-eval-app/"
    "template-trace-eval-app_template-trace-basic_bac7b8c0-52fa-44fb-a098-1aa36eb6cc85.evalset_result.json": (
        "zero-valued execution-trace fields omitted"
    ),
    "trpcagent/output/trpcagent-travel-agent/"
    "trpcagent-travel-agent_travel-advice-basic_0542c931-cbbe-4b14-9752-394b14811642.evalset_result.json": (
        "zero-valued execution-trace fields omitted"
    ),
}

_JUDGE_ENV_FIELDS = ("providerName", "modelName", "variant", "baseURL", "apiKey")
_ENV_REFERENCE = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _judge_env_references(value: Any) -> dict[str, str]:
    """Map each variable referenced by a judge-model field to its literal reference text."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "judgeModel" and isinstance(item, dict):
                for field in _JUDGE_ENV_FIELDS:
                    for match in _ENV_REFERENCE.finditer(str(item.get(field, ""))):
                        name = match.group(1) or match.group(2)
                        assert found.get(name, match.group(0)) == match.group(0), f"{name} referenced two ways"
                        found[name] = match.group(0)
            found.update(_judge_env_references(item))
    elif isinstance(value, list):
        for item in value:
            found.update(_judge_env_references(item))
    return found


def _read(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """Return the file's text and JSON, after setting each variable its judge model references to its own reference.

    Loading then expands ``${JUDGE_MODEL_BASE_URL}`` back to ``${JUDGE_MODEL_BASE_URL}``, so the dump can be compared.
    """
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    for name, reference in _judge_env_references(data).items():
        monkeypatch.setenv(name, reference)
    return text, data


def _load(path: Path, text: str) -> Loaded:
    if path.name.endswith(".evalset.json"):
        return EvalSet.from_json(text)
    if path.name.endswith(".metrics.json"):
        return METRICS.validate_json(text, strict=True)
    assert path.name.endswith(".evalset_result.json"), path
    return EvalSetResult.from_json(text)


def _dump(loaded: Loaded) -> Any:
    if isinstance(loaded, list):
        return [metric.to_dict() for metric in loaded]
    return loaded.to_dict()


def _dump_text(loaded: Loaded) -> str:
    return dump_models(loaded) if isinstance(loaded, list) else loaded.to_json()


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {} or _is_number_zero(value)


def _is_number_zero(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _as_the_reference_reads(value: Any) -> Any:
    """Normalise JSON as Go reads it: zero values equal absent keys, numbers are float64, the api key is not kept."""
    if isinstance(value, dict):
        items = ((key, _as_the_reference_reads(item)) for key, item in value.items() if key != "apiKey")
        return {key: item for key, item in items if not _is_zero(item)}
    if isinstance(value, list):
        return [_as_the_reference_reads(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def _canonical(value: Any) -> str:
    """Type-strict JSON text: ``1`` differs from ``1.0``, ``0`` from ``false``; key order is ignored."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)


def test_the_reference_files_are_all_found() -> None:
    assert len(FILES) >= MIN_FILES
    kinds = {path.name.split(".", 1)[1] for path in FILES}
    assert kinds == {"evalset.json", "metrics.json", "evalset_result.json"}
    assert set(KNOWN_INEXACT) <= set(FILE_IDS), set(KNOWN_INEXACT) - set(FILE_IDS)
    assert len(KNOWN_INEXACT) * 3 < len(FILES), "most files must round-trip exactly"


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_reference_file_dumps_back_to_semantically_equal_json(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, original = _read(path, monkeypatch)
    dumped = _dump(_load(path, text))
    assert _canonical(_as_the_reference_reads(dumped)) == _canonical(_as_the_reference_reads(original))


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_reference_file_dumps_back_exactly_unless_listed(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, original = _read(path, monkeypatch)
    dumped = _dump(_load(path, text))
    file_id = path.relative_to(EXAMPLES).as_posix()
    if file_id in KNOWN_INEXACT:
        assert _canonical(dumped) != _canonical(original), f"{file_id} now round-trips exactly: unlist it"
    else:
        assert _canonical(dumped) == _canonical(original)


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_our_dump_of_a_reference_file_reloads_and_redumps_identically(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, _ = _read(path, monkeypatch)
    first = _load(path, text)
    written = _dump_text(first)
    second = _load(path, written)
    assert _canonical(_dump(second)) == _canonical(_dump(first))
    assert _dump_text(second) == written


def test_api_keys_in_reference_files_are_expanded_and_dropped_and_references_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = EXAMPLES / "llm/template/data/template-eval-app/template-basic.metrics.json"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://judge.invalid/v1")
    metrics = METRICS.validate_json(path.read_bytes(), strict=True)
    criterion = metrics[0].criterion
    assert criterion is not None and criterion.llm_judge is not None and criterion.llm_judge.judge_model is not None
    assert criterion.llm_judge.judge_model.api_key == "sk-from-env"
    assert criterion.llm_judge.judge_model.base_url == "https://judge.invalid/v1"
    text = dump_models(metrics)
    assert "sk-from-env" not in text
    assert "https://judge.invalid/v1" not in text
    assert '"baseURL": "${OPENAI_BASE_URL}"' in text


RESULT_FILES = [path for path in FILES if path.name.endswith(".evalset_result.json")]


@pytest.mark.parametrize("path", RESULT_FILES, ids=[path.relative_to(EXAMPLES).as_posix() for path in RESULT_FILES])
def test_result_written_by_us_is_loadable_and_equal(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, _ = _read(path, monkeypatch)
    result = EvalSetResult.from_json(text)
    assert result.eval_case_results
    written = tmp_path / path.name
    write_atomic(written, result.to_json())
    reloaded = EvalSetResult.from_json(written.read_bytes())
    assert reloaded == result
    assert reloaded.to_json() == result.to_json()
