/* bench_intra: the intra-process round trip. One process, one rcl context and node; thread B
 * waits on /bench/intra_ping, takes and publishes the same message on /bench/intra_pong; the main
 * thread publishes on /bench/intra_ping and waits on /bench/intra_pong. Each thread has its own
 * wait set and blocks in rcl_wait (no polling). Round trip = before rcl_publish to after rcl_take.
 *
 *   bench_intra --size N --iters K --json out.json
 *
 * Writes {"rmw":..,"size":..,"iterations":..,"rtt_us":{"p50":..,"p99":..,"min":..,"mean":..}}. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/rcl.h>
#include <rmw/rmw.h>

#include "bench_common.h"

static bench_rcl b;
static rcl_publisher_t pub_ping, pub_pong;
static rcl_subscription_t sub_ping, sub_pong;
static volatile int stop;

static void wait_one(rcl_wait_set_t *ws, rcl_subscription_t *sub) {
  for (;;) {
    rcl_ret_t rc = rcl_wait_set_clear(ws);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_clear", rc);
    rc = rcl_wait_set_add_subscription(ws, sub, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
    rc = rcl_wait(ws, RCL_S_TO_NS(1));
    if (rc == RCL_RET_OK && ws->subscriptions[0] != NULL) return;
    if (rc != RCL_RET_OK && rc != RCL_RET_TIMEOUT) bench_die_rcl("rcl_wait", rc);
    if (stop) return;
  }
}

static rcl_wait_set_t new_wait_set(void) {
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  rcl_ret_t rc = rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &b.context, rcl_get_default_allocator());
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_init", rc);
  return ws;
}

static void *echo(void *arg) {
  (void)arg;
  rcl_wait_set_t ws = new_wait_set();
  std_msgs__msg__UInt8MultiArray msg;
  bench_msg_init_empty(&msg);
  while (!stop) {
    wait_one(&ws, &sub_ping);
    while (bench_take(&sub_ping, &msg)) bench_publish(&pub_pong, &msg);
  }
  bench_msg_fini(&msg);
  if (rcl_wait_set_fini(&ws) != RCL_RET_OK) bench_die("rcl_wait_set_fini");
  return NULL;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, c = *(const double *)y;
  return (a > c) - (a < c);
}

int main(int argc, char **argv) {
  bench_set_name("intra");
  size_t size = 64;
  int iters = 10000;
  const char *json = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--size")) size = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
    else bench_die("unknown option %s", argv[i]);
  }
  if (size < BENCH_MIN_PAYLOAD || iters <= 0 || !json) bench_die("usage: bench_intra --size N --iters K --json F");
  bench_rcl_init(&b, "bench_intra");
  bench_pub_init(&b, &pub_ping, "/bench/intra_ping", BENCH_CONTROL_DEPTH);
  bench_pub_init(&b, &pub_pong, "/bench/intra_pong", BENCH_CONTROL_DEPTH);
  bench_sub_init(&b, &sub_ping, "/bench/intra_ping", BENCH_CONTROL_DEPTH);
  bench_sub_init(&b, &sub_pong, "/bench/intra_pong", BENCH_CONTROL_DEPTH);
  pthread_t t;
  if (pthread_create(&t, NULL, echo, NULL) != 0) bench_die("pthread_create");

  std_msgs__msg__UInt8MultiArray out, in;
  bench_msg_alloc(&out, size);
  bench_msg_init_empty(&in);
  rcl_wait_set_t ws = new_wait_set();
  int warm = iters / 10 + 10;
  double *rtt = malloc(sizeof(double) * (size_t)iters);
  if (!rtt) bench_die("malloc");
  for (int i = 0; i < warm + iters; i++) {
    bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_ECHO, .seq = (uint64_t)i};
    bench_put_hdr(&out, &h);
    int64_t t0 = bench_now_ns();
    bench_publish(&pub_ping, &out);
    bool got = false;
    while (!got) {
      wait_one(&ws, &sub_pong);
      got = bench_take(&sub_pong, &in);
    }
    int64_t t1 = bench_now_ns();
    bench_hdr back;
    if (!bench_get_hdr(&in, &back) || back.seq != (uint64_t)i || in.data.size != size)
      bench_die("echo %d came back wrong", i);
    if (i >= warm) rtt[i - warm] = (double)(t1 - t0) / 1e3;
  }
  stop = 1;
  pthread_join(t, NULL);
  double sum = 0;
  for (int i = 0; i < iters; i++) sum += rtt[i];
  qsort(rtt, (size_t)iters, sizeof *rtt, cmp);
  const char *rmw = rcl_node_get_rmw_handle(&b.node)->implementation_identifier;
  FILE *f = fopen(json, "w");
  if (!f) bench_die("cannot write %s", json);
  fprintf(f, "{\"rmw\":\"%s\",\"size\":%zu,\"iterations\":%d,\"rtt_us\":{\"p50\":%.2f,\"p99\":%.2f,\"min\":%.2f,\"mean\":%.2f}}\n",
          rmw, size, iters, rtt[iters / 2], rtt[(int)(iters * 0.99)], rtt[0], sum / iters);
  fclose(f);
  printf("bench_intra: %s: %zu B rtt p50 %.1f us p99 %.1f us\n", rmw, size,
         rtt[iters / 2], rtt[(int)(iters * 0.99)]);
  bench_msg_fini(&out);
  bench_msg_fini(&in);
  if (rcl_wait_set_fini(&ws) != RCL_RET_OK || rcl_subscription_fini(&sub_ping, &b.node) != RCL_RET_OK ||
      rcl_subscription_fini(&sub_pong, &b.node) != RCL_RET_OK || rcl_publisher_fini(&pub_ping, &b.node) != RCL_RET_OK ||
      rcl_publisher_fini(&pub_pong, &b.node) != RCL_RET_OK)
    bench_die("tearing down failed");
  bench_rcl_fini(&b);
  return 0;
}
