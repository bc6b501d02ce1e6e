/* bench_capi: the ping-pong of tools/bench/ping.c and pong.c through libtracer's C API (no rcl,
 * no ROS library): round-trip latency and keep_all burst throughput, same message
 * (std_msgs/msg/UInt8MultiArray with an empty layout) and QoS (reliable, volatile).
 *
 *   bench_capi pong
 *   bench_capi ping SIZE LAT_ITERS WARMUP BURST ROUNDS
 *     prints one line: "size=N p50_us=.. p99_us=.. min_us=.. keep_all_mbps=.. keep_all_msgs=.."
 *
 * Messages of 64 KiB and more are written in borrowed shared memory and published without a
 * copy (pong copies the view it took into its loan, as rcl's pong copies into its message);
 * smaller ones go through tracer_publish (one copy into the buffer pool), and pong copies a
 * small burst message out with tracer_take (as rcl's take does). Every echo is compared
 * with what was sent, outside the timed interval; a lost or corrupted message fails the run. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <semaphore.h>
#include <time.h>

#include "tracer.h"

#define TYPE "std_msgs/msg/UInt8MultiArray"
#define HASH ""
#define HDR 16 /* encapsulation, empty dim sequence, data_offset, data length */
#define LOAN_FROM (64 * 1024)
enum { ECHO = 1, BURST = 2, ACK = 3, QUIT = 4 };

typedef struct { uint32_t kind; uint32_t pad; uint64_t seq; uint64_t count; int64_t t0, t1; } mark;

static void die(tracer_result_t r, const char *what) {
  fprintf(stderr, "bench_capi: %s: %s: %s\n", what, tracer_result_str(r), tracer_last_error());
  exit(1);
}
#define CK(call, what) do { tracer_result_t r_ = (call); if (r_ != TRACER_OK) die(r_, what); } while (0)

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The CDR head of a UInt8MultiArray of `n` data bytes. */
static void head(uint8_t *p, uint32_t n) {
  static const uint8_t h[12] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(p, h, 12);
  memcpy(p + 12, &n, 4); /* little endian host */
}

/* Publish a message of `len` bytes (head included) whose body `fill` writes. */
static void send_msg(tracer_publisher_t *pub, size_t len, const uint8_t *copy_from, const mark *m) {
  if (len >= LOAN_FROM) {
    tracer_loan_t *loan;
    uint8_t *mem;
    CK(tracer_loan_borrow(pub, len, &loan, &mem), "borrow");
    if (copy_from) memcpy(mem, copy_from, len);
    else { head(mem, (uint32_t)(len - HDR)); memcpy(mem + HDR, m, sizeof *m); }
    CK(tracer_loan_publish(loan, len), "publish loan");
  } else {
    static uint8_t buf[LOAN_FROM];
    if (copy_from) memcpy(buf, copy_from, len);
    else { head(buf, (uint32_t)(len - HDR)); memcpy(buf + HDR, m, sizeof *m); }
    CK(tracer_publish(pub, copy_from ? copy_from : buf, len), "publish");
  }
}

