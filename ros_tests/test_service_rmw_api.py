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


def test_service_and_graph_rmw_api_under_valgrind(tmp_path, tracer_env):
    # The same checks with memcheck: no invalid access, no use of uninitialised memory, nothing
    # definitely lost (the graph queries' outputs are freed by their fini helpers, events own
    # nothing, every handle is destroyed).
    import shutil

    import pytest

    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    exe = harness.compile_c(HERE / "c" / "service_api.c", tmp_path / "service_api",
                            msgs=("std_msgs", "test_msgs"))
    r = harness.run(["valgrind", "--error-exitcode=99", "--leak-check=full",
                     "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite", str(exe)],
                    tracer_env, timeout=300)
    assert [l for l in r.stdout.splitlines() if l.startswith("FAIL ")] == [], r.describe()
    assert "ERROR SUMMARY: 0 errors" in r.stderr, r.describe()
    assert r.returncode == 0, r.describe()


def test_service_with_the_cpp_type_support(tmp_path, tracer_env):
    # rclcpp hands rmw the rosidl_typesupport_cpp dispatcher of a service (every rclcpp node's
    # parameter services): request and response are C++ objects (ros_tests/c/service_cpp.c).
    exe = harness.compile_c(HERE / "c" / "service_cpp.c", tmp_path / "service_cpp",
                            libs=("rmw", "rmw_fastrtps_cpp", "rcutils", "rosidl_runtime_c"),
                            link_python=False)
    r = harness.run([exe], tracer_env, timeout=60)
    assert [l for l in r.stdout.splitlines() if l.startswith("FAIL ")] == [], r.describe()
    assert "ok take C++ response" in r.stdout and "ok teardown" in r.stdout, r.describe()
    assert r.returncode == 0, r.describe()
