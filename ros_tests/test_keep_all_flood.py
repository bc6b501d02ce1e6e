"""The flood of issue 33, in C on rcl: a RELIABLE + KEEP_ALL publisher writes as fast as
rcl_publish returns and its subscriptions receive every message, in order, whole, none reported
lost, at 64 B, 4 KiB, 1 MiB and 4 MiB, on one host (Unix socket; shared memory from 64 KiB) and
across two hosts (network namespaces, QUIC). Before flow control the same flood lost 39 % at
64 B and 55 % at 4 KiB between two processes of one host. Messages of 100 MB and 300 MB,
past one 64 MiB frame, arrive whole, every byte checked. With three subscriptions of
different speeds (one sleeps 2 ms per message) the slow one holds the publisher back and the
other two still get everything: DDS's behaviour too (docs/rmw-mapping.md, "Flow control").
Counts are bounded; no time is asserted (throughput is for tools/bench)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
from two_hosts import hosts, tracer_envs  # noqa: F401  (hosts: fixture)

HERE = Path(__file__).resolve().parent

# (size, count): about 2 s of the fastest flood each on this machine, well past every window.
CASES = [(64, 200_000), (4096, 60_000), (1 << 20, 1000), (4 << 20, 250)]


@pytest.fixture(scope="module")
def flood(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("c") / "flood_rcl"
    return harness.compile_c(HERE / "c" / "flood_rcl.c", out, msgs=("std_msgs",))


def run(flood: Path, procs, pub_env, sub_envs, size: int, count: int, delays=None,
        pub_net=None, sub_net=None, topic="/flood") -> tuple[harness.Result, list[harness.Result]]:
    delays = delays or [0] * len(sub_envs)
    subs = []
    for env, delay in zip(sub_envs, delays):
        s = harness.spawn([flood, "sub", topic, str(count), str(delay)], env, netns=sub_net,
                          timeout=180)
        procs.append(s)
        assert s.wait_for_output("ready", 30), s.join(1).describe()
        subs.append(s)
    p = harness.spawn([flood, "pub", topic, str(size), str(count), str(len(subs))], pub_env,
                      netns=pub_net, timeout=180)
    procs.append(p)
    results = [s.join(170) for s in subs]
    return p.join(60), results


def check(pub: harness.Result, subs: list[harness.Result], count: int) -> None:
    assert pub.returncode == 0, pub.describe()
    assert re.search(rf"^published {count} failed \d+ seconds", pub.stdout, re.M), pub.describe()
    for s in subs:
        assert f"received {count} in_order 1 whole 1 lost 0" in s.stdout, (pub.describe(), s.describe())


@pytest.mark.parametrize("size,count", CASES, ids=[f"{s}B" for s, _ in CASES])
def test_keep_all_flood_one_host_loses_nothing(flood, tracer_env, procs, size, count):
    pub, subs = run(flood, procs, tracer_env, [tracer_env], size, count)
    check(pub, subs, count)


@pytest.mark.parametrize("size,count", [CASES[0], CASES[2]], ids=["64B", "1MiB"])
def test_keep_all_flood_across_hosts_loses_nothing(flood, tmp_path, hosts, procs, size, count):
    envs = tracer_envs(tmp_path)
    pub, subs = run(flood, procs, envs["a"], [envs["b"]], size, count,
                    pub_net=hosts.host("a"), sub_net=hosts.host("b"))
    check(pub, subs, count)


# Messages past the wire's 64 MiB frame travel in parts (DELIVERY_PART) on every link; the
# subscriber checks every byte of each. rclpy and the C API do the same in test_big_message.py.
BIG = [(100_000_000, 3), (300_000_000, 2)]


@pytest.mark.parametrize("size,count", BIG, ids=["100MB", "300MB"])
def test_keep_all_messages_past_one_frame_arrive_whole_on_one_host(flood, tracer_env, procs,
                                                                     size, count):
    pub, subs = run(flood, procs, tracer_env, [tracer_env], size, count)
    check(pub, subs, count)


def test_keep_all_messages_past_one_frame_arrive_whole_across_hosts(flood, tmp_path, hosts, procs):
    size, count = BIG[0]
    envs = tracer_envs(tmp_path)
    pub, subs = run(flood, procs, envs["a"], [envs["b"]], size, count,
                    pub_net=hosts.host("a"), sub_net=hosts.host("b"))
    check(pub, subs, count)


def test_three_subscriptions_of_different_speeds_each_get_everything(flood, tracer_env, procs):
    count = 3000
    pub, subs = run(flood, procs, tracer_env, [tracer_env] * 3, 4096, count,
                    delays=[0, 2000, 0])
    check(pub, subs, count)
