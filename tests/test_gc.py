from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import agenteval._util.gc_tuning as tuning
from agenteval._util.gc_tuning import fewer_collections, no_collections


@pytest.fixture(autouse=True)
def _restore_threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_threshold_is_raised_inside_and_restored_after() -> None:
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        assert gc.get_threshold()[0] == tuning._THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_blocks_restore_only_when_the_last_one_exits() -> None:
    gc.set_threshold(700, 10, 10)
    first, second = fewer_collections(), fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not LIFO: concurrent evaluations finish in any order
    assert gc.get_threshold()[0] == tuning._THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_an_application_that_turned_collection_off_is_left_alone() -> None:
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)


def test_threshold_is_restored_when_the_block_raises() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_objects_from_before_the_block_are_left_out_of_its_collections() -> None:
    # Earlier reports of a notebook session are not scanned again by each new evaluation.
    gc.set_threshold(700, 10, 10)
    earlier = [[index] for index in range(1000)]
    with fewer_collections():
        assert gc.get_freeze_count() >= len(earlier)
    assert gc.get_freeze_count() == 0


def test_objects_the_application_froze_stay_frozen() -> None:
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with fewer_collections():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_no_collection_runs_during_a_parse_and_it_resumes_after_the_last_block() -> None:
    assert gc.isenabled()
    first, second = no_collections(), no_collections()
    first.__enter__()
    second.__enter__()
    assert not gc.isenabled()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_no_collections_leaves_collection_off_when_the_application_turned_it_off() -> None:
    gc.disable()
    try:
        with no_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
