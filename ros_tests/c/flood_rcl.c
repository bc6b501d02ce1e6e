/* The RELIABLE + KEEP_ALL flood of issue 33 (test_keep_all_flood.py): an rcl publisher writes
 * std_msgs/UInt8MultiArray messages of one size as fast as rcl_publish returns, each carrying
 * its number in its first 8 bytes (little endian) and a byte pattern after, and rcl
 * subscriptions check that every message arrives, in order, whole (its last and middle byte;
 * every byte of a message of 64 MiB or more, which travels in parts).
 *
 *   flood_rcl pub <topic> <size> <count> <subs>
 *       wait until <subs> subscriptions match, publish messages 0 .. count-1; a publish that
 *       fails (the bounded wait for a subscription's credit, docs/rmw-mapping.md "Flow
 *       control") is counted and retried with the same message. Print "published <count>
 *       failed <f> seconds <s>", then stay until no subscription is left (60 s at most).
 *   flood_rcl sub <topic> <count> <delay_us>
 *       print "ready", take until <count> messages came (or 120 s passed), sleeping <delay_us>
 *       after each (a slow subscriber), and print "received <n> in_order <0|1> whole <0|1>
 *       lost <l>" (lost: the subscription's message-lost event total).
 *
 * Exit status: 0 when the run completed, 1 on an rcl error, 2 on a timeout.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/event.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <std_msgs/msg/u_int8_multi_array.h>

#include "rcl_check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
  struct timespec d = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&d, NULL);
}

static rcl_context_t context;
static rcl_node_t node;

static const rosidl_message_type_support_t *ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray);
}

static rmw_qos_profile_t keep_all(void) {
  rmw_qos_profile_t q = qos(1);
  q.history = RMW_QOS_POLICY_HISTORY_KEEP_ALL;
  return q;
}

/* The wire's one frame (docs/wire.md, MAX_FRAME): a message from there on goes in parts. */
#define PARTS_FROM ((size_t)64 << 20)

/* Byte k of message i: the number in bytes 0..7, then a pattern that moves with i. */
static uint8_t pattern(uint64_t i, size_t k) { return (uint8_t)((i * 7 + k) % 251); }

static void fill(std_msgs__msg__UInt8MultiArray *m, uint64_t i) {
  uint8_t *d = m->data.data;
  size_t n = m->data.size;
  for (size_t k = 0; k < n; k++) d[k] = pattern(i, k);
  for (size_t k = 0; k < 8 && k < n; k++) d[k] = (uint8_t)(i >> (8 * k));
}

static int run_pub(const char *topic, size_t size, uint64_t count, size_t subs) {
  node_up(&context, &node, "flood_pub");
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = keep_all();
  CHECK(rcl_publisher_init(&pub, &node, ts(), topic, &po));
  size_t n = 0;
  double deadline = now_s() + 30;
  while (n < subs && now_s() < deadline) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &n));
    if (n < subs) sleep_us(10000);
  }
  if (n < subs) {
    fprintf(stderr, "%zu of %zu subscriptions matched\n", n, subs);
    return 2;
  }
  printf("matched %zu\n", n);
  fflush(stdout);
  std_msgs__msg__UInt8MultiArray msg;
  std_msgs__msg__UInt8MultiArray__init(&msg);
  if (!rosidl_runtime_c__uint8__Sequence__init(&msg.data, size)) return 1;
  uint64_t failed = 0;
  double t0 = now_s();
  for (uint64_t i = 0; i < count;) {
    fill(&msg, i);
    rcl_ret_t rc = rcl_publish(&pub, &msg, NULL);
    if (rc == RCL_RET_OK) {
      i++;
      continue;
    }
    /* The documented outcome of a subscription that holds everything: retry the same one. */
    if (failed++ == 0) printf("first failure at %" PRIu64 ": %s\n", i, rcl_get_error_string().str);
    rcl_reset_error();
    if (now_s() > t0 + 120) {
      fprintf(stderr, "still failing at %" PRIu64 " after 120 s\n", i);
      return 2;
    }
  }
  printf("published %" PRIu64 " failed %" PRIu64 " seconds %.3f\n", count, failed, now_s() - t0);
  fflush(stdout);
  deadline = now_s() + 60;
  while (n > 0 && now_s() < deadline) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &n));
    sleep_us(20000);
  }
  std_msgs__msg__UInt8MultiArray__fini(&msg);
  CHECK(rcl_publisher_fini(&pub, &node));
  node_down(&context, &node);
  return 0;
}

