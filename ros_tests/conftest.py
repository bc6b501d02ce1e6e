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


@pytest.fixture
def oracle_netns():
    """A private network namespace (own /dev/shm) for a Fast DDS oracle run; the test is skipped
    where the machine allows none (an oracle must not fall back to the host's network)."""
    if not harness.NetNamespace.available():
        pytest.skip("no private network namespace for Fast DDS on this machine")
    with harness.NetNamespace(private_shm=True) as ns:
        yield ns


@pytest.fixture(params=["rmw_tracer", "fastdds"])
def rmw(request, tmp_path):
    """(environment, namespace or None) for one middleware: the test runs once on each, Fast DDS
    inside a private network namespace with its own /dev/shm (skipped where there is none)."""
    if request.param == "rmw_tracer":
        yield harness.tracer_env(tmp_path), None
        return
    if not harness.NetNamespace.available():
        pytest.skip("no private network namespace for Fast DDS on this machine")
    with harness.NetNamespace(private_shm=True) as ns:
        yield harness.fastdds_env(tmp_path), ns


@pytest.fixture
def procs():
    """Every process a test starts (append them); their process groups are killed when it
    ends, pass or fail, and reaped."""
    started: list[harness.Proc] = []
    yield started
    for p in started:
        p.kill()
        p.join(5)