/* pong: both subscriptions' callbacks post one semaphore; the main thread drains both. */
static sem_t arrived;
static void on_arrival(void *user, tracer_subscription_t *sub) {
  (void)user;
  (void)sub;
  sem_post(&arrived);
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) return 64;
  int ping = strcmp(argv[1], "ping") == 0;
  tracer_context_t *ctx;
  CK(tracer_context_create(ping ? "bench_capi_ping" : "bench_capi_pong", "/", -1, &ctx), "context");
  tracer_qos_t ctl = {TRACER_RELIABILITY_RELIABLE, TRACER_DURABILITY_VOLATILE, TRACER_HISTORY_KEEP_LAST, 16};
  tracer_qos_t all = {TRACER_RELIABILITY_RELIABLE, TRACER_DURABILITY_VOLATILE, TRACER_HISTORY_KEEP_ALL, 0};
  tracer_publisher_t *out, *burst = NULL;
  tracer_subscription_t *in, *bursts = NULL;
  CK(tracer_publisher_create(ctx, ping ? "/bench/ping" : "/bench/pong", TYPE, HASH, &ctl, &out), "pub");
  CK(tracer_subscription_create(ctx, ping ? "/bench/pong" : "/bench/ping", TYPE, &ctl, &in), "sub");
  if (ping) CK(tracer_publisher_create(ctx, "/bench/burst_all", TYPE, HASH, &all, &burst), "burst pub");
  else CK(tracer_subscription_create(ctx, "/bench/burst_all", TYPE, &all, &bursts), "burst sub");

  if (!ping) {
    int use_wait = !(getenv("BENCH_CAPI_CALLBACK") && atoi(getenv("BENCH_CAPI_CALLBACK")));
    sem_init(&arrived, 0, 0);
    CK(tracer_subscription_set_callback(in, on_arrival, NULL), "callback");
    CK(tracer_subscription_set_callback(bursts, on_arrival, NULL), "callback");
    printf("ready\n");
    fflush(stdout);
    uint64_t got = 0, want = 0;
    int64_t t0 = 0;
    for (;;) {
      tracer_view_t *v;
      const uint8_t *d;
      size_t n;
      if (tracer_view_take(in, &v, &d, &n, NULL) == TRACER_OK) {
        mark m;
        memcpy(&m, d + HDR, sizeof m);
        if (m.kind == QUIT) return 0;
        if (m.kind == ECHO) send_msg(out, n, d, NULL);
        if (m.kind == BURST) { want = m.count; got = 0; }
        CK(tracer_view_return(v), "return");
        continue;
      }
      /* A burst message below LOAN_FROM is copied out (as rcl's take does); a larger one is
       * taken as a view, where it lies. */
      static uint8_t small[LOAN_FROM];
      tracer_result_t took = TRACER_ERR_EMPTY;
      if (bursts) {
        took = tracer_take(bursts, small, sizeof small, &n, NULL);
        if (took == TRACER_ERR_BUFFER_TOO_SMALL) {
          took = tracer_view_take(bursts, &v, &d, &n, NULL);
          if (took == TRACER_OK) CK(tracer_view_return(v), "return");
        }
      }
      if (took == TRACER_OK) {
        int64_t t = now_ns();
        if (got == 0) t0 = t;
        got++;
        if (want && got == want) {
          mark a = {ACK, 0, got, want, t0, t};
          send_msg(out, HDR + sizeof a, NULL, &a);
          want = 0;
        }
        continue;
      }
      /* Nothing queued: wait on the control subscription (the library's wait: a spin while
       * it pays, then a sleep), or during a burst on the burst subscription; at most 1 ms. BENCH_CAPI_CALLBACK=1:
       * a short spin on a semaphore both subscriptions' callbacks post, then a sleep on it. */
      if (use_wait) {
        /* During a burst the burst subscription, else the control one. */
        tracer_subscription_wait(want ? bursts : in, 1000000);
        continue;
      }
      int64_t until = now_ns() + 20000;
      int posted = 0;
      while (!(posted = sem_trywait(&arrived) == 0) && now_ns() < until) {
      }
      if (!posted) sem_wait(&arrived);
    }
  }

  size_t size = (size_t)atol(argv[2]);
  int iters = atoi(argv[3]), warm = atoi(argv[4]), burst_n = atoi(argv[5]), rounds = atoi(argv[6]);
  size_t len = size + HDR;
  if (size < sizeof(mark)) { fprintf(stderr, "size below %zu\n", sizeof(mark)); return 64; }
  CK(tracer_publisher_wait_for_subscriptions(out, 1, 30000000000LL), "match ping");
  CK(tracer_publisher_wait_for_subscriptions(burst, 1, 30000000000LL), "match burst");
  /* pong's publisher to us: wait until our subscription hears it (one echo answered). */
  uint8_t *sent = malloc(len);
  int64_t *rtt = calloc((size_t)iters, sizeof *rtt);
  for (int i = 0; i < warm + iters; i++) {
    mark m = {ECHO, 0, (uint64_t)i, 0, 0, 0};
    head(sent, (uint32_t)size);
    memset(sent + HDR, (int)(i & 0xff), size);
    memcpy(sent + HDR, &m, sizeof m);
    int64_t t0 = now_ns();
    send_msg(out, len, sent, NULL);
    tracer_view_t *v;
    const uint8_t *d;
    size_t n;
    for (;;) {
      tracer_result_t r = tracer_subscription_wait(in, i < 3 ? 200000000LL : 10000000000LL);
      if (r == TRACER_ERR_TIMEOUT && i < 3) { send_msg(out, len, sent, NULL); continue; } /* not wired yet */
      if (r != TRACER_OK) die(r, "echo wait");
      if (tracer_view_take(in, &v, &d, &n, NULL) == TRACER_OK) break;
    }
    int64_t t1 = now_ns();
    mark e;
    memcpy(&e, d + HDR, sizeof e);
    if (e.seq != (uint64_t)i) { CK(tracer_view_return(v), "return"); i--; continue; } /* a resend's echo */
    if (n != len || memcmp(d, sent, len) != 0) { fprintf(stderr, "echo %d corrupted\n", i); return 1; }
    CK(tracer_view_return(v), "return");
    if (i >= warm) rtt[i - warm] = t1 - t0;
  }
  qsort(rtt, (size_t)iters, sizeof *rtt, cmp64);
  double bytes = 0, secs = 0;
  for (int r = 0; r <= rounds; r++) {
    mark b = {BURST, 0, 0, (uint64_t)burst_n, 0, 0};
    send_msg(out, HDR + sizeof b, NULL, &b);
    /* pong has read the announcement before the burst: its control queue is served first. */
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    int64_t t0 = now_ns();
    for (int k = 0; k < burst_n; k++) {
      mark m = {0, 0, (uint64_t)k, 0, 0, 0};
      send_msg(burst, len, NULL, &m);
    }
    tracer_view_t *v;
    const uint8_t *d;
    size_t n;
    for (;;) {
      if (tracer_subscription_wait(in, 30000000000LL) != TRACER_OK) { fprintf(stderr, "no ack\n"); return 1; }
      if (tracer_view_take(in, &v, &d, &n, NULL) == TRACER_OK) break;
    }
    mark a;
    memcpy(&a, d + HDR, sizeof a);
    CK(tracer_view_return(v), "return");
    if (a.kind != ACK || a.seq != (uint64_t)burst_n) { fprintf(stderr, "lost: %llu of %d\n", (unsigned long long)a.seq, burst_n); return 1; }
    if (r > 0) { bytes += (double)len * burst_n; secs += (double)(a.t1 - t0) / 1e9; }
  }
  mark q = {QUIT, 0, 0, 0, 0, 0};
  send_msg(out, HDR + sizeof q, NULL, &q);
  printf("size=%zu p50_us=%.1f p99_us=%.1f min_us=%.1f keep_all_mbps=%.1f keep_all_msgs=%.0f\n", size,
         rtt[iters / 2] / 1e3, rtt[(iters * 99) / 100] / 1e3, rtt[0] / 1e3, bytes / secs / 1e6,
         (double)burst_n * rounds / secs);
  return 0;
}
