/* A reliable stream through libtracer's C API across a cut link (issue 30: the resend window
 * and the replay filter of docs/network.md section 6, as rmw_tracer's).
 *
 *   capi_stream sub <topic> <until> <depth|all> <timeout_s>
 *       take std_msgs/String "hello <i>" until <i> = <until> arrived (or the timeout); print
 *       "received <i> <i> ..." (in arrival order) and "lost <n>" (tracer_subscription_take_lost)
 *   capi_stream pub <topic> <count> <period_ms> <depth|all>
 *       wait for a subscription, print "matched", publish "hello 0".."hello <count-1>" every
 *       <period_ms>, print "published", then stay until the subscription has gone (60 s at most)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer.h"
#include "../../examples/check.h"
#include "../../examples/cdr.h"

static tracer_qos_t qos(const char *depth) {
  tracer_qos_t q = {0};
  q.reliability = TRACER_RELIABILITY_RELIABLE;
  if (strcmp(depth, "all") == 0) {
    q.history = TRACER_HISTORY_KEEP_ALL;
  } else {
    q.history = TRACER_HISTORY_KEEP_LAST;
    q.depth = (size_t)atol(depth);
  }
  return q;
}

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static int sub(tracer_context_t *ctx, const char *topic, long until, const char *depth,
               long timeout_s) {
  tracer_qos_t q = qos(depth);
  tracer_subscription_t *s = NULL;
  if (check(tracer_subscription_create(ctx, topic, STRING_TYPE, &q, &s), "subscription")) return 1;
  printf("ready\n");
  fflush(stdout);
  static uint8_t buf[4096];
  long *got = calloc((size_t)until + 2, sizeof *got);
  size_t n_got = 0;
  uint64_t lost = 0, l = 0;
  long last = -1;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (last != until) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > timeout_s) break;
    tracer_result_t r = tracer_subscription_wait(s, 1000000000LL);
    if (r == TRACER_ERR_TIMEOUT) continue;
    if (check(r, "wait")) return 1;
    size_t len = 0;
    while (last != until && (r = tracer_take(s, buf, sizeof buf, &len, NULL)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, buf, len);
      const char *text = cdr_read_string(&rd);
      const char *sp = text ? strrchr(text, ' ') : NULL;
      last = sp ? atol(sp + 1) : -2;
      if (n_got < (size_t)until + 2) got[n_got++] = last;
    }
    if (r != TRACER_OK && r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
    if (check(tracer_subscription_take_lost(s, &l), "lost")) return 1;
    lost += l;
  }
  if (check(tracer_subscription_take_lost(s, &l), "lost")) return 1;
  lost += l;
  printf("received");
  for (size_t i = 0; i < n_got; i++) printf(" %ld", got[i]);
  printf("\nlost %llu\n", (unsigned long long)lost);
  fflush(stdout);
  free(got);
  return check(tracer_subscription_destroy(s), "destroy subscription");
}

static int pub(tracer_context_t *ctx, const char *topic, int count, long period_ms,
               const char *depth) {
  tracer_qos_t q = qos(depth);
  tracer_publisher_t *p = NULL;
  if (check(tracer_publisher_create(ctx, topic, STRING_TYPE, STRING_HASH, &q, &p), "publisher"))
    return 1;
  if (check(tracer_publisher_wait_for_subscriptions(p, 1, 60000000000LL), "match")) return 1;
  printf("matched\n");
  fflush(stdout);
  uint8_t buf[256];
  for (int i = 0; i < count; i++) {
    if (check(tracer_publish(p, buf, cdr_hello(buf, sizeof buf, i)), "publish")) return 1;
    nap_ms(period_ms);
  }
  printf("published\n");
  fflush(stdout);
  size_t n = 1;
  for (int i = 0; i < 1200 && n > 0; i++) {
    if (check(tracer_publisher_subscription_count(p, &n), "count")) return 1;
    nap_ms(50);
  }
  return check(tracer_publisher_destroy(p), "destroy publisher");
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr,
            "usage: %s sub <topic> <until> <depth|all> <timeout_s> | "
            "pub <topic> <count> <period_ms> <depth|all>\n",
            argv[0]);
    return 2;
  }
  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_stream", "/", -1, &ctx), "context")) return 1;
  int rc = strcmp(argv[1], "sub") == 0
               ? sub(ctx, argv[2], atol(argv[3]), argv[4], atol(argv[5]))
               : pub(ctx, argv[2], atoi(argv[3]), atol(argv[4]), argv[5]);
  if (rc) return rc;
  return check(tracer_context_destroy(ctx), "destroy context");
}
