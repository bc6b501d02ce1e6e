"""Loaned messages (issue 8; docs/loans.md) through rcl: `c/loans_rcl.c` borrows, publishes,
takes and returns loans of test_msgs/msg/BasicTypes and of a large fixed-size type built in the
program ("blob:<n>": `uint64 seq` + `uint8[n] data`); every message carries values computed from
its sequence number, so each reader checks every field and byte.

"mapped N" is how many of a reader's loans lay in a read-only shared mapping ("r--s", the
publisher's segment): the loan was the publisher's memory, not a copy. Subscribers set
ROS_DISABLE_LOANED_MESSAGES=0, without which rcl (Jazzy) never takes a loan, whatever the rmw.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent

# 1 MiB less a little, so that header + struct fit one 1 MiB pool slot.
BLOB = "blob:1048000"


@pytest.fixture(scope="module")
def loans_exe(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("loans") / "loans_rcl"
    return harness.compile_c(HERE / "c" / "loans_rcl.c", out, msgs=("test_msgs", "std_msgs"),
                             libs=tuple(harness.CORE_LIBS) + ("rosidl_runtime_c",))


@pytest.fixture
def env(tmp_path):
    return harness.tracer_env(tmp_path, extra={"ROS_DISABLE_LOANED_MESSAGES": "0"})


def start(procs, argv, env, stdin: str | None = None, wait_ready: bool = True) -> harness.Proc:
    p = harness.spawn([str(a) for a in argv], env, timeout=120, stdin=stdin)
    procs.append(p)
    if wait_ready:
        assert p.wait_for_output("ready", timeout=30), p.join(1).describe()
    return p


def start_held(procs, argv, env) -> harness.Proc:
    """A process whose stdin stays open until the test closes it (``p.popen.stdin.close()``)."""
    import subprocess
    args = [str(a) for a in argv]
    popen = subprocess.Popen(args, env=dict(env), text=True, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    p = harness.Proc(args, popen, 120)
    p.start_pumps()
    procs.append(p)
    return p


def finish(p: harness.Proc) -> str:
    r = p.join()
    assert r.returncode == 0, r.describe()
    return r.stdout


def received(out: str) -> dict:
    m = re.search(r"received (\d+) bad (\d+) mapped (\d+) last (\d+)", out)
    assert m, out
    return dict(zip(("received", "bad", "mapped", "last"), map(int, m.groups())))


def test_every_documented_return_code_of_the_six_entry_points(loans_exe, env):
    r = harness.run([loans_exe, "api"], env, timeout=60)
    fails = [line for line in r.stdout.splitlines() if line.startswith("FAIL")]
    assert not fails and r.returncode == 0, r.describe()
    oks = [line for line in r.stdout.splitlines() if line.startswith("ok ")]
    assert len(oks) == 56, r.stdout
    assert "api done" in r.stdout


@pytest.mark.parametrize("ty", ["basic", BLOB])
def test_in_one_process_the_loan_taken_is_the_memory_borrowed(loans_exe, env, ty):
    r = harness.run([loans_exe, "intra", ty, "30"], env, timeout=60)
    assert r.returncode == 0, r.describe()
    assert "intra ok 30 same_memory 30 of 30" in r.stdout


@pytest.mark.parametrize("ty,count", [("basic", 300), (BLOB, 40)])
def test_loans_reach_several_processes_as_views_of_the_publishers_memory(loans_exe, env, procs, ty,
                                                                          count):
    # Two loaning C readers (one holding 4 loans at a time), a copying C reader and, for
    # BasicTypes, rclpy: all on one topic of a loaned publisher.
    loaners = [start(procs, [loans_exe, "sub", ty, "/loans", count, hold], env) for hold in ("1", "4")]
    copier = start(procs, [loans_exe, "copy-sub", ty, "/loans", count], env)
    readers = len(loaners) + 1
    rclpy_reader = None
    if ty == "basic":
        rclpy_reader = harness.spawn_python(HERE / "loans_rclpy_listener.py", ["/loans", str(count)],
                                            env=env, timeout=120)
        procs.append(rclpy_reader)
        assert rclpy_reader.wait_for_output("ready", timeout=30), rclpy_reader.join(1).describe()
        readers += 1
    pub = start(procs, [loans_exe, "pub", ty, "/loans", count, readers], env, wait_ready=False)
    for p in loaners:
        got = received(finish(p))
        assert got == {"received": count, "bad": 0, "mapped": count, "last": count}
    got = received(finish(copier))
    assert got["received"] == count and got["bad"] == 0 and got["mapped"] == 0
    if rclpy_reader is not None:
        r = rclpy_reader.join()
        assert r.returncode == 0, r.describe()
        assert json_line(r.stdout, r.describe()) == {"received": count, "bad": 0}
    assert f"published {count}" in finish(pub)


def test_a_sigkilled_subscriber_holding_loans_gives_the_pool_back(loans_exe, env, procs):
    # A pool of 48 slots of 1 MiB. A reader takes 30 loans, holds them and is SIGKILLed; a
    # second one then takes and holds 30 more. Had the first one's 30 not come back, the
    # second one's could not all be in the pool (30 + 30 > 48): some would be copies.
    env = dict(env, RMW_TRACER_SHM_POOL_MB="48")
    first = start_held(procs, [loans_exe, "sub", BLOB, "/kill", 30, "hold-all"], env)
    assert first.wait_for_output("ready", timeout=30)
    pub = start_held(procs, [loans_exe, "pub", BLOB, "/kill", 30, 1, "twice"], env)
    assert first.wait_for_output("holding 30", timeout=60), first.join(1).describe()
    assert received(first.output_so_far())["mapped"] == 30
    first.kill()
    first.join(10)
    second = start_held(procs, [loans_exe, "sub", BLOB, "/kill", 30, "hold-all"], env)
    assert second.wait_for_output("ready", timeout=30)
    pub.popen.stdin.write("go\n")
    pub.popen.stdin.flush()
    assert second.wait_for_output("holding 30", timeout=60), second.join(1).describe()
    got = received(second.output_so_far())
    assert got == {"received": 30, "bad": 0, "mapped": 30, "last": 60}
    second.popen.stdin.close()
    assert "still intact 30" in finish(second)
    pub.popen.stdin.close()
    out = finish(pub)
    pool = int(re.search(r"published again 30, pool_bytes (\d+)", out).group(1))
    assert pool <= 48 << 20, out


def test_a_stalled_subscriber_with_a_small_ring_holds_only_its_ring(loans_exe, env, procs):
    # Depth 2 and no take while 100 messages go by: the ring keeps 2 (the rest are lost to it,
    # counted as always), the publisher never waits, and its pool stays within its bound while
    # a live reader gets every message exactly.
    env = dict(env, RMW_TRACER_SHM_POOL_MB="16")
    live = start(procs, [loans_exe, "sub", BLOB, "/stall", 100, "1"], env)
    stalled = start_held(procs, [loans_exe, "sub", BLOB, "/stall", 100, "stall", 2], env)
    assert stalled.wait_for_output("ready", timeout=30)
    pub = start_held(procs, [loans_exe, "pub", BLOB, "/stall", 100, 2, "stay"], env)
    got = received(finish(live))
    assert got["received"] == 100 and got["bad"] == 0 and got["mapped"] > 0, got
    assert pub.wait_for_output("published 100", timeout=30)
    pool = [int(p) for p in re.findall(r"pool_bytes (\d+)", pub.output_so_far())]
    assert pool and max(pool) <= 16 << 20, pub.output_so_far()
    stalled.popen.stdin.close()
    out = finish(stalled)
    m = re.search(r"stalled received (\d+) bad (\d+)", out)
    assert m and 1 <= int(m.group(1)) <= 2 and m.group(2) == "0", out
    pub.popen.stdin.close()
    finish(pub)


def test_views_outlive_a_publisher_that_exits(loans_exe, env, procs):
    holder = start_held(procs, [loans_exe, "sub", BLOB, "/leave", 20, "hold-all"], env)
    assert holder.wait_for_output("ready", timeout=30)
    pub = start(procs, [loans_exe, "pub", BLOB, "/leave", 20, 1, "leave"], env, wait_ready=False)
    assert holder.wait_for_output("holding 20", timeout=60), holder.join(1).describe()
    finish(pub)
    holder.popen.stdin.close()
    out = finish(holder)
    assert received(out) == {"received": 20, "bad": 0, "mapped": 20, "last": 20}
    assert "still intact 20" in out


def test_memory_stays_bounded_over_a_long_run(loans_exe, env, procs):
    # 3000 BasicTypes and then 300 blobs of 1 MiB, loaned: RSS and pool use after the first 10
    # messages and at the end.
    for ty, count in (("basic", 3000), (BLOB, 300)):
        sub = start(procs, [loans_exe, "sub", ty, "/long", count, "2", 10], env)
        pub = start(procs, [loans_exe, "pub", ty, "/long", count, 1], env, wait_ready=False)
        got = received(finish(sub))
        # A ring of 10: what the reader was too slow for is lost (and counted by the ring).
        assert got["bad"] == 0 and got["last"] == count and got["received"] > 0, got
        out = finish(pub)
        (r0, p0), (r1, p1) = [tuple(map(int, m)) for m in
                              re.findall(r"usage after \d+: rss_kib (\d+) pool_bytes (\d+)", out)]
        # The pool grows to what the ring and the in-flight references need, then stays.
        assert p1 <= max(p0, 16 << 20) * 2, out
        # RSS grows by the pool pages touched (shared memory counts), and little else.
        assert r1 - r0 <= p1 // 1024 + 8 * 1024, out
        print(ty, "publisher:", out.strip().splitlines()[1:3], "subscriber:", got)


def test_a_loaned_topic_is_recorded_and_decodes_with_the_mcap_readers(loans_exe, env, procs, tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    import loans_rclpy_listener

    pub_file, sub_file = tmp_path / "pub.mcap", tmp_path / "sub.mcap"
    sub = start(procs, [loans_exe, "sub", "basic", "/rec", 50, "1"],
                dict(env, RMW_TRACER_RECORD=str(sub_file), RMW_TRACER_RECORD_TOPICS="/rec"))
    pub = start(procs, [loans_exe, "pub", "basic", "/rec", 50, 1],
                dict(env, RMW_TRACER_RECORD=str(pub_file), RMW_TRACER_RECORD_TOPICS="/rec"),
                wait_ready=False)
    assert received(finish(sub))["mapped"] == 50
    finish(pub)
    for path in (pub_file, sub_file):
        with open(path, "rb") as f:
            r = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
            msgs = [(s.name, m) for s, _c, _m, m in r.iter_decoded_messages(topics=["/rec"])]
        assert len(msgs) == 50, path
        for i, (schema, m) in enumerate(msgs, start=1):
            assert schema == "test_msgs/msg/BasicTypes"
            want = loans_rclpy_listener.expected(i)
            have = {k: getattr(m, k) for k in want}
            if isinstance(have["byte_value"], int):  # mcap-ros2 reads `byte` as an int
                want["byte_value"] = want["byte_value"][0]
            have["char_value"] &= 0xFF  # and `char` as a signed int8
            assert have == want, (path, i, have)
