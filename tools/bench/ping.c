/* bench_ping: the active half of the rcl benchmark.
 *
 * For each case (payload size and iteration counts) it measures
 *   - latency: round-trip time of one std_msgs/msg/UInt8MultiArray sent on /bench/ping and
 *     echoed by bench_pong on /bench/pong, one in flight at a time, after warm-up iterations;
 *   - throughput: bursts of BURST_COUNT messages published back to back on /bench/burst with
 *     reliable keep_last(--burst-depth) QoS, then the same on /bench/burst_all with reliable
 *     keep_all QoS (only the keep_all bursts with --keep-all-only); bench_pong acknowledges each
 *     complete round with its counters and receive timestamps. Time runs from the first publish
 *     to the last receipt.
 * LAT_ITERS 0 skips the latency part of a case, and then the unmeasured warm-up round of bursts
 * too (a lossy link's throughput run, where one round may take a minute).
 * and writes the results as JSON. Every loss, reordering, corrupted echo, timeout or rcl error
 * makes it exit 1 with a message on stderr: the numbers are only worth anything if nothing was lost.
 * It blocks in rcl_wait on a wait set while waiting for messages; only matching is polled.
 *
 * usage: bench_ping --json PATH --burst-depth N
 *                   --case SIZE:LAT_ITERS:LAT_WARMUP:BURST_COUNT:BURST_ROUNDS [--case ...]
 *                   [--timeout SECONDS] [--match-timeout SECONDS] [--keep-all-only] */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/error_handling.h>

#include "bench_common.h"

#define MAX_CASES 32

typedef struct bench_case {
  uint64_t size, lat_iters, lat_warmup, burst_count, burst_rounds;
} bench_case;

typedef struct thr_result {
  uint64_t messages, bytes;
  double seconds, msgs_per_s, mb_per_s, pub_msgs_per_s;
  double *round_seconds; /* per measured round, first publish to last receipt */
  /* CPU per message of each process (every thread), over the measured rounds; threads at the end */
  double ping_cpu_us_per_msg, pong_cpu_us_per_msg;
  uint64_t ping_threads, pong_threads;
} thr_result;

typedef struct case_result {
  bench_case c;
  double lat_min_us, lat_p50_us, lat_p90_us, lat_p99_us, lat_max_us, lat_mean_us;
  thr_result keep_last, keep_all;
} case_result;

typedef struct ping_ctx {
  bench_rcl b;
  rcl_publisher_t ping_pub, burst_pub, burst_all_pub;
  rcl_subscription_t pong_sub;
  rcl_wait_set_t ws;
  std_msgs__msg__UInt8MultiArray rx;
  int64_t timeout_ns;
  uint64_t next_round;
} ping_ctx;

static void usage(void)
{
  bench_die("usage: bench_ping --json PATH --burst-depth N --case SIZE:LAT_ITERS:LAT_WARMUP:BURST_COUNT:BURST_ROUNDS "
            "[--case ...] [--timeout SECONDS] [--match-timeout SECONDS] [--keep-all-only]");
}

static uint64_t parse_u64(const char *s, const char *what)
{
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] == '\0' || s[0] == '-' || *end != '\0') bench_die("bad %s: '%s'", what, s);
  return (uint64_t)v;
}

static bench_case parse_case(const char *s)
{
  bench_case c;
  char tail;
  if (sscanf(s, "%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNu64 "%c", &c.size, &c.lat_iters,
             &c.lat_warmup, &c.burst_count, &c.burst_rounds, &tail) != 5)
    bench_die("bad --case '%s': want SIZE:LAT_ITERS:LAT_WARMUP:BURST_COUNT:BURST_ROUNDS", s);
  if (c.size < BENCH_MIN_PAYLOAD) bench_die("--case '%s': size must be at least %zu", s, BENCH_MIN_PAYLOAD);
  if (c.burst_count == 0 || c.burst_rounds == 0)
    bench_die("--case '%s': burst counts must be positive (LAT_ITERS 0 skips latency, warm-up may be 0)", s);
  return c;
}

