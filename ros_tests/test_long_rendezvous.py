"""A rendezvous directory with a long path (issue 28): rmw_init failed ("path must be shorter
than SUN_LEN") when RMW_TRACER_RENDEZVOUS_DIR's path was too long for a Unix socket address
(108 bytes). An rclpy talker and listener in two processes, with a 200-character base
directory (the domain's directory inside it is longer still), find each other and talk."""

from __future__ import annotations

import re
from pathlib import Path

import harness

TALKER = r"""
import rclpy
from std_msgs.msg import String

rclpy.init()
node = rclpy.create_node("long_talker")
pub = node.create_publisher(String, "/long/chatter", 10)
n = 0

def tick():
    global n
    n += 1
    pub.publish(String(data=f"hello {n}"))

node.create_timer(0.1, tick)
print("talking", flush=True)
rclpy.spin(node)
"""

LISTENER = r"""
import rclpy
from std_msgs.msg import String

rclpy.init()
node = rclpy.create_node("long_listener")
heard = []
node.create_subscription(String, "/long/chatter", lambda m: heard.append(m.data), 10)
print("listening", flush=True)
while len(heard) < 5:
    rclpy.spin_once(node, timeout_sec=1.0)
for h in heard:
    print("heard", h, flush=True)
node.destroy_node()
rclpy.shutdown()
"""


def _long_base(tmp: Path, length: int) -> Path:
    head = str(tmp / "long-")
    base = Path(head + "x" * (length - len(head)))
    assert len(str(base)) == length
    return base


def test_rclpy_talker_and_listener_in_a_200_character_directory(tmp_path, procs):
    base = _long_base(tmp_path, 200)
    env = harness.tracer_env(tmp_path, extra={"RMW_TRACER_RENDEZVOUS_DIR": str(base)})
    listener = harness.spawn_python(LISTENER, env=env, timeout=60)
    procs.append(listener)
    assert listener.wait_for_output("listening", timeout=30), listener.join(timeout=0).describe()
    talker = harness.spawn_python(TALKER, env=env, timeout=60)
    procs.append(talker)
    r = listener.join().check()
    heard = [int(n) for n in re.findall(r"^heard hello (\d+)$", r.stdout, re.M)]
    assert len(heard) == 5 and heard == sorted(heard), r.describe()
    # Both graphs published their sockets in the domain's directory under the long base.
    domain_dir = base / f"domain-{env['ROS_DOMAIN_ID']}"
    assert len(str(domain_dir / "x.sock")) > 107
    assert domain_dir.is_dir() and (domain_dir.stat().st_mode & 0o077) == 0
    talker.kill()
    t = talker.join(5)
    assert "rmw_tracer: " not in t.stderr + r.stderr, (t.describe(), r.describe())
