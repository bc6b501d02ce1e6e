/* A small rcl program for the pub/sub tests (test_pubsub.py): std_msgs/String over rcl, with
 * nothing but librcl and the C type support, run under rmw_tracer by LD_PRELOAD.
 *
 *   pubsub_rcl pub <topic> <count>    wait until a subscription matches, publish "c <i>" for
 *                                     i < count, stay until no subscription is left
 *   pubsub_rcl sub <topic> <count>    print "ready", then "msg: <data>" per message until
 *                                     count arrived
 *   pubsub_rcl stream <topic> <secs> [<stop-file>]
 *                                     publish "c <i>" every millisecond for secs seconds, or
 *                                     until stop-file exists, whoever listens (subscribers
 *                                     come and go), print "published <n>"
 *   pubsub_rcl intra <topic> <count>  publisher and subscription in one node: checks the message
 *                                     info of each take (gid, sequence numbers, timestamps,
 *                                     from_intra_process) and prints "intra ok <count>"
 *
 * Reliable, keep-last depth = count (so nothing is lost to the ring), volatile.
 * Exit status: 0 on success, 1 on any rcl error (printed), 2 on a timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>

#include "rcl_check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static rcl_context_t context;
static rcl_node_t node;

static void init(const char *name) {
  node_up(&context, &node, name);
}

static void fini(void) { node_down(&context, &node); }

static const rosidl_message_type_support_t *string_ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
}

static void make_publisher(rcl_publisher_t *pub, const char *topic, size_t depth) {
  *pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = qos(depth);
  CHECK(rcl_publisher_init(pub, &node, string_ts(), topic, &po));
}

static void make_subscription(rcl_subscription_t *sub, const char *topic, size_t depth) {
  *sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  so.qos = qos(depth);
  CHECK(rcl_subscription_init(sub, &node, string_ts(), topic, &so));
}

static void publish(rcl_publisher_t *pub, int i) {
  std_msgs__msg__String msg;
  std_msgs__msg__String__init(&msg);
  char text[64];
  snprintf(text, sizeof text, "c %d", i);
  rosidl_runtime_c__String__assign(&msg.data, text);
  CHECK(rcl_publish(pub, &msg, NULL));
  std_msgs__msg__String__fini(&msg);
}

/* Wait up to `timeout` seconds for the subscription to have a message; 1 if it has. */
static int wait_readable(rcl_subscription_t *sub, double timeout) {
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
  CHECK(rcl_wait_set_clear(&ws));
  CHECK(rcl_wait_set_add_subscription(&ws, sub, NULL));
  rcl_ret_t rc = rcl_wait(&ws, RCL_S_TO_NS(1) * timeout);
  int ready = rc == RCL_RET_OK && ws.subscriptions[0] != NULL;
  if (rc != RCL_RET_OK && rc != RCL_RET_TIMEOUT) {
    fprintf(stderr, "rcl_wait failed (%d): %s\n", (int)rc, rcl_get_error_string().str);
    exit(1);
  }
  CHECK(rcl_wait_set_fini(&ws));
  return ready;
}

static int run_pub(const char *topic, int count) {
  init("c_talker");
  rcl_publisher_t pub;
  make_publisher(&pub, topic, (size_t)count);
  size_t n = 0;
  double deadline = now_s() + 30;
  while (n < 1 && now_s() < deadline) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &n));
    if (n < 1) {
      struct timespec d = {0, 10 * 1000 * 1000};
      nanosleep(&d, NULL);
    }
  }
  if (n < 1) {
    fprintf(stderr, "no subscription matched\n");
    return 2;
  }
  printf("matched\n");
  fflush(stdout);
  for (int i = 0; i < count; i++) publish(&pub, i);
  printf("published\n");
  fflush(stdout);
  deadline = now_s() + 30;
  while (n > 0 && now_s() < deadline) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &n));
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  CHECK(rcl_publisher_fini(&pub, &node));
  fini();
  return 0;
}

static int run_stream(const char *topic, int seconds, const char *stop) {
  init("c_streamer");
  rcl_publisher_t pub;
  make_publisher(&pub, topic, 10);
  printf("streaming\n");
  fflush(stdout);
  double end = now_s() + seconds;
  int i = 0;
  while (now_s() < end) {
    /* The test says when it has seen enough; the time is only a bound. */
    if (stop && i % 100 == 0 && access(stop, F_OK) == 0) break;
    publish(&pub, i++);
    struct timespec d = {0, 1000 * 1000};
    nanosleep(&d, NULL);
  }
  printf("published %d\n", i);
  fflush(stdout);
  CHECK(rcl_publisher_fini(&pub, &node));
  fini();
  return 0;
}

