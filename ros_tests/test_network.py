"""rmw_tracer beyond one host (issue 7; the design is docs/network.md): two hosts are two
network namespaces joined by a veth pair (192.0.2.1/24 and 192.0.2.2/24, nothing else in reach),
each with its own rendezvous directory, each given the other in ROS_STATIC_PEERS. Fast DDS runs
the same programs on the same pair as the reference. The namespaces are removed in a finalizer,
also when a test fails.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from pathlib import Path

import pytest

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent
PUBSUB = HERE / "test_pubsub_worker.py"
SERVICE = HERE / "test_service_worker.py"
ADDR = {"a": "192.0.2.1", "b": "192.0.2.2"}

_pairs = itertools.count()


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class Host:
    """One side of a :class:`TwoHosts`: ``spawn(..., netns=host)`` runs a program on it."""

    def __init__(self, ns: str) -> None:
        self.ns = ns

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]


class TwoHosts:
    """Two network namespaces (names prefixed ``quic-``, unique to this run) joined by a veth."""

    def __init__(self) -> None:
        n = f"{os.getpid() % 100000}-{next(_pairs)}"
        self.ns = {"a": f"quic-{n}-a", "b": f"quic-{n}-b"}
        # Interface names are at most 15 bytes.
        self.dev = {"a": f"qa{n}"[:15], "b": f"qb{n}"[:15]}
        self.made: list[str] = []

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0

    def __enter__(self) -> "TwoHosts":
        try:
            for h in ("a", "b"):
                _ip("netns", "add", self.ns[h])
                self.made.append(self.ns[h])
            _ip("link", "add", self.dev["a"], "type", "veth", "peer", "name", self.dev["b"])
            for h in ("a", "b"):
                _ip("link", "set", self.dev[h], "netns", self.ns[h])
                _ip("-n", self.ns[h], "addr", "add", f"{ADDR[h]}/24", "dev", self.dev[h])
                _ip("-n", self.ns[h], "link", "set", self.dev[h], "up")
                _ip("-n", self.ns[h], "link", "set", "lo", "up")
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def host(self, h: str) -> Host:
        return Host(self.ns[h])

    def link(self, up: bool) -> None:
        """Cut (or heal) the cable: host a's end of the veth down (or up)."""
        _ip("-n", self.ns["a"], "link", "set", self.dev["a"], "up" if up else "down")

    def __exit__(self, *exc) -> None:
        # Deleting a namespace deletes its end of the veth, and with it the pair.
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        self.made.clear()


@pytest.fixture
def hosts():
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with TwoHosts() as h:
        yield h


def tracer_envs(tmp_path: Path) -> dict[str, dict[str, str]]:
    """rmw_tracer on each host: own rendezvous directory (a host's processes meet there), one
    domain, the other host as the static peer."""
    domain = harness.fresh_domain_id()
    return {
        h: harness.tracer_env(tmp_path / h, domain,
                              {"ROS_STATIC_PEERS": ADDR["b" if h == "a" else "a"]})
        for h in ("a", "b")
    }


