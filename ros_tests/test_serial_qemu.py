"""The real firmware (mcu/firmware, Cortex-M3, built by mcu/Makefile) under
qemu-system-arm -M lm3s6965evb with its UART on a pseudo-terminal, named in RMW_TRACER_SERIAL
by rclpy processes on rmw_tracer (issue 27): an rclpy listener receives every /mcu/counter
value in order (100 Hz), an rclpy publisher's /mcu/led values come back on /mcu/echo, and the
node /mcu is in rclpy's graph. Skipped, with the reason, where the ARM toolchain or QEMU is
missing (tools/setup installs them)."""

from __future__ import annotations

import re

import pytest

import serial_mcu
from serial_mcu import Qemu, port_held, wait_until, worker


@pytest.fixture
def qemu(tmp_path):
    elf, why = serial_mcu.build_firmware(tmp_path / "fw")
    if elf is None:
        pytest.skip(why)
    q = Qemu(elf, tmp_path / "qemu.log")
    yield q
    q.close()


def test_qemu_firmware_counter_echo_and_graph(tracer_env, qemu, procs):
    env = {**tracer_env, "RMW_TRACER_SERIAL": f"{qemu.path}:115200"}
    listener = worker("listen", "/mcu/counter", "5", "best_effort", env=env)
    procs.append(listener)
    # The listener holds the port (the others exit first: a holder that exits hands the
    # port over, and the best-effort counter would lose what is sent meanwhile).
    assert wait_until(lambda: port_held(env, qemu.path), 15), listener.join(0).describe()
    graph = worker("graph", "mcu", "4", env=env)
    procs.append(graph)
    echo = worker("echo", "50", env=env)
    procs.append(echo)
    r = listener.join().check()
    g = graph.join().check()
    e = echo.join().check()
    vs = [int(v) for v in re.findall(r"^\S+ got (\d+)$", r.stdout, re.M)]
    # 100 Hz from the firmware's SysTick: every value from the first this listener got.
    assert len(vs) >= 250 and vs == list(range(vs[0], vs[0] + len(vs))), r.describe()
    rtts = sorted(int(us) for us in re.findall(r"^\S+ rtt \d+ (\d+)$", e.stdout, re.M))
    assert len(rtts) == 50 and "lost" not in e.stdout, e.describe()
    print("qemu echo round trip us: median", rtts[25], "max", rtts[-1])
    assert "present" in g.stdout, g.describe()
    assert re.search(r"topic /mcu/counter std_msgs/msg/Int32$", g.stdout, re.M), g.describe()
    assert re.search(r"topic /mcu/echo std_msgs/msg/Int32$", g.stdout, re.M), g.describe()
    assert re.search(r"subscription /mcu/led mcu /$", g.stdout, re.M), g.describe()
