"""File helpers (``agenteval._util.files``): strict loading, confinement to a base directory, atomic writes."""

from __future__ import annotations

import codecs
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from agenteval._util.files import (
    _temp_file_prefix,
    dump_models,
    ensure_inside,
    load_json_file,
    parse_json,
    write_atomic,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult.local import load_result_file
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.models import EvalSet
from agenteval.metric.criterion import Criterion, JudgeModelOptions, LLMCriterion
from agenteval.metric.models import EvalMetric

METRICS = TypeAdapter(list[EvalMetric])


# --- ensure_inside ---


def test_ensure_inside_accepts_paths_below_the_base(tmp_path: Path) -> None:
    target = tmp_path / "app" / "set.evalset.json"
    assert ensure_inside(tmp_path, target) == target
    assert ensure_inside(tmp_path, tmp_path / "app" / ".." / "other.json") == tmp_path / "app" / ".." / "other.json"
    assert ensure_inside(tmp_path, tmp_path) == tmp_path


@pytest.mark.parametrize("relative", ["../outside.json", "app/../../outside.json"])
def test_ensure_inside_rejects_dot_dot_escapes(tmp_path: Path, relative: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    with pytest.raises(ConfigError, match="outside the base directory"):
        ensure_inside(base, base / relative)


def test_ensure_inside_rejects_a_sibling_with_a_common_prefix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        ensure_inside(tmp_path / "data", tmp_path / "data-evil" / "x.json")


def test_ensure_inside_follows_symlinks(tmp_path: Path) -> None:
    base = tmp_path / "base"
    outside = tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError):
        ensure_inside(base, base / "link" / "x.json")


# --- parse_json / load_json_file ---


def _load_error(tmp_path: Path, text: str, adapter: type[Any] | TypeAdapter[Any], what: str) -> str:
    path = tmp_path / "app" / "doc.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_json_file(path, adapter, what)
    message = str(info.value)
    assert message.startswith(f"{what} file {path} is malformed: "), message
    return message


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('{"evalSetId": "s", "evalCases": [', ["not valid JSON", "EOF"]),
        ("", ["not valid JSON"]),
        ("[]", ["document: ", "(got [])"]),
        ('{"evalCases": [{"sessionInput": {"userId": 5}}]}', ["field evalCases[0].sessionInput.userId: ", "(got 5)"]),
        ('{"evalCases": [{"evalId": "a"}, {"evalMode": "replay"}]}', ["field evalCases[1].evalMode: ", "'replay'"]),
        (
            '{"evalCases": [{"conversation": [{"tools": [{"name": 1}]}]}]}',
            ["field evalCases[0].conversation[0].tools[0].name: "],
        ),
        ('{"creationTimestamp": "2025-01-01"}', ["field creationTimestamp: ", "'2025-01-01'"]),
        ('{"evalCases": "none"}', ["field evalCases: "]),
    ],
    ids=["truncated", "empty", "wrong-top-level", "wrong-type", "unknown-enum", "deep", "timestamp", "not-a-list"],
)
def test_eval_set_errors_name_the_file_and_the_field(tmp_path: Path, text: str, fragments: list[str]) -> None:
    message = _load_error(tmp_path, text, EvalSet, "eval set")
    for fragment in fragments:
        assert fragment in message


def test_metrics_errors_name_the_array_index(tmp_path: Path) -> None:
    text = '[{"metricName": "a"}, {"metricName": "b", "criterion": {"finalResponse": {"rouge": {"rougeType": "x"}}}}]'
    message = _load_error(tmp_path, text, METRICS, "metrics")
    assert "field [1].criterion.finalResponse.rouge.rougeType: " in message


def test_every_error_is_reported(tmp_path: Path) -> None:
    message = _load_error(tmp_path, '[{"threshold": "1"}, {"evaluatorName": 2}]', METRICS, "metrics")
    assert "field [0].threshold: " in message
    assert "; field [1].evaluatorName: " in message


def test_long_bad_values_are_shortened_in_messages(tmp_path: Path) -> None:
    message = _load_error(tmp_path, json.dumps({"evalCases": [{"evalId": list(range(100))}]}), EvalSet, "eval set")
    assert "..." in message
    assert "99" not in message.replace(str(tmp_path), "")