/* Block until the pong subscription has data or the deadline passes. */
static bool wait_pong(ping_ctx *p, int64_t deadline)
{
  int64_t left = deadline - bench_now_ns();
  if (left <= 0) return false;
  rcl_ret_t rc = rcl_wait_set_clear(&p->ws);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_clear", rc);
  rc = rcl_wait_set_add_subscription(&p->ws, &p->pong_sub, NULL);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
  rc = rcl_wait(&p->ws, left);
  if (rc == RCL_RET_TIMEOUT) {
    rcl_reset_error();
    return false;
  }
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait", rc);
  return p->ws.subscriptions[0] != NULL;
}

/* Take from /bench/pong until a message of `kind` (and, for ECHO, sequence `seq`) arrives.
 * Stale hello answers are skipped; anything else unexpected is fatal. */
static bool recv_kind(ping_ctx *p, uint32_t kind, uint64_t seq, int64_t deadline, bench_hdr *out)
{
  for (;;) {
    while (bench_take(&p->pong_sub, &p->rx)) {
      bench_hdr h;
      if (!bench_get_hdr(&p->rx, &h))
        bench_die("malformed message on %s (size %zu)", BENCH_TOPIC_PONG, p->rx.data.size);
      if (h.kind == kind && (kind != BENCH_ECHO || h.seq == seq)) {
        *out = h;
        return true;
      }
      if (h.kind == BENCH_HELLO) continue;
      if (h.kind == BENCH_ECHO)
        bench_die("echo %" PRIu64 " arrived while waiting for echo %" PRIu64 " (lost or reordered)", h.seq, seq);
      bench_die("unexpected message kind %u on %s while waiting for kind %u", h.kind, BENCH_TOPIC_PONG, kind);
    }
    if (!wait_pong(p, deadline)) return false;
  }
}

static void wait_matched(ping_ctx *p, int64_t timeout_ns)
{
  int64_t deadline = bench_now_ns() + timeout_ns;
  for (;;) {
    size_t a = 0, b = 0, ba = 0, c = 0;
    rcl_ret_t rc = rcl_publisher_get_subscription_count(&p->ping_pub, &a);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_get_subscription_count", rc);
    rc = rcl_publisher_get_subscription_count(&p->burst_pub, &b);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_get_subscription_count", rc);
    rc = rcl_publisher_get_subscription_count(&p->burst_all_pub, &ba);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_get_subscription_count", rc);
    rc = rcl_subscription_get_publisher_count(&p->pong_sub, &c);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_get_publisher_count", rc);
    if (a > 0 && b > 0 && ba > 0 && c > 0) return;
    if (bench_now_ns() > deadline)
      bench_die("no match after %.1f s (%s: %zu subscriptions, %s: %zu, %s: %zu, %s: %zu publishers); "
                "is bench_pong running?",
                timeout_ns / 1e9, BENCH_TOPIC_PING, a, BENCH_TOPIC_BURST, b, BENCH_TOPIC_BURST_ALL, ba,
                BENCH_TOPIC_PONG, c);
    bench_sleep_ns(10 * 1000000LL); /* discovery has no wait-set event in rcl: poll the counts */
  }
}

/* Matching on our side does not prove pong's side has matched us; pong answers a hello only
 * once all its endpoints are matched. */
static void handshake(ping_ctx *p, int64_t timeout_ns)
{
  std_msgs__msg__UInt8MultiArray m;
  bench_msg_alloc(&m, BENCH_MIN_PAYLOAD);
  bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_HELLO};
  bench_put_hdr(&m, &h);
  int64_t deadline = bench_now_ns() + timeout_ns;
  for (;;) {
    bench_publish(&p->ping_pub, &m);
    int64_t retry = bench_now_ns() + 100 * 1000000LL;
    bench_hdr got;
    if (recv_kind(p, BENCH_HELLO, 0, retry < deadline ? retry : deadline, &got)) break;
    if (bench_now_ns() > deadline) bench_die("bench_pong did not answer a hello within %.1f s", timeout_ns / 1e9);
  }
  bench_msg_fini(&m);
}

