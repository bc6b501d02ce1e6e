"""Threads per process stay bounded whatever the number of peers on the host (issue 7, scale).

Ruling (docs/network.md section 8): every Unix-socket link of a process is read by one event loop
and its callbacks run on a fixed pool of workers, so a process has the same threads with two
peers as with twelve. Only descriptors grow: one socket per link.

An rclpy talker runs throughout; rclpy listeners on its topic join in two waves (2, then 10
more). After each wave, once the talker holds a socket for every peer, its threads are counted
from /proc: the same number, with the same names, after both waves.
"""

from __future__ import annotations

import collections
import os
import time
from pathlib import Path

import harness

WORKER = Path(__file__).resolve().parent / "test_service_worker.py"


def thread_names(pid: int) -> collections.Counter:
    names = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[f.read().strip()] += 1
        except FileNotFoundError:
            pass  # a thread that just ended
    return names


def unix_sockets(pid: int) -> int:
    """Descriptors of `pid` that are sockets (its links, its listener, rcl's own)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                n += 1
        except FileNotFoundError:
            pass
    return n


def settled_threads(pid: int, sockets_at_least: int, timeout: float = 60.0) -> collections.Counter:
    """The thread names of `pid` once it holds `sockets_at_least` sockets and its thread set has
    stayed the same for a second (start-up work of a link, if any, is over)."""
    deadline = time.monotonic() + timeout
    while unix_sockets(pid) < sockets_at_least:
        assert time.monotonic() < deadline, f"only {unix_sockets(pid)} of {sockets_at_least} sockets"
        time.sleep(0.1)
    last = thread_names(pid)
    stable_since = time.monotonic()
    while time.monotonic() - stable_since < 1.0:
        assert time.monotonic() < deadline, f"threads never settled: {last}"
        time.sleep(0.1)
        now = thread_names(pid)
        if now != last:
            last, stable_since = now, time.monotonic()
    return last


def test_threads_of_a_process_do_not_grow_with_its_peers(tracer_env):
    procs = []
    try:
        talker = harness.spawn_python(WORKER, ["talker", "--topic", "/scale", "--node", "talker",
                                               "--timeout", "120"], env=tracer_env, timeout=150)
        procs.append(talker)
        assert talker.wait_for_output("ready", 60), talker.join(1).describe()
        pid = talker.popen.pid
        base = unix_sockets(pid)
        counts = {}
        for total in (2, 12):
            while len(procs) - 1 < total:
                procs.append(harness.spawn_python(WORKER, ["listen", "--topic", "/scale", "--timeout", "120"],
                                                  env=tracer_env, timeout=150))
            for p in procs[1:]:
                assert p.wait_for_output("ready", 90), p.join(1).describe()
            counts[total] = settled_threads(pid, base + total)
        assert unix_sockets(pid) >= base + 12
        assert counts[2] == counts[12], f"2 peers: {dict(counts[2])}\n12 peers: {dict(counts[12])}"
        # The link threads are the loop and its workers, not one per link.
        assert counts[12]["tracer-io"] == 1, dict(counts[12])
        assert sum(n for name, n in counts[12].items() if name.startswith("tracer-link")) == 0
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.join(10)