def test_load_json_file_returns_the_model(tmp_path: Path) -> None:
    path = tmp_path / "set.evalset.json"
    path.write_text('{"evalSetId": "s", "evalCases": [{"evalId": "a"}]}', encoding="utf-8")
    loaded = load_json_file(path, EvalSet, "eval set")
    assert isinstance(loaded, EvalSet)
    assert loaded.eval_cases[0].eval_id == "a"
    path.write_text('[{"metricName": "m", "threshold": 1}]', encoding="utf-8")
    assert load_json_file(path, METRICS, "metrics")[0].threshold == 1.0


def test_load_json_file_missing_file_is_not_found(tmp_path: Path) -> None:
    path = tmp_path / "app" / "missing.evalset.json"
    with pytest.raises(NotFoundError, match="eval set file .*missing.evalset.json does not exist") as info:
        load_json_file(path, EvalSet, "eval set")
    assert isinstance(info.value, LookupError)
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_load_json_file_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a regular file"):
        load_json_file(tmp_path, EvalSet, "eval set")


def test_parse_json_names_the_source_and_accepts_bytes() -> None:
    assert parse_json(b'{"evalSetId": "s"}', EvalSet, "request body").eval_set_id == "s"
    with pytest.raises(ConfigError, match="^request body is malformed: field evalSetId: "):
        parse_json('{"evalSetId": 1}', EvalSet, "request body")


def test_parse_json_is_strict() -> None:
    with pytest.raises(ConfigError, match="field threshold"):
        parse_json('{"threshold": "0.5"}', EvalMetric, "metric")


def test_malformed_file_errors_can_be_caught_as_value_errors() -> None:
    with pytest.raises(ValueError):
        parse_json("{", EvalSet, "x")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"evalSetId": "s", "creationTimestamp": NaN}', "field creationTimestamp: expected a finite number, got nan"),
        (
            '{"evalCases": [{"conversation": [{"tools": [{"arguments": {"x": NaN}}]}]}]}',
            "field evalCases[0].conversation[0].tools[0].arguments.x is not a finite number (NaN)",
        ),
        (
            '{"evalCases": [{"sessionInput": {"state": {"k": [1, -Infinity]}}}]}',
            "field evalCases[0].sessionInput.state.k[1] is not a finite number (-Infinity)",
        ),
        ('{"futureKey": {"v": Infinity}}', "field futureKey.v is not a finite number (Infinity)"),
    ],
    ids=["typed", "tool-arguments", "state", "unknown-key"],
)
def test_nan_and_infinity_constants_are_refused_on_load(tmp_path: Path, text: str, field: str) -> None:
    message = _load_error(tmp_path, text, EvalSet, "eval set")
    assert field in message


def test_nan_and_infinity_constants_are_refused_in_a_list_document(tmp_path: Path) -> None:
    message = _load_error(tmp_path, '[{"metricName": "m"}, {"extension": {"w": NaN}}]', METRICS, "metrics")
    assert message.endswith(
        "is malformed: field [1].extension.w is not a finite number (NaN); "
        "JSON has no NaN or Infinity, so store a finite number (or a string) instead"
    )


def test_the_words_nan_and_infinity_in_strings_load() -> None:
    loaded = parse_json(b'{"name": "NaN", "description": "Infinity"}', EvalSet, "x")
    assert (loaded.name, loaded.description) == ("NaN", "Infinity")


# --- encodings ---

_DOC = '{"evalSetId": "café", "evalCases": []}'
_SAVE_AS_UTF8 = "save it as UTF-8 without a byte-order mark"
_LATIN = "as in Latin-1 or Windows-1252 text"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (codecs.BOM_UTF8 + _DOC.encode(), "starts with a UTF-8 byte-order mark, which JSON does not allow"),
        (_DOC.encode("utf-16"), "is not UTF-8 (it starts with a UTF-16 byte-order mark)"),
        (codecs.BOM_UTF16_BE + _DOC.encode("utf-16-be"), "is not UTF-8 (it starts with a UTF-16 byte-order mark)"),
        (_DOC.encode("utf-32"), "is not UTF-8 (it starts with a UTF-32 byte-order mark)"),
        (codecs.BOM_UTF32_BE + _DOC.encode("utf-32-be"), "is not UTF-8 (it starts with a UTF-32 byte-order mark)"),
        (_DOC.encode("utf-16-le"), "is not UTF-8 (it holds NUL bytes, as UTF-16 and UTF-32 text does)"),
        (
            _DOC.encode("latin-1"),
            f"is not UTF-8 (byte 0xe9 at line 1, byte offset 18, is not valid UTF-8, {_LATIN})",
        ),
        (
            b'{\n"description": "\x93quoted\x94"}',
            f"is not UTF-8 (byte 0x93 at line 2, byte offset 18, is not valid UTF-8, {_LATIN})",
        ),
    ],
    ids=[
        "utf-8-bom",
        "utf-16-le-bom",
        "utf-16-be-bom",
        "utf-32-le-bom",
        "utf-32-be-bom",
        "utf-16-no-bom",
        "latin-1",
        "cp1252",
    ],
)
def test_files_in_another_encoding_are_refused_with_a_hint(tmp_path: Path, data: bytes, problem: str) -> None:
    # Go's encoding/json refuses a UTF-8 byte-order mark too, so it is not skipped silently.
    path = tmp_path / "s.evalset.json"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_json_file(path, EvalSet, "eval set")
    assert str(info.value) == f"eval set file {path} {problem}: {_SAVE_AS_UTF8}"


