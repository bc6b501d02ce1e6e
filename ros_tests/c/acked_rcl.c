/* rcl_publisher_wait_for_all_acked from C (test_acked.py), against a reliable subscription in
 * another process that this program stops and resumes itself, under rmw_tracer and Fast DDS:
 *
 *   acked_rcl <topic> <subscriber pid>
 *
 * Waits (30 s at most) for one subscription, publishes 20 std_msgs/String "m <i>" and waits for
 * their acknowledgement (10 s); stops the subscriber (SIGSTOP), publishes "m 20", waits 100 ms;
 * resumes it and waits with no limit (timeout -1: RMW_DURATION_INFINITE); then a zero timeout.
 * Prints one line per wait: "<name> <rcl_ret_t>". Exit status: 0, or 1 on any other rcl error.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>

#include "rcl_check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static rcl_publisher_t pub;
static int sent = 0;

static void publish(int n) {
  std_msgs__msg__String m;
  std_msgs__msg__String__init(&m);
  for (int i = 0; i < n; i++) {
    char text[32];
    snprintf(text, sizeof text, "m %d", sent++);
    rosidl_runtime_c__String__assign(&m.data, text);
    CHECK(rcl_publish(&pub, &m, NULL));
  }
  std_msgs__msg__String__fini(&m);
}

/* SIGSTOP, then wait (5 s at most) until the kernel shows the process stopped: kill() returns
 * before a process running on another core has stopped. */
static void stop(pid_t pid) {
  kill(pid, SIGSTOP);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  double end = now_s() + 5;
  while (now_s() < end) {
    FILE *f = fopen(path, "r");
    char state = 0;
    if (f) {
      if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1) state = 0;
      fclose(f);
    }
    if (state == 'T' || state == 't') return;
    struct timespec d = {0, 1000 * 1000};
    nanosleep(&d, NULL);
  }
  fprintf(stderr, "process %d did not stop\n", (int)pid);
  exit(1);
}

static void wait_acked(const char *name, int64_t timeout_ns) {
  rcl_ret_t rc = rcl_publisher_wait_for_all_acked(&pub, timeout_ns);
  if (rc != RCL_RET_OK && rc != RCL_RET_TIMEOUT) {
    fprintf(stderr, "%s: rcl_publisher_wait_for_all_acked failed (%d): %s\n", name, (int)rc,
            rcl_get_error_string().str);
    exit(1);
  }
  /* TIMEOUT is no error: nothing may be left in the error state. */
  printf("%s %d error_set=%d\n", name, (int)rc, (int)rcl_error_is_set());
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: acked_rcl <topic> <subscriber pid>\n");
    return 1;
  }
  pid_t sub = (pid_t)atoi(argv[2]);
  rcl_context_t context;
  rcl_node_t node;
  node_up(&context, &node, "acked_rcl");
  pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos.depth = 100;
  po.qos.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  CHECK(rcl_publisher_init(&pub, &node, ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), argv[1], &po));

  size_t matched = 0;
  double end = now_s() + 30;
  while (matched == 0 && now_s() < end) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &matched));
    struct timespec d = {0, 10 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  printf("matched %zu\n", matched);
  publish(20);
  wait_acked("running", 10LL * 1000 * 1000 * 1000);
  stop(sub);
  publish(1);
  wait_acked("stalled", 100LL * 1000 * 1000);
  kill(sub, SIGCONT);
  wait_acked("resumed", -1);
  wait_acked("zero", 0);

  CHECK(rcl_publisher_fini(&pub, &node));
  node_down(&context, &node);
  return 0;
}
