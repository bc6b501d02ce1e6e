/* Subscribe to a std_msgs/msg/String topic with libtracer's C API and print each message:
 * an rclpy or rclcpp talker on rmw_tracer (`ros2 run demo_nodes_py talker`) is heard.
 *
 *   subscriber [topic [count [timeout_s]]]   (default /chatter 10 30)
 *
 * It waits with tracer_subscription_wait and takes by copy. */
#include <stdio.h>
#include <stdlib.h>

#include "tracer.h"
#include "check.h"
#include "cdr.h"

int main(int argc, char **argv) {
  const char *topic = argc > 1 ? argv[1] : "/chatter";
  int count = argc > 2 ? atoi(argv[2]) : 10;
  long long timeout_ns = (argc > 3 ? atoll(argv[3]) : 30) * 1000000000LL;

  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_listener", "/", -1, &ctx), "context")) return 1;
  tracer_subscription_t *sub = NULL;
  if (check(tracer_subscription_create(ctx, topic, STRING_TYPE, NULL, &sub), "subscription"))
    return 1;
  printf("ready\n");
  fflush(stdout);

  static uint8_t buf[1 << 16];
  int got = 0;
  while (got < count) {
    tracer_result_t r = tracer_subscription_wait(sub, timeout_ns);
    if (r == TRACER_ERR_TIMEOUT) {
      fprintf(stderr, "timed out after %d messages\n", got);
      return 2;
    }
    if (check(r, "wait")) return 1;
    size_t len = 0;
    tracer_sample_info_t info;
    while ((r = tracer_take(sub, buf, sizeof buf, &len, &info)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, buf, len);
      const char *text = cdr_read_string(&rd);
      if (!text) {
        fprintf(stderr, "not a std_msgs/String (%zu bytes)\n", len);
        return 1;
      }
      printf("msg: %s seq=%llu\n", text, (unsigned long long)info.sequence);
      got++;
    }
    if (r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
  }
  fflush(stdout);
  if (check(tracer_subscription_destroy(sub), "destroy subscription")) return 1;
  return check(tracer_context_destroy(ctx), "destroy context");
}
