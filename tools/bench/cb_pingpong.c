/* bench_cb: a ping-pong on rcl whose two sides are woken either by the subscription's
 * on-new-message callback or by rcl_wait (tools/bench/callbacks, issue 26).
 *
 * Mode `cb`: rcl_subscription_set_on_new_message_callback on the one subscription; the callback
 * only adds to an eventfd (it runs on the rmw's thread, as the EventsExecutor's does: it must
 * not take), and the main thread, blocked in poll() on that eventfd, takes and answers. Mode
 * `wait`: the main thread blocks in rcl_wait on a wait set holding the subscription (the path
 * tools/bench/run measures). Either way one message is in flight; ping times from before
 * rcl_publish to after the rcl_take of the echo, and compares the echo byte for byte with what
 * it sent outside the timed interval. Topics, header and QoS are bench_common's (/bench/ping,
 * /bench/pong, reliable, volatile, keep_last 16).
 *
 * usage: bench_cb pong cb|wait [--idle-timeout SECONDS]
 *        bench_cb ping cb|wait --json PATH [--size BYTES] [--iters N] [--warmup N]
 *                              [--timeout SECONDS] [--match-timeout SECONDS]
 * Exit 1 on a lost, reordered or corrupted echo, a timeout or an rcl error. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rcl/error_handling.h>

#include "bench_common.h"

typedef struct side {
  bench_rcl b;
  rcl_publisher_t pub;
  rcl_subscription_t sub;
  bool cb;             /* woken by the callback (true) or by rcl_wait (false) */
  int efd;             /* cb: the callback's eventfd */
  rcl_wait_set_t ws;   /* wait: the wait set holding `sub` */
  std_msgs__msg__UInt8MultiArray rx;
} side;

static atomic_ulong callbacks; /* how often the rmw called us, for the JSON */

static void on_new_message(const void *user, size_t n)
{
  const side *s = user;
  uint64_t v = n ? n : 1;
  atomic_fetch_add(&callbacks, 1);
  /* An eventfd only adds up: a wake-up is never lost, several collapse into one. */
  if (write(s->efd, &v, sizeof v) != (ssize_t)sizeof v) abort();
}

static uint64_t parse_u64(const char *s, const char *what)
{
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] == '\0' || s[0] == '-' || *end != '\0') bench_die("bad %s: '%s'", what, s);
  return (uint64_t)v;
}

static void side_init(side *s, const char *name, const char *sub_topic, const char *pub_topic, bool cb)
{
  memset(s, 0, sizeof *s);
  s->cb = cb;
  bench_rcl_init(&s->b, name);
  bench_sub_init(&s->b, &s->sub, sub_topic, BENCH_CONTROL_DEPTH);
  bench_pub_init(&s->b, &s->pub, pub_topic, BENCH_CONTROL_DEPTH);
  bench_msg_init_empty(&s->rx);
  rcl_ret_t rc;
  if (cb) {
    s->efd = eventfd(0, EFD_CLOEXEC);
    if (s->efd < 0) bench_die("eventfd failed");
    rc = rcl_subscription_set_on_new_message_callback(&s->sub, on_new_message, s);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_set_on_new_message_callback", rc);
  } else {
    s->ws = rcl_get_zero_initialized_wait_set();
    rc = rcl_wait_set_init(&s->ws, 1, 0, 0, 0, 0, 0, &s->b.context, rcutils_get_default_allocator());
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_init", rc);
  }
}

