"""A message too big for the link is never dropped in silence (issue 33). rclpy published an
80 MB UInt8MultiArray to a subscriber in another process: `publish` returned, no log line,
nothing arrived. Until messages of any size are carried (wire.md, "Flow control and messages of
any size"), the publisher must hear of it: either the message arrives intact, or `publish`
raises with a message that says why, and rmw_tracer logs it; the link stays up either way and
the next message arrives."""

from __future__ import annotations

import re

import harness

BIG = 80_000_000

LISTENER = r"""
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt8MultiArray

rclpy.init()
node = rclpy.create_node("big_listener")
qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)

def heard(m):
    data = bytes(m.data)
    intact = all(b == data[0] for b in data[:: max(1, len(data) // 4096)])
    print(f"heard {len(data)} first={data[0]} intact={intact}", flush=True)

node.create_subscription(UInt8MultiArray, "/big", heard, qos)
print("listening", flush=True)
end = time.monotonic() + 60
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.2)
"""

TALKER = r"""
import sys
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt8MultiArray

BIG = int(sys.argv[1])
rclpy.init()
node = rclpy.create_node("big_talker")
qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
pub = node.create_publisher(UInt8MultiArray, "/big", qos)
end = time.monotonic() + 30
while pub.get_subscription_count() < 1 and time.monotonic() < end:
    time.sleep(0.05)
print("matched", pub.get_subscription_count(), flush=True)
msg = UInt8MultiArray()
msg.data = bytes([1]) * BIG
try:
    pub.publish(msg)
    print("big published", flush=True)
except Exception as e:
    print("big refused:", str(e).replace("\n", " "), flush=True)
small = UInt8MultiArray()
small.data = bytes([2]) * 1000
for _ in range(50):
    pub.publish(small)
    time.sleep(0.1)
print("small published", flush=True)
"""


def test_a_message_above_the_frame_bound_arrives_or_the_publisher_is_told(tmp_path, procs):
    env = harness.tracer_env(tmp_path)
    listener = harness.spawn_python(LISTENER, env=env, timeout=90)
    procs.append(listener)
    assert listener.wait_for_output("listening", timeout=30), listener.join(timeout=0).describe()
    talker = harness.spawn_python(TALKER, [str(BIG)], env=env, timeout=90)
    procs.append(talker)
    t = talker.join().check()
    assert "matched 1" in t.stdout, t.describe()
    assert listener.wait_for_output("heard 1000 first=2", timeout=30), t.describe()
    listener.kill()
    r = listener.join(5)
    big_heard = re.findall(rf"^heard {BIG} first=1 intact=(\w+)$", r.stdout, re.M)
    if "big published" in t.stdout:
        # Carried: it must have arrived, whole.
        assert big_heard == ["True"], (t.describe(), r.describe())
    else:
        # Not carried: said so, to the caller and in the log, naming the size (of the CDR
        # message: the array and its headers).
        said = re.search(r"^big refused: .*a message of (\d+) bytes cannot be sent", t.stdout, re.M)
        assert said and int(said.group(1)) >= BIG, t.describe()
        logged = re.search(r"^\[rmw_tracer\] publisher on /big: a message of (\d+) bytes", t.stderr, re.M)
        assert logged and logged.group(1) == said.group(1), t.describe()
        assert big_heard == [], r.describe()