static void run_latency(ping_ctx *p, case_result *r)
{
  const bench_case *c = &r->c;
  if (c->lat_iters == 0) return;
  std_msgs__msg__UInt8MultiArray m;
  bench_msg_alloc(&m, c->size);
  int64_t *rtt = malloc(c->lat_iters * sizeof *rtt);
  if (rtt == NULL) bench_die("out of memory");
  uint64_t total = c->lat_warmup + c->lat_iters;
  for (uint64_t i = 0; i < total; i++) {
    bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_ECHO, .seq = i};
    bench_put_hdr(&m, &h);
    bench_put_tail(&m, i);
    int64_t t0 = bench_now_ns();
    bench_publish(&p->ping_pub, &m);
    bench_hdr got;
    if (!recv_kind(p, BENCH_ECHO, i, t0 + p->timeout_ns, &got))
      bench_die("size %" PRIu64 ": no echo of message %" PRIu64 " within %.1f s (lost?)", c->size, i,
                p->timeout_ns / 1e9);
    int64_t t1 = bench_now_ns();
    if (p->rx.data.size != m.data.size || memcmp(p->rx.data.data, m.data.data, m.data.size) != 0)
      bench_die("size %" PRIu64 ": echo %" PRIu64 " differs from what was sent (%zu bytes back)", c->size, i,
                p->rx.data.size);
    if (i >= c->lat_warmup) rtt[i - c->lat_warmup] = t1 - t0;
  }
  bench_sort_i64(rtt, c->lat_iters);
  double sum = 0;
  for (uint64_t i = 0; i < c->lat_iters; i++) sum += (double)rtt[i];
  r->lat_min_us = rtt[0] / 1e3;
  r->lat_max_us = rtt[c->lat_iters - 1] / 1e3;
  r->lat_mean_us = sum / (double)c->lat_iters / 1e3;
  r->lat_p50_us = bench_pct_us(rtt, c->lat_iters, 0.50);
  r->lat_p90_us = bench_pct_us(rtt, c->lat_iters, 0.90);
  r->lat_p99_us = bench_pct_us(rtt, c->lat_iters, 0.99);
  free(rtt);
  bench_msg_fini(&m);
}

/* One burst round; returns the pong's acknowledgement. Dies on timeout, loss or reordering. */
static bench_ack run_round(ping_ctx *p, rcl_publisher_t *pub, std_msgs__msg__UInt8MultiArray *m,
                           const bench_case *c, int64_t *t_start, int64_t *t_pub_end)
{
  uint64_t round = p->next_round++;
  *t_start = bench_now_ns();
  for (uint64_t i = 0; i < c->burst_count; i++) {
    bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_BURST, .seq = i, .round = round, .count = c->burst_count};
    bench_put_hdr(m, &h);
    bench_put_tail(m, i);
    bench_publish(pub, m);
  }
  *t_pub_end = bench_now_ns();
  bench_hdr got;
  bench_ack a;
  int64_t deadline = *t_pub_end + p->timeout_ns;
  for (;;) {
    if (!recv_kind(p, BENCH_ACK, 0, deadline, &got)) {
      /* Ask pong how far it got, so the failure says how many messages went missing. */
      std_msgs__msg__UInt8MultiArray q;
      bench_msg_alloc(&q, BENCH_MIN_PAYLOAD);
      bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_STATUS};
      bench_put_hdr(&q, &h);
      bench_publish(&p->ping_pub, &q);
      bench_msg_fini(&q);
      if (recv_kind(p, BENCH_ACK, 0, bench_now_ns() + 5000000000LL, &got)) {
        memcpy(&a, p->rx.data.data + sizeof got, sizeof a);
        bench_die("size %" PRIu64 ": round %" PRIu64 " not acknowledged within %.1f s: pong has %" PRIu64
                  " of %" PRIu64 " messages of round %" PRIu64 " (%" PRIu64 " lost)",
                  c->size, round, p->timeout_ns / 1e9, a.received, c->burst_count, a.round,
                  a.round == round ? c->burst_count - a.received : c->burst_count);
      }
      bench_die("size %" PRIu64 ": round %" PRIu64 " not acknowledged within %.1f s and no status answer", c->size,
                round, p->timeout_ns / 1e9);
    }
    if (p->rx.data.size < BENCH_ACK_PAYLOAD) bench_die("short ack (%zu bytes)", p->rx.data.size);
    memcpy(&a, p->rx.data.data + sizeof got, sizeof a);
    if (a.round == round && a.complete) break;
    if (a.round != round) bench_die("ack for round %" PRIu64 " while waiting for round %" PRIu64, a.round, round);
  }
  if (a.received != c->burst_count || a.misordered != 0 || a.bad_payload != 0 || a.bytes != c->burst_count * c->size)
    bench_die("size %" PRIu64 ": round %" PRIu64 ": %" PRIu64 " of %" PRIu64 " received, %" PRIu64 " misordered, %" PRIu64
              " bad payloads, %" PRIu64 " bytes",
              c->size, round, a.received, c->burst_count, a.misordered, a.bad_payload, a.bytes);
  return a;
}