static void side_fini(side *s)
{
  rcl_ret_t rc;
  if (s->cb) {
    /* Unset before the subscription goes, so that no late call reaches a closed eventfd. */
    rc = rcl_subscription_set_on_new_message_callback(&s->sub, NULL, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_set_on_new_message_callback(NULL)", rc);
    close(s->efd);
  } else {
    rc = rcl_wait_set_fini(&s->ws);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_fini", rc);
  }
  bench_msg_fini(&s->rx);
  rc = rcl_publisher_fini(&s->pub, &s->b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  rc = rcl_subscription_fini(&s->sub, &s->b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  bench_rcl_fini(&s->b);
}

/* Block until the subscription may have data or `deadline` passes (false then). A wake-up
 * with nothing to take is harmless: the caller takes until rcl says there is none. */
static bool side_wait(side *s, int64_t deadline)
{
  int64_t left = deadline - bench_now_ns();
  if (left <= 0) return false;
  if (s->cb) {
    struct pollfd p = {.fd = s->efd, .events = POLLIN};
    int ms = (int)((left + 999999) / 1000000);
    int n = poll(&p, 1, ms);
    if (n < 0) bench_die("poll failed");
    if (n == 0) return false;
    uint64_t v;
    if (read(s->efd, &v, sizeof v) != (ssize_t)sizeof v) bench_die("eventfd read failed");
    return true;
  }
  rcl_ret_t rc = rcl_wait_set_clear(&s->ws);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_clear", rc);
  rc = rcl_wait_set_add_subscription(&s->ws, &s->sub, NULL);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
  rc = rcl_wait(&s->ws, left);
  if (rc == RCL_RET_TIMEOUT) {
    rcl_reset_error();
    return false;
  }
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait", rc);
  return true;
}

/* Take the next message; waits for one until `deadline` (false if none came). */
static bool side_recv(side *s, int64_t deadline, bench_hdr *h)
{
  for (;;) {
    if (bench_take(&s->sub, &s->rx)) {
      if (!bench_get_hdr(&s->rx, h)) bench_die("malformed message (size %zu)", s->rx.data.size);
      return true;
    }
    if (!side_wait(s, deadline)) return false;
  }
}

static int run_pong(bool cb, uint64_t idle_timeout_s)
{
  side s;
  side_init(&s, "bench_cb_pong", BENCH_TOPIC_PING, BENCH_TOPIC_PONG, cb);
  for (;;) {
    bench_hdr h;
    if (!side_recv(&s, bench_now_ns() + (int64_t)idle_timeout_s * 1000000000LL, &h))
      bench_die("nothing received for %" PRIu64 " s, giving up", idle_timeout_s);
    if (h.kind == BENCH_ECHO) {
      bench_publish(&s.pub, &s.rx);
    } else if (h.kind == BENCH_HELLO) {
      /* Answered once our endpoints are matched, so ping knows both sides are. */
      if (bench_pub_matches(&s.pub) > 0 && bench_sub_matches(&s.sub) > 0) bench_publish(&s.pub, &s.rx);
    } else if (h.kind == BENCH_QUIT) {
      bench_publish(&s.pub, &s.rx); /* ping waits for it before it tears down */
      break;
    } else {
      bench_die("unknown message kind %u", h.kind);
    }
  }
  /* Give the QUIT echo a moment to leave before the publisher goes. */
  bench_sleep_ns(200 * 1000000LL);
  side_fini(&s);
  return 0;
}

/* Take until a message of `kind` (for ECHO: sequence `seq`); stale hellos are skipped. */
static bool recv_kind(side *s, uint32_t kind, uint64_t seq, int64_t deadline)
{
  bench_hdr h;
  while (side_recv(s, deadline, &h)) {
    if (h.kind == kind && (kind != BENCH_ECHO || h.seq == seq)) return true;
    if (h.kind == BENCH_HELLO) continue;
    if (h.kind == BENCH_ECHO)
      bench_die("echo %" PRIu64 " arrived while waiting for echo %" PRIu64 " (lost or reordered)", h.seq, seq);
    bench_die("unexpected message kind %u while waiting for kind %u", h.kind, kind);
  }
  return false;
}

static void send_kind(side *s, uint32_t kind)
{
  std_msgs__msg__UInt8MultiArray m;
  bench_msg_alloc(&m, BENCH_MIN_PAYLOAD);
  bench_hdr h = {.magic = BENCH_MAGIC, .kind = kind};
  bench_put_hdr(&m, &h);
  bench_publish(&s->pub, &m);
  bench_msg_fini(&m);
}

static int run_ping(bool cb, const char *json, uint64_t size, uint64_t iters, uint64_t warmup, uint64_t timeout_s,
                    uint64_t match_timeout_s)
{
  side s;
  side_init(&s, "bench_cb_ping", BENCH_TOPIC_PONG, BENCH_TOPIC_PING, cb);
  const rmw_node_t *rmw_node = rcl_node_get_rmw_handle(&s.b.node);
  if (rmw_node == NULL) bench_die("rcl_node_get_rmw_handle returned NULL");
  const char *rmw = rmw_node->implementation_identifier;
  int64_t timeout_ns = (int64_t)timeout_s * 1000000000LL;

  /* Matching has no wait-set event in rcl: poll the counts, then a hello until pong answers. */
  int64_t deadline = bench_now_ns() + (int64_t)match_timeout_s * 1000000000LL;
  while (bench_pub_matches(&s.pub) == 0 || bench_sub_matches(&s.sub) == 0) {
    if (bench_now_ns() > deadline) bench_die("no match within %" PRIu64 " s; is bench_cb pong running?", match_timeout_s);
    bench_sleep_ns(10 * 1000000LL);
  }
  for (;;) {
    send_kind(&s, BENCH_HELLO);
    int64_t retry = bench_now_ns() + 100 * 1000000LL;
    if (recv_kind(&s, BENCH_HELLO, 0, retry < deadline ? retry : deadline)) break;
    if (bench_now_ns() > deadline) bench_die("bench_cb pong did not answer a hello within %" PRIu64 " s", match_timeout_s);
  }

  std_msgs__msg__UInt8MultiArray m;
  bench_msg_alloc(&m, size);
  int64_t *rtt = malloc(iters * sizeof *rtt);
  if (rtt == NULL) bench_die("out of memory");
  unsigned long cb_before = atomic_load(&callbacks);
  for (uint64_t i = 0; i < warmup + iters; i++) {
    bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_ECHO, .seq = i};
    bench_put_hdr(&m, &h);
    bench_put_tail(&m, i);
    int64_t t0 = bench_now_ns();
    bench_publish(&s.pub, &m);
    if (!recv_kind(&s, BENCH_ECHO, i, t0 + timeout_ns))
      bench_die("no echo of message %" PRIu64 " within %" PRIu64 " s (lost?)", i, timeout_s);
    int64_t t1 = bench_now_ns();
    if (s.rx.data.size != m.data.size || memcmp(s.rx.data.data, m.data.data, size) != 0)
      bench_die("echo %" PRIu64 " differs from what was sent", i);
    if (i >= warmup) rtt[i - warmup] = t1 - t0;
  }
  unsigned long cb_calls = atomic_load(&callbacks) - cb_before;

  send_kind(&s, BENCH_QUIT);
  if (!recv_kind(&s, BENCH_QUIT, 0, bench_now_ns() + timeout_ns)) bench_die("bench_cb pong did not confirm QUIT");

  double mean = 0;
  for (uint64_t i = 0; i < iters; i++) mean += rtt[i] / 1e3;
  mean /= (double)iters;
  bench_sort_i64(rtt, iters);
  FILE *f = fopen(json, "w");
  if (f == NULL) bench_die("cannot write %s", json);
  fprintf(f,
          "{\"rmw\": \"%s\", \"mode\": \"%s\", \"size\": %" PRIu64 ", \"iters\": %" PRIu64 ", \"warmup\": %" PRIu64
          ", \"callbacks_on_ping\": %lu, \"rtt_us\": {\"min\": %.3f, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, "
          "\"max\": %.3f, \"mean\": %.3f}}\n",
          rmw, cb ? "cb" : "wait", size, iters, warmup, cb_calls, bench_pct_us(rtt, iters, 0), bench_pct_us(rtt, iters, 0.5),
          bench_pct_us(rtt, iters, 0.9), bench_pct_us(rtt, iters, 0.99), bench_pct_us(rtt, iters, 1.0), mean);
  fclose(f);
  fprintf(stderr, "bench_cb: %s %s %" PRIu64 " B: rtt p50 %.1f us p99 %.1f us\n", rmw, cb ? "cb" : "wait", size,
          bench_pct_us(rtt, iters, 0.5), bench_pct_us(rtt, iters, 0.99));
  free(rtt);
  bench_msg_fini(&m);
  side_fini(&s);
  return 0;
}

int main(int argc, char **argv)
{
  bench_set_name("bench_cb");
  if (argc < 3) bench_die("usage: bench_cb ping|pong cb|wait [options] (see cb_pingpong.c)");
  bool ping = strcmp(argv[1], "ping") == 0;
  if (!ping && strcmp(argv[1], "pong") != 0) bench_die("role must be ping or pong, not '%s'", argv[1]);
  bool cb = strcmp(argv[2], "cb") == 0;
  if (!cb && strcmp(argv[2], "wait") != 0) bench_die("mode must be cb or wait, not '%s'", argv[2]);
  const char *json = NULL;
  uint64_t size = 64, iters = 10000, warmup = 1000, timeout_s = 30, match_timeout_s = 30, idle_timeout_s = 120;
  for (int i = 3; i < argc; i++) {
    if (i + 1 >= argc) bench_die("option %s needs a value", argv[i]);
    const char *o = argv[i], *v = argv[++i];
    if (strcmp(o, "--json") == 0) json = v;
    else if (strcmp(o, "--size") == 0) size = parse_u64(v, o);
    else if (strcmp(o, "--iters") == 0) iters = parse_u64(v, o);
    else if (strcmp(o, "--warmup") == 0) warmup = parse_u64(v, o);
    else if (strcmp(o, "--timeout") == 0) timeout_s = parse_u64(v, o);
    else if (strcmp(o, "--match-timeout") == 0) match_timeout_s = parse_u64(v, o);
    else if (strcmp(o, "--idle-timeout") == 0) idle_timeout_s = parse_u64(v, o);
    else bench_die("unknown option %s", o);
  }
  if (!ping) return run_pong(cb, idle_timeout_s);
  if (json == NULL || iters == 0 || size < BENCH_MIN_PAYLOAD) bench_die("ping needs --json, --iters > 0, --size >= %zu", BENCH_MIN_PAYLOAD);
  return run_ping(cb, json, size, iters, warmup, timeout_s, match_timeout_s);
}
