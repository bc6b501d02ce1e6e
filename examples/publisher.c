/* Publish std_msgs/msg/String "hello <i>" on a ROS topic with libtracer's C API: any ROS node
 * on rmw_tracer (`ros2 topic echo /chatter`) receives them, and `ros2 node list` shows this
 * program as a node.
 *
 *   publisher [topic [count [period_ms [wait_subscribers]]]]   (default /chatter 10 100 0) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tracer.h"
#include "cdr.h"
#include "check.h"

int main(int argc, char **argv) {
  const char *topic = argc > 1 ? argv[1] : "/chatter";
  int count = argc > 2 ? atoi(argv[2]) : 10;
  int period_ms = argc > 3 ? atoi(argv[3]) : 100;
  int wait_subscribers = argc > 4 ? atoi(argv[4]) : 0;

  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_talker", "/", -1, &ctx), "context")) return 1;
  tracer_qos_t qos = {0}; /* reliable, volatile, keep last 10 */
  tracer_publisher_t *pub = NULL;
  if (check(tracer_publisher_create(ctx, topic, STRING_TYPE, STRING_HASH, &qos, &pub), "publisher"))
    return 1;
  /* Optional: recorders (RMW_TRACER_RECORD, tracer record) and tools decode with it. */
  if (check(tracer_publisher_set_definition(pub, STRING_DEFINITION), "definition")) return 1;
  if (wait_subscribers > 0 &&
      check(tracer_publisher_wait_for_subscriptions(pub, (size_t)wait_subscribers, 30000000000LL),
            "wait for subscribers"))
    return 1;
  printf("ready\n");
  fflush(stdout);

  uint8_t buf[256];
  for (int i = 0; i < count; i++) {
    if (check(tracer_publish(pub, buf, cdr_hello(buf, sizeof buf, i)), "publish")) return 1;
    if (period_ms > 0) {
      struct timespec t = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
      nanosleep(&t, NULL);
    }
  }
  printf("published %d\n", count);
  if (check(tracer_publisher_destroy(pub), "destroy publisher")) return 1;
  return check(tracer_context_destroy(ctx), "destroy context");
}
