"""rclpy side of test_acked.py: `Publisher.wait_for_all_acked` against subscriptions in other
processes, which this publisher stops (SIGSTOP), resumes or kills itself, so that the times
between those steps are its own and not a test driver's.

    test_acked_worker.py sub [--reliability reliable|best_effort] [--expect N] [--duration-s S]
    test_acked_worker.py pub [--reliability ...] [--subs N] [--count N]
        [--stop PID]... [--kill PID] [--stalled-ms N]

A subscription prints "ready", takes until it has ``--expect`` messages (or ``--duration-s``
passes) and prints one JSON line with what it took. A publisher waits until ``--subs``
subscriptions match, publishes ``--count`` messages and waits for their acknowledgement
(10 s at most): "running". With ``--stop``, it then stops those processes, publishes one
message, waits ``--stalled-ms`` ("stalled"), resumes them and waits again (10 s at most:
"resumed"). With ``--kill``, it kills that process, publishes one message and waits
(10 s at most: "killed"). Each wait is recorded as its result and how long it took. Nothing
here is collected by pytest: ROS is imported only when run as a program.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def stop(pid: int) -> None:
    """SIGSTOP, then wait (5 s at most) until the kernel shows the process stopped: kill()
    returns before a process running on another core has stopped."""
    os.kill(pid, signal.SIGSTOP)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if state in ("T", "t"):
            return
        time.sleep(0.001)
    raise RuntimeError(f"process {pid} did not stop")


def main() -> int:
    import rclpy
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["pub", "sub"])
    ap.add_argument("--topic", default="/acked")
    ap.add_argument("--reliability", default="reliable", choices=["reliable", "best_effort"])
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("--duration-s", type=float, default=30.0)
    ap.add_argument("--subs", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--stop", type=int, action="append", default=[])
    ap.add_argument("--kill", type=int, default=0)
    ap.add_argument("--stalled-ms", type=int, default=100)
    a = ap.parse_args()

    rclpy.init()
    node = rclpy.create_node(f"acked_{a.role}")
    qos = QoSProfile(depth=100)
    qos.reliability = (ReliabilityPolicy.RELIABLE if a.reliability == "reliable"
                       else ReliabilityPolicy.BEST_EFFORT)
    ex = SingleThreadedExecutor()
    ex.add_node(node)

    if a.role == "sub":
        received: list[str] = []
        node.create_subscription(String, a.topic, lambda m: received.append(m.data), qos)
        print("ready", flush=True)
        end = time.monotonic() + a.duration_s
        while time.monotonic() < end and (a.expect == 0 or len(received) < a.expect):
            ex.spin_once(timeout_sec=0.01)
        print(json.dumps({"received": received}), flush=True)
    else:
        pub = node.create_publisher(String, a.topic, qos)
        end = time.monotonic() + 30
        while pub.get_subscription_count() < a.subs and time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
        out: dict = {"matched": pub.get_subscription_count()}
        sent = 0

        def publish(n: int) -> None:
            nonlocal sent
            for _ in range(n):
                m = String()
                m.data = f"m {sent}"
                pub.publish(m)
                sent += 1

        def wait(name: str, timeout_ms: int) -> None:
            t = time.monotonic()
            ok = pub.wait_for_all_acked(Duration(nanoseconds=timeout_ms * 1_000_000))
            out[name] = {"acked": ok, "ms": round((time.monotonic() - t) * 1000, 2)}

        publish(a.count)
        wait("running", 10_000)
        if a.stop:
            try:
                for pid in a.stop:
                    stop(pid)
                publish(1)
                wait("stalled", a.stalled_ms)
            finally:
                for pid in a.stop:
                    os.kill(pid, signal.SIGCONT)
            wait("resumed", 10_000)
        if a.kill:
            os.kill(a.kill, signal.SIGKILL)
            publish(1)
            wait("killed", 10_000)
        out["sent"] = sent
        print(json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
