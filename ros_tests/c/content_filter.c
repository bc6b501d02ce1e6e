/* Content-filtered subscriptions over rcl, for test_content_filter.py; run the same under
 * rmw_tracer and under Fast DDS (the oracle), so the outputs compare line by line.
 * (rclpy of Jazzy has no content filter API; rcl's is what rclcpp uses.)
 *
 *   content_filter pub <type> <topic> <subs> <n> <go-file>
 *       wait until <subs> subscriptions match, publish ids 0..n-1, print "batch 0"; when
 *       <go-file> exists publish ids n..2n-1, print "batch 1"; when no subscription is
 *       left (60 s at most), print "left <still matched>" and exit.
 *   content_filter sub <type> <topic> <cases> <n>
 *       <cases>: one line per subscription, TAB-separated: creation expression, its
 *       parameters (joined by '|'), runtime expression, its parameters. An empty creation
 *       expression creates the subscription without filter options. Plus one subscription
 *       without a filter (the witness). Prints per case "create <k> <rcl_ret> cft=<0|1>", then
 *       "ready"; collects until the witness has n messages and then 300 ms pass with nothing
 *       new, prints "got <k> <ids...>"; then sets each runtime filter ("set <k> <ret>
 *       cft=<0|1>"), gets it back ("get <k> <ret> <expression> [<param>...]"), prints "ready2"
 *       and collects the next n ids the same way.
 *
 * <type>: "basic" (test_msgs/msg/BasicTypes: every primitive class; the id is uint32_value)
 * or "header" (std_msgs/msg/Header: nested fields and a string; the id is
 * stamp.sec). Message <i>'s values are functions of i (fill_*). Reliable, keep-last
 * depth 64. Exit status 0, 1 on an unexpected rcl error, 2 on a timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/header.h>
#include <test_msgs/msg/basic_types.h>

#include "rcl_check.h"

#define MAX_CASES 64
#define MAX_IDS 256

static rcl_context_t context;
/* The result lines. Fast DDS (the oracle) logs to std::cout from its own threads, and a log
 * line spliced into a result line once cost the comparison that line; so main points fd 1 at
 * stderr for everyone else and writes the results to a copy of the original stdout. */
static FILE *results;
static rcl_node_t node;
static int pose;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const rosidl_message_type_support_t *type_support(void) {
  return pose ? ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, Header)
              : ROSIDL_GET_MSG_TYPE_SUPPORT(test_msgs, msg, BasicTypes);
}

static const char *FRAMES[] = {"map", "odom", "base_link", "camera_front", "camera_rear"};

static void fill_basic(test_msgs__msg__BasicTypes *m, int i) {
  m->bool_value = i % 2;
  m->byte_value = (uint8_t)i;
  m->char_value = (uint8_t)('a' + i % 26);
  m->float32_value = (float)i * 0.5f;
  m->float64_value = i * 1.25 - 10.0;
  m->int8_value = (int8_t)(i - 10);
  m->uint8_value = (uint8_t)(i * 3);
  m->int16_value = (int16_t)(-100 * i);
  m->uint16_value = (uint16_t)(1000 * i);
  m->int32_value = i * i - 50;
  m->uint32_value = (uint32_t)i;
  m->int64_value = (int64_t)(i - 10) * 10000000000LL;
  m->uint64_value = (uint64_t)i * 100000000000000000ULL;
}

static void fill_header(std_msgs__msg__Header *m, int i) {
  m->stamp.sec = i;
  m->stamp.nanosec = (uint32_t)i * 1000u;
  rosidl_runtime_c__String__assign(&m->frame_id, FRAMES[i % 5]);
}

static void init(const char *name) {
  node_up(&context, &node, name);
}

/* Every endpoint here: qos(64) of rcl_check.h. */

static void publish_batch(rcl_publisher_t *pub, int first, int n) {
  for (int i = first; i < first + n; i++) {
    if (pose) {
      std_msgs__msg__Header m;
      std_msgs__msg__Header__init(&m);
      fill_header(&m, i);
      CHECK(rcl_publish(pub, &m, NULL));
      std_msgs__msg__Header__fini(&m);
    } else {
      test_msgs__msg__BasicTypes m;
      test_msgs__msg__BasicTypes__init(&m);
      fill_basic(&m, i);
      CHECK(rcl_publish(pub, &m, NULL));
      test_msgs__msg__BasicTypes__fini(&m);
    }
  }
}

