"""The R1 rmw entry points called directly from C (issue 3, item 2 "validates its arguments the
way rmw documents ... sets the rmw error string on every failure" and item 4: rmw_wait timeout
semantics, guard conditions, on-new-message callbacks, actual QoS, gids, serialized messages,
take_sequence, the context life cycle). The checks are in ros_tests/c/rmw_api.c."""

from __future__ import annotations

from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent

CHECKS = [
    "identifier", "serialization format", "feature publication seq", "feature dynamic message",
    "set log severity", "set bad log severity", "init options null", "init options",
    "init options twice", "init options copy", "copy into initialized", "init options fini",
    "init foreign options", "init null context", "init", "context fields", "init twice",
    "invalid node name", "invalid namespace", "null node name", "create node",
    "graph guard condition", "foreign node", "invalid topic name", "null type support",
    "create publisher", "actual qos resolved", "no match yet", "create subscription",
    "publisher matched", "subscription matched", "gid equal", "gid differs", "foreign gid",
    "create wait set and guard condition", "zero timeout polls", "timeout sets no error string",
    "timed wait", "trigger", "triggered is ready", "trigger consumed",
    "null timeout blocks until triggered", "graph guard condition on a new publisher",
    "graph guard condition on a destroyed publisher", "graph guard condition quiet without graph changes", "empty subscription not ready", "subscription ready",
    "wait_for_all_acked null publisher", "wait_for_all_acked foreign publisher",
    "wait_for_all_acked zero-initialized publisher", "wait_for_all_acked in process, zero timeout",
    "wait_for_all_acked infinite", "wait_for_all_acked best-effort publisher",
    "callback gets the waiting count", "callback per new message", "clear callback",
    "take with info", "info publisher gid", "take_sequence count 0",
    "take_sequence over capacity", "take_sequence", "take on empty", "keep_last depth bounds the ring", "serialize",
    "publish serialized", "take serialized grows the buffer",
    "publish garbage", "malformed sample skipped", "publisher allocation",
    "no loans of a type that is not plain", "ignore_local_publications", "others still take it",
    "destroy ignoring subscription", "callback may take (waiting messages)",
    "callback may take (new messages)", "matched event", "event callback set",
    "event callback on a match", "destroy joining subscription", "event callback on an unmatch",
    "event callback clear", "destroy subscription", "unmatched after destroy",
    "destroy publisher", "destroy gc and wait set", "destroy node", "fini before shutdown",
    "shutdown", "no node after shutdown", "context fini", "options fini",
]


def test_rmw_api_checks(tmp_path, tracer_env):
    exe = harness.compile_c(HERE / "c" / "rmw_api.c", tmp_path / "rmw_api", msgs=("std_msgs",))
    r = harness.run([exe], tracer_env, timeout=60)
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAIL ")]
    assert failed == [], r.describe()
    passed = {line[3:] for line in r.stdout.splitlines() if line.startswith("ok ")}
    assert [c for c in CHECKS if c not in passed] == [], r.describe()
    assert r.returncode == 0, r.describe()
