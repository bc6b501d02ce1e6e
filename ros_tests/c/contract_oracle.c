/* The rmw contract entry point by entry point, beyond what lifecycle_oracle.c covers: null
 * arguments, handles of another implementation, zero-initialized or already used structures,
 * unknown event types and nodes, for the publisher and subscription extras (actual QoS, matched
 * counts, liveliness, acknowledgements, gids, serialized and sequence takes, callbacks), events,
 * services' extras, graph queries by node and by topic, QoS checks, guard conditions and
 * allocations. One "case <name> rc=... err=..." line per call (oracle.h); test_contract.py runs
 * it on rmw_tracer and on Fast DDS and holds what the headers document.
 *
 * The program exits 0 unless it could not make the entities it needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcutils/allocator.h>
#include <rmw/error_handling.h>
#include <rmw/event.h>
#include <rmw/get_network_flow_endpoints.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_service_names_and_types.h>
#include <rmw/get_topic_endpoint_info.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/names_and_types.h>
#include <rmw/rmw.h>
#include <rmw/topic_endpoint_info_array.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>
#include <test_msgs/srv/basic_types.h>

#include "common.h"
#include "oracle.h"

static const rosidl_message_type_support_t *string_ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
}

static const rosidl_service_type_support_t *srv_ts(void) {
  return ROSIDL_GET_SRV_TYPE_SUPPORT(test_msgs, srv, BasicTypes);
}

static void on_event(const void *user_data, size_t n) {
  (void)user_data;
  (void)n;
}

/* Swap a handle's implementation identifier for FOREIGN around one call. */
#define AS_FOREIGN(handle, report, name, expr)                \
  do {                                                        \
    const char *saved_ = (handle)->implementation_identifier; \
    (handle)->implementation_identifier = FOREIGN;            \
    report(name, expr);                                       \
    (handle)->implementation_identifier = saved_;             \
  } while (0)

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  rmw_init_options_t opts;
  rmw_context_t ctx;
  if (init_context(&opts, &ctx) != 0) {
    printf("init failed: %s\n", rmw_get_error_string().str);
    return 1;
  }
  rmw_reset_error();
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  rcutils_allocator_t no_alloc = rcutils_get_zero_initialized_allocator();
  rmw_qos_profile_t qos = rmw_qos_profile_default;
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_node_t *node = rmw_create_node(&ctx, "contract", "/");
  rmw_publisher_t *pub = node ? rmw_create_publisher(node, string_ts(), "/contract/topic", &qos, &popts) : NULL;
  rmw_subscription_t *sub = node ? rmw_create_subscription(node, string_ts(), "/contract/topic", &qos, &sopts) : NULL;
  rmw_service_t *srv = node ? rmw_create_service(node, srv_ts(), "/contract/srv", &qos) : NULL;
  rmw_client_t *cli = node ? rmw_create_client(node, srv_ts(), "/contract/srv", &qos) : NULL;
  rmw_guard_condition_t *gc = rmw_create_guard_condition(&ctx);
  if (!node || !pub || !sub || !srv || !cli || !gc) {
    printf("setup failed: %s\n", rmw_get_error_string().str);
    return 1;
  }
  rmw_reset_error();
  std_msgs__msg__String m;
  std_msgs__msg__String__init(&m);
  rosidl_runtime_c__String__assign(&m.data, "contract");
  rmw_qos_profile_t actual;
  size_t n = 0;
  bool taken = false;
  rmw_gid_t gid;

  /* --- publishers --- */
  report_rc("publisher actual qos null publisher", rmw_publisher_get_actual_qos(NULL, &actual));
  AS_FOREIGN(pub, report_rc, "publisher actual qos foreign", rmw_publisher_get_actual_qos(pub, &actual));
  AS_FOREIGN(pub, report_rc, "count matched foreign publisher", rmw_publisher_count_matched_subscriptions(pub, &n));
  report_rc("assert liveliness null", rmw_publisher_assert_liveliness(NULL));
  AS_FOREIGN(pub, report_rc, "assert liveliness foreign", rmw_publisher_assert_liveliness(pub));
  report_rc("assert liveliness", rmw_publisher_assert_liveliness(pub));
  rmw_time_t second = {1, 0};
  report_rc("wait for all acked null", rmw_publisher_wait_for_all_acked(NULL, second));
  AS_FOREIGN(pub, report_rc, "wait for all acked foreign", rmw_publisher_wait_for_all_acked(pub, second));
  report_rc("publish", rmw_publish(pub, &m, NULL));
  report_rc("wait for all acked", rmw_publisher_wait_for_all_acked(pub, second));
  AS_FOREIGN(pub, report_rc, "gid for publisher foreign", rmw_get_gid_for_publisher(pub, &gid));
  report_rc("gid for client null", rmw_get_gid_for_client(NULL, &gid));
  report_rc("gid for client null gid", rmw_get_gid_for_client(cli, NULL));
  AS_FOREIGN(cli, report_rc, "gid for client foreign", rmw_get_gid_for_client(cli, &gid));
  report_rc("gid for client", rmw_get_gid_for_client(cli, &gid));
  bool eq = false;
  rmw_gid_t other = gid;
  report_rc("compare gids null second", rmw_compare_gids_equal(&gid, NULL, &eq));
  other.implementation_identifier = FOREIGN;
  report_rc("compare gids foreign second", rmw_compare_gids_equal(&gid, &other, &eq));
  rmw_serialized_message_t ser = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&ser, 0, &alloc);
  report_rc("serialize", rmw_serialize(&m, string_ts(), &ser));
  report_rc("publish serialized null publisher", rmw_publish_serialized_message(NULL, &ser, NULL));
  report_rc("publish serialized null message", rmw_publish_serialized_message(pub, NULL, NULL));
  AS_FOREIGN(pub, report_rc, "publish serialized foreign", rmw_publish_serialized_message(pub, &ser, NULL));
  report_rc("publish serialized", rmw_publish_serialized_message(pub, &ser, NULL));
  std_msgs__msg__String back;
  std_msgs__msg__String__init(&back);
  ISO_RC("deserialize null buffer", rmw_deserialize(NULL, string_ts(), &back));
  ISO_RC("deserialize null type support", rmw_deserialize(&ser, NULL, &back));
  report_rc("deserialize", rmw_deserialize(&ser, string_ts(), &back));
  std_msgs__msg__String__fini(&back);

  /* --- subscriptions --- */
  AS_FOREIGN(sub, report_rc, "subscription actual qos foreign", rmw_subscription_get_actual_qos(sub, &actual));
  report_rc("subscription actual qos null qos", rmw_subscription_get_actual_qos(sub, NULL));
  report_rc("count matched publishers null subscription", rmw_subscription_count_matched_publishers(NULL, &n));
  report_rc("count matched publishers null count", rmw_subscription_count_matched_publishers(sub, NULL));
  AS_FOREIGN(sub, report_rc, "count matched publishers foreign", rmw_subscription_count_matched_publishers(sub, &n));
  rmw_serialized_message_t in = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&in, 0, &alloc);
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  report_rc("take serialized null subscription", rmw_take_serialized_message(NULL, &in, &taken, NULL));
  report_rc("take serialized null message", rmw_take_serialized_message(sub, NULL, &taken, NULL));
  report_rc("take serialized null taken", rmw_take_serialized_message(sub, &in, NULL, NULL));
  AS_FOREIGN(sub, report_rc, "take serialized foreign", rmw_take_serialized_message(sub, &in, &taken, NULL));
  report_rc("take serialized with info null info", rmw_take_serialized_message_with_info(sub, &in, &taken, NULL, NULL));
  report_rc("take serialized with info", rmw_take_serialized_message_with_info(sub, &in, &taken, &info, NULL));
  report_bool("take serialized with info taken", taken);
  rmw_serialized_message_fini(&in);
  AS_FOREIGN(sub, report_rc, "take with info foreign", rmw_take_with_info(sub, &m, &taken, &info, NULL));
  rmw_message_sequence_t seq = rmw_get_zero_initialized_message_sequence();
  rmw_message_info_sequence_t iseq = rmw_get_zero_initialized_message_info_sequence();
  rmw_message_sequence_init(&seq, 2, &alloc);
  rmw_message_info_sequence_init(&iseq, 2, &alloc);
  std_msgs__msg__String msgs[2];
  for (int i = 0; i < 2; i++) {
    std_msgs__msg__String__init(&msgs[i]);
    seq.data[i] = &msgs[i];
  }
  report_rc("take sequence null subscription", rmw_take_sequence(NULL, 2, &seq, &iseq, &n, NULL));
  report_rc("take sequence null messages", rmw_take_sequence(sub, 2, NULL, &iseq, &n, NULL));
  report_rc("take sequence null infos", rmw_take_sequence(sub, 2, &seq, NULL, &n, NULL));
  report_rc("take sequence null taken", rmw_take_sequence(sub, 2, &seq, &iseq, NULL, NULL));
  report_rc("take sequence count 0", rmw_take_sequence(sub, 0, &seq, &iseq, &n, NULL));
  report_rc("take sequence over capacity", rmw_take_sequence(sub, 3, &seq, &iseq, &n, NULL));
  AS_FOREIGN(sub, report_rc, "take sequence foreign", rmw_take_sequence(sub, 2, &seq, &iseq, &n, NULL));
  report_rc("take sequence", rmw_take_sequence(sub, 2, &seq, &iseq, &n, NULL));
  for (int i = 0; i < 2; i++) std_msgs__msg__String__fini(&msgs[i]);
  rmw_message_sequence_fini(&seq);
  rmw_message_info_sequence_fini(&iseq);
  report_rc("message callback null subscription", rmw_subscription_set_on_new_message_callback(NULL, on_event, NULL));
  AS_FOREIGN(sub, report_rc, "message callback foreign", rmw_subscription_set_on_new_message_callback(sub, on_event, NULL));
  report_rc("message callback set", rmw_subscription_set_on_new_message_callback(sub, on_event, NULL));
  report_rc("message callback clear", rmw_subscription_set_on_new_message_callback(sub, NULL, NULL));
  report_rc("request callback null service", rmw_service_set_on_new_request_callback(NULL, on_event, NULL));
  report_rc("request callback set", rmw_service_set_on_new_request_callback(srv, on_event, NULL));
  report_rc("request callback clear", rmw_service_set_on_new_request_callback(srv, NULL, NULL));
  report_rc("response callback null client", rmw_client_set_on_new_response_callback(NULL, on_event, NULL));
  report_rc("response callback set", rmw_client_set_on_new_response_callback(cli, on_event, NULL));
  report_rc("response callback clear", rmw_client_set_on_new_response_callback(cli, NULL, NULL));
  AS_FOREIGN(sub, report_rc, "destroy subscription foreign", rmw_destroy_subscription(node, sub));
  report_rc("destroy subscription null node", rmw_destroy_subscription(NULL, sub));

  /* --- events --- */
  rmw_event_t ev = rmw_get_zero_initialized_event();
  report_rc("publisher event init null event",
            rmw_publisher_event_init(NULL, pub, RMW_EVENT_OFFERED_DEADLINE_MISSED));
  ISO_RC("publisher event init null publisher",
            rmw_publisher_event_init(&ev, NULL, RMW_EVENT_OFFERED_DEADLINE_MISSED));
  AS_FOREIGN(pub, report_rc, "publisher event init foreign",
             rmw_publisher_event_init(&ev, pub, RMW_EVENT_OFFERED_DEADLINE_MISSED));
  report_rc("publisher event init subscription type",
            rmw_publisher_event_init(&ev, pub, RMW_EVENT_REQUESTED_DEADLINE_MISSED));
  ev = rmw_get_zero_initialized_event();
  report_rc("publisher event init unknown type", rmw_publisher_event_init(&ev, pub, RMW_EVENT_INVALID));
  ev = rmw_get_zero_initialized_event();
  report_rc("publisher event init", rmw_publisher_event_init(&ev, pub, RMW_EVENT_OFFERED_DEADLINE_MISSED));
  rmw_offered_deadline_missed_status_t dl;
  report_rc("take event null event", rmw_take_event(NULL, &dl, &taken));
  report_rc("take event null info", rmw_take_event(&ev, NULL, &taken));
  report_rc("take event null taken", rmw_take_event(&ev, &dl, NULL));
  report_rc("take event", rmw_take_event(&ev, &dl, &taken));
  report_bool("take event taken", taken);
  AS_FOREIGN(&ev, report_rc, "take event foreign", rmw_take_event(&ev, &dl, &taken));
  report_rc("event callback null event", rmw_event_set_callback(NULL, on_event, NULL));
  report_rc("event callback set", rmw_event_set_callback(&ev, on_event, NULL));
  report_rc("event callback clear", rmw_event_set_callback(&ev, NULL, NULL));
  AS_FOREIGN(&ev, report_rc, "event fini foreign", rmw_event_fini(&ev));
  report_rc("event fini null", rmw_event_fini(NULL));
  report_rc("event fini", rmw_event_fini(&ev));
  rmw_event_t sev = rmw_get_zero_initialized_event();
  ISO_RC("subscription event init null subscription",
            rmw_subscription_event_init(&sev, NULL, RMW_EVENT_REQUESTED_DEADLINE_MISSED));
  AS_FOREIGN(sub, report_rc, "subscription event init foreign",
             rmw_subscription_event_init(&sev, sub, RMW_EVENT_REQUESTED_DEADLINE_MISSED));
  report_rc("subscription event init publisher type",
            rmw_subscription_event_init(&sev, sub, RMW_EVENT_LIVELINESS_LOST));
  sev = rmw_get_zero_initialized_event();
  report_rc("subscription event init", rmw_subscription_event_init(&sev, sub, RMW_EVENT_MESSAGE_LOST));
  report_rc("subscription event fini", rmw_event_fini(&sev));
  report_bool("event type supported: invalid", rmw_event_type_is_supported(RMW_EVENT_INVALID));

  /* --- services --- */
  test_msgs__srv__BasicTypes_Request req;
  test_msgs__srv__BasicTypes_Request__init(&req);
  test_msgs__srv__BasicTypes_Response resp;
  test_msgs__srv__BasicTypes_Response__init(&resp);
  rmw_service_info_t sinfo;
  rmw_request_id_t rid;
  memset(&rid, 0, sizeof rid);
  int64_t sn = 0;
  report_rc("take request null service", rmw_take_request(NULL, &sinfo, &req, &taken));
  report_rc("take request null request", rmw_take_request(srv, &sinfo, NULL, &taken));
  AS_FOREIGN(srv, report_rc, "take request foreign", rmw_take_request(srv, &sinfo, &req, &taken));
  report_rc("take response null client", rmw_take_response(NULL, &sinfo, &resp, &taken));
  report_rc("take response null response", rmw_take_response(cli, &sinfo, NULL, &taken));
  report_rc("take response null taken", rmw_take_response(cli, &sinfo, &resp, NULL));
  AS_FOREIGN(cli, report_rc, "take response foreign", rmw_take_response(cli, &sinfo, &resp, &taken));
  AS_FOREIGN(cli, report_rc, "send request foreign", rmw_send_request(cli, &req, &sn));
  AS_FOREIGN(srv, report_rc, "send response foreign", rmw_send_response(srv, &rid, &resp));
  report_rc("service request qos null service", rmw_service_request_subscription_get_actual_qos(NULL, &actual));
  report_rc("service request qos null qos", rmw_service_request_subscription_get_actual_qos(srv, NULL));
  report_rc("service request qos", rmw_service_request_subscription_get_actual_qos(srv, &actual));
  report_rc("service response qos null service", rmw_service_response_publisher_get_actual_qos(NULL, &actual));
  report_rc("service response qos null qos", rmw_service_response_publisher_get_actual_qos(srv, NULL));
  report_rc("service response qos", rmw_service_response_publisher_get_actual_qos(srv, &actual));
  report_rc("client request qos null client", rmw_client_request_publisher_get_actual_qos(NULL, &actual));
  report_rc("client request qos null qos", rmw_client_request_publisher_get_actual_qos(cli, NULL));
  report_rc("client request qos", rmw_client_request_publisher_get_actual_qos(cli, &actual));
  report_rc("client response qos null client", rmw_client_response_subscription_get_actual_qos(NULL, &actual));
  report_rc("client response qos null qos", rmw_client_response_subscription_get_actual_qos(cli, NULL));
  report_rc("client response qos", rmw_client_response_subscription_get_actual_qos(cli, &actual));
  AS_FOREIGN(srv, report_rc, "destroy service foreign", rmw_destroy_service(node, srv));
  AS_FOREIGN(cli, report_rc, "destroy client foreign", rmw_destroy_client(node, cli));
  report_rc("destroy service null node", rmw_destroy_service(NULL, srv));
  report_rc("destroy client null node", rmw_destroy_client(NULL, cli));
  bool avail = false;
  AS_FOREIGN(cli, report_rc, "server is available foreign client", rmw_service_server_is_available(node, cli, &avail));
  test_msgs__srv__BasicTypes_Request__fini(&req);
  test_msgs__srv__BasicTypes_Response__fini(&resp);

  /* --- graph queries --- */
  size_t count = 0;
  report_rc("count subscribers null node", rmw_count_subscribers(NULL, "/contract/topic", &count));
  report_rc("count subscribers null topic", rmw_count_subscribers(node, NULL, &count));
  report_rc("count subscribers bad topic", rmw_count_subscribers(node, "bad topic", &count));
  report_rc("count subscribers null count", rmw_count_subscribers(node, "/contract/topic", NULL));
  AS_FOREIGN(node, report_rc, "count subscribers foreign node", rmw_count_subscribers(node, "/contract/topic", &count));
  report_rc("count subscribers", rmw_count_subscribers(node, "/contract/topic", &count));
  report_bool("count subscribers is 1", count == 1);
  AS_FOREIGN(node, report_rc, "count publishers foreign node", rmw_count_publishers(node, "/contract/topic", &count));
  report_rc("count clients null node", rmw_count_clients(NULL, "/contract/srv", &count));
  report_rc("count clients null name", rmw_count_clients(node, NULL, &count));
  report_rc("count clients bad name", rmw_count_clients(node, "bad name", &count));
  report_rc("count clients null count", rmw_count_clients(node, "/contract/srv", NULL));
  AS_FOREIGN(node, report_rc, "count clients foreign node", rmw_count_clients(node, "/contract/srv", &count));
  report_rc("count clients", rmw_count_clients(node, "/contract/srv", &count));
  report_bool("count clients is 1", count == 1);
  report_rc("count services null node", rmw_count_services(NULL, "/contract/srv", &count));
  report_rc("count services bad name", rmw_count_services(node, "bad name", &count));
  report_rc("count services", rmw_count_services(node, "/contract/srv", &count));
  report_bool("count services is 1", count == 1);

  rmw_topic_endpoint_info_array_t infos = rmw_get_zero_initialized_topic_endpoint_info_array();
  report_rc("publishers info null node", rmw_get_publishers_info_by_topic(NULL, &alloc, "/contract/topic", false, &infos));
  report_rc("publishers info null allocator", rmw_get_publishers_info_by_topic(node, NULL, "/contract/topic", false, &infos));
  report_rc("publishers info invalid allocator", rmw_get_publishers_info_by_topic(node, &no_alloc, "/contract/topic", false, &infos));
  report_rc("publishers info null topic", rmw_get_publishers_info_by_topic(node, &alloc, NULL, false, &infos));
  report_rc("publishers info null out", rmw_get_publishers_info_by_topic(node, &alloc, "/contract/topic", false, NULL));
  AS_FOREIGN(node, report_rc, "publishers info foreign node",
             rmw_get_publishers_info_by_topic(node, &alloc, "/contract/topic", false, &infos));
  report_rc("publishers info", rmw_get_publishers_info_by_topic(node, &alloc, "/contract/topic", false, &infos));
  report_bool("publishers info size 1", infos.size == 1);
  report_rc("publishers info non-zero out", rmw_get_publishers_info_by_topic(node, &alloc, "/contract/topic", false, &infos));
  report_rc("publishers info fini", rmw_topic_endpoint_info_array_fini(&infos, &alloc));
  report_rc("subscriptions info null node", rmw_get_subscriptions_info_by_topic(NULL, &alloc, "/contract/topic", false, &infos));
  report_rc("subscriptions info null topic", rmw_get_subscriptions_info_by_topic(node, &alloc, NULL, false, &infos));
  report_rc("subscriptions info null out", rmw_get_subscriptions_info_by_topic(node, &alloc, "/contract/topic", false, NULL));
  report_rc("subscriptions info", rmw_get_subscriptions_info_by_topic(node, &alloc, "/contract/topic", false, &infos));
  report_bool("subscriptions info size 1", infos.size == 1);
  report_rc("subscriptions info fini", rmw_topic_endpoint_info_array_fini(&infos, &alloc));

  rmw_names_and_types_t nt = rmw_get_zero_initialized_names_and_types();
  report_rc("subscriber names by node null node",
            rmw_get_subscriber_names_and_types_by_node(NULL, &alloc, "contract", "/", false, &nt));
  report_rc("subscriber names by node null allocator",
            rmw_get_subscriber_names_and_types_by_node(node, NULL, "contract", "/", false, &nt));
  report_rc("subscriber names by node null name",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, NULL, "/", false, &nt));
  report_rc("subscriber names by node bad name",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, "bad name", "/", false, &nt));
  report_rc("subscriber names by node bad namespace",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, "contract", "no_slash", false, &nt));
  report_rc("subscriber names by node unknown node",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, "nobody", "/", false, &nt));
  report_rc("subscriber names by node null out",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, "contract", "/", false, NULL));
  AS_FOREIGN(node, report_rc, "subscriber names by node foreign node",
             rmw_get_subscriber_names_and_types_by_node(node, &alloc, "contract", "/", false, &nt));
  report_rc("subscriber names by node", rmw_get_subscriber_names_and_types_by_node(node, &alloc, "contract", "/", false, &nt));
  report_bool("subscriber names by node size 1", nt.names.size == 1);
  report_rc("subscriber names by node non-zero out",
            rmw_get_subscriber_names_and_types_by_node(node, &alloc, "contract", "/", false, &nt));
  report_rc("subscriber names fini", rmw_names_and_types_fini(&nt));
  report_rc("service names by node null node",
            rmw_get_service_names_and_types_by_node(NULL, &alloc, "contract", "/", &nt));
  report_rc("service names by node bad name",
            rmw_get_service_names_and_types_by_node(node, &alloc, "bad name", "/", &nt));
  report_rc("service names by node unknown node",
            rmw_get_service_names_and_types_by_node(node, &alloc, "nobody", "/", &nt));
  report_rc("service names by node", rmw_get_service_names_and_types_by_node(node, &alloc, "contract", "/", &nt));
  report_bool("service names by node size 1", nt.names.size == 1);
  report_rc("service names by node fini", rmw_names_and_types_fini(&nt));
  report_rc("client names by node null out",
            rmw_get_client_names_and_types_by_node(node, &alloc, "contract", "/", NULL));
  report_rc("client names by node unknown node",
            rmw_get_client_names_and_types_by_node(node, &alloc, "nobody", "/", &nt));
  report_rc("client names by node", rmw_get_client_names_and_types_by_node(node, &alloc, "contract", "/", &nt));
  report_bool("client names by node size 1", nt.names.size == 1);
  report_rc("client names by node fini", rmw_names_and_types_fini(&nt));
  report_rc("service names null node", rmw_get_service_names_and_types(NULL, &alloc, &nt));
  report_rc("service names null allocator", rmw_get_service_names_and_types(node, NULL, &nt));
  report_rc("service names null out", rmw_get_service_names_and_types(node, &alloc, NULL));
  AS_FOREIGN(node, report_rc, "service names foreign node", rmw_get_service_names_and_types(node, &alloc, &nt));
  report_rc("service names", rmw_get_service_names_and_types(node, &alloc, &nt));
  report_rc("service names non-zero out", rmw_get_service_names_and_types(node, &alloc, &nt));
  report_rc("service names fini", rmw_names_and_types_fini(&nt));
  AS_FOREIGN(node, report_rc, "topic names foreign node", rmw_get_topic_names_and_types(node, &alloc, false, &nt));
  rcutils_string_array_t names = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_t nss = rcutils_get_zero_initialized_string_array();
  rcutils_string_array_t enclaves = rcutils_get_zero_initialized_string_array();
  report_rc("node names with enclaves null enclaves", rmw_get_node_names_with_enclaves(node, &names, &nss, NULL));
  AS_FOREIGN(node, report_rc, "node names with enclaves foreign node",
             rmw_get_node_names_with_enclaves(node, &names, &nss, &enclaves));
  AS_FOREIGN(node, report_rc, "node names foreign node", rmw_get_node_names(node, &names, &nss));
  AS_FOREIGN(node, report_ptr, "graph guard condition foreign node", rmw_node_get_graph_guard_condition(node));
  ISO_PTR("graph guard condition null node", rmw_node_get_graph_guard_condition(NULL));

  /* --- QoS checks, guard conditions, wait sets, allocations, log severity --- */
  rmw_qos_compatibility_type_t compat;
  char reason[64];
  report_rc("qos check null compatibility",
            rmw_qos_profile_check_compatible(rmw_qos_profile_default, rmw_qos_profile_default, NULL, reason, sizeof reason));
  report_rc("qos check null reason with size",
            rmw_qos_profile_check_compatible(rmw_qos_profile_default, rmw_qos_profile_default, &compat, NULL, 8));
  report_rc("qos check null reason no size",
            rmw_qos_profile_check_compatible(rmw_qos_profile_default, rmw_qos_profile_default, &compat, NULL, 0));
  report_rc("qos check", rmw_qos_profile_check_compatible(rmw_qos_profile_sensor_data, rmw_qos_profile_default,
                                                          &compat, reason, sizeof reason));
  report_bool("qos check best effort vs reliable is error", compat == RMW_QOS_COMPATIBILITY_ERROR);
  AS_FOREIGN(gc, report_rc, "trigger guard condition foreign", rmw_trigger_guard_condition(gc));
  /* Fast DDS destroys it anyway: in a child, so that gc lives on here. */
  ISOLATED(report_rc, "destroy guard condition foreign",
           (gc->implementation_identifier = FOREIGN, rmw_destroy_guard_condition(gc)));
  rmw_context_t zero_ctx = rmw_get_zero_initialized_context();
  report_ptr("create guard condition zero context", rmw_create_guard_condition(&zero_ctx));
  report_ptr("create wait set zero context", rmw_create_wait_set(&zero_ctx, 1));
  rmw_wait_set_t *ws = rmw_create_wait_set(&ctx, 0);
  report_ptr("create wait set size 0", ws);
  if (ws) {
    void *slots[1] = {gc->data};
    rmw_guard_conditions_t gcs = {1, slots};
    rmw_time_t zero = {0, 0};
    report_rc("trigger guard condition", rmw_trigger_guard_condition(gc));
    report_rc("wait set size 0 grows", rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &zero));
    report_rc("destroy wait set", rmw_destroy_wait_set(ws));
  }
  size_t ser_size = 0;
  report_rc("serialized message size", rmw_get_serialized_message_size(string_ts(), NULL, &ser_size));
  rmw_network_flow_endpoint_array_t flows = rmw_get_zero_initialized_network_flow_endpoint_array();
  report_rc("publisher network flow endpoints", rmw_publisher_get_network_flow_endpoints(pub, &alloc, &flows));
  (void)rmw_network_flow_endpoint_array_fini(&flows); /* rmw's own; fails on a zero array */
  rmw_reset_error();
  report_rc("set log severity invalid", rmw_set_log_severity((rmw_log_severity_t)99));

  rmw_serialized_message_fini(&ser);
  std_msgs__msg__String__fini(&m);
  report_rc("destroy guard condition", rmw_destroy_guard_condition(gc));
  report_rc("destroy client", rmw_destroy_client(node, cli));
  report_rc("destroy service", rmw_destroy_service(node, srv));
  report_rc("destroy subscription", rmw_destroy_subscription(node, sub));
  report_rc("destroy publisher", rmw_destroy_publisher(node, pub));
  report_rc("destroy node", rmw_destroy_node(node));
  report_rc("shutdown", rmw_shutdown(&ctx));
  report_rc("context fini", rmw_context_fini(&ctx));
  report_rc("options fini", rmw_init_options_fini(&opts));
  printf("done\n");
  return 0;
}
