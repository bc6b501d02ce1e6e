/* libtracer C API test program (ros_tests/test_capi.py): services on raw CDR with
 * test_msgs/srv/BasicTypes (request and response have the same fields), written by hand.
 *
 *   capi_service server SERVICE N   answer N requests: the request's fields back, int64_value
 *                                   + 1000; prints "ready", then "served N"
 *   capi_service client SERVICE N   wait for a server, then N calls with int64_value = i and
 *                                   string_value "c <i>"; prints "reply <seq> <int64> <string>" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"
#include "../../examples/cdr.h"
#include "../../examples/check.h"

#define SRV_TYPE "test_msgs/srv/BasicTypes"
#define SRV_HASH "RIHS01_da348697437c103cc9a9322ac1bdbdcf8eb11a85de22f7f2492ca1df416e1a5f"

typedef struct {
  uint8_t b[3];
  uint32_t f32;
  uint64_t f64;
  uint8_t i8, u8;
  uint16_t i16, u16;
  uint32_t i32, u32;
  uint64_t i64, u64;
  char str[128];
} basic;

static void write_basic(cdr_writer *w, const basic *v) {
  cdr_u8(w, v->b[0]); cdr_u8(w, v->b[1]); cdr_u8(w, v->b[2]);
  cdr_u32(w, v->f32); cdr_u64(w, v->f64);
  cdr_u8(w, v->i8); cdr_u8(w, v->u8);
  cdr_u16(w, v->i16); cdr_u16(w, v->u16);
  cdr_u32(w, v->i32); cdr_u32(w, v->u32);
  cdr_u64(w, v->i64); cdr_u64(w, v->u64);
  cdr_string(w, v->str);
}

static int read_basic(const uint8_t *buf, size_t len, basic *v) {
  cdr_reader r;
  cdr_read_begin(&r, buf, len);
  v->b[0] = cdr_read_u8(&r); v->b[1] = cdr_read_u8(&r); v->b[2] = cdr_read_u8(&r);
  v->f32 = cdr_read_u32(&r); v->f64 = cdr_read_u64(&r);
  v->i8 = cdr_read_u8(&r); v->u8 = cdr_read_u8(&r);
  v->i16 = cdr_read_u16(&r); v->u16 = cdr_read_u16(&r);
  v->i32 = cdr_read_u32(&r); v->u32 = cdr_read_u32(&r);
  v->i64 = cdr_read_u64(&r); v->u64 = cdr_read_u64(&r);
  const char *s = cdr_read_string(&r);
  if (r.bad || !s) return 1;
  snprintf(v->str, sizeof v->str, "%s", s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return 64;
  const char *service = argv[2];
  int n = atoi(argv[3]);
  tracer_context_t *ctx;
  if (check(tracer_context_create("c_service_node", "/", -1, &ctx), "context")) return 1;
  uint8_t buf[512], out[512];
  size_t len;
  if (strcmp(argv[1], "server") == 0) {
    tracer_server_t *srv;
    if (check(tracer_server_create(ctx, service, SRV_TYPE, SRV_HASH, NULL, &srv), "server")) return 1;
    printf("ready\n");
    fflush(stdout);
    int served = 0;
    while (served < n) {
      if (check(tracer_server_wait(srv, 30000000000LL), "wait")) return 1;
      tracer_request_id_t id;
      tracer_result_t r;
      while ((r = tracer_server_take_request(srv, buf, sizeof buf, &len, &id)) == TRACER_OK) {
        basic v;
        if (read_basic(buf, len, &v)) { fprintf(stderr, "bad request\n"); return 1; }
        v.i64 += 1000;
        cdr_writer w;
        cdr_begin(&w, out, sizeof out);
        write_basic(&w, &v);
        if (check(tracer_server_send_response(srv, &id, out, w.pos), "respond")) return 1;
        served++;
      }
      if (r != TRACER_ERR_EMPTY && check(r, "take")) return 1;
    }
    printf("served %d\n", served);
    fflush(stdout);
    /* Let the last response leave before the process does. */
    if (check(tracer_server_destroy(srv), "destroy")) return 1;
  } else {
    tracer_client_t *cli;
    if (check(tracer_client_create(ctx, service, SRV_TYPE, SRV_HASH, NULL, &cli), "client")) return 1;
    size_t servers = 0;
    for (int t = 0; t < 3000 && servers == 0; t++) {
      if (check(tracer_client_server_count(cli, &servers), "server count")) return 1;
      if (servers == 0) {
        tracer_result_t r = tracer_client_wait(cli, 10000000LL);
        if (r != TRACER_ERR_TIMEOUT && check(r, "wait")) return 1;
      }
    }
    if (servers == 0) { fprintf(stderr, "no server\n"); return 2; }
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < n; i++) {
      basic v;
      memset(&v, 0, sizeof v);
      v.b[0] = 1; v.i64 = (uint64_t)i;
      snprintf(v.str, sizeof v.str, "c %d", i);
      cdr_writer w;
      cdr_begin(&w, out, sizeof out);
      write_basic(&w, &v);
      uint64_t seq;
      if (check(tracer_client_send_request(cli, out, w.pos, &seq), "request")) return 1;
      if (check(tracer_client_wait(cli, 30000000000LL), "wait response")) return 1;
      uint64_t answered;
      if (check(tracer_client_take_response(cli, buf, sizeof buf, &len, &answered), "take")) return 1;
      basic rv;
      if (read_basic(buf, len, &rv)) { fprintf(stderr, "bad response\n"); return 1; }
      printf("reply %llu %llu %s\n", (unsigned long long)answered, (unsigned long long)rv.i64, rv.str);
      if (answered != seq) { fprintf(stderr, "answered %llu, asked %llu\n",
                                     (unsigned long long)answered, (unsigned long long)seq); return 1; }
    }
    fflush(stdout);
    if (check(tracer_client_destroy(cli), "destroy")) return 1;
  }
  return check(tracer_context_destroy(ctx), "destroy context");
}
