"""Issue 7's "bounded memory under a slow remote subscriber: the publisher never blocks on the
network; overflow is counted and reported as lost messages" (docs/network.md section 7,
"Reliable overflow"). Host A and host B (ros_tests/two_hosts.py, namespaces named ``ovf-...``)
on a veth whose A end sends through a token bucket (``tc tbf``, 24 Mbit/s = 3 MB/s), so the
path, not the subscriber, is the slow reader. An rclpy publisher on A (reliable KEEP_LAST 10)
publishes 300 messages of 512 KiB (150 MiB) as fast as it can; a subscription on B (reliable
KEEP_LAST 10, a message-lost event callback) takes what comes.

The path carries 3 MB/s, and what may wait for it is bounded: the reliable stream's queue
(64 MiB) and QUIC's windows (8 MiB per stream), so half of the 150 MiB cannot be carried. Before
the bound, the publisher waited (flow control) and everything arrived after about 25 s; now
the oldest queued are dropped, and the subscriber sees each drop as a gap in the writer's
sequence, reported as lost messages. Asserted: the publisher's 300 publishes all returned, what
B takes is in order with nothing twice, the newest (299) arrives, the message-lost events are
more than zero and add up with what was taken to exactly the 300 published.
"""

from __future__ import annotations

import subprocess

import pytest

from two_hosts import TwoHosts, sub_then_pub, tracer_envs
from worker_output import json_line

COUNT = 300
SIZE = 512 << 10
RATE = "24mbit"

OVF = r"""
import json, struct, sys, time
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, HistoryPolicy, ReliabilityPolicy
from rclpy.event_handler import SubscriptionEventCallbacks
from std_msgs.msg import UInt8MultiArray

role, count, size, wait_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rclpy.init()
node = Node("ovf_" + role)
qos = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
if role == "pub":
    pub = node.create_publisher(UInt8MultiArray, "/ovf", qos)
    end = time.monotonic() + 60
    while pub.get_subscription_count() < 1 and time.monotonic() < end:
        time.sleep(0.01)
    print("matched", flush=True)
    body = bytes(size - 8)
    start = time.monotonic()
    for i in range(count):
        m = UInt8MultiArray()
        m.data = struct.pack("<q", i) + body
        pub.publish(m)
    took = time.monotonic() - start
    print(json.dumps({"published": count, "seconds": took}), flush=True)
    # Stay up until the subscriber has the newest (it ends the test); bounded.
    time.sleep(wait_s)
else:
    got, lost = [], []
    def on_msg(m):
        (i,) = struct.unpack("<q", bytes(m.data[:8]))
        got.append(i)
    node.create_subscription(
        UInt8MultiArray, "/ovf", on_msg, qos,
        event_callbacks=SubscriptionEventCallbacks(
            message_lost=lambda e: lost.append((e.total_count, e.total_count_change))))
    print("ready", flush=True)
    end = time.monotonic() + wait_s
    while time.monotonic() < end and not (got and got[-1] == count - 1):
        rclpy.spin_once(node, timeout_sec=0.05)
    first_newest = time.monotonic()
    # The lost-message event may follow the sample that revealed the gap by a spin.
    end = time.monotonic() + 5
    while time.monotonic() < end and len(got) + sum(c for _, c in lost) < count:
        rclpy.spin_once(node, timeout_sec=0.05)
    # A short grace period shows extra (duplicate) deliveries, which must not exist.
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"received": got, "lost": lost}), flush=True)
node.destroy_node()
rclpy.shutdown()
"""


@pytest.fixture
def slow_hosts():
    """Hosts a and b (``ovf-<n>-a``, ``-b``); a's end of the veth sends at ``RATE``."""
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with TwoHosts(None, room="ovf") as h:
        subprocess.run(["ip", "netns", "exec", h.ns["a"], "tc", "qdisc", "add", "dev", h.dev["a"], "root",
                        "tbf", "rate", RATE, "burst", "64kb", "latency", "400ms"],
                       check=True, capture_output=True, timeout=20)
        yield h


def test_a_publisher_faster_than_the_path_never_waits_and_the_subscriber_counts_the_drops_as_lost(
        tmp_path, slow_hosts):
    hosts = slow_hosts
    envs = tracer_envs(tmp_path)
    r, p = sub_then_pub(OVF, [str(COUNT), str(SIZE)], envs, hosts)
    both = r.describe() + "\n" + (p.describe() if p else "")
    assert r.returncode == 0, both
    published = json_line(p.stdout, both) if p else {}
    got = json_line(r.stdout, both)
    received, lost = got["received"], got["lost"]
    total_lost = sum(c for _, c in lost)
    print(f"published {published.get('published')} x {SIZE >> 10} KiB in "
          f"{published.get('seconds', 0):.2f} s over a {RATE} path; received {len(received)}, "
          f"lost {total_lost} ({len(lost)} events)")
    assert published.get("published") == COUNT, both
    assert received == sorted(set(received)), "in order, nothing twice"
    assert received and received[-1] == COUNT - 1, (received[-5:], both)
    assert total_lost > 0, "the path could not carry everything, so some were dropped"
    assert len(received) + total_lost == COUNT, (len(received), lost)
    if lost:
        assert lost[-1][0] == total_lost, lost
    # The publisher's process says why too (rmw log, once at the first drops).
    assert "reliable deliveries dropped" in p.stderr, both