static void run_throughput(ping_ctx *p, rcl_publisher_t *pub, const bench_case *c, thr_result *r)
{
  std_msgs__msg__UInt8MultiArray m;
  bench_msg_alloc(&m, c->size);
  int64_t t0, tp;
  /* warm-up: allocations, fragment buffers, caches */
  if (c->lat_iters > 0) (void)run_round(p, pub, &m, c, &t0, &tp);
  int64_t total_ns = 0, pub_ns = 0, ping_cpu = 0, pong_cpu = 0;
  r->round_seconds = malloc(c->burst_rounds * sizeof *r->round_seconds);
  if (r->round_seconds == NULL) bench_die("out of memory");
  for (uint64_t k = 0; k < c->burst_rounds; k++) {
    int64_t cpu0 = bench_cpu_ns();
    bench_ack a = run_round(p, pub, &m, c, &t0, &tp);
    ping_cpu += bench_cpu_ns() - cpu0;
    pong_cpu += a.cpu_ns;
    r->pong_threads = a.threads;
    int64_t end = a.last_rx_ns > tp ? a.last_rx_ns : tp;
    total_ns += end - t0;
    r->round_seconds[k] = (end - t0) / 1e9;
    pub_ns += tp - t0;
  }
  r->messages = c->burst_count * c->burst_rounds;
  r->bytes = r->messages * c->size;
  r->seconds = total_ns / 1e9;
  r->msgs_per_s = r->messages / r->seconds;
  r->mb_per_s = r->bytes / r->seconds / 1e6;
  r->pub_msgs_per_s = pub_ns > 0 ? r->messages / (pub_ns / 1e9) : 0;
  r->ping_cpu_us_per_msg = ping_cpu / 1e3 / (double)r->messages;
  r->pong_cpu_us_per_msg = pong_cpu / 1e3 / (double)r->messages;
  r->ping_threads = bench_threads();
  bench_msg_fini(&m);
}

static void write_thr(FILE *f, const char *name, const bench_case *c, const thr_result *t)
{
  fprintf(f,
          "     \"%s\": {\"burst\": %" PRIu64 ", \"rounds\": %" PRIu64 ", \"messages\": %" PRIu64
          ", \"bytes\": %" PRIu64 ", \"lost\": 0, \"seconds\": %.6f, \"msgs_per_s\": %.1f, \"mb_per_s\": %.3f"
          ", \"publish_msgs_per_s\": %.1f, \"ping_cpu_us_per_msg\": %.3f, \"pong_cpu_us_per_msg\": %.3f"
          ", \"ping_threads\": %" PRIu64 ", \"pong_threads\": %" PRIu64 ", \"round_seconds\": [",
          name, c->burst_count, c->burst_rounds, t->messages, t->bytes, t->seconds, t->msgs_per_s, t->mb_per_s,
          t->pub_msgs_per_s, t->ping_cpu_us_per_msg, t->pong_cpu_us_per_msg, t->ping_threads, t->pong_threads);
  for (uint64_t k = 0; k < c->burst_rounds; k++) fprintf(f, "%s%.6f", k ? ", " : "", t->round_seconds[k]);
  fprintf(f, "]}");
}

