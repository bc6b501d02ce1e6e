/* Loaned-message round trip on rcl (tools/bench/loans, docs/loans.md): `bench_loans pong` answers,
 * `bench_loans ping` drives, one message in flight, for a plain type:
 *   basic       test_msgs/msg/BasicTypes (48 B), which Fast DDS can loan too
 *   blob:<n>    rmw_tracer_loans/msg/Blob<n> (ros_tests/c/blob_type.h), a struct of 8 + n bytes:
 *               introspection type support only, so rmw_tracer only
 *
 * Each side borrows a loan, writes its sequence number (and, for a blob, its last byte), and
 * publishes it; the other side takes it loaned, checks those, returns it, and answers with a
 * loan of its own. The payload is never copied or filled by the program: what the round trip
 * measures is the middleware moving a sample of that size. Where an endpoint cannot loan
 * (can_loan_messages false) it publishes and takes copies instead, and says so.
 *
 *   bench_loans pong <type> <count>
 *   bench_loans ping <type> <iters> <warmup>
 * ping prints one JSON line: {"type", "size", "iters", "loaned_pub", "loaned_sub",
 * "p50_us", "p90_us", "p99_us", "min_us", "max_us", "mean_us"}.
 * Reliable, keep_last 1, volatile. Exit 1 on an error or a wrong echo, 2 on a timeout.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <test_msgs/msg/basic_types.h>

#include "blob_type.h"
#include "rcl_check.h"

/* is_blob, ts, msg_size and pick_type: blob_type.h. */

static void stamp(void *m, uint64_t seq) {
  if (is_blob) {
    memcpy(m, &seq, 8);
    ((uint8_t *)m)[msg_size - 1] = (uint8_t)seq;
  } else {
    ((test_msgs__msg__BasicTypes *)m)->uint64_value = seq;
  }
}

static int stamped(const void *m, uint64_t seq) {
  if (is_blob) {
    uint64_t s;
    memcpy(&s, m, 8);
    return s == seq && ((const uint8_t *)m)[msg_size - 1] == (uint8_t)seq;
  }
  return ((const test_msgs__msg__BasicTypes *)m)->uint64_value == seq;
}

static uint64_t seq_of(const void *m) {
  if (is_blob) {
    uint64_t s;
    memcpy(&s, m, 8);
    return s;
  }
  return ((const test_msgs__msg__BasicTypes *)m)->uint64_value;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static rcl_context_t context;
static rcl_node_t node;
static rcl_publisher_t pub;
static rcl_subscription_t sub;
static rcl_wait_set_t ws;
static void *copy_buf; /* for an endpoint that cannot loan */

static void setup(const char *name, const char *out_topic, const char *in_topic) {
  node_up(&context, &node, name);
  rmw_qos_profile_t q = rmw_qos_profile_default;
  q.depth = 1;
  q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = q;
  CHECK(rcl_publisher_init(&pub, &node, ts, out_topic, &po));
  sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  so.qos = q;
  CHECK(rcl_subscription_init(&sub, &node, ts, in_topic, &so));
  ws = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
  copy_buf = calloc(1, msg_size);
  if (!is_blob) test_msgs__msg__BasicTypes__init(copy_buf);
}

static void send_seq(uint64_t seq) {
  if (rcl_publisher_can_loan_messages(&pub)) {
    void *m = NULL;
    CHECK(rcl_borrow_loaned_message(&pub, ts, &m));
    stamp(m, seq);
    CHECK(rcl_publish_loaned_message(&pub, m, NULL));
  } else {
    stamp(copy_buf, seq);
    CHECK(rcl_publish(&pub, copy_buf, NULL));
  }
}

/* Wait up to `timeout` s for a message; its sequence number, or -1 on a timeout. */
static int64_t recv_seq(double timeout, int check_seq, uint64_t want) {
  CHECK(rcl_wait_set_clear(&ws));
  CHECK(rcl_wait_set_add_subscription(&ws, &sub, NULL));
  rcl_ret_t rc = rcl_wait(&ws, (int64_t)(timeout * 1e9));
  if (rc == RCL_RET_TIMEOUT) return -1;
  CHECK(rc);
  uint64_t seq;
  if (rcl_subscription_can_loan_messages(&sub)) {
    void *m = NULL;
    rc = rcl_take_loaned_message(&sub, &m, NULL, NULL);
    if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) return recv_seq(timeout, check_seq, want);
    CHECK(rc);
    seq = seq_of(m);
    int ok = !check_seq || stamped(m, want);
    CHECK(rcl_return_loaned_message_from_subscription(&sub, m));
    if (!ok) {
      fprintf(stderr, "echo %llu is not message %llu\n", (unsigned long long)seq, (unsigned long long)want);
      exit(1);
    }
  } else {
    rc = rcl_take(&sub, copy_buf, NULL, NULL);
    if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) return recv_seq(timeout, check_seq, want);
    CHECK(rc);
    seq = seq_of(copy_buf);
    if (check_seq && !stamped(copy_buf, want)) {
      fprintf(stderr, "echo %llu is not message %llu\n", (unsigned long long)seq, (unsigned long long)want);
      exit(1);
    }
  }
  return (int64_t)seq;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run_pong(int count) {
  setup("bench_loans_pong", "/bench/loans_pong", "/bench/loans_ping");
  printf("ready\n");
  fflush(stdout);
  double deadline = now_s() + 600;
  for (int i = 0; i < count && now_s() < deadline;) {
    int64_t seq = recv_seq(1.0, 0, 0);
    if (seq < 0) continue;
    send_seq((uint64_t)seq);
    if (seq >= 1) i++;
  }
  return 0;
}

