"""The harness itself, checked on Fast DDS (the reference the oracle tests compare against):
a C program built by compile_c runs on rcl, two rclpy processes in one private network
namespace talk to each other, and a hung process is killed at its timeout."""

from __future__ import annotations

import time

import pytest

import harness

RCL_PUBLISHER = r"""
#include <stdio.h>
#include <rcl/rcl.h>
#include <rcl/error_handling.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>

#define CHECK(x) do { rcl_ret_t r_ = (x); if (r_ != RCL_RET_OK) { \
  fprintf(stderr, "%s failed: %d %s\n", #x, (int)r_, rcl_get_error_string().str); return 1; } } while (0)

int main(void) {
  rcl_allocator_t alloc = rcl_get_default_allocator();
  rcl_init_options_t opts = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&opts, alloc));
  rcl_context_t ctx = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, NULL, &opts, &ctx));
  rcl_node_t node = rcl_get_zero_initialized_node();
  rcl_node_options_t nopts = rcl_node_get_default_options();
  CHECK(rcl_node_init(&node, "harness_c", "", &ctx, &nopts));
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t popts = rcl_publisher_get_default_options();
  CHECK(rcl_publisher_init(&pub, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), "/harness", &popts));
  std_msgs__msg__String msg;
  std_msgs__msg__String__init(&msg);
  rosidl_runtime_c__String__assign(&msg.data, "from C");
  CHECK(rcl_publish(&pub, &msg, NULL));
  printf("identifier %s\n", rmw_get_implementation_identifier());
  std_msgs__msg__String__fini(&msg);
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_node_fini(&node));
  CHECK(rcl_shutdown(&ctx));
  CHECK(rcl_context_fini(&ctx));
  CHECK(rcl_init_options_fini(&opts));
  printf("done\n");
  return 0;
}
"""

LISTEN_ONE = r"""
import sys, time, rclpy
from rclpy.node import Node
from std_msgs.msg import String
rclpy.init()
node = Node("harness_listener")
got = []
node.create_subscription(String, "/harness_py", lambda m: got.append(m.data), 10)
print("ready", flush=True)
deadline = time.monotonic() + 30
while not got and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.1)
print("got", got[:1], flush=True)
sys.exit(0 if got else 1)
"""

TALK_UNTIL_MATCHED = r"""
import sys, time, rclpy
from rclpy.node import Node
from std_msgs.msg import String
rclpy.init()
node = Node("harness_talker")
pub = node.create_publisher(String, "/harness_py", 10)
deadline = time.monotonic() + 30
while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
matched = pub.get_subscription_count()
for _ in range(20):
    pub.publish(String(data="hello across processes"))
    rclpy.spin_once(node, timeout_sec=0.1)
print("matched", matched, flush=True)
sys.exit(0 if matched else 1)
"""


def test_compile_c_builds_an_rcl_program_that_runs_on_fastdds(tmp_path, fastdds_env, netns):
    exe = harness.compile_c(RCL_PUBLISHER, tmp_path / "rcl_pub", msgs=["std_msgs"])
    res = harness.run([exe], fastdds_env, netns=netns, timeout=60).check()
    assert "identifier rmw_fastrtps_cpp\n" in res.stdout
    assert "done\n" in res.stdout


def test_two_rclpy_processes_meet_in_one_namespace(fastdds_env, netns):
    listener = harness.spawn_python(LISTEN_ONE, env=fastdds_env, netns=netns, timeout=60)
    assert listener.wait_for_output("ready", timeout=30), listener.join(1).describe()
    talker = harness.spawn_python(TALK_UNTIL_MATCHED, env=fastdds_env, netns=netns, timeout=60)
    lres, tres = harness.join_all([listener, talker], timeout=90)
    lres.check()
    tres.check()
    assert "got ['hello across processes']" in lres.stdout


def test_network_namespace_has_only_loopback(netns):
    if netns is None:
        pytest.skip("no network namespaces on this machine (not root, or no unshare/nsenter)")
    res = harness.run(["ip", "-o", "link"], harness.ros_env(), netns=netns).check()
    links = [line.split(":")[1].strip() for line in res.stdout.splitlines()]
    assert links == ["lo"]


def test_timeout_kills_the_process_group(tmp_path):
    started = time.monotonic()
    res = harness.run(["sh", "-c", "sleep 300 & sleep 300"], harness.ros_env(), timeout=1.0)
    assert res.timed_out
    assert time.monotonic() - started < 30
