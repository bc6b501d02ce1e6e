/* A service and a client made with the rosidl_typesupport_cpp dispatcher of test_msgs/srv/
 * BasicTypes, as rclcpp passes it (every rclcpp node makes its parameter services this way):
 * the request and response are C++ objects, made and freed through their C++ introspection
 * type support, and one int64 field is set and read through the member offsets.
 * Run under LD_PRELOAD of librmw_tracer.so. Prints "ok <check>" / "FAIL <check>".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/error_handling.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/service_type_support_struct.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>
#include <rosidl_typesupport_introspection_c/service_introspection.h>

#include "common.h"

/* The C++ introspection MessageMembers share the C layout (only the init/fini function types
 * differ, and both take the message and an int-sized enum), so they are read through the C
 * struct. */
typedef const rosidl_typesupport_introspection_c__MessageMembers Members;

static void *make(Members *m) {
  void *p = calloc(1, m->size_of_);
  m->init_function(p, ROSIDL_RUNTIME_C_MSG_INIT_ALL);
  return p;
}

static void drop(Members *m, void *p) {
  m->fini_function(p);
  free(p);
}

static int64_t *field_i64(Members *m, void *msg, const char *name) {
  for (uint32_t i = 0; i < m->member_count_; i++) {
    if (strcmp(m->members_[i].name_, name) == 0) return (int64_t *)((char *)msg + m->members_[i].offset_);
  }
  return NULL;
}

int main(void) {
  void *lib = dlopen("libtest_msgs__rosidl_typesupport_cpp.so", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 100; }
  typedef const rosidl_service_type_support_t *(*getter)(void);
  getter get = (getter)dlsym(lib, "rosidl_typesupport_cpp__get_service_type_support_handle__test_msgs__srv__BasicTypes");
  if (!get) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 100; }
  const rosidl_service_type_support_t *ts = get();
  const rosidl_service_type_support_t *intro = get_service_typesupport_handle(ts, "rosidl_typesupport_introspection_cpp");
  if (!intro) { fprintf(stderr, "no C++ introspection\n"); return 100; }
  const rosidl_typesupport_introspection_c__ServiceMembers *sm = intro->data;
  Members *req_m = sm->request_members_;
  Members *res_m = sm->response_members_;

  rmw_init_options_t opts;
  rmw_context_t ctx;
  if (init_context(&opts, &ctx) != 0) return 100;
  rmw_node_t *node = rmw_create_node(&ctx, "cpp", "/");
  rmw_qos_profile_t q = rmw_qos_profile_services_default;
  rmw_service_t *srv = rmw_create_service(node, ts, "/cpp/svc", &q);
  rmw_client_t *cli = rmw_create_client(node, ts, "/cpp/svc", &q);
  check(srv != NULL && cli != NULL, "create with the C++ type support", "null");
  if (!srv || !cli) return 100;

  void *req = make(req_m);
  void *got = make(req_m);
  void *res = make(res_m);
  void *back = make(res_m);
  *field_i64(req_m, req, "int64_value") = -1234567890123LL;
  int64_t seq = 0;
  check(rmw_send_request(cli, req, &seq) == RMW_RET_OK && seq == 1, "send C++ request", "not ok");
  rmw_service_info_t info;
  bool taken = false;
  for (int i = 0; i < 100 && !taken; i++) {
    if (rmw_take_request(srv, &info, got, &taken) != RMW_RET_OK) break;
  }
  check(taken && *field_i64(req_m, got, "int64_value") == -1234567890123LL, "take C++ request", "wrong value");
  *field_i64(res_m, res, "int64_value") = 77;
  check(rmw_send_response(srv, &info.request_id, res) == RMW_RET_OK, "send C++ response", "not ok");
  taken = false;
  for (int i = 0; i < 100 && !taken; i++) {
    if (rmw_take_response(cli, &info, back, &taken) != RMW_RET_OK) break;
  }
  check(taken && *field_i64(res_m, back, "int64_value") == 77 && info.request_id.sequence_number == 1,
        "take C++ response", "wrong value");
  drop(req_m, req);
  drop(req_m, got);
  drop(res_m, res);
  drop(res_m, back);
  check(rmw_destroy_client(node, cli) == RMW_RET_OK && rmw_destroy_service(node, srv) == RMW_RET_OK &&
            rmw_destroy_node(node) == RMW_RET_OK && rmw_shutdown(&ctx) == RMW_RET_OK &&
            rmw_context_fini(&ctx) == RMW_RET_OK,
        "teardown", "not ok");
  rmw_init_options_fini(&opts);
  return exit_status();
}