static int run_ping(int iters, int warmup) {
  setup("bench_loans_ping", "/bench/loans_ping", "/bench/loans_pong");
  /* Handshake: message 0 until one comes back (both directions matched). */
  double deadline = now_s() + 30;
  int64_t got = -1;
  while (got != 0 && now_s() < deadline) {
    send_seq(0);
    got = recv_seq(0.1, 0, 0);
  }
  if (got != 0) {
    fprintf(stderr, "no echo within 30 s\n");
    return 2;
  }
  while (recv_seq(0.2, 0, 0) >= 0) {
  }
  double *rtt = calloc((size_t)iters, sizeof *rtt);
  for (int i = 0; i < warmup + iters; i++) {
    uint64_t seq = (uint64_t)i + 1;
    double t0 = now_s();
    send_seq(seq);
    if (recv_seq(10.0, 1, seq) != (int64_t)seq) {
      fprintf(stderr, "echo %llu lost\n", (unsigned long long)seq);
      return 2;
    }
    double t1 = now_s();
    if (i >= warmup) rtt[i - warmup] = (t1 - t0) * 1e6;
  }
  qsort(rtt, (size_t)iters, sizeof *rtt, cmp_double);
  double sum = 0;
  for (int i = 0; i < iters; i++) sum += rtt[i];
#define PCT(p) rtt[(int)((p) / 100.0 * (iters - 1) + 0.5)]
  printf("{\"type\": \"%s\", \"size\": %zu, \"iters\": %d, \"loaned_pub\": %s, \"loaned_sub\": %s, "
         "\"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, \"min_us\": %.2f, \"max_us\": %.2f, "
         "\"mean_us\": %.2f}\n",
         is_blob ? "blob" : "basic", msg_size, iters, rcl_publisher_can_loan_messages(&pub) ? "true" : "false",
         rcl_subscription_can_loan_messages(&sub) ? "true" : "false", PCT(50), PCT(90), PCT(99), rtt[0],
         rtt[iters - 1], sum / iters);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "pong") == 0) {
    pick_type(argv[2]);
    return run_pong(atoi(argv[3]));
  }
  if (argc >= 5 && strcmp(argv[1], "ping") == 0) {
    pick_type(argv[2]);
    return run_ping(atoi(argv[3]), atoi(argv[4]));
  }
  fprintf(stderr, "usage: %s pong <type> <count> | ping <type> <iters> <warmup>\n", argv[0]);
  return 1;
}
