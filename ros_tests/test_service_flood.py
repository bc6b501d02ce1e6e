"""No service request or response is dropped for want of room (issue 33; docs/rmw-mapping.md,
Services). An rclpy client fires 100 `call_async` at once at a server that takes 5 ms per
request, with the default services QoS (KEEP_LAST 10): every call is answered. A dropped
request or response is a call that never returns in rclpy. Before, 11 of 100 were answered,
as with Fast DDS today (11 of 100: its service reader keeps the QoS depth and replaces the
oldest unread request), which is why this test does not run on Fast DDS."""

from __future__ import annotations

import harness

CALLS = 100

SERVER = r"""
import time
import rclpy
from test_msgs.srv import BasicTypes

rclpy.init()
node = rclpy.create_node("flood_server")
served = [0]

def add(req, resp):
    time.sleep(0.005)
    resp.int64_value = req.int64_value + 1000
    served[0] += 1
    return resp

node.create_service(BasicTypes, "/flood_add", add)
print("serving", flush=True)
end = time.monotonic() + 90
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.2)
"""

CLIENT = r"""
import sys
import time
import rclpy
from test_msgs.srv import BasicTypes

calls = int(sys.argv[1])
rclpy.init()
node = rclpy.create_node("flood_client")
cli = node.create_client(BasicTypes, "/flood_add")
if not cli.wait_for_service(timeout_sec=30):
    print("no server", flush=True)
    sys.exit(2)
futures = [cli.call_async(BasicTypes.Request(int64_value=i)) for i in range(calls)]
end = time.monotonic() + 60
while time.monotonic() < end and not all(f.done() for f in futures):
    rclpy.spin_once(node, timeout_sec=0.1)
right = sum(1 for i, f in enumerate(futures) if f.done() and f.result().int64_value == i + 1000)
print(f"answered {sum(f.done() for f in futures)} right {right}", flush=True)
"""


def test_a_burst_of_calls_at_a_busy_server_is_answered_in_full(tracer_env, procs):
    env, ns = tracer_env, None
    server = harness.spawn_python(SERVER, env=env, netns=ns, timeout=120)
    procs.append(server)
    assert server.wait_for_output("serving", 30), server.join(1).describe()
    client = harness.spawn_python(CLIENT, [str(CALLS)], env=env, netns=ns, timeout=120)
    procs.append(client)
    c = client.join(100)
    server.kill()
    assert f"answered {CALLS} right {CALLS}" in c.stdout, (c.describe(), server.join(5).describe())