static int run_pub(const char *topic, size_t subs, int n, const char *go) {
  init("cft_pub");
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = qos(64);
  CHECK(rcl_publisher_init(&pub, &node, type_support(), topic, &po));
  double deadline = now_s() + 60;
  size_t matched = 0;
  while (matched < subs) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &matched));
    if (now_s() > deadline) {
      fprintf(stderr, "only %zu of %zu subscriptions matched\n", matched, subs);
      return 2;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  publish_batch(&pub, 0, n);
  fprintf(results, "batch 0\n");
  fflush(results);
  /* The second batch when <go> exists (the subscriptions have their runtime filters); then
   * stay until they are gone, so reliable delivery completes. */
  while (access(go, F_OK) != 0) {
    if (now_s() > deadline + 60) {
      fprintf(stderr, "%s never appeared\n", go);
      return 2;
    }
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  publish_batch(&pub, n, n);
  fprintf(results, "batch 1\n");
  fflush(results);
  deadline = now_s() + 60;
  do {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
    CHECK(rcl_publisher_get_subscription_count(&pub, &matched));
  } while (matched > 0 && now_s() < deadline);
  /* Where a run that hangs from here on stopped (Fast DDS now and then hangs in teardown). */
  fprintf(results, "left %zu\n", matched);
  fflush(results);
  CHECK(rcl_publisher_fini(&pub, &node));
  node_down(&context, &node);
  return 0;
}

struct filter_case {
  char *expr[2];
  char *params[2][16];
  size_t nparams[2];
};

static size_t split_params(char *s, char **out) {
  size_t n = 0;
  if (!s || !*s) return 0;
  for (char *p = strtok(s, "|"); p && n < 16; p = strtok(NULL, "|")) out[n++] = p;
  return n;
}

static size_t read_cases(const char *path, struct filter_case *cases) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(1);
  }
  static char lines[MAX_CASES][1024];
  size_t n = 0;
  while (n < MAX_CASES && fgets(lines[n], sizeof lines[n], f)) {
    char *l = lines[n];
    l[strcspn(l, "\n")] = 0;
    char *cols[4] = {l, "", "", ""};
    for (int c = 1; c < 4; c++) {
      char *tab = strchr(cols[c - 1], '\t');
      if (!tab) break;
      *tab = 0;
      cols[c] = tab + 1;
    }
    cases[n].expr[0] = cols[0];
    cases[n].expr[1] = cols[2];
    cases[n].nparams[0] = split_params(cols[1], cases[n].params[0]);
    cases[n].nparams[1] = split_params(cols[3], cases[n].params[1]);
    n++;
  }
  fclose(f);
  return n;
}

static int id_of_take(rcl_subscription_t *sub, int *id) {
  if (pose) {
    std_msgs__msg__Header m;
    std_msgs__msg__Header__init(&m);
    rcl_ret_t rc = rcl_take(sub, &m, NULL, NULL);
    *id = m.stamp.sec;
    std_msgs__msg__Header__fini(&m);
    return rc;
  }
  test_msgs__msg__BasicTypes m;
  test_msgs__msg__BasicTypes__init(&m);
  rcl_ret_t rc = rcl_take(sub, &m, NULL, NULL);
  *id = (int)m.uint32_value;
  test_msgs__msg__BasicTypes__fini(&m);
  return rc;
}

/* Takes from all subscriptions (the witness last) until the witness has n and 300 ms pass
 * with nothing new; prints "got <k> <ids>" per case. */
static int collect(rcl_subscription_t *subs, size_t count, int n) {
  static int ids[MAX_CASES + 1][MAX_IDS];
  size_t got[MAX_CASES + 1] = {0};
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&ws, count + 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
  double deadline = now_s() + 60, quiet_since = now_s();
  for (;;) {
    CHECK(rcl_wait_set_clear(&ws));
    for (size_t k = 0; k <= count; k++) CHECK(rcl_wait_set_add_subscription(&ws, &subs[k], NULL));
    rcl_ret_t rc = rcl_wait(&ws, RCL_MS_TO_NS(50));
    if (rc != RCL_RET_OK && rc != RCL_RET_TIMEOUT) {
      fprintf(stderr, "rcl_wait failed (%d): %s\n", (int)rc, rcl_get_error_string().str);
      return 1;
    }
    rcl_reset_error();
    int any = 0;
    for (size_t k = 0; k <= count; k++) {
      for (;;) {
        int id = -1;
        rc = id_of_take(&subs[k], &id);
        if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
          rcl_reset_error();
          break;
        }
        if (rc != RCL_RET_OK) {
          fprintf(stderr, "rcl_take failed (%d): %s\n", (int)rc, rcl_get_error_string().str);
          return 1;
        }
        if (got[k] < MAX_IDS) ids[k][got[k]++] = id;
        any = 1;
      }
    }
    if (any) quiet_since = now_s();
    if (got[count] >= (size_t)n && now_s() - quiet_since > 0.3) break;
    if (now_s() > deadline) {
      fprintf(stderr, "the witness got %zu of %d\n", got[count], n);
      return 2;
    }
  }
  CHECK(rcl_wait_set_fini(&ws));
  for (size_t k = 0; k < count; k++) {
    fprintf(results, "got %zu", k);
    for (size_t j = 0; j < got[k]; j++) fprintf(results, " %d", ids[k][j]);
    fprintf(results, "\n");
  }
  fflush(results);
  return 0;
}

