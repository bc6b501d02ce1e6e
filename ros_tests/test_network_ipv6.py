"""ROS_STATIC_PEERS with IPv6 literals (issue 7; docs/network.md section 2): two network
namespaces joined by a veth pair that carry unique local IPv6 addresses only (fd00:db8::1/64
and fd00:db8::2/64; no IPv4 address but loopback's), names prefixed ``hosts-``, removed in a
finalizer. rmw_tracer's endpoints bind ``[::]`` as one dual-stack socket, so an IPv6 peer is
reached exactly as an IPv4 one is; the entry takes the forms a user writes: a bare address
(the domain's directory port) or a bracketed one with a port. With SUBNET and no list, the
hosts find each other over IPv6 alone: the host role's holder announces to ff02::4c54:4841 on
each interface, and the listener reaches the directory at the announcement's source (a
link-local address, with its interface) (docs/network.md section 2a).
"""

from __future__ import annotations

import pytest

import harness
from two_hosts import ADDR6, TwoHosts, stream
from worker_output import json_line

DIRECTORY_PORT_BASE = 24650


@pytest.fixture
def v6_hosts():
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with TwoHosts(room="hosts", ipv6_only=True) as h:
        yield h


def all_200_arrive(procs, envs, hosts) -> None:
    r, t = stream(procs, envs, hosts)
    assert r.returncode == 0, r.describe() + "\n" + t.describe()
    assert t.returncode == 0, t.describe()
    got = json_line(r.stdout, r.describe())
    assert got["received"] == [[f"hello {i}" for i in range(200)]]
    assert got["matched"] == [1]


def test_static_peers_as_ipv6_literals(tmp_path, v6_hosts, procs):
    hosts = v6_hosts
    domain = harness.fresh_domain_id()
    peers = {"a": ADDR6["b"], "b": f"[{ADDR6['a']}]:{DIRECTORY_PORT_BASE + domain}"}
    envs = {h: harness.tracer_env(tmp_path / h, domain, {"ROS_STATIC_PEERS": peers[h]})
            for h in ("a", "b")}
    all_200_arrive(procs, envs, hosts)


def test_subnet_finds_the_other_host_over_ipv6_alone(tmp_path, v6_hosts, procs):
    hosts = v6_hosts
    domain = harness.fresh_domain_id()
    envs = {h: harness.tracer_env(tmp_path / h, domain,
                                  {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
            for h in ("a", "b")}
    all_200_arrive(procs, envs, hosts)
