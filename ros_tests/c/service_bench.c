/* Service round-trip latency through the rmw API (a benchmark, not a test): run it under
 * rmw_tracer (LD_PRELOAD) or Fast DDS (no preload) to compare the middlewares, not rclpy.
 *
 *   service_bench server N     serve test_msgs/srv/BasicTypes on /bench until N requests
 *   service_bench client N     wait for /bench, then N sequential calls (after 50 warm-up)
 *   service_bench both N       server and client in one context, one thread
 *
 * The client prints one JSON line: {"n":..,"p50_us":..,"p99_us":..,"mean_us":..}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/rmw.h>
#include <test_msgs/srv/basic_types.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static rmw_wait_set_t *ws;

static int wait_one(void **slot, int is_service) {
  rmw_time_t t = {5, 0};
  void *slots[1] = {*slot};
  rmw_services_t s = {1, slots};
  rmw_clients_t c = {1, slots};
  rmw_ret_t rc = rmw_wait(NULL, NULL, is_service ? &s : NULL, is_service ? NULL : &c, NULL, ws, &t);
  return rc == RMW_RET_OK && slots[0] != NULL;
}

static int serve_one(rmw_service_t *srv, test_msgs__srv__BasicTypes_Request *req,
                     test_msgs__srv__BasicTypes_Response *res) {
  void *slot = srv->data;
  if (!wait_one(&slot, 1)) return 0;
  rmw_service_info_t info;
  bool taken = false;
  if (rmw_take_request(srv, &info, req, &taken) != RMW_RET_OK || !taken) return 0;
  res->int64_value = req->int64_value * 2;
  return rmw_send_response(srv, &info.request_id, res) == RMW_RET_OK;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s server|client|both N\n", argv[0]); return 2; }
  const char *mode = argv[1];
  int n = atoi(argv[2]);
  int warm = strcmp(mode, "server") == 0 ? 0 : 50;
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  rmw_init_options_t opts = rmw_get_zero_initialized_init_options();
  rmw_context_t ctx = rmw_get_zero_initialized_context();
  if (rmw_init_options_init(&opts, alloc) != RMW_RET_OK) return 3;
  opts.enclave = rcutils_strdup("/", alloc);
  const char *dom = getenv("ROS_DOMAIN_ID");
  if (dom) opts.domain_id = (size_t)atoi(dom);
  if (rmw_init(&opts, &ctx) != RMW_RET_OK) return 3;
  rmw_node_t *node = rmw_create_node(&ctx, mode, "/");
  ws = rmw_create_wait_set(&ctx, 2);
  const rosidl_service_type_support_t *ts = ROSIDL_GET_SRV_TYPE_SUPPORT(test_msgs, srv, BasicTypes);
  rmw_qos_profile_t q = rmw_qos_profile_services_default;
  rmw_service_t *srv = NULL;
  rmw_client_t *cli = NULL;
  if (strcmp(mode, "client") != 0) srv = rmw_create_service(node, ts, "/bench", &q);
  if (strcmp(mode, "server") != 0) cli = rmw_create_client(node, ts, "/bench", &q);
  test_msgs__srv__BasicTypes_Request req, sreq;
  test_msgs__srv__BasicTypes_Response res, cres;
  memset(&req, 0, sizeof req); memset(&sreq, 0, sizeof sreq);
  memset(&res, 0, sizeof res); memset(&cres, 0, sizeof cres);
  test_msgs__srv__BasicTypes_Request__init(&req);
  test_msgs__srv__BasicTypes_Request__init(&sreq);
  test_msgs__srv__BasicTypes_Response__init(&res);
  test_msgs__srv__BasicTypes_Response__init(&cres);
  if (strcmp(mode, "server") == 0) {
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < n + 50;) i += serve_one(srv, &sreq, &res);
    /* Let the last response leave (Fast DDS sends asynchronously) before the process goes. */
    struct timespec linger = {1, 0};
    nanosleep(&linger, NULL);
    return 0;
  }
  bool avail = false;
  double deadline = now_us() + 30e6;
  while (!avail && now_us() < deadline) {
    rmw_service_server_is_available(node, cli, &avail);
    if (!avail) { struct timespec d = {0, 10000000}; nanosleep(&d, NULL); }
  }
  if (!avail) { fprintf(stderr, "no server\n"); return 4; }
  /* Fast DDS reports the server before the response path is matched both ways; give it time. */
  struct timespec settle = {0, 500000000};
  nanosleep(&settle, NULL);
  double *lat = calloc((size_t)n, sizeof *lat);
  for (int i = 0; i < n + warm; i++) {
    req.int64_value = i;
    int64_t seq;
    double t0 = now_us();
    if (rmw_send_request(cli, &req, &seq) != RMW_RET_OK) return 5;
    if (srv && !serve_one(srv, &sreq, &res)) return 6;
    bool taken = false;
    while (!taken) {
      void *slot = cli->data;
      if (!wait_one(&slot, 0)) { fprintf(stderr, "no response to %d\n", i); return 7; }
      rmw_service_info_t info;
      if (rmw_take_response(cli, &info, &cres, &taken) != RMW_RET_OK) return 8;
      if (taken && info.request_id.sequence_number != seq) taken = false;
    }
    if (i >= warm) lat[i - warm] = now_us() - t0;
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += lat[i];
  printf("{\"n\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f, \"mean_us\": %.1f}\n", n, lat[n / 2], lat[(int)(n * 0.99)],
         sum / n);
  return 0;
}
