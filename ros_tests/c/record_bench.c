/* Publish latency with and without RMW_TRACER_RECORD (ros_tests/record_bench.py runs it).
 *
 *   record_bench <size> <iterations> <gap_us>
 *
 * One rcl publisher of std_msgs/UInt8MultiArray (<size> payload bytes) on /bench/record, no
 * subscription (so the time is the publisher's own: CDR, the vertex write, and the recorder's
 * enqueue when recording). Times every rcl_publish with CLOCK_MONOTONIC, sleeping <gap_us>
 * between calls, and prints one JSON line of the sorted-sample statistics in nanoseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <std_msgs/msg/u_int8_multi_array.h>

#include "rcl_check.h"

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: record_bench <size> <iterations> <gap_us>\n");
    return 2;
  }
  size_t size = strtoull(argv[1], NULL, 10);
  int iters = atoi(argv[2]);
  long gap_us = atol(argv[3]);
  if (iters <= 0) return 2;

  rcl_context_t context;
  rcl_node_t node;
  node_up(&context, &node, "record_bench");
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  CHECK(rcl_publisher_init(&pub, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray),
                           "/bench/record", &po));

  std_msgs__msg__UInt8MultiArray msg;
  std_msgs__msg__UInt8MultiArray__init(&msg);
  rosidl_runtime_c__uint8__Sequence__init(&msg.data, size);
  for (size_t i = 0; i < size; i++) msg.data.data[i] = (uint8_t)(i * 31 + 7);

  long long *t = calloc((size_t)iters, sizeof *t);
  struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
  for (int i = 0; i < iters; i++) {
    msg.data.data[0] = (uint8_t)i;
    long long a = now_ns();
    CHECK(rcl_publish(&pub, &msg, NULL));
    t[i] = now_ns() - a;
    if (gap_us > 0) nanosleep(&gap, NULL);
  }
  double sum = 0;
  for (int i = 0; i < iters; i++) sum += (double)t[i];
  qsort(t, (size_t)iters, sizeof *t, cmp);
  printf("{\"size\": %zu, \"n\": %d, \"min\": %lld, \"p50\": %lld, \"p90\": %lld, \"p99\": %lld, "
         "\"max\": %lld, \"mean\": %.0f}\n",
         size, iters, t[0], t[iters / 2], t[iters * 9 / 10], t[iters * 99 / 100], t[iters - 1],
         sum / iters);
  fflush(stdout);
  free(t);
  std_msgs__msg__UInt8MultiArray__fini(&msg);
  CHECK(rcl_publisher_fini(&pub, &node));
  node_down(&context, &node);
  return 0;
}
