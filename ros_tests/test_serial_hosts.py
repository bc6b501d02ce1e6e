"""A microcontroller node seen from another host (issue 27, docs/serial.md section 9): the
holder's proxy graph takes the holder context's network configuration, so a process of another
host (network namespaces joined by a veth pair, ROS_STATIC_PEERS, two_hosts.py) receives the
MCU's counter and reaches its subscription, with no hop through the holder's own graph. The
MCU is the host library on a pty; the holder runs on host a, the rclpy nodes on host b."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
import serial_mcu
from serial_mcu import Mcu, port_held, wait_until
from two_hosts import hosts, tracer_envs  # noqa: F401  (hosts: fixture)

WORKER = Path(__file__).resolve().parent / "serial_worker.py"


def test_mcu_node_reached_from_another_host(tmp_path, hosts, procs):
    exe = serial_mcu.build_loopback(tmp_path)
    if exe is None:
        pytest.skip("no C compiler `cc` to build the MCU library for the host")
    mcu = Mcu(exe, 0x2710, period_ms=10)
    try:
        envs = tracer_envs(tmp_path)
        envs["a"]["RMW_TRACER_SERIAL"] = mcu.path
        holder = harness.spawn_python(WORKER, ["hold", "40"], env=envs["a"], netns=hosts.host("a"),
                                      timeout=60)
        procs.append(holder)
        assert wait_until(lambda: port_held(envs["a"], mcu.path), 30), holder.join(0).describe()
        listener = harness.spawn_python(WORKER, ["listen", "/mcu/counter", "8"], env=envs["b"],
                                        netns=hosts.host("b"), timeout=60)
        procs.append(listener)
        echo = harness.spawn_python(WORKER, ["echo", "20"], env=envs["b"], netns=hosts.host("b"),
                                    timeout=60)
        procs.append(echo)
        e = echo.join().check()
        r = listener.join().check()
        vs = [int(v) for v in re.findall(r"^\S+ got (\d+)$", r.stdout, re.M)]
        assert len(vs) >= 200 and vs == list(range(vs[0], vs[0] + len(vs))), r.describe()
        assert len(re.findall(r"^\S+ rtt ", e.stdout, re.M)) == 20, e.describe()
    finally:
        mcu.close()
