/* libtracer C API test program (ros_tests/test_capi.py): services on raw CDR with
 * test_msgs/srv/BasicTypes (request and response have the same fields), written by hand.
 *
 *   capi_service server SERVICE N   answer N requests: the request's fields back, int64_value
 *                                   + 1000; prints "ready", then "served N"
 *   capi_service client SERVICE N   wait for a server, then N calls with int64_value = i and
 *                                   string_value "c <i>"; prints "reply <seq> <int64> <string>"
 *   capi_service multi SERVICE N TOPIC_A TOPIC_B M   one tracer_wait over two std_msgs/String
 *                                   subscriptions and a server: prints "ready", then per wake
 *                                   "woke <a> <b> <server>" (1: ready), answers N requests and
 *                                   takes M messages of each topic; then "multi <a> <b> <served>"
 *                                   (tracer_wait's refusals and timeout checked first: "api ok") */
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

/* Answer every request waiting at `srv`; the number answered, or -1. */
static int answer_all(tracer_server_t *srv) {
  uint8_t buf[512], out[512];
  size_t len;
  tracer_request_id_t id;
  tracer_result_t r;
  int n = 0;
  while ((r = tracer_server_take_request(srv, buf, sizeof buf, &len, &id)) == TRACER_OK) {
    basic v;
    if (read_basic(buf, len, &v)) { fprintf(stderr, "bad request\n"); return -1; }
    v.i64 += 1000;
    cdr_writer w;
    cdr_begin(&w, out, sizeof out);
    write_basic(&w, &v);
    if (check(tracer_server_send_response(srv, &id, out, w.pos), "respond")) return -1;
    n++;
  }
  if (r != TRACER_ERR_EMPTY && check(r, "take")) return -1;
  return n;
}

/* Take every message waiting at `sub`; the number taken, or -1. */
static int drain(tracer_subscription_t *sub) {
  uint8_t buf[512];
  size_t len;
  tracer_sample_info_t info;
  tracer_result_t r;
  int n = 0;
  while ((r = tracer_take(sub, buf, sizeof buf, &len, &info)) == TRACER_OK) n++;
  if (r != TRACER_ERR_EMPTY && check(r, "take")) return -1;
  return n;
}

static int multi(tracer_context_t *ctx, const char *service, int n, const char *ta, const char *tb,
                 int m) {
  tracer_server_t *srv;
  tracer_subscription_t *subs[2];
  if (check(tracer_server_create(ctx, service, SRV_TYPE, SRV_HASH, NULL, &srv), "server")) return 1;
  if (check(tracer_subscription_create(ctx, ta, STRING_TYPE, NULL, &subs[0]), "sub a")) return 1;
  if (check(tracer_subscription_create(ctx, tb, STRING_TYPE, NULL, &subs[1]), "sub b")) return 1;
  const tracer_subscription_t *ws[2] = {subs[0], subs[1]};
  const tracer_server_t *wv[1] = {srv};
  uint8_t ready[3] = {9, 9, 9};
  /* The documented refusals, and a timeout with nothing there. */
  if (tracer_wait(NULL, 0, NULL, 0, NULL, 0, 0, ready) != TRACER_ERR_INVALID_ARGUMENT ||
      tracer_wait(ws, 2, wv, 1, NULL, 0, 0, NULL) != TRACER_ERR_NULL_ARGUMENT ||
      tracer_wait(NULL, 2, wv, 1, NULL, 0, 0, ready) != TRACER_ERR_NULL_ARGUMENT ||
      tracer_wait(ws, 2, wv, 1, NULL, 0, 1000000LL, ready) != TRACER_ERR_TIMEOUT ||
      ready[0] || ready[1] || ready[2]) {
    fprintf(stderr, "tracer_wait's refusals or timeout are wrong\n");
    return 1;
  }
  const tracer_subscription_t *dead[1] = {(const tracer_subscription_t *)ready};
  if (tracer_wait(dead, 1, NULL, 0, NULL, 0, 0, ready) != TRACER_ERR_INVALID_HANDLE) {
    fprintf(stderr, "tracer_wait took a handle libtracer never made\n");
    return 1;
  }
  printf("api ok\nready\n");
  fflush(stdout);
  int got_a = 0, got_b = 0, served = 0;
  while (got_a < m || got_b < m || served < n) {
    tracer_result_t r = tracer_wait(ws, 2, wv, 1, NULL, 0, 30000000000LL, ready);
    if (r == TRACER_ERR_TIMEOUT) { fprintf(stderr, "timed out\n"); break; }
    if (check(r, "tracer_wait")) return 1;
    printf("woke %d %d %d\n", ready[0], ready[1], ready[2]);
    if (ready[0]) { int k = drain(subs[0]); if (k < 0) return 1; got_a += k; }
    if (ready[1]) { int k = drain(subs[1]); if (k < 0) return 1; got_b += k; }
    if (ready[2]) { int k = answer_all(srv); if (k < 0) return 1; served += k; }
  }
  printf("multi %d %d %d\n", got_a, got_b, served);
  fflush(stdout);
  if (check(tracer_subscription_destroy(subs[0]), "destroy a") ||
      check(tracer_subscription_destroy(subs[1]), "destroy b"))
    return 1;
  return check(tracer_server_destroy(srv), "destroy server");
}

int main(int argc, char **argv) {
  if (argc < 4) return 64;
  const char *service = argv[2];
  int n = atoi(argv[3]);
  tracer_context_t *ctx;
  if (check(tracer_context_create("c_service_node", "/", -1, &ctx), "context")) return 1;
  if (strcmp(argv[1], "multi") == 0) {
    if (argc < 7) return 64;
    int rc = multi(ctx, service, n, argv[4], argv[5], atoi(argv[6]));
    if (rc) return rc;
    return check(tracer_context_destroy(ctx), "destroy context");
  }
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