def test_text_that_kept_its_byte_order_mark_is_refused_with_a_hint() -> None:
    with pytest.raises(ConfigError, match=r"^request body starts with a byte-order mark \(U\+FEFF\)"):
        parse_json("\ufeff" + _DOC, EvalSet, "request body")


def test_a_result_file_with_a_byte_order_mark_names_the_encoding_not_the_legacy_form(tmp_path: Path) -> None:
    path = tmp_path / "app" / "r.evalset_result.json"
    path.parent.mkdir()
    path.write_bytes(codecs.BOM_UTF8 + b'{"evalSetResultId": "r", "evalCaseResults": []}')
    with pytest.raises(ConfigError, match=f"^eval set result file {path} starts with a UTF-8 byte-order mark"):
        load_result_file(path)


def test_utf8_text_and_broken_json_still_get_the_json_error() -> None:
    assert parse_json(_DOC.encode(), EvalSet, "x").eval_set_id == "café"
    with pytest.raises(ConfigError, match="^x is malformed: not valid JSON: "):
        parse_json(b'{"evalSetId": "caf\xc3\xa9"', EvalSet, "x")


# --- write_atomic ---


def test_write_atomic_writes_text_with_a_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "set.evalset.json"
    write_atomic(path, '{\n  "evalSetId": "é"\n}')
    assert path.read_bytes() == '{\n  "evalSetId": "é"\n}\n'.encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(path.parent) == ["set.evalset.json"]


def test_write_atomic_replaces_the_previous_content(tmp_path: Path) -> None:
    path = tmp_path / "set.evalset.json"
    write_atomic(path, "first, and longer")
    write_atomic(path, "second")
    assert path.read_text(encoding="utf-8") == "second\n"
    assert os.listdir(tmp_path) == ["set.evalset.json"]


def test_write_atomic_keeps_the_old_file_and_no_temp_file_when_replace_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "set.evalset.json"
    path.write_text("old\n", encoding="utf-8")

    def fail_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise PermissionError("replace denied")

    monkeypatch.setattr(os, "replace", fail_replace)
    with pytest.raises(StorageError, match=r"write .*set\.evalset\.json: replace denied"):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["set.evalset.json"]


def test_write_atomic_leaves_no_temp_file_when_the_text_cannot_be_encoded(tmp_path: Path) -> None:
    path = tmp_path / "set.evalset.json"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "lone surrogate \ud800")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["set.evalset.json"]


def test_write_atomic_reports_a_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(StorageError, match="create directory"):
        write_atomic(blocker / "sub" / "x.json", "{}")


# --- dump_models ---


def test_dump_models_writes_a_two_space_indented_array_as_the_reference_does() -> None:
    metrics = [
        EvalMetric(metric_name="exact", threshold=1.0),
        EvalMetric(
            metric_name="judge",
            threshold=0.5,
            criterion=Criterion(
                llm_judge=LLMCriterion(judge_model=JudgeModelOptions(model_name="模型", api_key="sk-x"))
            ),
        ),
    ]
    text = dump_models(metrics)
    assert text == (
        "[\n"
        "  {\n"
        '    "metricName": "exact",\n'
        '    "threshold": 1\n'
        "  },\n"
        "  {\n"
        '    "metricName": "judge",\n'
        '    "threshold": 0.5,\n'
        '    "criterion": {\n'
        '      "llmJudge": {\n'
        '        "judgeModel": {\n'
        '          "modelName": "模型"\n'
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "]"
    )
    assert [metric.to_dict() for metric in METRICS.validate_json(text, strict=True)] == json.loads(text)


