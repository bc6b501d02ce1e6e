"""The process side of test_network_hosts.py: rclpy programs, one per host or per role, run
with the venv's python under rmw_tracer (LD_PRELOAD). Nothing here is collected by pytest: ROS
is imported only when run as a program.

    mesh     --me H --others H2,H3 --count N    publish N std_msgs/String "<H> <i>" on
             /mesh_<H> (reliable, KEEP_ALL) once every other host's subscription matched, and
             subscribe to /mesh_<H2>, /mesh_<H3>; print "ready" when the subscriptions exist,
             one JSON line {"received": {topic: [...]}} when all N of each arrived; then drop
             the subscriptions and stay until nobody subscribes to ours (the others are done)
    action-server --action A --goals N      test_msgs/action/Fibonacci on A: feedback after
             each element (20 ms apart), result the sequence; print "ready", exit after N goals
    action-client --action A --order K      wait for the server, send one goal of order K,
             print one JSON line {"accepted", "feedback": [[...], ...], "result": [...],
             "status"}, with when the result and each feedback message came (a plain
             subscription of the feedback topic beside the client's)
"""

from __future__ import annotations

import argparse
import json
import sys
import time

# The service worker's wait (spin until a predicate holds), one copy for both workers.
from test_service_worker import _spin_until


def _node(name: str):
    import rclpy
    from rclpy.node import Node

    if not rclpy.ok():
        rclpy.init()
    return Node(name)


def cmd_mesh(args) -> int:
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    node = _node(f"mesh_{args.me}")
    others = [o for o in args.others.split(",") if o]
    received: dict[str, list[str]] = {f"/mesh_{o}": [] for o in others}
    subs = [node.create_subscription(String, t, lambda m, t=t: received[t].append(m.data), qos)
            for t in received]
    pub = node.create_publisher(String, f"/mesh_{args.me}", qos)
    print("ready", flush=True)
    if not _spin_until(node, lambda: pub.get_subscription_count() >= len(others)
                       and all(node.count_publishers(t) >= 1 for t in received), args.timeout):
        print(f"only {pub.get_subscription_count()} of {len(others)} subscriptions matched",
              flush=True)
        return 2
    for i in range(args.count):
        msg = String()
        msg.data = f"{args.me} {i}"
        pub.publish(msg)
        rclpy_spin_briefly(node)
    done = _spin_until(node, lambda: all(len(v) >= args.count for v in received.values()),
                       args.timeout)
    print(json.dumps({"received": received}), flush=True)
    for s in subs:
        node.destroy_subscription(s)
    _spin_until(node, lambda: pub.get_subscription_count() == 0, args.timeout)
    node.destroy_node()
    return 0 if done else 3


def rclpy_spin_briefly(node) -> None:
    import rclpy

    rclpy.spin_once(node, timeout_sec=0.0)
    time.sleep(0.01)


def cmd_action_server(args) -> int:
    import rclpy
    from rclpy.action import ActionServer
    from test_msgs.action import Fibonacci

    node = _node("fib_server")
    served = []
    # When each feedback message was published (CLOCK_MONOTONIC in ms, one clock for every
    # namespace of the machine: the client reports its times on it too).
    published: list[tuple[float, int]] = []

    def execute(handle):
        seq = [0, 1]
        fb = Fibonacci.Feedback()
        for _ in range(2, handle.request.order):
            seq.append(seq[-1] + seq[-2])
            fb.sequence = list(seq)
            handle.publish_feedback(fb)
            published.append((round(time.monotonic() * 1000, 1), len(seq)))
            time.sleep(0.02)
        handle.succeed()
        result = Fibonacci.Result()
        result.sequence = list(seq)
        served.append(handle.request.order)
        return result

    server = ActionServer(node, Fibonacci, args.action, execute)
    print("ready", flush=True)
    deadline = time.monotonic() + args.timeout
    while len(served) < args.goals and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    # Linger so that the last result and status reach the client.
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"served": served, "feedback_published_ms": published}), flush=True)
    server.destroy()
    node.destroy_node()
    return 0 if len(served) == args.goals else 3


def cmd_action_client(args) -> int:
    import rclpy
    from rclpy.action import ActionClient
    from test_msgs.action import Fibonacci

    node = _node("fib_client")
    client = ActionClient(node, Fibonacci, args.action)
    if not client.wait_for_server(timeout_sec=args.timeout):
        print("no action server", flush=True)
        return 2
    # The feedback topic also as a plain subscription beside the client's (same QoS), for a
    # failure's story: ms since the goal went of each feedback message it took, until 1 s
    # after the result; feedback there but not in the client's list came after the result.
    since = lambda: round((time.monotonic() - t0) * 1000, 1)  # noqa: E731
    seen: list[tuple[float, int]] = []
    node.create_subscription(Fibonacci.Impl.FeedbackMessage, f"{args.action}/_action/feedback",
                             lambda m: seen.append((since(), len(m.feedback.sequence))), 10)
    feedback: list[list[int]] = []
    goal = Fibonacci.Goal()
    goal.order = args.order
    t0 = time.monotonic()
    fut = client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(list(f.feedback.sequence)))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=args.timeout)
    handle = fut.result()
    if handle is None or not handle.accepted:
        print(json.dumps({"accepted": False}), flush=True)
        return 3
    res = handle.get_result_async()
    rclpy.spin_until_future_complete(node, res, timeout_sec=args.timeout)
    r = res.result()
    result_at = since()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"accepted": True, "feedback": feedback,
                      "result": list(r.result.sequence) if r else None,
                      "status": r.status if r else None,
                      "goal_sent_ms": round(t0 * 1000, 1), "result_at_ms": result_at,
                      "feedback_seen_ms": seen}), flush=True)
    client.destroy()
    node.destroy_node()
    return 0 if r is not None else 4


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mesh")
    m.add_argument("--me", required=True)
    m.add_argument("--others", required=True)
    m.add_argument("--count", type=int, default=50)
    s = sub.add_parser("action-server")
    s.add_argument("--action", default="/fib")
    s.add_argument("--goals", type=int, default=1)
    c = sub.add_parser("action-client")
    c.add_argument("--action", default="/fib")
    c.add_argument("--order", type=int, default=10)
    for p in (m, s, c):
        p.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    fn = {"mesh": cmd_mesh, "action-server": cmd_action_server,
          "action-client": cmd_action_client}[args.cmd]
    try:
        return fn(args)
    finally:
        import rclpy

        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
