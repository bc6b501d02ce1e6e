/* bench_scale: one process of the scale benchmark (tools/bench/scale drives N of them).
 *
 *   bench_scale INDEX N TOPICS
 *
 * A node `scale_<INDEX>` with one publisher on /scale/t<INDEX % TOPICS> and one subscription on
 * /scale/t<(INDEX + 1) % TOPICS> (std_msgs/msg/String, default QoS), so the N processes share
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
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rcutils/types/string_array.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <std_msgs/msg/string.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    rcl_ret_t rc_ = (call);                                                         \
    if (rc_ != RCL_RET_OK) {                                                        \
      fprintf(stderr, "bench_scale: %s failed (%d): %s\n", #call, (int)rc_,         \
              rcl_get_error_string().str);                                          \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

static long long now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&d, NULL);
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
  CHECK(rcl_get_node_names(node, rcl_get_default_allocator(), &names, &spaces));
  size_t n = names.size;
  if (rcutils_string_array_fini(&names) != RCUTILS_RET_OK ||
      rcutils_string_array_fini(&spaces) != RCUTILS_RET_OK) {
    fprintf(stderr, "bench_scale: rcutils_string_array_fini failed\n");
    exit(1);
  }
  return n;
}

int main(int argc, char **argv)
{
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

  rcl_allocator_t alloc = rcl_get_default_allocator();
  rcl_init_options_t io = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&io, alloc));
  rcl_context_t ctx = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, NULL, &io, &ctx));
  rcl_node_t node = rcl_get_zero_initialized_node();
  rcl_node_options_t no = rcl_node_get_default_options();
  no.enable_rosout = false;
  char name[64], pub_name[64], sub_name[64];
  snprintf(name, sizeof name, "scale_%ld", index);
  snprintf(pub_name, sizeof pub_name, "/scale/t%ld", pub_topic);
  snprintf(sub_name, sizeof sub_name, "/scale/t%ld", sub_topic);
  CHECK(rcl_node_init(&node, name, "/", &ctx, &no));
  const rosidl_message_type_support_t *ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  CHECK(rcl_publisher_init(&pub, &node, ts, pub_name, &po));
  rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  CHECK(rcl_subscription_init(&sub, &node, ts, sub_name, &so));

  int status = 0;
  long long start = now_ns();
  size_t nodes = 0, subs = 0, pubs = 0;
  while (!stop) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &subs));
    CHECK(rcl_subscription_get_publisher_count(&sub, &pubs));
    nodes = node_count(&node);
    if (subs >= want_subs && pubs >= want_pubs && nodes >= (size_t)n) break;
    if (now_ns() - start > 600LL * 1000000000LL) {
      fprintf(stderr, "bench_scale %ld: graph not complete after 600 s: nodes %zu/%ld, "
              "subscriptions %zu/%zu, publishers %zu/%zu\n",
              index, nodes, n, subs, want_subs, pubs, want_pubs);
      status = 1;
      break;
    }
    sleep_ms(100);
  }
  if (status == 0 && !stop) {
    printf("matched %lld\n", now_ns());
    fflush(stdout);
    while (!stop) sleep_ms(1000);
  }
  CHECK(rcl_subscription_fini(&sub, &node));
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_node_fini(&node));
  CHECK(rcl_shutdown(&ctx));
  CHECK(rcl_context_fini(&ctx));
  CHECK(rcl_init_options_fini(&io));
  return status;
}