def fastdds_envs(tmp_path: Path) -> dict[str, dict[str, str]]:
    domain = harness.fresh_domain_id()
    return {
        h: harness.fastdds_env(tmp_path / h, domain,
                               {"ROS_STATIC_PEERS": ADDR["b" if h == "a" else "a"],
                                "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
        for h in ("a", "b")
    }


def pubsub(env, host, *args: str, timeout: float = 90) -> harness.Proc:
    return harness.spawn_python(PUBSUB, list(args), env=env, netns=host, timeout=timeout)


def started(p: harness.Proc, text: str = "ready") -> harness.Proc:
    assert p.wait_for_output(text, timeout=60), p.join(1).describe()
    return p


def talker_to_listener(envs, hosts, count: int = 200) -> dict:
    listener = started(pubsub(envs["b"], hosts.host("b"), "listen", "--count", str(count),
                              "--timeout", "60", "--depth", "1000"))
    talker = pubsub(envs["a"], hosts.host("a"), "talk", "--count", str(count), "--timeout", "60",
                    "--depth", "1000", "--linger", "20")
    r = listener.join()
    t = talker.join()
    assert r.returncode == 0, r.describe() + "\n" + t.describe()
    assert t.returncode == 0, t.describe()
    return json_line(r.stdout, r.describe())


def test_talker_on_host_a_listener_on_host_b_over_static_peers(tmp_path, hosts):
    # Issue 7: "rclpy talker on host A, listener on host B, via ROS_STATIC_PEERS": 200 of 200
    # (0 of 200 before this transport).
    got = talker_to_listener(tracer_envs(tmp_path), hosts)
    assert got["received"] == [[f"hello {i}" for i in range(200)]]
    assert got["matched"] == [1]


def test_fastdds_reference_talker_listener_across_hosts(tmp_path, hosts):
    # The same two programs under Fast DDS on the same pair of hosts (its multicast stays in
    # the two namespaces).
    got = talker_to_listener(fastdds_envs(tmp_path), hosts)
    assert got["received"] == [[f"hello {i}" for i in range(200)]]


def test_host_b_sees_the_graph_of_host_a(tmp_path, hosts):
    # `ros2 node list` / `topic list` / `service list` equivalents on host B show host A.
    envs = tracer_envs(tmp_path)
    talker = harness.spawn_python(SERVICE, ["talker", "--topic", "/chatter", "--node", "talker",
                                            "--timeout", "60"], env=envs["a"], netns=hosts.host("a"),
                                  timeout=90)
    assert talker.wait_for_output("ready", 60), talker.join(1).describe()
    probe = harness.spawn_python(SERVICE, ["probe", "--wait-node", "talker", "--topic", "/chatter",
                                           "--service", "/talker/get_parameters"],
                                 env=envs["b"], netns=hosts.host("b")).join(60)
    talker.kill()
    talker.join(10)
    assert probe.returncode == 0, probe.describe()
    out = json_line(probe.stdout)
    assert ["talker", "/"] in out["nodes"] and ["probe", "/"] in out["nodes"]
    assert out["topics"]["/chatter"] == ["std_msgs/msg/String"]
    assert out["services"]["/talker/get_parameters"] == ["rcl_interfaces/srv/GetParameters"]
    assert out["count_publishers"] == 1


def test_service_call_across_hosts(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    server = harness.spawn_python(SERVICE, ["server", "--service", "/net_svc", "--count", "20",
                                            "--timeout", "60"],
                                  env=envs["a"], netns=hosts.host("a"), timeout=90)
    assert server.wait_for_output("ready", 60), server.join(1).describe()
    client = harness.spawn_python(SERVICE, ["client", "--service", "/net_svc", "--count", "20",
                                            "--timeout", "60"],
                                  env=envs["b"], netns=hosts.host("b"), timeout=90)
    c = client.join()
    s = server.join()
    assert c.returncode == 0, c.describe() + "\n" + s.describe()
    results = json_line(c.stdout, c.describe())["results"]
    assert [r[0] for r in results] == [2 * i for i in range(20)]
    assert [r[1] for r in results] == [f"re:req{i}" for i in range(20)]
    assert json_line(s.stdout, s.describe())["served"] == list(range(20))


def test_without_static_peers_nothing_leaves_the_host(tmp_path, hosts):
    # The default range is LOCALHOST: with no ROS_STATIC_PEERS (and no SUBNET) no port is
    # opened and the talker on host A never matches the listener on host B.
    envs = tracer_envs(tmp_path)
    for env in envs.values():
        env.pop("ROS_STATIC_PEERS")
    listener = started(pubsub(envs["b"], hosts.host("b"), "listen", "--count", "1",
                              "--timeout", "6"))
    talker = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "1", "--timeout", "4")
    t = talker.join()
    r = listener.join()
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
