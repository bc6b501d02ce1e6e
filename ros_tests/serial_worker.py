"""rclpy side of the serial tests (test_serial*.py): one plain rclpy node on rmw_tracer that
sees the MCU only through ordinary discovery. Every line it prints starts with a monotonic
time (time.monotonic(), shared with the test's clock on this host).

  serial_worker.py listen TOPIC SECONDS [best_effort]   print "<t> got <value> <gid hex>" per message
  serial_worker.py echo N [best_effort]                 publish 1..N on /mcu/led one at a time, each
                                                        when the last came back on /mcu/echo; print
                                                        "<t> rtt <value> <us>", "<t> lost <value>"
  serial_worker.py burst N                              publish 1..N on /mcu/led as fast as they are
                                                        echoed (window of 4); print "<t> rate <msg/s>"
  serial_worker.py count TOPIC N SECONDS [best_effort]  quietly count values until N - 1 came, 2 s
                                                        passed without one, or SECONDS; print
                                                        "<t> count <n> <span s> <consecutive>"
  serial_worker.py drain TOPIC N SECONDS MS PAUSE      count as above with RELIABLE + KEEP_ALL,
                                                        taking one message every MS milliseconds
                                                        and stalling PAUSE ms every 500 messages;
                                                        also print "<t> last <value>"
  serial_worker.py hold SECONDS                         a node that only spins (the port's holder
                                                        in the benchmark, tools/bench/serial)
  serial_worker.py graph NODE SECONDS                   print "<t> present" / "<t> absent" as NODE
                                                        comes and goes, and its topics once
"""

from __future__ import annotations

import sys
import time

import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Int32


def say(*parts) -> None:
    print(f"{time.monotonic():.4f}", *parts, flush=True)


def qos(best_effort: bool, depth: int = 100) -> QoSProfile:
    q = QoSProfile(depth=depth)
    q.reliability = ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
    return q


def listen(node, topic: str, seconds: float, best_effort: bool) -> None:
    def got(msg, info=None):
        say("got", msg.data)

    node.create_subscription(Int32, topic, got, qos(best_effort))
    say("ready")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)


def count(node, topic: str, n: int, seconds: float, best_effort: bool,
          delay_ms: float | None = None, pause_ms: float = 0) -> None:
    got: list[tuple[float, int]] = []

    def take(m) -> None:
        got.append((time.monotonic(), m.data))
        if delay_ms:
            stall = pause_ms if len(got) % 500 == 0 else 0
            time.sleep((delay_ms + stall) / 1000)

    if delay_ms is None:
        # Deep enough that a stream faster than rclpy takes loses nothing in the ring.
        q = qos(best_effort, depth=100000)
    else:
        # Slower than the MCU publishes: the publisher is held back (docs/serial.md section 9).
        q = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(Int32, topic, take, q)
    say("ready")
    end = time.monotonic() + seconds
    # Until the last value (n - 1) came, or nothing for 2 s once something did.
    while time.monotonic() < end and not (got and (got[-1][1] >= n - 1
                                                   or time.monotonic() - got[-1][0] > 2)):
        rclpy.spin_once(node, timeout_sec=0.1)
    vs = [v for _, v in got]
    span = got[-1][0] - got[0][0] if len(got) > 1 else 0.0
    say("count", len(got), f"{span:.4f}", bool(vs) and vs == list(range(vs[0], vs[0] + len(vs))))
    if vs:
        say("last", vs[-1])


def echo(node, n: int, best_effort: bool) -> None:
    back: list[int] = []
    node.create_subscription(Int32, "/mcu/echo", lambda m: back.append(m.data), qos(False))
    pub = node.create_publisher(Int32, "/mcu/led", qos(best_effort))
    end = time.monotonic() + 30
    while pub.get_subscription_count() == 0 and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    # The echo subscription is matched too (the MCU's /mcu/echo publisher).
    while node.count_publishers("/mcu/echo") == 0 and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    time.sleep(0.3)  # the MCU's side of the edge: its proxy wires to this publisher
    say("ready")
    for v in range(1, n + 1):
        t0 = time.monotonic()
        pub.publish(Int32(data=v))
        deadline = t0 + 1.0
        while v not in back and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.01)
        if v in back:
            say("rtt", v, int((time.monotonic() - t0) * 1e6))
        else:
            say("lost", v)
    say("done")


def burst(node, n: int) -> None:
    back: list[int] = []
    node.create_subscription(Int32, "/mcu/echo", lambda m: back.append(m.data), qos(False))
    pub = node.create_publisher(Int32, "/mcu/led", qos(False))
    end = time.monotonic() + 30
    while (pub.get_subscription_count() == 0 or node.count_publishers("/mcu/echo") == 0) \
            and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    sent = 0
    while len(back) < n and time.monotonic() < t0 + 30:
        while sent < n and sent - len(back) < 4:
            sent += 1
            pub.publish(Int32(data=sent))
        rclpy.spin_once(node, timeout_sec=0.01)
    dt = time.monotonic() - t0
    say("rate", f"{len(back) / dt:.0f}", "in_order", back == list(range(1, len(back) + 1)))


def graph(node, name: str, seconds: float) -> None:
    present = None
    told_topics = False
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        names = [n for n, _ns in node.get_node_names_and_namespaces()]
        now = name in names
        if now != present:
            present = now
            say("present" if now else "absent")
        if now and not told_topics:
            topics = dict(node.get_topic_names_and_types())
            if "/mcu/counter" in topics and "/mcu/led" in topics:
                told_topics = True
                for t in sorted(topics):
                    if t.startswith("/mcu/"):
                        say("topic", t, ",".join(topics[t]))
                for t in ("/mcu/counter", "/mcu/led"):
                    for i in node.get_publishers_info_by_topic(t):
                        say("publisher", t, i.node_name, i.node_namespace,
                            bytes(i.endpoint_gid).hex())
                    for i in node.get_subscriptions_info_by_topic(t):
                        say("subscription", t, i.node_name, i.node_namespace)
        rclpy.spin_once(node, timeout_sec=0.02)


def main() -> None:
    mode = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node(f"serial_{mode}")
    if mode == "listen":
        listen(node, sys.argv[2], float(sys.argv[3]), "best_effort" in sys.argv[4:])
    elif mode == "count":
        count(node, sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), "best_effort" in sys.argv[5:])
    elif mode == "drain":
        count(node, sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), False, float(sys.argv[5]),
              float(sys.argv[6]))
    elif mode == "hold":
        end = time.monotonic() + float(sys.argv[2])
        say("ready")
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.1)
    elif mode == "echo":
        echo(node, int(sys.argv[2]), "best_effort" in sys.argv[3:])
    elif mode == "burst":
        burst(node, int(sys.argv[2]))
    elif mode == "graph":
        graph(node, sys.argv[2], float(sys.argv[3]))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
