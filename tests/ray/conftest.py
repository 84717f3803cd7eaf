"""A real two-node Ray cluster on 127.0.0.1 for the tests of this directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ray.cluster import Cluster, local_cluster


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[Cluster]:
    with local_cluster() as cluster:
        yield cluster
