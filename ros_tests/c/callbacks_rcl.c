/* Callbacks instead of wait sets, as rclcpp's EventsExecutor uses them (test_callbacks.py,
 * issue 26): many subscriptions, each with an on-new-message callback and two event callbacks
 * (matched, message lost), in one node; how many threads the process has, and how long a
 * message takes from rcl_publish to its callback.
 *
 *   callbacks_rcl sub <n> <count> <burst>   n subscriptions /cb/t<i> (std_msgs/UInt8MultiArray,
 *       reliable; /cb/t0 keep_last(count), the others keep_last(1)); prints "ready threads=<t>",
 *       then waits until /cb/t0 was told of <count> messages, /cb/t1 of <burst> and every other
 *       topic of one (60 s at most), takes /cb/t0's messages and prints one JSON line:
 *       {"threads_idle", "threads_live", "told0", "told_burst", "topics_told", "matched_told",
 *        "lat_p50_us", "lat_p99_us", "lat_max_us"}
 *   callbacks_rcl pub <n> <count> <burst>   n publishers, waits until each has a subscription,
 *       publishes <count> 64-byte messages on /cb/t0 one per millisecond, each carrying its
 *       CLOCK_MONOTONIC send time, then <burst> back to back on /cb/t1 (into a full keep_last(1)
 *       ring: every arrival must still be told), then one on each other topic.
 *
 * A callback only counts and stamps (as the EventsExecutor's only queues): it never takes.
 * Exit status: 0 on success, 1 on an rcl error, 2 on a timeout.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/event.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <std_msgs/msg/u_int8_multi_array.h>

#include "rcl_check.h"

#define MAX_SUBS 1000
#define MAX_COUNT 100000
#define PAYLOAD 64

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  }
  if (f) fclose(f);
  return n;
}

static const rosidl_message_type_support_t *ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray);
}

static rcl_context_t context;
static rcl_node_t node;

/* What the callbacks of one subscription were told. */
typedef struct {
  atomic_long told;
  atomic_long matched;
  atomic_long lost;
} counts_t;

static counts_t counts[MAX_SUBS];
/* When /cb/t0's callback heard of its i-th message. */
static int64_t told_at[MAX_COUNT];

static void on_message(const void *user, size_t n) {
  counts_t *c = (counts_t *)user;
  long first = atomic_fetch_add(&c->told, (long)n);
  if (c == &counts[0]) {
    int64_t t = now_ns();
    for (long i = first; i < first + (long)n && i < MAX_COUNT; i++) told_at[i] = t;
  }
}

static void on_matched(const void *user, size_t n) {
  atomic_fetch_add(&((counts_t *)user)->matched, (long)n);
}

static void on_lost(const void *user, size_t n) {
  atomic_fetch_add(&((counts_t *)user)->lost, (long)n);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void topic(char *out, size_t len, int i) { snprintf(out, len, "/cb/t%d", i); }

static int run_sub(int n, int count, int burst) {
  static rcl_subscription_t subs[MAX_SUBS];
  static rcl_event_t matched[MAX_SUBS], lost[MAX_SUBS];
  int idle = threads();
  for (int i = 0; i < n; i++) {
    char t[32];
    topic(t, sizeof t, i);
    subs[i] = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t so = rcl_subscription_get_default_options();
    so.qos = qos(i == 0 ? (size_t)count : 1);
    CHECK(rcl_subscription_init(&subs[i], &node, ts(), t, &so));
    CHECK(rcl_subscription_set_on_new_message_callback(&subs[i], on_message, &counts[i]));
    matched[i] = rcl_get_zero_initialized_event();
    CHECK(rcl_subscription_event_init(&matched[i], &subs[i], RCL_SUBSCRIPTION_MATCHED));
    CHECK(rcl_event_set_callback(&matched[i], on_matched, &counts[i]));
    lost[i] = rcl_get_zero_initialized_event();
    CHECK(rcl_subscription_event_init(&lost[i], &subs[i], RCL_SUBSCRIPTION_MESSAGE_LOST));
    CHECK(rcl_event_set_callback(&lost[i], on_lost, &counts[i]));
  }
  printf("ready threads=%d\n", threads());
  fflush(stdout);
  int live = 0;
  int64_t deadline = now_ns() + 60 * 1000000000LL;
  for (;;) {
    int others = 0;
    for (int i = 2; i < n; i++) others += atomic_load(&counts[i].told) > 0;
    int t = threads();
    if (t > live) live = t;
    if (atomic_load(&counts[0].told) >= count && atomic_load(&counts[1].told) >= burst &&
        others == n - 2)
      break;
    if (now_ns() > deadline) {
      fprintf(stderr, "timeout: told0=%ld burst=%ld others=%d\n", atomic_load(&counts[0].told),
              atomic_load(&counts[1].told), others);
      return 2;
    }
    usleep(2000);
  }
  /* The send times, in order: /cb/t0 keeps every message (keep_last(count)). */
  int64_t *lat = calloc((size_t)count, sizeof *lat);
  int taken = 0;
  std_msgs__msg__UInt8MultiArray msg;
  std_msgs__msg__UInt8MultiArray__init(&msg);
  while (taken < count) {
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    rcl_ret_t rc = rcl_take(&subs[0], &msg, &info, NULL);
    if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) break;
    CHECK(rc);
    int64_t sent;
    memcpy(&sent, msg.data.data, sizeof sent);
    lat[taken] = told_at[taken] - sent;
    taken++;
  }
  std_msgs__msg__UInt8MultiArray__fini(&msg);
  qsort(lat, (size_t)taken, sizeof *lat, cmp_i64);
  long matched_told = 0;
  int topics = 0;
  for (int i = 0; i < n; i++) {
    matched_told += atomic_load(&counts[i].matched);
    topics += atomic_load(&counts[i].told) > 0;
  }
  printf("{\"threads_idle\": %d, \"threads_live\": %d, \"told0\": %ld, \"told_burst\": %ld, "
         "\"topics_told\": %d, \"matched_told\": %ld, \"taken0\": %d, \"lat_p50_us\": %.1f, "
         "\"lat_p99_us\": %.1f, \"lat_max_us\": %.1f}\n",
         idle, live, atomic_load(&counts[0].told), atomic_load(&counts[1].told), topics,
         matched_told, taken, taken ? lat[taken / 2] / 1e3 : -1.0,
         taken ? lat[(taken * 99) / 100] / 1e3 : -1.0, taken ? lat[taken - 1] / 1e3 : -1.0);
  fflush(stdout);
  free(lat);
  for (int i = 0; i < n; i++) {
    CHECK(rcl_event_fini(&matched[i]));
    CHECK(rcl_event_fini(&lost[i]));
    CHECK(rcl_subscription_fini(&subs[i], &node));
  }
  return 0;
}