static void write_json(const char *path, const char *rmw, uint64_t burst_depth, const case_result *res, size_t n)
{
  FILE *f = fopen(path, "w");
  if (f == NULL) bench_die("cannot write %s", path);
  fprintf(f, "{\n  \"rmw\": \"%s\",\n  \"message_type\": \"std_msgs/msg/UInt8MultiArray\",\n", rmw);
  fprintf(f, "  \"qos\": {\"reliability\": \"reliable\", \"durability\": \"volatile\", \"history\": \"keep_last\", "
             "\"control_depth\": %d, \"burst_depth\": %" PRIu64 ", \"throughput_keep_all\": \"keep_all\"},\n",
          BENCH_CONTROL_DEPTH, burst_depth);
  fprintf(f, "  \"cases\": [\n");
  for (size_t i = 0; i < n; i++) {
    const case_result *r = &res[i];
    fprintf(f,
            "    {\"size\": %" PRIu64 ",\n"
            "     \"latency_rtt_us\": {\"iterations\": %" PRIu64 ", \"warmup\": %" PRIu64
            ", \"min\": %.3f, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f, \"mean\": %.3f},\n",
            r->c.size, r->c.lat_iters, r->c.lat_warmup, r->lat_min_us, r->lat_p50_us, r->lat_p90_us, r->lat_p99_us,
            r->lat_max_us, r->lat_mean_us);
    if (r->keep_last.round_seconds != NULL)
      write_thr(f, "throughput", &r->c, &r->keep_last);
    else
      fprintf(f, "     \"throughput\": null");
    fprintf(f, ",\n");
    write_thr(f, "throughput_keep_all", &r->c, &r->keep_all);
    fprintf(f, "}%s\n", i + 1 < n ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  if (fclose(f) != 0) bench_die("cannot write %s", path);
}

int main(int argc, char **argv)
{
  bench_set_name("bench_ping");
  const char *json = NULL;
  uint64_t burst_depth = 0, timeout_s = 30, match_timeout_s = 30;
  bool keep_all_only = false;
  bench_case cases[MAX_CASES];
  size_t ncases = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--burst-depth") == 0 && i + 1 < argc)
      burst_depth = parse_u64(argv[++i], "--burst-depth");
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
      timeout_s = parse_u64(argv[++i], "--timeout");
    else if (strcmp(argv[i], "--match-timeout") == 0 && i + 1 < argc)
      match_timeout_s = parse_u64(argv[++i], "--match-timeout");
    else if (strcmp(argv[i], "--keep-all-only") == 0)
      keep_all_only = true;
    else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
      if (ncases == MAX_CASES) bench_die("at most %d cases", MAX_CASES);
      cases[ncases++] = parse_case(argv[++i]);
    } else
      usage();
  }
  if (json == NULL || burst_depth == 0 || ncases == 0) usage();
  for (size_t i = 0; i < ncases; i++)
    if (cases[i].burst_count > burst_depth)
      bench_die("case %zu: burst of %" PRIu64 " exceeds --burst-depth %" PRIu64
                " (keep_last would be allowed to drop)",
                i, cases[i].burst_count, burst_depth);

  ping_ctx p;
  memset(&p, 0, sizeof p);
  p.timeout_ns = (int64_t)timeout_s * 1000000000LL;
  p.next_round = 1;
  bench_rcl_init(&p.b, "bench_ping");
  /* From the node's rmw handle: whichever rmw the dynamic linker bound (LD_PRELOAD or not). */
  const rmw_node_t *rmw_node = rcl_node_get_rmw_handle(&p.b.node);
  if (rmw_node == NULL) bench_die("rcl_node_get_rmw_handle returned NULL");
  const char *rmw = rmw_node->implementation_identifier;
  bench_pub_init(&p.b, &p.ping_pub, BENCH_TOPIC_PING, BENCH_CONTROL_DEPTH);
  bench_pub_init(&p.b, &p.burst_pub, BENCH_TOPIC_BURST, burst_depth);
  bench_pub_init(&p.b, &p.burst_all_pub, BENCH_TOPIC_BURST_ALL, 0);
  bench_sub_init(&p.b, &p.pong_sub, BENCH_TOPIC_PONG, BENCH_CONTROL_DEPTH);
  p.ws = rcl_get_zero_initialized_wait_set();
  rcl_ret_t rc = rcl_wait_set_init(&p.ws, 1, 0, 0, 0, 0, 0, &p.b.context, rcutils_get_default_allocator());
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_init", rc);
  bench_msg_init_empty(&p.rx);

  int64_t t = bench_now_ns();
  wait_matched(&p, (int64_t)match_timeout_s * 1000000000LL);
  handshake(&p, (int64_t)match_timeout_s * 1000000000LL);
  fprintf(stderr, "bench_ping: %s: matched and handshaken in %.3f s\n", rmw, (bench_now_ns() - t) / 1e9);

  case_result res[MAX_CASES];
  memset(res, 0, sizeof res);
  for (size_t i = 0; i < ncases; i++) {
    res[i].c = cases[i];
    t = bench_now_ns();
    run_latency(&p, &res[i]);
    if (!keep_all_only) run_throughput(&p, &p.burst_pub, &res[i].c, &res[i].keep_last);
    run_throughput(&p, &p.burst_all_pub, &res[i].c, &res[i].keep_all);
    fprintf(stderr,
            "bench_ping: %s: %8" PRIu64 " B  rtt p50 %9.1f us  p99 %9.1f us  |  %10.0f msg/s %9.1f MB/s"
            "  |  keep_all %10.0f msg/s, cpu us/msg %.2f + %.2f, threads %" PRIu64 " + %" PRIu64 "  (%.1f s)\n",
            rmw, res[i].c.size, res[i].lat_p50_us, res[i].lat_p99_us, res[i].keep_last.msgs_per_s,
            res[i].keep_last.mb_per_s, res[i].keep_all.msgs_per_s, res[i].keep_all.ping_cpu_us_per_msg,
            res[i].keep_all.pong_cpu_us_per_msg, res[i].keep_all.ping_threads, res[i].keep_all.pong_threads,
            (bench_now_ns() - t) / 1e9);
  }

  std_msgs__msg__UInt8MultiArray q;
  bench_msg_alloc(&q, BENCH_MIN_PAYLOAD);
  bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_QUIT};
  bench_put_hdr(&q, &h);
  bench_publish(&p.ping_pub, &q);
  bench_hdr got;
  if (!recv_kind(&p, BENCH_QUIT, 0, bench_now_ns() + 5000000000LL, &got))
    fprintf(stderr, "bench_ping: warning: bench_pong did not confirm the quit request\n");
  bench_msg_fini(&q);

  write_json(json, rmw, burst_depth, res, ncases);
  /* The runner tells a failure while tearing down (results complete) from one while measuring. */
  fprintf(stderr, "bench_ping: results written to %s; tearing down\n", json);
  for (size_t i = 0; i < ncases; i++) {
    free(res[i].keep_last.round_seconds);
    free(res[i].keep_all.round_seconds);
  }

  bench_msg_fini(&p.rx);
  rc = rcl_wait_set_fini(&p.ws);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_fini", rc);
  rc = rcl_subscription_fini(&p.pong_sub, &p.b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  rc = rcl_publisher_fini(&p.burst_all_pub, &p.b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  rc = rcl_publisher_fini(&p.burst_pub, &p.b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  rc = rcl_publisher_fini(&p.ping_pub, &p.b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  bench_rcl_fini(&p.b);
  return 0;
}
