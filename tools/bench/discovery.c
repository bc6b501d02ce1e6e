/* bench_discovery: how long a new process's publisher takes to be matched with a listener that
 * is already running (tools/bench/discovery drives it).
 *
 *   bench_discovery listen TOPIC    a node with one subscription on TOPIC; prints "ready", then
 *                                   sleeps until SIGINT/SIGTERM and shuts down cleanly
 *   bench_discovery publish TOPIC   init and a node (not timed), then the time from before
 *                                   rcl_publisher_init to the first moment
 *                                   rcl_publisher_get_subscription_count is 1 or more, polled
 *                                   every 50 us; prints "matched_us <n>" (or fails after 10 s)
 *
 * Plain C on rcl, std_msgs/msg/String, default QoS (reliable, volatile, keep_last 10). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <std_msgs/msg/string.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    rcl_ret_t rc_ = (call);                                                         \
    if (rc_ != RCL_RET_OK) {                                                        \
      fprintf(stderr, "bench_discovery: %s failed (%d): %s\n", #call, (int)rc_,     \
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

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void sleep_us(long us)
{
  struct timespec d = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&d, NULL);
}

int main(int argc, char **argv)
{
  if (argc != 3 || (strcmp(argv[1], "listen") != 0 && strcmp(argv[1], "publish") != 0)) {
    fprintf(stderr, "usage: bench_discovery listen|publish TOPIC\n");
    return 2;
  }
  const char *topic = argv[2];
  bool listen = strcmp(argv[1], "listen") == 0;
  rcl_allocator_t alloc = rcl_get_default_allocator();
  rcl_init_options_t io = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&io, alloc));
  rcl_context_t ctx = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, NULL, &io, &ctx));
  rcl_node_t node = rcl_get_zero_initialized_node();
  rcl_node_options_t no = rcl_node_get_default_options();
  no.enable_rosout = false;
  CHECK(rcl_node_init(&node, listen ? "discovery_listener" : "discovery_publisher", "/", &ctx, &no));
  const rosidl_message_type_support_t *ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
  int status = 0;
  if (listen) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    CHECK(rcl_subscription_init(&sub, &node, ts, topic, &so));
    printf("ready\n");
    fflush(stdout);
    while (!stop) sleep_us(20000);
    CHECK(rcl_subscription_fini(&sub, &node));
  } else {
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    double t0 = now_us();
    CHECK(rcl_publisher_init(&pub, &node, ts, topic, &po));
    size_t n = 0;
    double t1 = t0;
    while (n == 0 && (t1 = now_us()) - t0 < 10e6) {
      CHECK(rcl_publisher_get_subscription_count(&pub, &n));
      if (n == 0) sleep_us(50);
    }
    if (n == 0) {
      fprintf(stderr, "bench_discovery: not matched within 10 s\n");
      status = 1;
    } else {
      printf("matched_us %.1f\n", t1 - t0);
    }
    CHECK(rcl_publisher_fini(&pub, &node));
  }
  CHECK(rcl_node_fini(&node));
  CHECK(rcl_shutdown(&ctx));
  CHECK(rcl_context_fini(&ctx));
  CHECK(rcl_init_options_fini(&io));
  return status;
}
