// rcl with the C++ type support (what rclcpp passes to rmw): the rosidl_typesupport_cpp
// dispatcher of std_msgs::msg::String, resolved by rmw_tracer to the introspection_cpp type
// support. For the pub/sub tests (test_pubsub.py): C++ and C endpoints must match by type and
// exchange the same CDR.
//
//   pubsub_rcl_cpp pub <topic> <count>   wait for a subscription, publish "cpp <i>", stay until
//                                        no subscription is left
//   pubsub_rcl_cpp sub <topic> <count>   print "ready", then "msg: <data>" per message
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_typesupport_cpp/message_type_support.hpp>
#include <std_msgs/msg/string.hpp>

#include "rcl_check.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s pub|sub <topic> <count>\n", argv[0]);
    return 1;
  }
  const bool is_pub = std::strcmp(argv[1], "pub") == 0;
  const char *topic = argv[2];
  const int count = std::atoi(argv[3]);
  rcl_init_options_t io = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&io, rcl_get_default_allocator()));
  rcl_context_t context = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, nullptr, &io, &context));
  CHECK(rcl_init_options_fini(&io));
  rcl_node_t node = rcl_get_zero_initialized_node();
  rcl_node_options_t no = rcl_node_get_default_options();
  CHECK(rcl_node_init(&node, is_pub ? "cpp_talker" : "cpp_listener", "", &context, &no));
  const rosidl_message_type_support_t *ts =
    rosidl_typesupport_cpp::get_message_type_support_handle<std_msgs::msg::String>();
  rmw_qos_profile_t qos = rmw_qos_profile_default;
  qos.depth = static_cast<size_t>(count);
  int status = 0;
  if (is_pub) {
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    po.qos = qos;
    CHECK(rcl_publisher_init(&pub, &node, ts, topic, &po));
    size_t n = 0;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (n < 1 && Clock::now() < deadline) {
      CHECK(rcl_publisher_get_subscription_count(&pub, &n));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (n < 1) {
      std::fprintf(stderr, "no subscription matched\n");
      return 2;
    }
    std::printf("matched\n");
    std::fflush(stdout);
    for (int i = 0; i < count; i++) {
      std_msgs::msg::String m;
      m.data = "cpp " + std::to_string(i);
      CHECK(rcl_publish(&pub, &m, nullptr));
    }
    deadline = Clock::now() + std::chrono::seconds(30);
    while (n > 0 && Clock::now() < deadline) {
      CHECK(rcl_publisher_get_subscription_count(&pub, &n));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(rcl_publisher_fini(&pub, &node));
  } else {
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.qos = qos;
    CHECK(rcl_subscription_init(&sub, &node, ts, topic, &so));
    std::printf("ready\n");
    std::fflush(stdout);
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
    int got = 0;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (got < count && Clock::now() < deadline) {
      CHECK(rcl_wait_set_clear(&ws));
      CHECK(rcl_wait_set_add_subscription(&ws, &sub, nullptr));
      rcl_ret_t rc = rcl_wait(&ws, RCL_MS_TO_NS(500));
      if (rc == RCL_RET_TIMEOUT) continue;
      CHECK(rc);
      std_msgs::msg::String m;
      rc = rcl_take(&sub, &m, nullptr, nullptr);
      if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) continue;
      CHECK(rc);
      std::printf("msg: %s\n", m.data.c_str());
      got++;
    }
    std::fflush(stdout);
    CHECK(rcl_wait_set_fini(&ws));
    CHECK(rcl_subscription_fini(&sub, &node));
    status = got == count ? 0 : 2;
  }
  CHECK(rcl_node_fini(&node));
  CHECK(rcl_shutdown(&context));
  CHECK(rcl_context_fini(&context));
  return status;
}
