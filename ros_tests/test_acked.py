"""`rmw_publisher_wait_for_all_acked` between real rclpy processes (issue 9; docs/rmw-mapping.md,
"Acknowledgements"): every matched reliable subscription in another process has every earlier
sample (OK), a stopped one gives TIMEOUT until it runs again, best-effort subscriptions and
best-effort publishers are not waited for, a killed subscription no longer holds the call.
Each case that Fast DDS defines runs under it too, as the oracle, in a private network
namespace with a private /dev/shm. The rclpy side is test_acked_worker.py; the C side (rcl,
argument checks) is ros_tests/c/rmw_api.c.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent
WORKER = HERE / "test_acked_worker.py"


def start(procs, rmw, role: str, *args: str) -> harness.Proc:
    env, ns = rmw
    p = harness.spawn_python(WORKER, [role, *args], env=env, timeout=90, netns=ns)
    procs.append(p)
    if role == "sub":
        assert p.wait_for_output("ready", 30), p.join(1).describe()
    return p


def result(p: harness.Proc) -> dict:
    r = p.join()
    assert r.returncode == 0, r.describe()
    return json_line(r.stdout, r.describe())


def messages(n: int) -> list[str]:
    return [f"m {i}" for i in range(n)]


def test_stalled_reliable_subscription_times_out_then_acks(rmw, procs):
    # A reliable subscription whose process is stopped cannot acknowledge: TIMEOUT; resumed,
    # it has everything (nothing lost), and the wait returns OK. A best-effort subscription of
    # the same publisher plays no part in either wait.
    reliable = start(procs, rmw, "sub", "--expect", "21")
    best_effort = start(procs, rmw, "sub", "--reliability", "best_effort", "--expect", "21")
    pub = result(start(procs, rmw, "pub", "--subs", "2", "--count", "20",
                       "--stop", str(reliable.popen.pid)))
    assert pub["matched"] == 2, pub
    assert pub["running"]["acked"] is True, pub
    assert pub["stalled"]["acked"] is False, pub
    assert pub["resumed"]["acked"] is True, pub
    assert result(reliable)["received"] == messages(21)
    if rmw[1] is None:  # best effort: lossless on rmw_tracer, not promised by Fast DDS
        assert result(best_effort)["received"] == messages(21)


@pytest.mark.parametrize("pub_reliability", ["reliable", "best_effort"])
def test_best_effort_is_not_waited_for(rmw, procs, pub_reliability):
    # Only reliable subscriptions are waited for, and a best-effort publisher returns at once
    # (rmw.h: "only works effectively while QOS profile of publisher is set to RELIABLE"):
    # with its only subscription stopped, the wait is still OK.
    sub = start(procs, rmw, "sub", "--reliability", "best_effort", "--expect", "21")
    pub = result(start(procs, rmw, "pub", "--reliability", pub_reliability, "--count", "20",
                       "--stop", str(sub.popen.pid)))
    assert pub["matched"] == 1, pub
    assert [pub[k]["acked"] for k in ("running", "stalled", "resumed")] == [True] * 3, pub


def test_killed_subscription_no_longer_holds_the_call(tmp_path, procs):
    # A subscription whose process dies holds nothing: its link closes with it and the wait is
    # OK at once. (Fast DDS waits for the reader's lease, 20 s by default, and answers TIMEOUT
    # until then: docs/rmw-mapping.md, Acknowledgements.)
    rmw = (harness.tracer_env(tmp_path), None)
    doomed = start(procs, rmw, "sub", "--expect", "1000")
    other = start(procs, rmw, "sub", "--expect", "21")
    pub = result(start(procs, rmw, "pub", "--subs", "2", "--count", "20",
                       "--kill", str(doomed.popen.pid)))
    assert pub["running"]["acked"] is True, pub
    assert pub["killed"]["acked"] is True, pub
    assert result(other)["received"] == messages(21)


@pytest.fixture(scope="module")
def acked_rcl(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("c") / "acked_rcl"
    return harness.compile_c(HERE / "c" / "acked_rcl.c", out, msgs=("std_msgs",))


RCL_RET_OK, RCL_RET_TIMEOUT = 0, 2


def test_rcl_wait_for_all_acked_with_a_stopped_subscription(rmw, procs, acked_rcl):
    # The same from C on rcl (rcl_publisher_wait_for_all_acked: a negative timeout is
    # RMW_DURATION_INFINITE, zero RMW_DURATION_UNSPECIFIED): TIMEOUT while the subscription's
    # process is stopped, with no error string left set; OK once it runs, and a zero timeout
    # right after an answered wait is OK at once.
    env, ns = rmw
    sub = start(procs, rmw, "sub", "--expect", "21")
    p = harness.spawn([acked_rcl, "/acked", str(sub.popen.pid)], env, timeout=90, netns=ns)
    procs.append(p)
    r = p.join()
    assert r.returncode == 0, r.describe()
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines["matched"] == "1", r.describe()
    expect = {"running": RCL_RET_OK, "stalled": RCL_RET_TIMEOUT, "resumed": RCL_RET_OK, "zero": RCL_RET_OK}
    assert {k: lines[k] for k in expect} == {k: f"{v} error_set=0" for k, v in expect.items()}, r.describe()
    assert result(sub)["received"] == messages(21)
