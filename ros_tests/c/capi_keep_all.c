/* RELIABLE + KEEP_ALL through libtracer's C API (issue 33's contract, issue 30): a slow native
 * subscription holds the publisher back instead of losing what it cannot hold, whoever
 * publishes (an rclpy node or this program), and a native publisher waits for a slow
 * subscription (rclpy's or this program's).
 *
 *   capi_keep_all sub <topic> <count> <delay_us>   take <count> std_msgs/String "<tag> <i>",
 *       sleeping <delay_us> after each; print "received N in_order B last L"
 *   capi_keep_all pub <topic> <count> <subs> <size>  wait for <subs> subscriptions, publish
 *       "<tag> <i>" back to back, the tag <size> bytes of 'c'; print "published N failed F"
 *       (a failed publish timed out)
 *
 * Messages of 200 KB make a stream of a few thousand outgrow the subscription ring's KEEP_ALL
 * byte budget (256 MiB) when nothing holds the publisher back.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer.h"
#include "../../examples/check.h"
#include "../../examples/cdr.h"

static tracer_qos_t keep_all(void) {
  tracer_qos_t q = {0};
  q.reliability = TRACER_RELIABILITY_RELIABLE;
  q.history = TRACER_HISTORY_KEEP_ALL;
  return q;
}

static int sub(tracer_context_t *ctx, const char *topic, int count, long delay_us) {
  tracer_qos_t q = keep_all();
  tracer_subscription_t *s = NULL;
  if (check(tracer_subscription_create(ctx, topic, STRING_TYPE, &q, &s), "subscription")) return 1;
  printf("ready\n");
  fflush(stdout);
  static uint8_t buf[1 << 20];
  int got = 0, in_order = 1;
  long last = -1;
  while (got < count) {
    tracer_result_t r = tracer_subscription_wait(s, 30000000000LL);
    if (r == TRACER_ERR_TIMEOUT) break;
    if (check(r, "wait")) return 1;
    size_t len = 0;
    tracer_sample_info_t info;
    while (got < count && (r = tracer_take(s, buf, sizeof buf, &len, &info)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, buf, len);
      const char *text = cdr_read_string(&rd);
      const char *sp = text ? strrchr(text, ' ') : NULL;
      long n = sp ? atol(sp + 1) : -2;
      if (n != last + 1) in_order = 0;
      last = n;
      got++;
      if (delay_us > 0) {
        struct timespec t = {delay_us / 1000000, (delay_us % 1000000) * 1000L};
        nanosleep(&t, NULL);
      }
    }
    if (r != TRACER_OK && r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
  }
  printf("received %d in_order %d last %ld\n", got, in_order, last);
  fflush(stdout);
  return check(tracer_subscription_destroy(s), "destroy subscription");
}

static int pub(tracer_context_t *ctx, const char *topic, int count, int subs, size_t size) {
  tracer_qos_t q = keep_all();
  tracer_publisher_t *p = NULL;
  if (check(tracer_publisher_create(ctx, topic, STRING_TYPE, STRING_HASH, &q, &p), "publisher"))
    return 1;
  if (check(tracer_publisher_wait_for_subscriptions(p, (size_t)subs, 30000000000LL), "match"))
    return 1;
  int failed = 0;
  char *text = malloc(size + 32);
  uint8_t *buf = malloc(size + 64);
  if (!text || !buf) return 1;
  memset(text, 'c', size);
  for (int i = 0; i < count; i++) {
    snprintf(text + size, 32, " %d", i);
    cdr_writer w;
    cdr_begin(&w, buf, size + 64);
    cdr_string(&w, text);
    tracer_result_t r = tracer_publish(p, buf, w.pos);
    if (r == TRACER_ERR_TIMEOUT) {
      fprintf(stderr, "publish %d: %s\n", i, tracer_last_error());
      failed++;
    } else if (check(r, "publish")) {
      return 1;
    }
  }
  free(text);
  free(buf);
  printf("published %d failed %d\n", count, failed);
  fflush(stdout);
  /* Until the subscriptions have taken everything (they leave when done). */
  size_t n = 0;
  for (int i = 0; i < 600; i++) {
    if (check(tracer_publisher_subscription_count(p, &n), "count")) return 1;
    if (n == 0) break;
    struct timespec t = {0, 50000000L};
    nanosleep(&t, NULL);
  }
  return check(tracer_publisher_destroy(p), "destroy publisher");
}

int main(int argc, char **argv) {
  if (argc < 5 || (strcmp(argv[1], "pub") == 0 && argc < 6)) {
    fprintf(stderr,
            "usage: %s sub <topic> <count> <delay_us> | pub <topic> <count> <subs> <size>\n",
            argv[0]);
    return 2;
  }
  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_keep_all", "/", -1, &ctx), "context")) return 1;
  int rc = strcmp(argv[1], "sub") == 0
               ? sub(ctx, argv[2], atoi(argv[3]), atol(argv[4]))
               : pub(ctx, argv[2], atoi(argv[3]), atoi(argv[4]), (size_t)atol(argv[5]));
  if (rc) return rc;
  return check(tracer_context_destroy(ctx), "destroy context");
}
