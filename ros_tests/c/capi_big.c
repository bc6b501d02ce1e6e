/* Messages of any size through libtracer's C API (issue 33: "no message is too big", rclpy and
 * C). std_msgs/msg/UInt8MultiArray with no dimensions, whose data byte k is (seed + k) % 251
 * (test_big_message.py's pattern, so rclpy checks what C sends and the reverse).
 *
 *   capi_big pub <topic> <size>,<size>,...   wait for a subscription, publish one message of
 *       each size (seeds 1, 2, ...), print "published <size> seed=<seed>" each, then stay until
 *       the subscription has gone (150 s at most)
 *   capi_big sub <topic> <count> <timeout_s>  take <count> messages as views (no copy), check
 *       each byte, print "heard <size> seed=<seed> intact=<True|False>" each
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer.h"
#include "../../examples/check.h"
#include "../../examples/cdr.h"

#define U8_ARRAY_TYPE "std_msgs/msg/UInt8MultiArray"
/* Header (4), dim count (4), data_offset (4), data length (4). */
#define HEAD 16

static void fill(uint8_t *data, size_t n, int seed) {
  uint8_t one[251];
  for (int k = 0; k < 251; k++) one[k] = (uint8_t)((seed + k) % 251);
  for (size_t at = 0; at < n; at += 251) memcpy(data + at, one, n - at < 251 ? n - at : 251);
}

static int intact(const uint8_t *data, size_t n, int seed) {
  for (size_t k = 0; k < n; k++)
    if (data[k] != (uint8_t)((seed + k % 251) % 251)) return 0;
  return 1;
}

static int pub(tracer_context_t *ctx, const char *topic, char *sizes) {
  tracer_qos_t q = {0};
  q.depth = 2;
  tracer_publisher_t *p = NULL;
  if (check(tracer_publisher_create(ctx, topic, U8_ARRAY_TYPE, "", &q, &p), "publisher")) return 1;
  if (check(tracer_publisher_wait_for_subscriptions(p, 1, 60000000000LL), "match")) return 1;
  int seed = 0;
  for (char *s = strtok(sizes, ","); s; s = strtok(NULL, ",")) {
    size_t n = (size_t)atol(s);
    uint8_t *buf = malloc(HEAD + n);
    if (!buf) return 1;
    cdr_writer w;
    cdr_begin(&w, buf, HEAD + n);
    cdr_u32(&w, 0);
    cdr_u32(&w, 0);
    cdr_u32(&w, (uint32_t)n);
    fill(buf + w.pos, n, ++seed);
    if (check(tracer_publish(p, buf, w.pos + n), "publish")) return 1;
    free(buf);
    printf("published %zu seed=%d\n", n, seed);
    fflush(stdout);
  }
  size_t subs = 1;
  for (int i = 0; i < 3000 && subs > 0; i++) {
    if (check(tracer_publisher_subscription_count(p, &subs), "count")) return 1;
    struct timespec t = {0, 50000000L};
    nanosleep(&t, NULL);
  }
  return check(tracer_publisher_destroy(p), "destroy publisher");
}

static int sub(tracer_context_t *ctx, const char *topic, int count, long timeout_s) {
  tracer_qos_t q = {0};
  q.depth = 50;
  tracer_subscription_t *s = NULL;
  if (check(tracer_subscription_create(ctx, topic, U8_ARRAY_TYPE, &q, &s), "subscription"))
    return 1;
  printf("listening\n");
  fflush(stdout);
  for (int got = 0; got < count;) {
    tracer_result_t r = tracer_subscription_wait(s, timeout_s * 1000000000LL);
    if (r == TRACER_ERR_TIMEOUT) break;
    if (check(r, "wait")) return 1;
    tracer_view_t *view = NULL;
    const uint8_t *data = NULL;
    size_t len = 0;
    while (got < count && (r = tracer_view_take(s, &view, &data, &len, NULL)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, data, len);
      cdr_read_u32(&rd);
      cdr_read_u32(&rd);
      size_t n = cdr_read_u32(&rd);
      int ok = len == HEAD + n && n > 0;
      int seed = ok ? data[HEAD] : -1;
      ok = ok && intact(data + HEAD, n, seed);
      printf("heard %zu seed=%d intact=%s\n", n, seed, ok ? "True" : "False");
      fflush(stdout);
      if (check(tracer_view_return(view), "return")) return 1;
      got++;
    }
    if (r != TRACER_OK && r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
  }
  return check(tracer_subscription_destroy(s), "destroy subscription");
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "sub") == 0 && argc < 5)) {
    fprintf(stderr, "usage: %s pub <topic> <sizes> | sub <topic> <count> <timeout_s>\n", argv[0]);
    return 2;
  }
  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_big", "/", -1, &ctx), "context")) return 1;
  int rc = strcmp(argv[1], "pub") == 0 ? pub(ctx, argv[2], argv[3])
                                       : sub(ctx, argv[2], atoi(argv[3]), atol(argv[4]));
  if (rc) return rc;
  return check(tracer_context_destroy(ctx), "destroy context");
}
