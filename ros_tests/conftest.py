"""Shared fixtures for ros_tests: per-test environments for rmw_tracer and Fast DDS runs."""

from __future__ import annotations

import pytest

import harness


def pytest_sessionstart(session):
    if not harness.venv_python().is_file():
        raise pytest.UsageError(f"no ROS venv at {harness.VENV}: run tools/setup first")


@pytest.fixture
def tracer_env(tmp_path):
    """Environment for processes of this test on rmw_tracer: one private rendezvous dir and
    domain id shared by every process of the test, so they find each other and nothing else."""
    return harness.tracer_env(tmp_path)


@pytest.fixture
def fastdds_env(tmp_path):
    """Environment for processes of this test on Fast DDS, discovery on localhost only."""
    return harness.fastdds_env(tmp_path)


@pytest.fixture
def netns():
    """A loopback-only network namespace for Fast DDS processes, with a /dev/shm of its own (so
    Fast DDS's shared-memory files go with it, and its shared-memory transport cannot reach a
    Fast DDS outside), or None where the machine does not allow one (then fastdds_env's
    localhost-only discovery is the fence)."""
    if not harness.NetNamespace.available():
        yield None
        return
    with harness.NetNamespace(private_shm=True) as ns:
        yield ns