static int run_sub(const char *topic, uint64_t count, long delay_us) {
  node_up(&context, &node, "flood_sub");
  rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  so.qos = keep_all();
  CHECK(rcl_subscription_init(&sub, &node, ts(), topic, &so));
  rcl_event_t lost_ev = rcl_get_zero_initialized_event();
  CHECK(rcl_subscription_event_init(&lost_ev, &sub, RCL_SUBSCRIPTION_MESSAGE_LOST));
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
  printf("ready\n");
  fflush(stdout);
  std_msgs__msg__UInt8MultiArray msg;
  std_msgs__msg__UInt8MultiArray__init(&msg);
  uint64_t got = 0;
  int in_order = 1, whole = 1;
  size_t size = 0;
  double end = now_s() + 120;
  while (got < count && now_s() < end) {
    CHECK(rcl_wait_set_clear(&ws));
    CHECK(rcl_wait_set_add_subscription(&ws, &sub, NULL));
    rcl_ret_t rc = rcl_wait(&ws, RCL_MS_TO_NS(200));
    if (rc == RCL_RET_TIMEOUT) continue;
    CHECK(rc);
    for (;;) {
      rmw_message_info_t info = rmw_get_zero_initialized_message_info();
      rc = rcl_take(&sub, &msg, &info, NULL);
      if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) break;
      CHECK(rc);
      const uint8_t *d = msg.data.data;
      size_t n = msg.data.size;
      uint64_t seq = 0;
      for (size_t k = 0; k < 8 && k < n; k++) seq |= (uint64_t)d[k] << (8 * k);
      if (got == 0) size = n;
      if (seq != got) {
        if (in_order) fprintf(stderr, "message %" PRIu64 " came as number %" PRIu64 "\n", seq, got);
        in_order = 0;
      }
      if (n != size || (n > 8 && (d[n - 1] != pattern(seq, n - 1) || d[n / 2] != pattern(seq, n / 2)))) {
        whole = 0;
      }
      /* Past one 64 MiB frame a message travels in parts that are joined again: every byte. */
      if (whole && n >= PARTS_FROM) {
        for (size_t k = 8; k < n; k++) {
          if (d[k] != pattern(seq, k)) {
            fprintf(stderr, "message %" PRIu64 ": byte %zu differs\n", seq, k);
            whole = 0;
            break;
          }
        }
      }
      got++;
      if (delay_us > 0) sleep_us(delay_us);
      if (got >= count) break;
    }
  }
  rmw_message_lost_status_t lost;
  memset(&lost, 0, sizeof lost);
  CHECK(rcl_take_event(&lost_ev, &lost));
  printf("received %" PRIu64 " in_order %d whole %d lost %" PRIu64 "\n", got, in_order, whole,
         (uint64_t)lost.total_count);
  fflush(stdout);
  std_msgs__msg__UInt8MultiArray__fini(&msg);
  CHECK(rcl_wait_set_fini(&ws));
  CHECK(rcl_event_fini(&lost_ev));
  CHECK(rcl_subscription_fini(&sub, &node));
  node_down(&context, &node);
  return got == count ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc == 6 && strcmp(argv[1], "pub") == 0)
    return run_pub(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
                   strtoull(argv[5], NULL, 10));
  if (argc == 5 && strcmp(argv[1], "sub") == 0)
    return run_sub(argv[2], strtoull(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
  fprintf(stderr,
          "usage: flood_rcl pub <topic> <size> <count> <subs> | sub <topic> <count> <delay_us>\n");
  return 1;
}
