/* bench_scale: one process of the scale benchmark (tools/bench/scale drives N of them).
 *
 *   bench_scale INDEX N TOPICS
 *
 * A node `scale_<INDEX>` (bench_common's set-up: no rosout) with one publisher on
 * /scale/t<INDEX % TOPICS> and one subscription on /scale/t<(INDEX + 1) % TOPICS>
 * (std_msgs/msg/UInt8MultiArray, reliable, volatile, keep_last 10), so the N processes share
 * TOPICS topics, each with about N / TOPICS publishers and as many subscriptions. It polls every
 * 100 ms until its graph is complete: rcl_get_node_names lists all N nodes, the publisher is
 * matched with every subscription of its topic and the subscription with every publisher of its
 * topic. Then it prints "matched <CLOCK_MONOTONIC ns>" and sleeps, calling nothing, until
 * SIGINT/SIGTERM, when it shuts down cleanly. It publishes nothing: what is measured once all are
 * matched is what the middleware costs while idle. A process whose graph is not complete within
 * 600 s prints what it has and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/graph.h>
#include <rcutils/types/string_array.h>

#include "bench_common.h"

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

/* Processes j in 0..n-1 with j % topics == t. */
static size_t on_topic(long n, long topics, long t)
{
  size_t c = 0;
  for (long j = 0; j < n; j++) c += (j % topics == t);
  return c;
}

static size_t node_count(const rcl_node_t *node)
{
  rcutils_string_array_t names = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_t spaces = rcutils_get_zero_initialized_string_array();
  rcl_ret_t rc = rcl_get_node_names(node, rcl_get_default_allocator(), &names, &spaces);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_get_node_names", rc);
  size_t n = names.size;
  if (rcutils_string_array_fini(&names) != RCUTILS_RET_OK ||
      rcutils_string_array_fini(&spaces) != RCUTILS_RET_OK)
    bench_die("rcutils_string_array_fini failed");
  return n;
}

int main(int argc, char **argv)
{
  bench_set_name("scale");
  if (argc != 4) {
    fprintf(stderr, "usage: bench_scale INDEX N TOPICS\n");
    return 2;
  }
  long index = atol(argv[1]), n = atol(argv[2]), topics = atol(argv[3]);
  if (n < 1 || topics < 1 || index < 0 || index >= n) {
    fprintf(stderr, "bench_scale: want 0 <= INDEX < N and TOPICS >= 1\n");
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  long pub_topic = index % topics, sub_topic = (index + 1) % topics;
  /* Subscriptions on my publisher's topic: processes j with (j + 1) % topics == pub_topic. */
  size_t want_subs = on_topic(n, topics, (pub_topic + topics - 1) % topics);
  size_t want_pubs = on_topic(n, topics, sub_topic);

  char name[64], pub_name[64], sub_name[64];
  snprintf(name, sizeof name, "scale_%ld", index);
  snprintf(pub_name, sizeof pub_name, "/scale/t%ld", pub_topic);
  snprintf(sub_name, sizeof sub_name, "/scale/t%ld", sub_topic);
  bench_rcl b;
  bench_rcl_init(&b, name);
  rcl_publisher_t pub;
  bench_pub_init(&b, &pub, pub_name, 10);
  rcl_subscription_t sub;
  bench_sub_init(&b, &sub, sub_name, 10);

  int status = 0;
  int64_t start = bench_now_ns();
  size_t nodes = 0, subs = 0, pubs = 0;
  rcl_ret_t rc;
  while (!stop) {
    if ((rc = rcl_publisher_get_subscription_count(&pub, &subs)) != RCL_RET_OK)
      bench_die_rcl("rcl_publisher_get_subscription_count", rc);
    if ((rc = rcl_subscription_get_publisher_count(&sub, &pubs)) != RCL_RET_OK)
      bench_die_rcl("rcl_subscription_get_publisher_count", rc);
    nodes = node_count(&b.node);
    if (subs >= want_subs && pubs >= want_pubs && nodes >= (size_t)n) break;
    if (bench_now_ns() - start > 600LL * 1000000000LL) {
      fprintf(stderr, "bench_scale %ld: graph not complete after 600 s: nodes %zu/%ld, "
              "subscriptions %zu/%zu, publishers %zu/%zu\n",
              index, nodes, n, subs, want_subs, pubs, want_pubs);
      status = 1;
      break;
    }
    bench_sleep_ns(100 * 1000000LL);
  }
  if (status == 0 && !stop) {
    printf("matched %lld\n", (long long)bench_now_ns());
    fflush(stdout);
    while (!stop) bench_sleep_ns(1000 * 1000000LL);
  }
  if ((rc = rcl_subscription_fini(&sub, &b.node)) != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  if ((rc = rcl_publisher_fini(&pub, &b.node)) != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  bench_rcl_fini(&b);
  return status;
}
