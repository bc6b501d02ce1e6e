"""The network is off unless the user asks for it (docs/network.md section 2): Jazzy's rcl passes
SUBNET for an unset ROS_AUTOMATIC_DISCOVERY_RANGE (DDS's default), and rmw_tracer reads the
variable itself, so a bare environment means LOCALHOST: no UDP socket, no port. A SUBNET the user
sets opens the network (in a private network namespace here, so nothing reaches a real
interface). Measured before the rule: every test process opened its QUIC endpoint and the
domain's directory port on 0.0.0.0.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import harness

NODE = Path(__file__).resolve().parent / "shutdown_node.py"
DIRECTORY_PORT_BASE = 24650
ANNOUNCE_PORT_BASE = 25650


def udp_ports(pid: int) -> set[int]:
    """Local ports of the UDP sockets process ``pid`` holds (IPv4 and IPv6), read from /proc in
    the process's own network namespace."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    ports = set()
    for table in ("udp", "udp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def node_pid(proc: harness.Proc) -> int:
    """The rclpy process itself (under ``nsenter`` in a namespace, which execs it)."""
    return proc.popen.pid


def run_and_look(env, netns=None) -> set[int]:
    p = harness.spawn([harness.venv_python(), NODE, "sub", "single", "net_default"], env,
                      netns=netns, timeout=60)
    try:
        assert p.wait_for_output("spinning", timeout=60), p.join(timeout=5).describe()
        ports = udp_ports(node_pid(p))
        p.terminate()
        r = p.join(timeout=30)
        assert r.returncode == 0 and not r.stderr.strip(), r.describe()
        return ports
    finally:
        p.kill()


def test_a_bare_environment_opens_no_udp_socket(tracer_env):
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in tracer_env
    assert run_and_look(tracer_env) == set()


@pytest.mark.skipif(not harness.NetNamespace.available(), reason="needs network namespaces")
def test_subnet_set_by_the_user_opens_the_network(tracer_env):
    env = {**tracer_env, "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    with harness.NetNamespace() as ns:
        ports = run_and_look(env, ns)
    # Exactly five ports, all taken before rmw_init returns: the domain's directory port (this
    # process holds the host role), its link endpoint, the SUBNET announcement port it listens
    # on (an IPv4 and an IPv6 socket, one port), and the two sockets the holder announces from,
    # IPv4 and IPv6 (docs/network.md section 2a).
    domain = int(env["ROS_DOMAIN_ID"])
    assert DIRECTORY_PORT_BASE + domain in ports, ports
    assert ANNOUNCE_PORT_BASE + domain in ports, ports
    assert len(ports) == 5, ports


@pytest.mark.skipif(not harness.NetNamespace.available(), reason="needs network namespaces")
def test_a_static_peer_costs_no_socket_of_its_own(tracer_env):
    # The static peer is this host (its own directory, which this process holds): the process
    # asks that directory every second over a kept connection. Two ports: the directory port
    # and the link endpoint, from which the directory client connects too (before stage 3 of
    # docs/network.md section 4a the directory clients had an endpoint of their own).
    env = {**tracer_env, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
           "ROS_STATIC_PEERS": "127.0.0.1"}
    with harness.NetNamespace() as ns:
        ports = run_and_look(env, ns)
    domain = int(env["ROS_DOMAIN_ID"])
    assert DIRECTORY_PORT_BASE + domain in ports, ports
    assert len(ports) == 2, ports


def test_localhost_opens_no_udp_socket(tracer_env):
    env = {**tracer_env, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert run_and_look(env) == set()
