"""rclpy (a copying reader) on a topic of loaned test_msgs/msg/BasicTypes (test_loans.py):
checks each message against the values loans_rcl.c fills from the publication sequence
number and prints one JSON line {"received", "bad"}.

    loans_rclpy_listener.py <topic> <count>
"""

from __future__ import annotations

import json
import sys
import time


def expected(i: int) -> dict:
    """What loans_rcl.c's fill() writes into message i (C arithmetic, the same IEEE values)."""
    def wrap(v: int, bits: int, signed: bool) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v
    return {
        "bool_value": bool(i & 1),
        "byte_value": bytes([wrap(i * 3, 8, False)]),
        "char_value": wrap(i * 5, 8, False),
        "float32_value": i * 0.5,
        "float64_value": i * 0.25 + 1e-9,
        "int8_value": -(i % 100),
        "uint8_value": wrap(i, 8, False),
        "int16_value": wrap(-i * 7, 16, True),
        "uint16_value": wrap(i * 11, 16, False),
        "int32_value": wrap(-i * 1000, 32, True),
        "uint32_value": wrap(i * 100000, 32, False),
        "int64_value": -i * 10000000000,
        "uint64_value": i * 1000000000000 + 7,
    }


def main() -> None:
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from test_msgs.msg import BasicTypes

    topic, count = sys.argv[1], int(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node("loans_rclpy_listener")
    got: list[tuple[int, dict]] = []

    def on_msg(msg, info) -> None:
        seq = info["publication_sequence_number"]
        got.append((seq, {k: getattr(msg, k) for k in expected(0)}))

    qos = QoSProfile(depth=count, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(BasicTypes, topic, on_msg, qos, raw=False)
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    bad = sum(1 for seq, v in got if v != expected(seq))
    print(json.dumps({"received": len(got), "bad": bad}), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
