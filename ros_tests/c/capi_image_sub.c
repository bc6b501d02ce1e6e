/* libtracer C API test program (ros_tests/test_capi.py): take sensor_msgs/Image frames by
 * view, check their pixels (row r of frame i is the byte (i + r) & 0xff, as
 * examples/image_publisher.c and test_capi_worker.py image-talk write them), and say whether
 * each view's bytes lie in a shared-memory pool segment ("memfd:tracer-shm" in
 * /proc/self/maps): no copy on the C path.
 *
 *   capi_image_sub TOPIC COUNT
 * prints "ready", then one line per frame: "frame <i> <w>x<h> <encoding> ok=<0|1> shm=<0|1>" */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"
#include "../../examples/cdr.h"
#include "../../examples/check.h"

static int in_shm(const void *p) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (unsigned long)p >= lo && (unsigned long)p < hi) {
      found = strstr(line, "memfd:tracer-shm") != NULL;
      break;
    }
  }
  fclose(f);
  return found;
}

int main(int argc, char **argv) {
  if (argc < 3) return 64;
  const char *topic = argv[1];
  int count = atoi(argv[2]);
  tracer_context_t *ctx = NULL;
  if (check(tracer_context_create("c_image_listener", "/", -1, &ctx), "context")) return 1;
  tracer_qos_t qos = {0};
  qos.depth = 4;
  tracer_subscription_t *sub = NULL;
  if (check(tracer_subscription_create(ctx, topic, IMAGE_TYPE, &qos, &sub), "subscription")) return 1;
  printf("ready\n");
  fflush(stdout);
  int got = 0;
  while (got < count) {
    tracer_result_t r = tracer_subscription_wait(sub, 30000000000LL);
    if (r == TRACER_ERR_TIMEOUT) {
      fprintf(stderr, "timed out after %d frames\n", got);
      return 2;
    }
    if (check(r, "wait")) return 1;
    tracer_view_t *view;
    const uint8_t *data;
    size_t len;
    while ((r = tracer_view_take(sub, &view, &data, &len, NULL)) == TRACER_OK) {
      cdr_reader rd;
      cdr_read_begin(&rd, data, len);
      int32_t sec = (int32_t)cdr_read_u32(&rd);
      (void)cdr_read_u32(&rd);
      (void)cdr_read_string(&rd);
      uint32_t h = cdr_read_u32(&rd), w = cdr_read_u32(&rd);
      const char *enc = cdr_read_string(&rd);
      (void)cdr_read_u8(&rd);
      uint32_t step = cdr_read_u32(&rd), n = cdr_read_u32(&rd);
      int ok = !rd.bad && n == step * h && len - rd.pos >= n;
      for (uint32_t row = 0; ok && row < h; row++) {
        const uint8_t *px = data + rd.pos + (size_t)row * step;
        uint8_t want = (uint8_t)((sec + row) & 0xff);
        ok = px[0] == want && px[step - 1] == want;
      }
      printf("frame %d %ux%u %s ok=%d shm=%d\n", sec, w, h, enc ? enc : "?", ok, in_shm(data));
      fflush(stdout);
      got++;
      if (check(tracer_view_return(view), "view return")) return 1;
    }
    if (r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
  }
  if (check(tracer_subscription_destroy(sub), "destroy")) return 1;
  return check(tracer_context_destroy(ctx), "destroy context");
}
