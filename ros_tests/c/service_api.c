/* The rmw API of librmw_tracer.so for services, graph queries, events and QoS compatibility,
 * called directly (no rcl), checking what rmw documents: argument validation and error codes,
 * request headers (client gid, sequence numbers, timestamps), wait-set readiness of services and
 * clients, on-new-request/response callbacks, the graph queries' output structures, matched
 * events. Run under LD_PRELOAD of librmw_tracer.so.
 *
 * Prints "ok <check>" per passing check and "FAIL <check>: <why>" per failing one; exit status
 * is the number of failures (capped at 100).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/error_handling.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_service_names_and_types.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/names_and_types.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>
#include <test_msgs/srv/basic_types.h>

#include "common.h"

static const rosidl_service_type_support_t *srv_ts(void) {
  return ROSIDL_GET_SRV_TYPE_SUPPORT(test_msgs, srv, BasicTypes);
}

static const rosidl_message_type_support_t *string_ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
}

static atomic_size_t request_events;
static void on_request(const void *user_data, size_t n) {
  (void)user_data;
  atomic_fetch_add(&request_events, n);
}

static atomic_size_t response_events;
static void on_response(const void *user_data, size_t n) {
  (void)user_data;
  atomic_fetch_add(&response_events, n);
}

static rmw_ret_t wait_service(rmw_wait_set_t *ws, rmw_service_t *s, const rmw_time_t *t, void **slot) {
  void *slots[1] = {s->data};
  rmw_services_t a = {1, slots};
  rmw_ret_t rc = rmw_wait(NULL, NULL, &a, NULL, NULL, ws, t);
  *slot = slots[0];
  return rc;
}

static rmw_ret_t wait_client(rmw_wait_set_t *ws, rmw_client_t *c, const rmw_time_t *t, void **slot) {
  void *slots[1] = {c->data};
  rmw_clients_t a = {1, slots};
  rmw_ret_t rc = rmw_wait(NULL, NULL, NULL, &a, NULL, ws, t);
  *slot = slots[0];
  return rc;
}

static rmw_ret_t wait_event(rmw_wait_set_t *ws, rmw_event_t *e, const rmw_time_t *t, void **slot) {
  void *slots[1] = {e};
  rmw_events_t a = {1, slots};
  rmw_ret_t rc = rmw_wait(NULL, NULL, NULL, NULL, &a, ws, t);
  *slot = slots[0];
  return rc;
}

static int has_name(const rmw_names_and_types_t *nat, const char *name, const char *type) {
  for (size_t i = 0; i < nat->names.size; i++) {
    if (strcmp(nat->names.data[i], name) == 0) {
      for (size_t j = 0; j < nat->types[i].size; j++) {
        if (strcmp(nat->types[i].data[j], type) == 0) return 1;
      }
    }
  }
  return 0;
}

int main(void) {
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  rmw_init_options_t opts;
  rmw_context_t ctx;
  if (init_context(&opts, &ctx) != 0) return 100;
  rmw_node_t *node = rmw_create_node(&ctx, "api", "/");
  if (node == NULL) return 100;
  rmw_qos_profile_t sq = rmw_qos_profile_services_default;

  /* --- creation and validation --- */
  check(rmw_create_service(NULL, srv_ts(), "/api/svc", &sq) == NULL, "service null node", "accepted");
  check(rmw_create_service(node, NULL, "/api/svc", &sq) == NULL, "service null type support", "accepted");
  check(rmw_create_service(node, srv_ts(), "", &sq) == NULL, "service empty name", "accepted");
  check(rmw_create_service(node, srv_ts(), "bad name", &sq) == NULL && strstr(rmw_get_error_string().str, "name"),
        "service invalid name", "accepted");
  check(rmw_create_service(node, srv_ts(), "/api/svc", NULL) == NULL, "service null qos", "accepted");
  rmw_service_t *srv = rmw_create_service(node, srv_ts(), "/api/svc", &sq);
  check(srv != NULL && strcmp(srv->service_name, "/api/svc") == 0, "create service", "no service");
  rmw_qos_profile_t actual;
  check(rmw_service_request_subscription_get_actual_qos(srv, &actual) == RMW_RET_OK &&
            actual.history == RMW_QOS_POLICY_HISTORY_KEEP_LAST && actual.depth == 10 &&
            actual.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE &&
            actual.durability == RMW_QOS_POLICY_DURABILITY_VOLATILE,
        "service actual qos", "not the resolved services default");
  rmw_qos_profile_t tlq = sq;
  tlq.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
  rmw_service_t *tls = rmw_create_service(node, srv_ts(), "/api/tl", &tlq);
  check(tls != NULL && rmw_service_response_publisher_get_actual_qos(tls, &actual) == RMW_RET_OK &&
            actual.durability == RMW_QOS_POLICY_DURABILITY_VOLATILE,
        "service durability is volatile", "requests are never replayed, the QoS must say so");
  rmw_destroy_service(node, tls);
  check(rmw_client_request_publisher_get_actual_qos(NULL, &actual) == RMW_RET_INVALID_ARGUMENT, "client qos null", "not invalid");
  rmw_client_t *cli = rmw_create_client(node, srv_ts(), "/api/svc", &sq);
  rmw_client_t *lonely = rmw_create_client(node, srv_ts(), "/api/none", &sq);
  check(cli != NULL && lonely != NULL && strcmp(cli->service_name, "/api/svc") == 0, "create clients", "no client");
  check(rmw_client_response_subscription_get_actual_qos(cli, &actual) == RMW_RET_OK && actual.depth == 10,
        "client actual qos", "wrong");
  rmw_gid_t cgid;
  check(rmw_get_gid_for_client(cli, &cgid) == RMW_RET_OK && strcmp(cgid.implementation_identifier, "rmw_tracer") == 0,
        "client gid", "no gid");
  bool avail = false;
  check(rmw_service_server_is_available(node, cli, &avail) == RMW_RET_OK && avail, "server available", "not available");
  check(rmw_service_server_is_available(node, lonely, &avail) == RMW_RET_OK && !avail, "no server", "available");
  /* As the distribution's test_rmw_implementation and Fast DDS: RMW_RET_ERROR on Jazzy, the
     header's RMW_RET_INVALID_ARGUMENT on Kilted (docs/entry-points.md, "Header and suite"). */
