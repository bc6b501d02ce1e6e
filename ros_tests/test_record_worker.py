"""The process side of the recording tests (test_record.py): rclpy programs under rmw_tracer.
Nothing here is collected by pytest: ROS is imported only when run as a program.

    talk   --count N [--wait-subs K] [--extra-chatter-subs E] [--go FILE] --until FILE
           publishes N std_msgs/String "hello <i>" on /chatter and N std_msgs/Header on /stamps
           (stamp = 1000+i s, i*1000 ns; frame_id "f<i>") once K subscriptions match each topic (K+E on /chatter) and --go FILE exists,
           prints one JSON line of what it published, then spins until --until FILE exists
    listen --count N
           two subscriptions on /chatter and one on /stamps; prints "ready", collects until each
           has N messages, prints one JSON line {"chatter": [[...], [...]], "stamps": [...]}
    flood  --count N --size B
           publishes N std_msgs/UInt8MultiArray of B bytes on /flood as fast as it can, no
           subscriber needed; prints one JSON line {"published": N}; --hold: then sleeps until
           killed; --no-shutdown: exits without rclpy.shutdown
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _spin_until(node, pred, timeout: float) -> bool:
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        rclpy.spin_once(node, timeout_sec=0.05)
    return pred()


def talk(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import Header, String

    rclpy.init()
    node = Node("rec_talker")
    pc = node.create_publisher(String, "/chatter", 100)
    ps = node.create_publisher(Header, "/stamps", 100)
    ok = _spin_until(
        node,
        lambda: pc.get_subscription_count() >= a.wait_subs + a.extra_chatter_subs
        and ps.get_subscription_count() >= a.wait_subs,
        30.0,
    )
    if not ok:
        print(json.dumps({"error": "no match"}), flush=True)
        sys.exit(1)
    from pathlib import Path

    if a.go:
        _spin_until(node, lambda: Path(a.go).exists(), 30.0)
    for i in range(a.count):
        pc.publish(String(data=f"hello {i}"))
        h = Header()
        h.stamp.sec = 1000 + i
        h.stamp.nanosec = i * 1000
        h.frame_id = f"f{i}"
        ps.publish(h)
        time.sleep(0.002)
    print(json.dumps({"published": a.count}), flush=True)
    _spin_until(node, lambda: Path(a.until).exists(), 60.0)
    node.destroy_node()
    rclpy.shutdown()


def listen(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import Header, String

    rclpy.init()
    node = Node("rec_listener")
    got = {"chatter": [[], []], "stamps": []}
    for k in range(2):
        node.create_subscription(String, "/chatter", lambda m, k=k: got["chatter"][k].append(m.data), 1000)
    node.create_subscription(
        Header, "/stamps", lambda m: got["stamps"].append([m.stamp.sec, m.stamp.nanosec, m.frame_id]), 1000
    )
    print("ready", flush=True)
    _spin_until(
        node,
        lambda: all(len(x) >= a.count for x in got["chatter"]) and len(got["stamps"]) >= a.count,
        60.0,
    )
    print(json.dumps(got), flush=True)
    node.destroy_node()
    rclpy.shutdown()


def flood(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import UInt8MultiArray

    rclpy.init()
    node = Node("rec_flood")
    p = node.create_publisher(UInt8MultiArray, "/flood", 10)
    m = UInt8MultiArray()
    m.data = bytes(a.size)
    for _ in range(a.count):
        p.publish(m)
    print(json.dumps({"published": a.count}), flush=True)
    if a.hold:
        time.sleep(600)  # the test kills us: the recording is never finished
    if a.no_shutdown:
        sys.exit(0)  # no rclpy.shutdown: the atexit hook finishes the file
    node.destroy_node()
    rclpy.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["talk", "listen", "flood"])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--wait-subs", type=int, default=1)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--until", default="")
    ap.add_argument("--extra-chatter-subs", type=int, default=0)
    ap.add_argument("--go", default="")
    ap.add_argument("--hold", action="store_true")
    ap.add_argument("--no-shutdown", action="store_true")
    a = ap.parse_args()
    {"talk": talk, "listen": listen, "flood": flood}[a.cmd](a)


if __name__ == "__main__":
    main()
