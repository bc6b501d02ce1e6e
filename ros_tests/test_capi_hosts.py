"""libtracer's C API across hosts (issue 30, docs/capi.md): a C program joins other hosts from
the environment variables rmw_tracer reads, through the same code (``tracer_recording::network``):
``ROS_STATIC_PEERS`` on two network namespaces (``hosts``, two_hosts.py) and
``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` with no list (``bridged_pair``). The C programs are
test_capi.py's (examples/*.c), run with nothing of ROS; the rclpy side on rmw_tracer. A reliable
C stream across a cut link keeps rmw_tracer's promise (docs/network.md section 6): nothing lost
within the publisher's resend window, and what a cut longer than it took is reported lost.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import harness
from test_capi import HERE, PUBSUB, capi_env, compile_capi, lines, programs  # noqa: F401
from two_hosts import bridged_pair, hosts, started, tracer_envs  # noqa: F401  (fixtures)
from worker_output import json_line


def c_to_rclpy(procs, envs, hosts, programs, topic: str) -> None:
    """The C publisher on host a, an rclpy subscriber on host b: 20 messages, in order."""
    listener = harness.spawn_python(PUBSUB, ["listen", "--topic", topic, "--count", "20",
                                             "--timeout", "60"],
                                    env=envs["b"], netns=hosts.host("b"), timeout=90)
    procs.append(listener)
    started(listener)
    # The publisher waits (30 s at most) for the subscription on the other host.
    pub = harness.spawn([programs["publisher"], topic, "20", "20", "1"], capi_env(envs["a"]),
                        netns=hosts.host("a"), timeout=90)
    procs.append(pub)
    got = json_line(listener.join().check().stdout)
    pub.join().check()
    assert got["received"] == [[f"hello {i}" for i in range(20)]]


def rclpy_to_c(procs, envs, hosts, programs, topic: str) -> None:
    """An rclpy publisher on host a, the C subscriber on host b: 20 messages, in order."""
    sub = harness.spawn([programs["subscriber"], topic, "20", "60"], capi_env(envs["b"]),
                        netns=hosts.host("b"), timeout=90)
    procs.append(sub)
    started(sub)
    # The talker waits for the subscription on the other host (--wait-subs 1, its default).
    talker = harness.spawn_python(PUBSUB, ["talk", "--topic", topic, "--count", "20",
                                           "--period", "0.02", "--timeout", "60", "--linger", "5"],
                                  env=envs["a"], netns=hosts.host("a"), timeout=90)
    procs.append(talker)
    r = sub.join().check()
    talker.join().check()
    got = lines(r.stdout, "msg: ")
    assert [g.split(" seq=")[0] for g in got] == [f"hello {i}" for i in range(20)]
    assert [int(g.split(" seq=")[1]) for g in got] == list(range(1, 21))


def test_c_publisher_to_rclpy_subscriber_across_hosts(tmp_path, hosts, procs, programs):
    c_to_rclpy(procs, tracer_envs(tmp_path), hosts, programs, "/capi_hosts_out")


def test_rclpy_publisher_to_c_subscriber_across_hosts(tmp_path, hosts, procs, programs):
    rclpy_to_c(procs, tracer_envs(tmp_path), hosts, programs, "/capi_hosts_in")


def subnet_envs(tmp_path) -> dict[str, dict[str, str]]:
    """SUBNET with no list on both hosts: each finds the other by its announcements."""
    domain = harness.fresh_domain_id()
    return {h: harness.tracer_env(tmp_path / h, domain, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
            for h in ("a", "b")}


def test_c_publisher_and_subscriber_over_subnet(tmp_path, bridged_pair, procs, programs):
    envs = subnet_envs(tmp_path)
    c_to_rclpy(procs, envs, bridged_pair, programs, "/capi_subnet_out")
    rclpy_to_c(procs, envs, bridged_pair, programs, "/capi_subnet_in")


@pytest.fixture(scope="module")
def stream_program(tmp_path_factory) -> Path:
    return compile_capi(HERE / "c" / "capi_stream.c",
                        tmp_path_factory.mktemp("capi_stream") / "capi_stream")


def c_stream_across_a_cut(procs, envs, hosts, program, depth: str, count: int = 300,
                          period_ms: int = 30) -> tuple[list[int], int]:
    """A C publisher on host a streams ``count`` messages every ``period_ms`` to a C
    subscription on host b; 1.5 s in, the cable is cut for 5 s (longer than the 2 s QUIC idle
    timeout: the link goes and comes back). Returns the numbers received, in arrival order,
    and the messages the subscription reported lost."""
    sub = harness.spawn([program, "sub", "/capi_cut", str(count - 1), depth, "60"],
                        capi_env(envs["b"]), netns=hosts.host("b"), timeout=120)
    procs.append(sub)
    started(sub)
    pub = harness.spawn([program, "pub", "/capi_cut", str(count), str(period_ms), depth],
                        capi_env(envs["a"]), netns=hosts.host("a"), timeout=120)
    procs.append(pub)
    assert pub.wait_for_output("matched", 60), pub.join(1).describe()
    time.sleep(1.5)
    hosts.link(False)
    time.sleep(5.0)
    hosts.link(True)
    r = sub.join(90).check()
    pub.join(90).check()
    got = [int(x) for x in re.search(r"^received(.*)$", r.stdout, re.M)[1].split()]
    lost = int(re.search(r"^lost (\d+)$", r.stdout, re.M)[1])
    print(f"received {len(got)}, lost {lost}")
    return got, lost


def test_a_reliable_c_stream_loses_nothing_across_a_5_s_cut(tmp_path, hosts, procs,
                                                           stream_program):
    # KEEP_ALL: the publisher keeps its resend window (64 MiB) and the re-made edge replays it;
    # the subscription admits only what it had not got.
    got, lost = c_stream_across_a_cut(procs, tracer_envs(tmp_path), hosts, stream_program, "all")
    assert got == list(range(300)) and lost == 0


def test_a_cut_longer_than_a_c_publishers_window_is_reported_lost(tmp_path, hosts, procs,
                                                                  stream_program):
    # KEEP_LAST(10): about 170 messages go during the cut and the window keeps 10, so the
    # writer's sequence jumps when the edge is made again: every number is received once, in
    # order, or counted lost, none both (tracer_subscription_take_lost).
    got, lost = c_stream_across_a_cut(procs, tracer_envs(tmp_path), hosts, stream_program, "10")
    assert got and got[-1] == 299, got[-5:]
    assert got == sorted(set(got)), "out of order or repeated"
    assert len(got) + lost == 300 and lost > 0, (len(got), lost)