static int run_sub(const char *topic, int count) {
  init("c_listener");
  rcl_subscription_t sub;
  make_subscription(&sub, topic, (size_t)count);
  printf("ready\n");
  fflush(stdout);
  int got = 0;
  double deadline = now_s() + 30;
  std_msgs__msg__String msg;
  std_msgs__msg__String__init(&msg);
  while (got < count && now_s() < deadline) {
    if (!wait_readable(&sub, 1.0)) continue;
    rcl_ret_t rc = rcl_take(&sub, &msg, NULL, NULL);
    if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) continue;
    CHECK(rc);
    printf("msg: %s\n", msg.data.data);
    got++;
  }
  fflush(stdout);
  std_msgs__msg__String__fini(&msg);
  CHECK(rcl_subscription_fini(&sub, &node));
  fini();
  return got == count ? 0 : 2;
}

static int run_intra(const char *topic, int count) {
  init("c_intra");
  rcl_subscription_t sub;
  make_subscription(&sub, topic, (size_t)count);
  rcl_publisher_t pub;
  make_publisher(&pub, topic, (size_t)count);
  rmw_gid_t gid;
  CHECK(rmw_get_gid_for_publisher(rcl_publisher_get_rmw_handle(&pub), &gid));
  size_t matched = 0;
  CHECK(rcl_publisher_get_subscription_count(&pub, &matched));
  if (matched != 1) {
    fprintf(stderr, "publisher matched %zu subscriptions, expected 1\n", matched);
    return 1;
  }
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  int64_t before = (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec;
  for (int i = 0; i < count; i++) publish(&pub, i);
  std_msgs__msg__String msg;
  std_msgs__msg__String__init(&msg);
  int64_t last_source = 0;
  for (int i = 0; i < count; i++) {
    if (!wait_readable(&sub, 5.0)) {
      fprintf(stderr, "message %d did not arrive\n", i);
      return 2;
    }
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    CHECK(rcl_take(&sub, &msg, &info, NULL));
    char want[64];
    snprintf(want, sizeof want, "c %d", i);
    bool same_gid = false;
    CHECK(rmw_compare_gids_equal(&gid, &info.publisher_gid, &same_gid));
    const char *bad = NULL;
    if (strcmp(msg.data.data, want) != 0) bad = "data out of order";
    else if (!same_gid) bad = "publisher_gid is not the publisher's gid";
    else if (info.publication_sequence_number != (uint64_t)(i + 1)) bad = "publication sequence number";
    else if (!info.from_intra_process) bad = "from_intra_process is false";
    else if (info.source_timestamp < before || info.source_timestamp < last_source) bad = "source timestamp";
    else if (info.received_timestamp < info.source_timestamp) bad = "received before sent";
    if (bad) {
      fprintf(stderr, "take %d: %s (data '%s', seq %llu)\n", i, bad, msg.data.data,
              (unsigned long long)info.publication_sequence_number);
      return 1;
    }
    last_source = info.source_timestamp;
  }
  /* Nothing more: the ring is empty now, and a take says so without an error. */
  rcl_ret_t rc = rcl_take(&sub, &msg, NULL, NULL);
  if (rc != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    fprintf(stderr, "take on an empty subscription returned %d\n", (int)rc);
    return 1;
  }
  rcl_reset_error();
  printf("intra ok %d\n", count);
  std_msgs__msg__String__fini(&msg);
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_subscription_fini(&sub, &node));
  fini();
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && strcmp(argv[1], "stream") == 0)) {
    fprintf(stderr, "usage: %s pub|sub|stream|intra <topic> <count>\n", argv[0]);
    return 1;
  }
  int count = atoi(argv[3]);
  if (strcmp(argv[1], "pub") == 0) return run_pub(argv[2], count);
  if (strcmp(argv[1], "sub") == 0) return run_sub(argv[2], count);
  if (strcmp(argv[1], "intra") == 0) return run_intra(argv[2], count);
  if (strcmp(argv[1], "stream") == 0) return run_stream(argv[2], count, argc > 4 ? argv[4] : NULL);
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 1;
}
