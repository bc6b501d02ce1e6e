"""The two nodes of tools/bench/nested (rclpy; started by nested.py, one per host).

    nested_node.py cam --seconds S [--image-hz 10] [--image-bytes 100] [--nested-hz 100]
                       [--nested-bytes 100000]
    nested_node.py sub --stop-file PATH

``cam`` publishes /camera/image (``--image-bytes`` at ``--image-hz``) and, from the same node,
/camera/image/compressed (``--nested-bytes`` at ``--nested-hz``: 10 MB/s by default), both
std_msgs/UInt8MultiArray, reliable, keep_last 10, on a fixed schedule (absolute deadlines, so a
slow publish does not lower the rate). It waits until /camera/image has a subscription, prints
"start <CLOCK_MONOTONIC>", streams for S seconds and prints one JSON line with what it published.
``sub`` subscribes to /camera/image only (reliable, keep_last 10), prints "ready", spins until
PATH exists (the driver makes it once the camera is done; 600 s at most) and prints one JSON line: every arrival's CLOCK_MONOTONIC time, size and first byte (the
image's index) and what its message-lost event reported. Both
processes run on one kernel, so their monotonic clocks and the driver's agree.
"""

import argparse
import json
import os
import sys
import time

import rclpy
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from std_msgs.msg import UInt8MultiArray

IMAGE, NESTED = "/camera/image", "/camera/image/compressed"


def qos():
    return QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def blob(n, first=0):
    m = UInt8MultiArray()
    m.data = bytes([first % 256]) + bytes(n - 1)
    return m


def cam(node, a):
    image = node.create_publisher(UInt8MultiArray, IMAGE, qos())
    nested = node.create_publisher(UInt8MultiArray, NESTED, qos())
    end = time.monotonic() + 60
    while image.get_subscription_count() == 0:
        if time.monotonic() > end:
            print("no subscription of /camera/image matched in 60 s", file=sys.stderr)
            sys.exit(3)
        rclpy.spin_once(node, timeout_sec=0.05)
    frame = blob(a.nested_bytes)
    start = time.monotonic()
    print(f"start {start:.6f}", flush=True)
    # One schedule at the nested rate; an image every (nested / image) ticks.
    tick, every = 1.0 / a.nested_hz, max(1, round(a.nested_hz / a.image_hz))
    images = frames = i = 0
    while True:
        due = start + i * tick
        if due >= start + a.seconds:
            break
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if i % every == 0:
            image.publish(blob(a.image_bytes, images))
            images += 1
        nested.publish(frame)
        frames += 1
        i += 1
    elapsed = time.monotonic() - start
    time.sleep(1.0)  # the last image reaches the subscriber before the node goes
    return {"images": images, "image_bytes": a.image_bytes, "nested": frames, "nested_bytes": a.nested_bytes,
            "elapsed_s": elapsed, "nested_cdr_bytes": len(serialize_message(frame)),
            "image_cdr_bytes": len(serialize_message(blob(a.image_bytes)))}


def sub(node, a):
    got, lost = [], [0]

    def on_msg(m):
        got.append((round(time.monotonic(), 6), len(m.data), m.data[0] if len(m.data) else -1))

    def on_lost(e):
        lost[0] += e.total_count_change

    node.create_subscription(UInt8MultiArray, IMAGE, on_msg, qos(),
                             event_callbacks=SubscriptionEventCallbacks(message_lost=on_lost))
    print("ready", flush=True)
    end = time.monotonic() + 600
    while not os.path.exists(a.stop_file) and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    return {"arrivals": got, "lost_events": lost[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["cam", "sub"])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--stop-file")
    ap.add_argument("--image-hz", type=float, default=10)
    ap.add_argument("--image-bytes", type=int, default=100)
    ap.add_argument("--nested-hz", type=float, default=100)
    ap.add_argument("--nested-bytes", type=int, default=100_000)
    a = ap.parse_args()
    rclpy.init()
    node = rclpy.create_node(f"nested_{a.role}")
    try:
        out = (cam if a.role == "cam" else sub)(node, a)
        out["rmw"] = rclpy.get_rmw_implementation_identifier()
    finally:
        node.destroy_node()
        rclpy.shutdown()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
