"""rclpy programs for test_exact_delivery.py (issue 26): a camera node in image_transport's
layout, a subscriber that counts what it gets and what its message-lost event says, and a node
whose one topic has a matching writer beside one of another type or an incompatible QoS.

    exact_worker.py cam --topic T [--nested T/compressed] --images N --nested-per-image K
        --nested-bytes B --period-ms P [--wait-subs 1]
    exact_worker.py sub --topic T --count N --timeout S [--depth 1] [--type bytes|string|int32]
        [--best-effort]
    exact_worker.py mixed --topic T --count N --period-ms P --other type|qos
        [--other-bytes B] [--wait-subs 1]

``cam`` publishes ``N`` images (std_msgs/UInt8MultiArray, 100 bytes, reliable, KEEP_LAST(1)) on
``T``, one every ``P`` ms, each followed at once by ``K`` messages of ``B`` bytes on the nested
topic (image_transport's ``/compressed``); it waits until ``--wait-subs`` subscriptions of ``T``
are matched first. ``sub`` takes ``T`` with KEEP_LAST(depth), reliable, until it has ``N``
messages or ``S`` seconds passed, and prints one JSON line: what it received (the images' first
byte, their index, or the strings), and the message-lost and incompatible-QoS totals its event
callbacks were told. (What reached the process is counted from outside: its socket reads with
strace on one host, the interface's counters across hosts.)
``mixed`` publishes ``N`` std_msgs/String on ``T`` (reliable) and, beside it in the same node,
as many messages of ``B`` bytes from a writer the subscriber must not match: ``--other type``
a std_msgs/UInt8MultiArray writer on the same topic, ``--other qos`` a best-effort
std_msgs/String writer (a reliable subscription is incompatible with it).
Nothing here is collected by pytest: ROS is imported only when run as a program.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def qos(depth: int, best_effort: bool = False):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    q = QoSProfile(depth=depth)
    q.reliability = ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
    return q


def wait_subs(node, pub, n: int, timeout: float = 30.0) -> None:
    import rclpy
    end = time.monotonic() + timeout
    while pub.get_subscription_count() < n and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    if pub.get_subscription_count() < n:
        print(f"no {n} subscriptions matched in {timeout} s", file=sys.stderr)
        sys.exit(3)


def blob(n: int, first: int):
    from std_msgs.msg import UInt8MultiArray
    m = UInt8MultiArray()
    m.data = bytes([first % 256]) + bytes(n - 1)
    return m


def cam(node, a) -> dict:
    from std_msgs.msg import UInt8MultiArray
    image = node.create_publisher(UInt8MultiArray, a.topic, qos(1))
    nested = node.create_publisher(UInt8MultiArray, a.nested, qos(1))
    wait_subs(node, image, a.wait_subs)
    print("ready", flush=True)
    nested_msg = blob(a.nested_bytes, 0)
    for i in range(a.images):
        # As a camera driver with image_transport does: the raw image, then its encodings at
        # once.
        image.publish(blob(100, i))
        for _ in range(a.nested_per_image):
            nested.publish(nested_msg)
        time.sleep(a.period_ms / 1000.0)
    # Enough time for the last image to be taken before the node goes.
    time.sleep(1.0)
    return {"images": a.images, "nested": a.images * a.nested_per_image}


def mixed(node, a) -> dict:
    from std_msgs.msg import String, UInt8MultiArray
    good = node.create_publisher(String, a.topic, qos(1000))
    if a.other == "type":
        other = node.create_publisher(UInt8MultiArray, a.topic, qos(1000))
    else:
        other = node.create_publisher(String, a.topic, qos(1000, best_effort=True))
    wait_subs(node, good, a.wait_subs)
    print("ready", flush=True)
    for i in range(a.count):
        m = String()
        m.data = f"good {i}"
        good.publish(m)
        if a.other == "type":
            other.publish(blob(a.other_bytes, i))
        else:
            o = String()
            o.data = "x" * a.other_bytes
            other.publish(o)
        time.sleep(a.period_ms / 1000.0)
    time.sleep(1.0)
    return {"published": a.count}


def sub(node, a) -> dict:
    import rclpy
    from rclpy.event_handler import SubscriptionEventCallbacks
    from std_msgs.msg import Int32, String, UInt8MultiArray
    got: list = []
    lost = [0]
    incompatible = [0]

    def on_msg(m) -> None:
        got.append(m.data[0] if a.type == "bytes" else m.data)

    def on_lost(e) -> None:
        lost[0] += e.total_count_change

    def on_incompatible(e) -> None:
        incompatible[0] += e.total_count_change

    ty = {"bytes": UInt8MultiArray, "string": String, "int32": Int32}[a.type]
    events = SubscriptionEventCallbacks(message_lost=on_lost, incompatible_qos=on_incompatible)
    node.create_subscription(ty, a.topic, on_msg, qos(a.depth, a.best_effort),
                             event_callbacks=events)
    print("ready", flush=True)
    end = time.monotonic() + a.timeout
    while len(got) < a.count and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    # A little longer: anything more that came (it must not) is counted too.
    tail = time.monotonic() + 0.5
    while time.monotonic() < tail:
        rclpy.spin_once(node, timeout_sec=0.05)
    return {"received": got, "lost": lost[0], "incompatible_qos": incompatible[0]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["cam", "sub", "mixed"])
    ap.add_argument("--topic", default="/camera/image")
    ap.add_argument("--nested", default=None)
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--nested-per-image", type=int, default=20)
    ap.add_argument("--nested-bytes", type=int, default=100_000)
    ap.add_argument("--period-ms", type=float, default=50)
    ap.add_argument("--wait-subs", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--type", choices=["bytes", "string", "int32"], default="bytes")
    ap.add_argument("--best-effort", action="store_true")
    ap.add_argument("--other", choices=["type", "qos"], default="type")
    ap.add_argument("--other-bytes", type=int, default=10_000)
    a = ap.parse_args()
    a.nested = a.nested or a.topic + "/compressed"
    import rclpy
    rclpy.init()
    node = rclpy.create_node(f"exact_{a.role}")
    try:
        out = {"cam": cam, "sub": sub, "mixed": mixed}[a.role](node, a)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
