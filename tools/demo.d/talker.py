"""Demo talker: publishes std_msgs/String "Hello World: <n>" on a topic, reliable QoS.

It waits (up to --match-timeout seconds) until a subscription is matched, so that the first
message is not published into the void, then publishes --count messages at --rate Hz and waits
for them to be delivered before exiting.
"""

import argparse
import sys
import time

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from std_msgs.msg import String


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topic", default="/chatter")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--rate", type=float, default=10.0, help="messages per second")
    ap.add_argument("--match-timeout", type=float, default=20.0)
    args = ap.parse_args()

    rclpy.init()
    node = Node("talker")
    qos = QoSProfile(depth=max(10, args.count), reliability=ReliabilityPolicy.RELIABLE,
                     history=HistoryPolicy.KEEP_LAST)
    pub = node.create_publisher(String, args.topic, qos)
    log = node.get_logger()
    log.info(f"middleware: {rclpy.utilities.get_rmw_implementation_identifier()}")

    deadline = time.monotonic() + args.match_timeout
    while pub.get_subscription_count() == 0:
        if time.monotonic() > deadline:
            log.error(f"no subscription matched on {args.topic} within {args.match_timeout}s")
            node.destroy_node()
            rclpy.shutdown()
            return 1
        rclpy.spin_once(node, timeout_sec=0.05)

    period = 1.0 / args.rate if args.rate > 0 else 0.0
    for i in range(1, args.count + 1):
        msg = String()
        msg.data = f"Hello World: {i}"
        pub.publish(msg)
        log.info(f"Publishing: '{msg.data}'")
        rclpy.spin_once(node, timeout_sec=period)
    # Reliable delivery may still be in flight: wait for the acknowledgements before leaving,
    # or a short grace period where the middleware cannot tell.
    try:
        if not pub.wait_for_all_acked(Duration(seconds=5)):
            log.warning("not every message was acknowledged within 5 s")
    except Exception as e:  # rclpy raises when the middleware does not support it
        log.info(f"wait_for_all_acked unavailable ({e}); waiting 0.5 s")
        time.sleep(0.5)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