static int run_sub(const char *topic, const char *cases_path, int n) {
  static struct filter_case cases[MAX_CASES];
  size_t count = read_cases(cases_path, cases);
  init("cft_sub");
  rcl_allocator_t alloc = rcl_get_default_allocator();
  static rcl_subscription_t subs[MAX_CASES + 1];
  static int alive[MAX_CASES + 1];
  /* Kept to the end, never finalized: rcl_subscription_init keeps a shallow copy of the
   * options, whose content filter options it uses again on every set (finalizing them here
   * left rcl with freed memory: a crash now and then, under either middleware). */
  static rcl_subscription_options_t options[MAX_CASES + 1];
  for (size_t k = 0; k <= count; k++) {
    subs[k] = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t *so = &options[k];
    *so = rcl_subscription_get_default_options();
    so->qos = qos(64);
    if (k < count && cases[k].expr[0][0]) {
      CHECK(rcl_subscription_options_set_content_filter_options(
          cases[k].expr[0], cases[k].nparams[0], (const char **)cases[k].params[0], so));
    }
    rcl_ret_t rc = rcl_subscription_init(&subs[k], &node, type_support(), topic, so);
    if (k == count) {
      CHECK(rc);
      break;
    }
    alive[k] = rc == RCL_RET_OK;
    fprintf(results, "create %zu %d cft=%d\n", k, (int)rc,
           alive[k] ? (int)rcl_subscription_is_cft_enabled(&subs[k]) : 0);
    if (!alive[k]) {
      fprintf(stderr, "create %zu: %s\n", k, rcl_get_error_string().str);
      rcl_reset_error();
      /* A failed one is replaced by a subscription without a filter, so the publisher's
       * count stays the same under both middlewares; its "got" line is then the witness's. */
      *so = rcl_subscription_get_default_options();
      so->qos = qos(64);
      subs[k] = rcl_get_zero_initialized_subscription();
      CHECK(rcl_subscription_init(&subs[k], &node, type_support(), topic, so));
    }
  }
  fprintf(results, "ready\n");
  fflush(results);
  int rc = collect(subs, count, n);
  if (rc) return rc;
  for (size_t k = 0; k < count; k++) {
    rcl_subscription_content_filter_options_t o =
        rcl_get_zero_initialized_subscription_content_filter_options();
    CHECK(rcl_subscription_content_filter_options_init(
        &subs[k], cases[k].expr[1], cases[k].nparams[1], (const char **)cases[k].params[1], &o));
    rcl_ret_t r = rcl_subscription_set_content_filter(&subs[k], &o);
    fprintf(results, "set %zu %d cft=%d\n", k, (int)r, (int)rcl_subscription_is_cft_enabled(&subs[k]));
    if (r != RCL_RET_OK) {
      fprintf(stderr, "set %zu: %s\n", k, rcl_get_error_string().str);
      rcl_reset_error();
    }
    CHECK(rcl_subscription_content_filter_options_fini(&subs[k], &o));
    rcl_subscription_content_filter_options_t back =
        rcl_get_zero_initialized_subscription_content_filter_options();
    r = rcl_subscription_get_content_filter(&subs[k], &back);
    fprintf(results, "get %zu %d", k, (int)r);
    if (r == RCL_RET_OK) {
      rmw_subscription_content_filter_options_t *b = &back.rmw_subscription_content_filter_options;
      fprintf(results, " %s", b->filter_expression);
      for (size_t j = 0; j < b->expression_parameters.size; j++)
        fprintf(results, " [%s]", b->expression_parameters.data[j]);
      CHECK(rcl_subscription_content_filter_options_fini(&subs[k], &back));
    } else {
      rcl_reset_error();
    }
    fprintf(results, "\n");
  }
  fprintf(results, "ready2\n");
  fflush(results);
  rc = collect(subs, count, n);
  if (rc) return rc;
  for (size_t k = 0; k <= count; k++) CHECK(rcl_subscription_fini(&subs[k], &node));
  node_down(&context, &node);
  (void)alloc;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "pub") == 0 && argc != 7)) {
    fprintf(stderr, "usage: content_filter pub <basic|header> <topic> <subs> <n> <go-file>\n"
                    "       content_filter sub <basic|header> <topic> <cases> <n>\n");
    return 1;
  }
  int out = dup(STDOUT_FILENO);
  if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || !(results = fdopen(out, "w"))) {
    perror("content_filter: stdout");
    return 1;
  }
  pose = strcmp(argv[2], "header") == 0;
  int n = atoi(argv[5]);
  if (n <= 0 || n > MAX_IDS / 2) {
    fprintf(stderr, "n must be 1..%d\n", MAX_IDS / 2);
    return 1;
  }
  if (strcmp(argv[1], "pub") == 0) return run_pub(argv[3], (size_t)atoi(argv[4]), n, argv[6]);
  if (strcmp(argv[1], "sub") == 0) return run_sub(argv[3], argv[4], n);
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 1;
}
