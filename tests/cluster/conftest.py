"""One multi-node cluster for the tests here that need no autoscaler: a head of no CPU, as cluster.yaml's
(it runs the jobs' drivers and Ray's controllers). Each test adds the worker nodes it needs and they
are stopped when it ends, so a test starts with the head alone, as with a head of its own, without
paying for one (``cluster.harness``)."""

from __future__ import annotations

import pytest

from cluster.harness import Head, ray_cluster_head


@pytest.fixture(scope="package")
def shared_head():
    with ray_cluster_head(cpus=0) as head:
        yield head


@pytest.fixture
def head(shared_head: Head) -> Head:
    """The shared head; the worker nodes a test adds to it are stopped after the test."""
    yield shared_head
    shared_head.stop_workers()
