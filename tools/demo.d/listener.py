"""Demo listener: subscribes to std_msgs/String on a topic (reliable QoS) and prints every
message; exits 0 once --count messages arrived, 1 if --timeout seconds pass first."""

import argparse
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from std_msgs.msg import String


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topic", default="/chatter")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()

    rclpy.init()
    node = Node("listener")
    log = node.get_logger()
    received = []

    def on_message(msg: String) -> None:
        received.append(msg.data)
        log.info(f"I heard: '{msg.data}'")

    qos = QoSProfile(depth=max(10, args.count), reliability=ReliabilityPolicy.RELIABLE,
                     history=HistoryPolicy.KEEP_LAST)
    node.create_subscription(String, args.topic, on_message, qos)
    log.info(f"middleware: {rclpy.utilities.get_rmw_implementation_identifier()}, "
             f"waiting for {args.count} messages on {args.topic}")

    deadline = time.monotonic() + args.timeout
    while len(received) < args.count and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)

    ok = len(received) >= args.count
    log.info(f"received {len(received)} of {args.count} messages")
    node.destroy_node()
    rclpy.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