static void publish(rcl_publisher_t *p, std_msgs__msg__UInt8MultiArray *msg) {
  int64_t t = now_ns();
  memcpy(msg->data.data, &t, sizeof t);
  CHECK(rcl_publish(p, msg, NULL));
}

static int run_pub(int n, int count, int burst) {
  static rcl_publisher_t pubs[MAX_SUBS];
  for (int i = 0; i < n; i++) {
    char t[32];
    topic(t, sizeof t, i);
    pubs[i] = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t po = rcl_publisher_get_default_options();
    po.qos = qos(i == 0 ? (size_t)count : (size_t)burst);
    CHECK(rcl_publisher_init(&pubs[i], &node, ts(), t, &po));
  }
  int64_t deadline = now_ns() + 60 * 1000000000LL;
  for (int i = 0; i < n; i++) {
    size_t subs = 0;
    while (subs == 0) {
      CHECK(rcl_publisher_get_subscription_count(&pubs[i], &subs));
      if (now_ns() > deadline) {
        fprintf(stderr, "timeout: /cb/t%d has no subscription\n", i);
        return 2;
      }
      if (subs == 0) usleep(1000);
    }
  }
  std_msgs__msg__UInt8MultiArray msg;
  std_msgs__msg__UInt8MultiArray__init(&msg);
  rosidl_runtime_c__uint8__Sequence__init(&msg.data, PAYLOAD);
  for (int i = 0; i < count; i++) {
    publish(&pubs[0], &msg);
    usleep(1000);
  }
  for (int i = 0; i < burst; i++) publish(&pubs[1], &msg);
  for (int i = 2; i < n; i++) publish(&pubs[i], &msg);
  printf("published\n");
  fflush(stdout);
  /* Stay until the subscriber is done with us (its node goes). */
  for (int k = 0; k < 60000; k++) {
    size_t subs = 0;
    CHECK(rcl_publisher_get_subscription_count(&pubs[0], &subs));
    if (subs == 0) break;
    usleep(1000);
  }
  std_msgs__msg__UInt8MultiArray__fini(&msg);
  for (int i = 0; i < n; i++) CHECK(rcl_publisher_fini(&pubs[i], &node));
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s sub|pub <n> <count> <burst>\n", argv[0]);
    return 1;
  }
  int n = atoi(argv[2]), count = atoi(argv[3]), burst = atoi(argv[4]);
  if (n < 3 || n > MAX_SUBS || count < 1 || count > MAX_COUNT || burst < 1) {
    fprintf(stderr, "n must be 3..%d, count 1..%d, burst at least 1\n", MAX_SUBS, MAX_COUNT);
    return 1;
  }
  node_up(&context, &node, strcmp(argv[1], "sub") == 0 ? "callbacks_sub" : "callbacks_pub");
  int rc = strcmp(argv[1], "sub") == 0 ? run_sub(n, count, burst) : run_pub(n, count, burst);
  node_down(&context, &node);
  return rc;
}
