"""How messages name a line of the user's code outside a notebook (cells are tested in a real kernel)."""

from __future__ import annotations

from agenteval._util.code_location import code_location, notebook_cell


def test_a_file_is_named_by_its_base_name_or_as_the_caller_shows_it() -> None:
    assert notebook_cell(__file__) is None
    assert code_location("/home/me/project/agent.py", 12) == "agent.py:12"
    assert code_location("/home/me/project/agent.py", 12, "project/agent.py") == "project/agent.py:12"
    assert code_location("<string>", 1) == "<string>:1"
