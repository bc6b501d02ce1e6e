"""The services, graph-query, event and QoS-compatibility entry points called directly from C,
checking what rmw documents (argument validation and codes, request headers, readiness, callbacks,
output structures, matched events). The checks are in ros_tests/c/service_api.c."""

from __future__ import annotations

from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent


def test_service_and_graph_rmw_api(tmp_path, tracer_env):
    exe = harness.compile_c(HERE / "c" / "service_api.c", tmp_path / "service_api",
                            msgs=("std_msgs", "test_msgs"))
    r = harness.run([exe], tracer_env, timeout=60)
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAIL ")]
    assert failed == [], r.describe()
    passed = [line for line in r.stdout.splitlines() if line.startswith("ok ")]
    # Every check ran (a crash midway would leave some out).
    assert "ok shutdown" in passed and len(passed) >= 60, r.describe()
    assert r.returncode == 0, r.describe()
