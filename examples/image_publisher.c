/* Publish sensor_msgs/msg/Image frames without a copy: each frame is written straight into a
 * borrowed shared-memory slot (tracer_loan_borrow), published as it is (tracer_loan_publish);
 * subscribers of this host get a reference to the slot, not the bytes.
 *
 *   image_publisher [topic [frames [width height] [wait_subscribers]]]
 *     (default /camera/image 10 1024 1024 0: 1024x1024 rgba8, 4 MiB a frame) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tracer.h"
#include "cdr.h"
#include "check.h"

int main(int argc, char **argv) {
  const char *topic = argc > 1 ? argv[1] : "/camera/image";
  int frames = argc > 2 ? atoi(argv[2]) : 10;
  uint32_t width = argc > 4 ? (uint32_t)atoi(argv[3]) : 1024;
  uint32_t height = argc > 4 ? (uint32_t)atoi(argv[4]) : 1024;
  int wait_subscribers = argc > 5 ? atoi(argv[5]) : 0;
  uint32_t step = width * 4;
  uint32_t data_len = step * height;

  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_camera", "/", -1, &ctx), "context")) return 1;
  tracer_qos_t qos = {0};
  qos.reliability = TRACER_RELIABILITY_RELIABLE;
  qos.depth = 2;
  tracer_publisher_t *pub = NULL;
  if (check(tracer_publisher_create(ctx, topic, IMAGE_TYPE, IMAGE_HASH, &qos, &pub), "publisher"))
    return 1;
  if (wait_subscribers > 0 &&
      check(tracer_publisher_wait_for_subscriptions(pub, (size_t)wait_subscribers, 30000000000LL),
            "wait for subscribers"))
    return 1;
  printf("ready\n");
  fflush(stdout);

  for (int i = 0; i < frames; i++) {
    size_t room = 256 + (size_t)data_len;
    tracer_loan_t *loan = NULL;
    uint8_t *mem = NULL;
    if (check(tracer_loan_borrow(pub, room, &loan, &mem), "borrow")) return 1;
    cdr_writer w;
    cdr_begin(&w, mem, room);
    cdr_image_head(&w, i, 0, "camera", height, width, "rgba8", step, data_len);
    /* The pixels, in place: frame i is the byte value (i + row) & 0xff on each row. */
    for (uint32_t row = 0; row < height; row++)
      memset(mem + w.pos + (size_t)row * step, (int)((i + row) & 0xff), step);
    w.pos += data_len;
    printf("frame %d at %p\n", i, (void *)mem);
    fflush(stdout);
    if (check(tracer_loan_publish(loan, w.pos), "publish")) return 1;
    struct timespec t = {0, 50 * 1000000L};
    nanosleep(&t, NULL);
  }
  printf("published %d\n", frames);
  if (check(tracer_publisher_destroy(pub), "destroy publisher")) return 1;
  return check(tracer_context_destroy(ctx), "destroy context");
}
