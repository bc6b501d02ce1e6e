"""A demo-style rclpy node for the Ctrl-C tests (test_shutdown.py), written as the ROS 2 demos
are: init, spin, ``except (KeyboardInterrupt, ExternalShutdownException)``, then
``destroy_node()`` and ``rclpy.try_shutdown()``. Nothing here hides an error: whatever rclpy
raises on the way out is a traceback on stderr and a non-zero exit status.

    shutdown_node.py pub|sub|both single|multi [name]
    shutdown_node.py launch <n>      (a launcher: n children in its process group, as ros2 launch)

Prints ``spinning`` from the first executor callback (so the executor is inside spin when the
test sends SIGINT) and nothing else.
"""

from __future__ import annotations

import faulthandler
import subprocess
import sys

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String


# A crash prints the Python stack of every thread (on stderr) before the process dies.
faulthandler.enable()


class Demo(Node):
    def __init__(self, role: str, name: str) -> None:
        super().__init__(name)
        self.count = 0
        if role in ("pub", "both"):
            self.pub = self.create_publisher(String, "shutdown_chatter", 10)
            self.create_timer(0.01, self.tick)
        if role in ("sub", "both"):
            self.create_subscription(String, "shutdown_chatter", self.heard, 10)
        self.announce = self.create_timer(0.0, self.spinning)

    def spinning(self) -> None:
        self.announce.cancel()
        print("spinning", flush=True)

    def tick(self) -> None:
        self.count += 1
        self.pub.publish(String(data=f"hello {self.count}"))

    def heard(self, msg: String) -> None:
        self.count += 1


def run_node(role: str, executor_kind: str, name: str) -> None:
    rclpy.init()
    node = Demo(role, name)
    try:
        if executor_kind == "single":
            rclpy.spin(node)
        else:
            rclpy.spin(node, MultiThreadedExecutor(num_threads=4))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def run_launcher(n: int) -> int:
    """Children share this process group, so SIGINT to the group reaches every one of them at
    once, as Ctrl-C in a terminal running ``ros2 launch`` does. Each child's output is passed
    through with its name; the launcher exits 0 only if every child did."""
    kinds = [("pub", "single"), ("sub", "multi"), ("both", "multi"), ("sub", "single")]
    children = []
    for i in range(n):
        role, ex = kinds[i % len(kinds)]
        children.append(subprocess.Popen(
            [sys.executable, __file__, role, ex, f"launched_{i}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for c in children:
        c.stdout.readline()  # "spinning"
    print("spinning", flush=True)
    worst = 0
    for i, c in enumerate(children):
        while True:
            try:
                out, err = c.communicate()
                break
            except KeyboardInterrupt:
                continue  # the launcher's own SIGINT: keep waiting for the children
        print(f"child {i} exit {c.returncode}", flush=True)
        if err:
            sys.stderr.write(f"[child {i}] {err}")
        worst = worst or c.returncode
    return worst


def main() -> int:
    if sys.argv[1] == "launch":
        try:
            return run_launcher(int(sys.argv[2]))
        except KeyboardInterrupt:
            return 1  # SIGINT before the children were all up: the test fails on it
    role, executor_kind = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else f"shutdown_{role}_{executor_kind}"
    run_node(role, executor_kind, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