def test_dump_models_of_nothing_is_an_empty_array() -> None:
    assert dump_models([]) == "[]"


def test_dumped_models_round_trip_through_a_file(tmp_path: Path) -> None:
    result = EvalSetResult(eval_set_result_id="r", creation_timestamp=1700000000.25)
    path = tmp_path / "app" / "r.evalset_result.json"
    write_atomic(path, result.to_json())
    assert load_json_file(path, EvalSetResult, "eval set result") == result


def test_write_atomic_handles_a_name_at_the_file_system_limit(tmp_path: Path) -> None:
    path = tmp_path / ("x" * 250 + ".json")  # 255 bytes: the longest name Linux file systems take

    write_atomic(path, "{}")

    assert path.read_text(encoding="utf-8") == "{}\n"
    assert [entry.name for entry in tmp_path.iterdir()] == [path.name]


# --- temporary files left by a crash ---

_WRITER = """
import sys
from pathlib import Path

from agenteval._util.files import write_atomic

text = "x" * 8_000_000
while True:
    write_atomic(Path(sys.argv[1]), text)
"""


def _temp_files(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir() if entry.name.endswith(".tmp"))


def _kill_writers_mid_write(path: Path, count: int) -> None:
    """Start ``count`` processes writing ``path`` in a loop; SIGKILL them all while each has a temporary file."""
    processes = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], cwd=Path(__file__).parents[1])
        for _ in range(count)
    ]
    try:
        while all(process.poll() is None for process in processes):
            names = _temp_files(path.parent)
            prefixes = [_temp_file_prefix(process.pid) for process in processes]
            if all(any(name.startswith(prefix) for name in names) for prefix in prefixes):
                break
            time.sleep(0.001)
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()
    assert [process.returncode for process in processes] == [-signal.SIGKILL] * count


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_the_next_write_removes_the_temporary_files_of_writers_killed_mid_write(tmp_path: Path) -> None:
    app = tmp_path / "app"
    path = app / "set.evalset.json"
    write_atomic(app / "other.evalset.json", "{}")
    for _ in range(10):
        # Together: a writer started later would already remove what an earlier one left.
        _kill_writers_mid_write(path, 3)
        if len(_temp_files(app)) >= 2:
            break
    assert len(_temp_files(app)) >= 2, "the writers were never killed mid-write"
    # Until then no store lists them.
    assert run_sync(LocalEvalSetManager(tmp_path).list("app")) in (["other"], ["other", "set"])

    write_atomic(app / "other.evalset.json", '{"evalSetId": "other"}')

    assert _temp_files(app) == []
    assert run_sync(LocalEvalSetManager(tmp_path).list("app")) in (["other"], ["other", "set"])


def _other_host_prefix(pid: int) -> str:
    """The prefix of temporary files that process ``pid`` of another host writes."""
    ours = _temp_file_prefix(pid)
    host = ours.split("-")[1]
    return ours.replace(f"-{host}-", "-000000-" if host != "000000" else "-111111-")


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_write_keeps_temporary_files_that_are_not_stale_ours(tmp_path: Path) -> None:
    live = tmp_path / f"{_temp_file_prefix(os.getpid())}abcd1234.tmp"  # another thread's write in flight
    foreign = [tmp_path / ".abcd1234.tmp", tmp_path / "notes.tmp", tmp_path / ".agenteval-locks"]
    for file in [live, *foreign[:2]]:
        file.write_text("partial", encoding="utf-8")
    foreign[2].mkdir()
    other_host = tmp_path / f"{_other_host_prefix(_dead_pid())}abcd1234.tmp"
    other_host.write_text("partial", encoding="utf-8")

    write_atomic(tmp_path / "set.evalset.json", "{}")

    assert sorted(entry.name for entry in tmp_path.iterdir()) == sorted(
        [live.name, *(file.name for file in foreign), other_host.name, "set.evalset.json"]
    )


def test_a_write_removes_a_temporary_file_of_a_dead_writer_and_an_old_one_of_any_host(tmp_path: Path) -> None:
    dead = tmp_path / f"{_temp_file_prefix(_dead_pid())}abcd1234.tmp"
    old = tmp_path / f"{_other_host_prefix(os.getpid())}abcd1234.tmp"
    for file in (dead, old):
        file.write_text("partial", encoding="utf-8")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))

    write_atomic(tmp_path / "set.evalset.json", "{}")

    assert [entry.name for entry in tmp_path.iterdir()] == ["set.evalset.json"]