#if __has_include(<rmw/localhost.h>) /* Jazzy: Kilted removed the header */
  const rmw_ret_t null_code = RMW_RET_ERROR;
#else
  const rmw_ret_t null_code = RMW_RET_INVALID_ARGUMENT;
#endif
  check(rmw_service_server_is_available(node, cli, NULL) == null_code, "is_available null", "not the suite's code");
  rmw_service_t foreign = *srv;
  foreign.implementation_identifier = "rmw_fastrtps_cpp";

  /* --- request / response --- */
  /* The generated __init leaves fields without a default uninitialized: zero them first. */
  test_msgs__srv__BasicTypes_Request req;
  test_msgs__srv__BasicTypes_Response resp;
  memset(&req, 0, sizeof req);
  memset(&resp, 0, sizeof resp);
  test_msgs__srv__BasicTypes_Request__init(&req);
  test_msgs__srv__BasicTypes_Response__init(&resp);
  rmw_service_info_t info;
  bool taken = true;
  check(rmw_take_request(srv, &info, &req, &taken) == RMW_RET_OK && !taken, "take request on empty", "taken");
  check(rmw_take_request(&foreign, &info, &req, &taken) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "foreign service",
        "not incorrect implementation");
  rmw_request_id_t unknown = {{0}, 1};
  unknown.writer_guid[0] = 0x42;
  check(rmw_send_response(srv, &unknown, &resp) == RMW_RET_TIMEOUT, "response to an unknown client", "not a timeout");
  rmw_wait_set_t *ws = rmw_create_wait_set(&ctx, 4);
  rmw_time_t zero = {0, 0};
  rmw_time_t second = {1, 0};
  void *slot = NULL;
  check(wait_service(ws, srv, &zero, &slot) == RMW_RET_TIMEOUT && slot == NULL, "idle service not ready", "ready");
  check(rmw_service_set_on_new_request_callback(srv, on_request, NULL) == RMW_RET_OK, "request callback", "not ok");
  check(rmw_client_set_on_new_response_callback(cli, on_response, NULL) == RMW_RET_OK, "response callback", "not ok");
  req.int64_value = 21;
  rosidl_runtime_c__String__assign(&req.string_value, "hello");
  int64_t seq = 0;
  check(rmw_send_request(cli, &req, &seq) == RMW_RET_OK && seq == 1, "send request", "sequence not 1");
  check(wait_service(ws, srv, &second, &slot) == RMW_RET_OK && slot == srv->data, "service ready", "not ready");
  check(atomic_load(&request_events) == 1, "request callback fired", "not 1");
  test_msgs__srv__BasicTypes_Request got;
  memset(&got, 0, sizeof got);
  test_msgs__srv__BasicTypes_Request__init(&got);
  check(rmw_take_request(srv, &info, &got, &taken) == RMW_RET_OK && taken && got.int64_value == 21 &&
            strcmp(got.string_value.data, "hello") == 0, "take request", "wrong request");
  check(memcmp(info.request_id.writer_guid, cgid.data, 16) == 0 && info.request_id.sequence_number == 1,
        "request header names the client", "wrong gid or sequence");
  check(info.source_timestamp > 0 && info.received_timestamp >= info.source_timestamp, "request timestamps",
        "missing or out of order");
  check(wait_client(ws, cli, &zero, &slot) == RMW_RET_TIMEOUT && slot == NULL, "client not ready before answer", "ready");
  resp.int64_value = 42;
  check(rmw_send_response(srv, &info.request_id, &resp) == RMW_RET_OK, "send response", "not ok");
  check(wait_client(ws, cli, &second, &slot) == RMW_RET_OK && slot == cli->data, "client ready", "not ready");
  check(atomic_load(&response_events) == 1, "response callback fired", "not 1");
  test_msgs__srv__BasicTypes_Response back;
  memset(&back, 0, sizeof back);
  test_msgs__srv__BasicTypes_Response__init(&back);
  check(rmw_take_response(cli, &info, &back, &taken) == RMW_RET_OK && taken && back.int64_value == 42 &&
            info.request_id.sequence_number == 1 && memcmp(info.request_id.writer_guid, cgid.data, 16) == 0,
        "take response", "wrong response");
  check(rmw_take_response(cli, &info, &back, &taken) == RMW_RET_OK && !taken, "take response on empty", "taken");
  check(rmw_send_request(cli, &req, &seq) == RMW_RET_OK && seq == 2, "second sequence number", "not 2");
  check(rmw_send_request(cli, NULL, &seq) == RMW_RET_INVALID_ARGUMENT, "send null request", "not invalid");

  /* --- graph queries --- */
  rcutils_string_array_t names = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_t nss = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_t used = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_init(&used, 1, &alloc);
  check(rmw_get_node_names(node, &used, &nss) == RMW_RET_INVALID_ARGUMENT, "node names into a used array", "not invalid");
  rcutils_string_array_fini(&used);
  check(rmw_get_node_names(node, &names, &nss) == RMW_RET_OK && names.size == 1 && strcmp(names.data[0], "api") == 0 &&
            strcmp(nss.data[0], "/") == 0, "node names", "not [api]");
  rcutils_string_array_fini(&names);
  rcutils_string_array_fini(&nss);
  rcutils_string_array_t enc = rcutils_get_zero_initialized_string_array();
  check(rmw_get_node_names_with_enclaves(node, &names, &nss, &enc) == RMW_RET_OK && enc.size == 1 &&
            strcmp(enc.data[0], "/") == 0, "node enclaves", "not [/]");
  rcutils_string_array_fini(&names);
  rcutils_string_array_fini(&nss);
  rcutils_string_array_fini(&enc);
  rmw_names_and_types_t nat = rmw_get_zero_initialized_names_and_types();
  check(rmw_get_service_names_and_types(node, &alloc, &nat) == RMW_RET_OK &&
            has_name(&nat, "/api/svc", "test_msgs/srv/BasicTypes") && has_name(&nat, "/api/none", "test_msgs/srv/BasicTypes"),
        "service names and types", "missing");
  check(rmw_get_service_names_and_types(node, &alloc, &nat) == RMW_RET_INVALID_ARGUMENT, "names and types not zero",
        "not invalid");
  rmw_names_and_types_fini(&nat);
  rcutils_allocator_t bad = rcutils_get_zero_initialized_allocator();
  check(rmw_get_topic_names_and_types(node, &bad, false, &nat) == RMW_RET_INVALID_ARGUMENT, "invalid allocator", "not invalid");
  check(rmw_get_publisher_names_and_types_by_node(node, &alloc, "nobody", "/", false, &nat) == RMW_RET_NODE_NAME_NON_EXISTENT,
        "unknown node", "not NODE_NAME_NON_EXISTENT");
  check(rmw_get_publisher_names_and_types_by_node(node, &alloc, "bad name", "/", false, &nat) == RMW_RET_INVALID_ARGUMENT,
        "invalid node name", "not invalid");
  check(rmw_get_service_names_and_types_by_node(node, &alloc, "api", "/", &nat) == RMW_RET_OK && nat.names.size == 1 &&
            has_name(&nat, "/api/svc", "test_msgs/srv/BasicTypes"), "services by node", "wrong");
  rmw_names_and_types_fini(&nat);
  check(rmw_get_client_names_and_types_by_node(node, &alloc, "api", "/", &nat) == RMW_RET_OK && nat.names.size == 2,
        "clients by node", "not 2");
  rmw_names_and_types_fini(&nat);
  size_t count = 99;
  check(rmw_count_services(node, "/api/svc", &count) == RMW_RET_OK && count == 1, "count services", "not 1");
  check(rmw_count_clients(node, "/api/svc", &count) == RMW_RET_OK && count == 1, "count clients", "not 1");
  check(rmw_count_publishers(node, "bad name", &count) == RMW_RET_INVALID_ARGUMENT, "count invalid topic", "not invalid");

  /* --- QoS compatibility --- */
  rmw_qos_compatibility_type_t compat;
  char reason[256];
  rmw_qos_profile_t d = rmw_qos_profile_default;
  check(rmw_qos_profile_check_compatible(d, d, NULL, reason, sizeof reason) == RMW_RET_INVALID_ARGUMENT,
        "compat null output", "not invalid");
  check(rmw_qos_profile_check_compatible(d, d, &compat, NULL, 5) == RMW_RET_INVALID_ARGUMENT, "compat null reason",
        "not invalid");
  /* rmw_qos_profile_default leaves liveliness at system default: WARNING, as with Fast DDS. */
  check(rmw_qos_profile_check_compatible(d, d, &compat, reason, sizeof reason) == RMW_RET_OK &&
            compat == RMW_QOS_COMPATIBILITY_WARNING && strstr(reason, "liveliness") != NULL,
        "compat default", "not WARNING");
  rmw_qos_profile_t full = d;
  full.liveliness = RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
  reason[0] = 'x';
  check(rmw_qos_profile_check_compatible(full, full, &compat, reason, sizeof reason) == RMW_RET_OK &&
            compat == RMW_QOS_COMPATIBILITY_OK && reason[0] == '\0', "compat fully specified", "not OK");
  rmw_qos_profile_t be = full;
  be.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  check(rmw_qos_profile_check_compatible(be, full, &compat, NULL, 0) == RMW_RET_OK &&
            compat == RMW_QOS_COMPATIBILITY_ERROR,
        "best effort publisher, reliable subscription", "not ERROR");
  rmw_qos_profile_t tl = full;
  tl.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
  char small[10];
  check(rmw_qos_profile_check_compatible(full, tl, &compat, small, sizeof small) == RMW_RET_OK &&
            compat == RMW_QOS_COMPATIBILITY_ERROR && strcmp(small, "ERROR: Vo") == 0,
        "compat error truncated", "wrong");

  /* --- events --- */
  /* By name: Kilted moved RMW_EVENT_INVALID from the end of the enum to 0. */
  const rmw_event_type_t types[] = {
    RMW_EVENT_LIVELINESS_CHANGED, RMW_EVENT_REQUESTED_DEADLINE_MISSED, RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE,
    RMW_EVENT_MESSAGE_LOST, RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE, RMW_EVENT_SUBSCRIPTION_MATCHED,
    RMW_EVENT_LIVELINESS_LOST, RMW_EVENT_OFFERED_DEADLINE_MISSED, RMW_EVENT_OFFERED_QOS_INCOMPATIBLE,
    RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE, RMW_EVENT_PUBLICATION_MATCHED};
  int all_types = 1;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) all_types &= rmw_event_type_is_supported(types[i]);
  check(all_types && !rmw_event_type_is_supported(RMW_EVENT_INVALID), "every event type supported", "wrong set");
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_qos_profile_t sysdef = rmw_qos_profile_system_default;
  rmw_publisher_t *pub = rmw_create_publisher(node, string_ts(), "/api/ev", &sysdef, &popts);
  rmw_event_t ev = rmw_get_zero_initialized_event();
  check(rmw_publisher_event_init(&ev, pub, RMW_EVENT_OFFERED_DEADLINE_MISSED) == RMW_RET_OK,
        "deadline event init", "not ok");
  ev = rmw_get_zero_initialized_event();
  /* event.h: RMW_RET_UNSUPPORTED "if event_type is not supported" (test_contract.py). */
  check(rmw_publisher_event_init(&ev, pub, RMW_EVENT_SUBSCRIPTION_MATCHED) == RMW_RET_UNSUPPORTED,
        "subscription event on a publisher", "not unsupported");
  check(rmw_publisher_event_init(&ev, pub, RMW_EVENT_PUBLICATION_MATCHED) == RMW_RET_OK, "matched event init", "not ok");
  rmw_matched_status_t ms;
  /* A take always answers, with the status as it stands (test_rmw_implementation, Fast DDS). */
  check(rmw_take_event(&ev, &ms, &taken) == RMW_RET_OK && taken && ms.total_count == 0 &&
            ms.current_count == 0 && ms.current_count_change == 0, "no match to report", "not a zero status");
  rmw_subscription_t *sub = rmw_create_subscription(node, string_ts(), "/api/ev", &sysdef, &sopts);
  check(wait_event(ws, &ev, &second, &slot) == RMW_RET_OK && slot == &ev, "matched event ready", "not ready");
  check(rmw_take_event(&ev, &ms, &taken) == RMW_RET_OK && taken && ms.current_count == 1 &&
            ms.current_count_change == 1 && ms.total_count == 1, "matched status", "wrong counts");
  check(wait_event(ws, &ev, &zero, &slot) == RMW_RET_TIMEOUT && slot == NULL, "matched event taken", "still ready");
  rmw_destroy_subscription(node, sub);
  check(wait_event(ws, &ev, &second, &slot) == RMW_RET_OK, "unmatched event ready", "not ready");
  check(rmw_take_event(&ev, &ms, &taken) == RMW_RET_OK && taken && ms.current_count == 0 &&
            ms.current_count_change == -1 && ms.total_count == 1, "unmatched status", "wrong counts");
  rmw_event_t qev = rmw_get_zero_initialized_event();
  rmw_qos_incompatible_event_status_t qs;
  check(rmw_publisher_event_init(&qev, pub, RMW_EVENT_OFFERED_QOS_INCOMPATIBLE) == RMW_RET_OK &&
            rmw_take_event(&qev, &qs, &taken) == RMW_RET_OK && taken && qs.total_count == 0 &&
            qs.total_count_change == 0 && qs.last_policy_kind == RMW_QOS_POLICY_INVALID,
        "no incompatible qos to report", "fired");
  /* MESSAGE_LOST: a depth-1 subscription that is not taken from loses all but the newest. */
  rmw_qos_profile_t one = rmw_qos_profile_default;
  one.depth = 1;
  rmw_subscription_t *lossy = rmw_create_subscription(node, string_ts(), "/api/ev", &one, &sopts);
  rmw_event_t lev = rmw_get_zero_initialized_event();
  check(rmw_subscription_event_init(&lev, lossy, RMW_EVENT_MESSAGE_LOST) == RMW_RET_OK, "lost event init", "not ok");
  check(wait_event(ws, &lev, &zero, &slot) == RMW_RET_TIMEOUT, "nothing lost yet", "ready");
  std_msgs__msg__String m;
  std_msgs__msg__String__init(&m);
  rosidl_runtime_c__String__assign(&m.data, "x");
  for (int i = 0; i < 5; i++) rmw_publish(pub, &m, NULL);
  std_msgs__msg__String__fini(&m);
  check(wait_event(ws, &lev, &zero, &slot) == RMW_RET_OK && slot == &lev, "lost event ready", "not ready");
  rmw_message_lost_status_t ls;
  check(rmw_take_event(&lev, &ls, &taken) == RMW_RET_OK && taken && ls.total_count == 4 && ls.total_count_change == 4,
        "lost status", "not 4 lost");
  check(rmw_take_event(&lev, &ls, &taken) == RMW_RET_OK && taken && ls.total_count == 4 && ls.total_count_change == 0,
        "lost taken", "changed again");
  /* An event callback for matched: called from the notifier when a subscription comes. */
  check(rmw_event_set_callback(&ev, on_response, NULL) == RMW_RET_OK, "matched callback", "not ok");
  size_t before = atomic_load(&response_events);
  rmw_subscription_t *late = rmw_create_subscription(node, string_ts(), "/api/ev", &sysdef, &sopts);
  for (int i = 0; i < 200 && atomic_load(&response_events) == before; i++) {
    struct timespec d = {0, 10 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  check(atomic_load(&response_events) > before, "matched callback fired", "not called");
  check(rmw_event_set_callback(&ev, NULL, NULL) == RMW_RET_OK, "clear matched callback", "not ok");
  rmw_destroy_subscription(node, late);
  rmw_destroy_subscription(node, lossy);
  rmw_destroy_publisher(node, pub);

  /* --- teardown --- */
  check(rmw_destroy_client(node, lonely) == RMW_RET_OK && rmw_destroy_client(node, cli) == RMW_RET_OK, "destroy clients",
        "not ok");
  check(rmw_destroy_service(node, srv) == RMW_RET_OK, "destroy service", "not ok");
  count = 99;
  check(rmw_count_services(node, "/api/svc", &count) == RMW_RET_OK && count == 0, "service gone from the graph", "still there");
  rmw_destroy_wait_set(ws);
  test_msgs__srv__BasicTypes_Request__fini(&req);
  test_msgs__srv__BasicTypes_Request__fini(&got);
  test_msgs__srv__BasicTypes_Response__fini(&resp);
  test_msgs__srv__BasicTypes_Response__fini(&back);
  check(rmw_destroy_node(node) == RMW_RET_OK, "destroy node", "not ok");
  check(rmw_shutdown(&ctx) == RMW_RET_OK && rmw_context_fini(&ctx) == RMW_RET_OK, "shutdown", "not ok");
  rmw_init_options_fini(&opts);
  return exit_status();
}
