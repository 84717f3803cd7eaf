"""Importers refuse hostile or broken files with a ConfigError naming them: alias bombs, deep nesting, huge
integers, paths that are not regular files, and repeated case ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.errors import ConfigError
from agenteval.importers.adk import read_eval_set
from agenteval.importers.pydantic_evals import read_dataset
from tests._fifo_reads import outcome_within

DEEP = 100_000
HUGE_INT = "1" + "0" * 4999  # 5000 digits: more than Python reads (sys.get_int_max_str_digits() is 4300)

MEMORY_LIMIT = 2 << 30
"""Address space for the child that reads an alias bomb: enough for Python and the libraries, not for the bomb."""


def _laughs(levels: int, width: int) -> str:
    """A "billion laughs" dataset: each level's anchor holds ``width`` aliases of the previous level."""
    anchors = ['l0: &l0 "lol"'] + [
        f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]" for level in range(1, levels)
    ]
    return "cases:\n- name: laughs\n  inputs: {" + ", ".join(anchors) + "}\n"


_READ_BOUNDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from agenteval.errors import ConfigError
from agenteval.importers.pydantic_evals import read_dataset
try:
    read_dataset(sys.argv[1])
except ConfigError as error:
    print(error)
"""


@pytest.mark.parametrize(("levels", "width"), [(10, 10), (7, 10)], ids=["billion-laughs", "million-laughs"])
def test_a_yaml_alias_bomb_is_a_config_error_not_a_dead_process(tmp_path: Path, levels: int, width: int) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(_laughs(levels, width), encoding="utf-8")
    assert path.stat().st_size < 600

    # In a child with bounded memory: a regression must not take the test runner down with it.
    child = subprocess.run(
        [sys.executable, "-c", _READ_BOUNDED.format(limit=MEMORY_LIMIT), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.startswith(f"{path}: its YAML aliases")
    assert "write the repeated parts out" in child.stdout


def test_a_yaml_alias_that_holds_itself_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("cases:\n- name: loop\n  inputs: &loop [*loop]\n", encoding="utf-8")

    with pytest.raises(
        ae.ConfigError, match=r"loop\.yaml: the value anchored at line 3, column 11 holds itself through an alias"
    ):
        read_dataset(path)


def test_yaml_aliases_that_repeat_a_value_a_few_times_are_read(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text(
        "cases:\n- name: a\n  inputs: &question {city: Paris, units: metric}\n- name: b\n  inputs: *question\n",
        encoding="utf-8",
    )

    imported = read_dataset(path)

    first, second = (case.conversation[0].user_content for case in imported.eval_set.eval_cases)
    assert first == second == ae.Message.user('{"city":"Paris","units":"metric"}')


def _adk_test_file(tool_input: str) -> str:
    return f'[{{"query": "q", "expected_tool_use": [{{"tool_name": "t", "tool_input": {{"a": {tool_input}}}}}]}}]'


@pytest.mark.parametrize(
    ("file_name", "text"),
    [
        ("deep.yaml", "cases:\n- name: c\n  inputs: " + "[" * DEEP + "]" * DEEP + "\n"),
        ("deep.json", '{"cases": [{"name": "c", "inputs": ' + "[" * DEEP + "]" * DEEP + "}]}"),
        ("deep.test.json", _adk_test_file("[" * DEEP + "]" * DEEP)),
    ],
)
def test_deep_nesting_is_a_config_error_naming_the_file(tmp_path: Path, file_name: str, text: str) -> None:
    path = tmp_path / file_name
    path.write_text(text, encoding="utf-8")
    read = read_eval_set if file_name.endswith(".test.json") else read_dataset

    with pytest.raises(ae.ConfigError, match="nested too deeply") as raised:
        read(path)

    assert str(raised.value).startswith(str(path))


@pytest.mark.parametrize(
    ("file_name", "text"),
    [
        ("huge.yaml", f"cases:\n- name: c\n  inputs: {{n: {HUGE_INT}}}\n"),
        ("huge.json", f'{{"cases": [{{"name": "c", "inputs": {{"n": {HUGE_INT}}}}}]}}'),
        ("huge.test.json", _adk_test_file(HUGE_INT)),
    ],
)
def test_a_5000_digit_integer_is_a_config_error_naming_the_file(tmp_path: Path, file_name: str, text: str) -> None:
    path = tmp_path / file_name
    path.write_text(text, encoding="utf-8")
    read = read_eval_set if file_name.endswith(".test.json") else read_dataset

    with pytest.raises(ae.ConfigError, match="an integer of more than 4300 digits") as raised:
        read(path)

    assert str(raised.value).startswith(str(path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("file_name", ["dataset.yaml", "dataset.json", "weather.test.json"])
def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path, file_name: str) -> None:
    path = tmp_path / file_name
    os.mkfifo(path)
    read = read_eval_set if file_name.endswith(".test.json") else read_dataset

    error = outcome_within(10, lambda: read(path), path)

    assert isinstance(error, ae.ConfigError)
    assert str(error) == f"{path} is a FIFO (named pipe), not a regular file: give the path of a file"


def test_a_directory_or_a_device_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "cases.yaml"
    directory.mkdir()

    with pytest.raises(ae.ConfigError, match=rf"^{directory} is a directory, not a regular file"):
        read_dataset(directory)
    with pytest.raises(ae.ConfigError, match=r"^/dev/null is a character device, not a regular file"):
        read_eval_set("/dev/null")


def test_a_case_name_that_repeats_an_unnamed_cases_id_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "repeated.yaml"
    path.write_text("cases:\n- inputs: a\n- name: Case 1\n  inputs: b\n", encoding="utf-8")

    with pytest.raises(ae.ConfigError) as raised:
        read_dataset(path)

    assert str(raised.value) == (
        f"{path}: more than one case has the id 'Case 1' (an unnamed case is 'Case <n>', counted from 1):"
        " give each case its own name"
    )


def _adk_case(eval_id: str) -> dict[str, object]:
    return {
        "eval_id": eval_id,
        "conversation": [{"invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "hi"}]}}],
    }


@pytest.mark.parametrize(
    "content",
    [
        {"eval_set_id": "s", "eval_cases": [_adk_case("paris"), _adk_case("rome"), _adk_case("paris")]},
        [
            {"name": "paris", "data": [{"query": "q"}]},
            {"name": "rome", "data": [{"query": "q"}]},
            {"name": "paris", "data": [{"query": "r"}]},
        ],
    ],
    ids=["eval-set", "older-list"],
)
def test_repeated_adk_case_ids_are_refused_naming_them_and_the_file(tmp_path: Path, content: object) -> None:
    path = tmp_path / "weather.evalset.json"
    path.write_text(json.dumps(content), encoding="utf-8")

    with pytest.raises(ae.ConfigError) as raised:
        read_eval_set(path)

    assert str(raised.value) == f"{path}: more than one case has the id 'paris': give each case its own eval id"


def test_a_huge_hexadecimal_integer_is_refused_like_a_decimal_one(tmp_path: Path) -> None:
    """Python reads power-of-two bases of any length: the digit bound must not depend on the base."""
    path = tmp_path / "hex.yaml"
    path.write_text("cases:\n- name: c\n  inputs: 0x" + "f" * 20_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"hex\.yaml: line 3.*more than Python reads"):
        read_dataset(path)
