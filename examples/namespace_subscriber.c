/* Subscribe to a whole namespace subtree with libtracer's C API: every topic below it, of any
 * type, through one edge per publishing process; each sample names its topic. No rmw API can
 * say this (a ROS subscription is one topic).
 *
 *   namespace_subscriber [namespace [count [timeout_s]]]   (default /robot 10 30)
 *
 * Samples are announced by a callback (on the delivering thread) and taken by the main thread
 * after tracer_subscription_wait; std_msgs/String payloads are printed as text. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracer.h"
#include "check.h"
#include "cdr.h"

static atomic_int landed;

static void on_sample(void *user, tracer_subscription_t *sub) {
  (void)user;
  (void)sub;
  atomic_fetch_add(&landed, 1);
}

int main(int argc, char **argv) {
  const char *ns = argc > 1 ? argv[1] : "/robot";
  int count = argc > 2 ? atoi(argv[2]) : 10;
  long long timeout_ns = (argc > 3 ? atoll(argv[3]) : 30) * 1000000000LL;

  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_namespace_listener", "/", -1, &ctx), "context")) return 1;
  tracer_subscription_t *sub = NULL;
  if (check(tracer_subscription_create_namespace(ctx, ns, NULL, &sub), "subscription")) return 1;
  if (check(tracer_subscription_set_callback(sub, on_sample, NULL), "callback")) return 1;
  printf("ready\n");
  fflush(stdout);

  int got = 0;
  while (got < count) {
    tracer_result_t r = tracer_subscription_wait(sub, timeout_ns);
    if (r == TRACER_ERR_TIMEOUT) {
      fprintf(stderr, "timed out after %d messages\n", got);
      return 2;
    }
    if (check(r, "wait")) return 1;
    tracer_view_t *view = NULL;
    const uint8_t *data = NULL;
    size_t len = 0;
    tracer_sample_info_t info;
    while ((r = tracer_view_take(sub, &view, &data, &len, &info)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, data, len);
      const char *text = cdr_read_string(&rd);
      printf("msg: %s %s\n", info.topic, text ? text : "(not a string)");
      got++;
      if (check(tracer_view_return(view), "view return")) return 1;
    }
    if (r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
  }
  printf("callbacks: %d\n", atomic_load(&landed));
  fflush(stdout);
  if (check(tracer_subscription_destroy(sub), "destroy subscription")) return 1;
  return check(tracer_context_destroy(ctx), "destroy context");
}
