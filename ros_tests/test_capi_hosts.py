"""libtracer's C API across hosts (issue 30, docs/capi.md): a C program joins other hosts from
the environment variables rmw_tracer reads, through the same code (``tracer_recording::network``):
``ROS_STATIC_PEERS`` on two network namespaces (``hosts``, two_hosts.py) and
``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` with no list (``bridged_pair``). The C programs are
test_capi.py's (examples/*.c), run with nothing of ROS; the rclpy side on rmw_tracer.
"""

from __future__ import annotations

import harness
from test_capi import PUBSUB, capi_env, lines, programs  # noqa: F401  (programs: fixture)
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
