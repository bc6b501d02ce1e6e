"""RELIABLE + KEEP_ALL loses nothing (issue 33): the publisher is held back by its subscribers'
windows of credit (docs/wire.md section 2, "Flow control"). rclpy in separate processes over
the Unix-socket link: a publisher that writes as fast as it can and a subscriber that takes
slowly; every message arrives, in order, none reported lost. A stopped (SIGSTOP) subscriber
makes `publish` fail after 500 ms (the documented bound, docs/rmw-mapping.md "Flow control"), and
publishing goes on when it resumes."""

from __future__ import annotations

import os
import re
import signal

import pytest

import harness

N = 20_000

LISTENER = r"""
import sys
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from rclpy.qos_event import SubscriptionEventCallbacks
from std_msgs.msg import String, UInt32

n = int(sys.argv[1])
slow = float(sys.argv[2])
pad = int(sys.argv[3])
rclpy.init()
node = rclpy.create_node("flow_listener")
qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
got = []
lost = [0]

def lost_cb(ev):
    lost[0] = ev.total_count

def heard(m):
    got.append(int(m.data[:10]) if pad else m.data)
    if len(got) == 1:
        print("first", flush=True)
    if slow and len(got) % 100 == 0:
        time.sleep(slow)

node.create_subscription(String if pad else UInt32, "/flow", heard, qos,
                         event_callbacks=SubscriptionEventCallbacks(message_lost=lost_cb))
print("listening", flush=True)
end = time.monotonic() + 120
while len(got) < n and time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.2)
in_order = got == list(range(1, len(got) + 1))
print(f"received {len(got)} in_order={in_order} lost={lost[0]}", flush=True)
"""

TALKER = r"""
import sys
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from std_msgs.msg import String, UInt32

n = int(sys.argv[1])
pad = int(sys.argv[2])
rclpy.init()
node = rclpy.create_node("flow_talker")
qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
pub = node.create_publisher(String if pad else UInt32, "/flow", qos)
end = time.monotonic() + 30
while pub.get_subscription_count() < 1 and time.monotonic() < end:
    time.sleep(0.05)
print("matched", pub.get_subscription_count(), flush=True)
failed = 0
i = 1
t0 = time.monotonic()
while i <= n and time.monotonic() < t0 + 120:
    try:
        pub.publish(String(data=f"{i:010d}" + "x" * pad) if pad else UInt32(data=i))
        i += 1
    except Exception as e:
        failed += 1
        if failed == 1:
            print("first failure:", str(e).splitlines()[0], flush=True)
        print(f"failed at {i} after {time.monotonic() - t0:.3f}s", flush=True)
        time.sleep(0.2)
print(f"published {i - 1} failed={failed}", flush=True)
"""


def _run(tmp_path, procs, n: int, slow: str, stop_listener: bool = False, pad: int = 0):
    env = harness.tracer_env(tmp_path)
    listener = harness.spawn_python(LISTENER, [str(n), slow, str(pad)], env=env, timeout=180)
    procs.append(listener)
    assert listener.wait_for_output("listening", timeout=30), listener.join(timeout=0).describe()
    talker = harness.spawn_python(TALKER, [str(n), str(pad)], env=env, timeout=180)
    procs.append(talker)
    if stop_listener:
        # Stopped as soon as the stream flows: the publisher has a window's worth to go.
        assert listener.wait_for_output("first", timeout=30), listener.join(timeout=0).describe()
        os.killpg(listener.popen.pid, signal.SIGSTOP)
        try:
            assert talker.wait_for_output("failed at", timeout=30), talker.output_so_far()
        finally:
            os.killpg(listener.popen.pid, signal.SIGCONT)
    t = talker.join().check()
    r = listener.join().check()
    return t, r


def test_a_slow_keep_all_subscriber_gets_every_message_in_order(tmp_path, procs):
    t, r = _run(tmp_path, procs, N, slow="0.01")
    assert f"published {N} failed=0" in t.stdout, t.describe()
    assert f"received {N} in_order=True lost=0" in r.stdout, (t.describe(), r.describe())


# A 4-byte message, and one whose frame is about 700 bytes: the largest frame of which a
# window's worth (256) still fits in the link's socket buffer (docs/wire.md section 5), so the
# publisher runs out of credit before its write into the socket could block.
@pytest.mark.parametrize("pad", [0, 600], ids=["UInt32", "String600"])
def test_a_stopped_subscriber_fails_publish_after_the_bound_and_resumes(tmp_path, procs, pad):
    # Long enough that the stop comes while the publisher still has much to write.
    n = 5 * N
    t, r = _run(tmp_path, procs, n, slow="0", stop_listener=True, pad=pad)
    # The documented outcome: publish fails (an error naming the cause), never a silent drop.
    first = re.search(r"^first failure: (.*)$", t.stdout, re.M)
    assert first and "timed out after 500 ms" in first.group(1), t.describe()
    # Everything that was published arrived, in order, once the subscriber resumed.
    assert re.search(rf"^published {n} failed=[1-9]\d*$", t.stdout, re.M), t.describe()
    assert f"received {n} in_order=True lost=0" in r.stdout, (t.describe(), r.describe())
