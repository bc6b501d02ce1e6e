/* bench_relay: what a relay between hosts costs, for tools/bench/relay (docs/network.md
 * section 1, "direct process-to-process links"). One process with two rcl contexts: `local`
 * (its domain holds this host's bench program only) and `net` (its domain reaches the relay on
 * the other host). Each forwarded topic has a thread that waits on a subscription of one
 * context and republishes every message, still serialized (rcl_take_serialized_message, then
 * rcl_publish_serialized_message: no deserialization), on the other context, with the QoS the
 * bench programs use. So bench_ping -> relay A -> relay B -> bench_pong is the path a host
 * gateway would give: two more process hops and a copy at each relay.
 *
 * usage: bench_relay --local-domain D --net-domain N --side a|b --burst-depth K
 *   side a (bench_ping's host): /bench/ping, /bench/burst, /bench/burst_all local -> net,
 *                               /bench/pong net -> local;
 *   side b (bench_pong's host): the other way round.
 * Prints "relaying" once every subscription and publisher exists; runs until SIGTERM/SIGINT,
 * then prints "forwarded <n>" per topic. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/serialized_message.h>

#include "bench_common.h"

static volatile sig_atomic_t stop;

static void ok(rcl_ret_t rc, const char *what)
{
  if (rc != RCL_RET_OK) bench_die_rcl(what, rc);
}

static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

typedef struct hop {
  const char *topic;
  size_t depth; /* 0: keep_all */
  bench_rcl *from, *to;
  rcl_subscription_t sub;
  rcl_publisher_t pub;
  unsigned long long forwarded;
} hop;

static void hop_init(hop *h)
{
  bench_sub_init(h->from, &h->sub, h->topic, h->depth);
  bench_pub_init(h->to, &h->pub, h->topic, h->depth);
}

static void *forward(void *arg)
{
  hop *h = arg;
  rcl_allocator_t alloc = rcutils_get_default_allocator();
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  rcl_ret_t rc = rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &h->from->context, alloc);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_init", rc);
  rcl_serialized_message_t msg = rmw_get_zero_initialized_serialized_message();
  if (rmw_serialized_message_init(&msg, 0, &alloc) != RMW_RET_OK) bench_die("serialized message init");
  while (!stop) {
    rc = rcl_wait_set_clear(&ws);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_clear", rc);
    rc = rcl_wait_set_add_subscription(&ws, &h->sub, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
    rc = rcl_wait(&ws, RCL_MS_TO_NS(100));
    if (rc == RCL_RET_TIMEOUT) continue;
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait", rc);
    for (;;) {
      rmw_message_info_t info = rmw_get_zero_initialized_message_info();
      rc = rcl_take_serialized_message(&h->sub, &msg, &info, NULL);
      if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) break;
      if (rc != RCL_RET_OK) bench_die_rcl("rcl_take_serialized_message", rc);
      rc = rcl_publish_serialized_message(&h->pub, &msg, NULL);
      if (rc != RCL_RET_OK) bench_die_rcl("rcl_publish_serialized_message", rc);
      h->forwarded++;
    }
  }
  if (rmw_serialized_message_fini(&msg) != RMW_RET_OK) bench_die("serialized message fini");
  ok(rcl_wait_set_fini(&ws), "rcl_wait_set_fini");
  return NULL;
}

int main(int argc, char **argv)
{
  bench_set_name("bench_relay");
  long local_domain = -1, net_domain = -1, burst_depth = 0;
  const char *which = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--local-domain") == 0) local_domain = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--net-domain") == 0) net_domain = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--side") == 0) which = argv[i + 1];
    else if (strcmp(argv[i], "--burst-depth") == 0) burst_depth = atol(argv[i + 1]);
    else bench_die("unknown argument %s", argv[i]);
  }
  if (local_domain < 0 || net_domain < 0 || local_domain == net_domain || burst_depth <= 0 ||
      which == NULL || (strcmp(which, "a") != 0 && strcmp(which, "b") != 0))
    bench_die("usage: bench_relay --local-domain D --net-domain N --side a|b --burst-depth K");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  bench_rcl local, net;
  bench_rcl_init_domain(&local, "bench_relay_local", local_domain);
  bench_rcl_init_domain(&net, "bench_relay_net", net_domain);
  bool a = strcmp(which, "a") == 0;
  bench_rcl *down_from = a ? &local : &net, *down_to = a ? &net : &local;
  hop hops[] = {
      {BENCH_TOPIC_PING, BENCH_CONTROL_DEPTH, down_from, down_to, {0}, {0}, 0},
      {BENCH_TOPIC_BURST, (size_t)burst_depth, down_from, down_to, {0}, {0}, 0},
      {BENCH_TOPIC_BURST_ALL, 0, down_from, down_to, {0}, {0}, 0},
      {BENCH_TOPIC_PONG, BENCH_CONTROL_DEPTH, down_to, down_from, {0}, {0}, 0},
  };
  enum { N = sizeof hops / sizeof hops[0] };
  pthread_t threads[N];
  for (size_t i = 0; i < N; i++) hop_init(&hops[i]);
  printf("relaying\n");
  fflush(stdout);
  for (size_t i = 0; i < N; i++)
    if (pthread_create(&threads[i], NULL, forward, &hops[i]) != 0) bench_die("pthread_create");
  for (size_t i = 0; i < N; i++) pthread_join(threads[i], NULL);
  for (size_t i = 0; i < N; i++) {
    printf("forwarded %llu on %s\n", hops[i].forwarded, hops[i].topic);
    ok(rcl_subscription_fini(&hops[i].sub, &hops[i].from->node), "rcl_subscription_fini");
    ok(rcl_publisher_fini(&hops[i].pub, &hops[i].to->node), "rcl_publisher_fini");
  }
  bench_rcl_fini(&local);
  bench_rcl_fini(&net);
  return 0;
}
