/* What the rmw API answers around rmw_shutdown and for arguments of the wrong kind, printed as
 * one "case <name> rc=<rmw_ret_t or ptr/null> err=<0|1>" line per call, so that the pytest driver
 * runs it once on rmw_tracer and once on Fast DDS (the oracle) and compares the lines.
 * `err` says whether the call left an rmw error string set; it is reset after every case.
 *
 * Nothing here asserts by itself: the driver holds the expected values and the comparison. The
 * program exits 0 unless it could not even make the context it needs.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/error_handling.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/names_and_types.h>
#include <rmw/rmw.h>
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

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  rmw_init_options_t opts;
  rmw_context_t ctx;
  if (init_context(&opts, &ctx) != 0) {
    printf("init failed: %s\n", rmw_get_error_string().str);
    return 1;
  }
  rmw_reset_error();
  rmw_qos_profile_t qos = rmw_qos_profile_default;
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_node_t *node = rmw_create_node(&ctx, "oracle", "/");
  report_ptr("create node", node);
  rmw_publisher_t *pub = rmw_create_publisher(node, string_ts(), "/oracle/topic", &qos, &popts);
  report_ptr("create publisher", pub);
  rmw_subscription_t *sub = rmw_create_subscription(node, string_ts(), "/oracle/topic", &qos, &sopts);
  report_ptr("create subscription", sub);
  rmw_service_t *srv = rmw_create_service(node, srv_ts(), "/oracle/srv", &qos);
  report_ptr("create service", srv);
  rmw_client_t *cli = rmw_create_client(node, srv_ts(), "/oracle/srv", &qos);
  report_ptr("create client", cli);

  /* --- null and zero-initialized arguments, bogus type supports, foreign handles --- */
  rmw_context_t zero_ctx = rmw_get_zero_initialized_context();
  report_rc("shutdown null", rmw_shutdown(NULL));
  report_rc("shutdown zero context", rmw_shutdown(&zero_ctx));
  report_rc("context fini null", rmw_context_fini(NULL));
  report_rc("context fini zero context", rmw_context_fini(&zero_ctx));
  report_ptr("create node null context", rmw_create_node(NULL, "x", "/"));
  report_ptr("create node zero context", rmw_create_node(&zero_ctx, "x", "/"));
  report_ptr("create node null name", rmw_create_node(&ctx, NULL, "/"));
  report_ptr("create node null namespace", rmw_create_node(&ctx, "x", NULL));
  rosidl_message_type_support_t bogus_ts = *string_ts();
  bogus_ts.typesupport_identifier = "bogus_typesupport";
  bogus_ts.func = get_message_typesupport_handle_function;
  report_ptr("create publisher bogus type support",
             rmw_create_publisher(node, &bogus_ts, "/oracle/bogus", &qos, &popts));
  report_ptr("create subscription bogus type support",
             rmw_create_subscription(node, &bogus_ts, "/oracle/bogus", &qos, &sopts));
  rosidl_service_type_support_t bogus_srv = *srv_ts();
  bogus_srv.typesupport_identifier = "bogus_typesupport";
  bogus_srv.func = get_service_typesupport_handle_function;
  report_ptr("create service bogus type support", rmw_create_service(node, &bogus_srv, "/oracle/bogus", &qos));
  report_ptr("create client bogus type support", rmw_create_client(node, &bogus_srv, "/oracle/bogus", &qos));
  report_ptr("create publisher null type support", rmw_create_publisher(node, NULL, "/oracle/x", &qos, &popts));
  report_ptr("create publisher null topic", rmw_create_publisher(node, string_ts(), NULL, &qos, &popts));
  report_ptr("create publisher null qos", rmw_create_publisher(node, string_ts(), "/oracle/x", NULL, &popts));
  report_ptr("create publisher null options", rmw_create_publisher(node, string_ts(), "/oracle/x", &qos, NULL));
  report_ptr("create subscription null options", rmw_create_subscription(node, string_ts(), "/oracle/x", &qos, NULL));
  report_ptr("create service null name", rmw_create_service(node, srv_ts(), NULL, &qos));
  report_ptr("create client null qos", rmw_create_client(node, srv_ts(), "/oracle/x", NULL));
  report_ptr("create guard condition null context", rmw_create_guard_condition(NULL));
  report_ptr("create wait set null context", rmw_create_wait_set(NULL, 1));

  if (node && pub && sub && srv && cli) {
    const char *saved_node = node->implementation_identifier;
    node->implementation_identifier = FOREIGN;
    report_ptr("create publisher foreign node", rmw_create_publisher(node, string_ts(), "/oracle/x", &qos, &popts));
    report_rc("destroy node foreign", rmw_destroy_node(node));
    node->implementation_identifier = saved_node;
    const char *saved_pub = pub->implementation_identifier;
    pub->implementation_identifier = FOREIGN;
    std_msgs__msg__String m;
    std_msgs__msg__String__init(&m);
    report_rc("publish foreign publisher", rmw_publish(pub, &m, NULL));
    report_rc("destroy publisher foreign", rmw_destroy_publisher(node, pub));
    pub->implementation_identifier = saved_pub;
    report_rc("publish null message", rmw_publish(pub, NULL, NULL));
    report_rc("publish null publisher", rmw_publish(NULL, &m, NULL));
    bool taken = false;
    report_rc("take null taken", rmw_take(sub, &m, NULL, NULL));
    report_rc("take null message", rmw_take(sub, NULL, &taken, NULL));
    const char *saved_sub = sub->implementation_identifier;
    sub->implementation_identifier = FOREIGN;
    report_rc("take foreign subscription", rmw_take(sub, &m, &taken, NULL));
    sub->implementation_identifier = saved_sub;
    report_rc("destroy publisher null node", rmw_destroy_publisher(NULL, pub));
    report_rc("destroy publisher null", rmw_destroy_publisher(node, NULL));
    report_rc("destroy subscription null", rmw_destroy_subscription(node, NULL));
    report_rc("destroy service null", rmw_destroy_service(node, NULL));
    report_rc("destroy client null", rmw_destroy_client(node, NULL));
    report_rc("destroy wait set null", rmw_destroy_wait_set(NULL));
    report_rc("destroy guard condition null", rmw_destroy_guard_condition(NULL));
    report_rc("destroy node null", rmw_destroy_node(NULL));
    ISO_RC("trigger guard condition null", rmw_trigger_guard_condition(NULL));
    size_t n = 0;
    report_rc("count matched null publisher", rmw_publisher_count_matched_subscriptions(NULL, &n));
    report_rc("count matched null count", rmw_publisher_count_matched_subscriptions(pub, NULL));
    rmw_qos_profile_t actual;
    report_rc("publisher actual qos null", rmw_publisher_get_actual_qos(pub, NULL));
    report_rc("subscription actual qos null", rmw_subscription_get_actual_qos(NULL, &actual));
    rmw_gid_t gid;
    memset(&gid, 0, sizeof gid);
    report_rc("gid for publisher null", rmw_get_gid_for_publisher(NULL, &gid));
    report_rc("gid for publisher null gid", rmw_get_gid_for_publisher(pub, NULL));
    report_rc("gid for publisher", rmw_get_gid_for_publisher(pub, &gid));
    bool eq = false;
    report_rc("compare gids null", rmw_compare_gids_equal(NULL, &gid, &eq));
    report_rc("compare gids null result", rmw_compare_gids_equal(&gid, &gid, NULL));
    int64_t seq = 0;
    test_msgs__srv__BasicTypes_Request req;
    test_msgs__srv__BasicTypes_Request__init(&req);
    report_rc("send request null sequence", rmw_send_request(cli, &req, NULL));
    report_rc("send request null request", rmw_send_request(cli, NULL, &seq));
    report_rc("send request null client", rmw_send_request(NULL, &req, &seq));
    rmw_service_info_t info;
    report_rc("take request null header", rmw_take_request(srv, NULL, &req, &taken));
    report_rc("take request null taken", rmw_take_request(srv, &info, &req, NULL));
    report_rc("take response null header", rmw_take_response(cli, NULL, &req, &taken));
    test_msgs__srv__BasicTypes_Response resp;
    test_msgs__srv__BasicTypes_Response__init(&resp);
    rmw_request_id_t rid;
    memset(&rid, 0, sizeof rid);
    report_rc("send response null header", rmw_send_response(srv, NULL, &resp));
    report_rc("send response null response", rmw_send_response(srv, &rid, NULL));
    report_rc("send response null service", rmw_send_response(NULL, &rid, &resp));
    bool avail = false;
    report_rc("server is available null node", rmw_service_server_is_available(NULL, cli, &avail));
    report_rc("server is available null result", rmw_service_server_is_available(node, cli, NULL));
    rmw_names_and_types_t nt = rmw_get_zero_initialized_names_and_types();
    rcutils_allocator_t alloc = rcutils_get_default_allocator();
    report_rc("publisher names by node null node",
              rmw_get_publisher_names_and_types_by_node(NULL, &alloc, "oracle", "/", false, &nt));
    report_rc("publisher names by node unknown node",
              rmw_get_publisher_names_and_types_by_node(node, &alloc, "nobody", "/", false, &nt));
    report_rc("publisher names by node bad name",
              rmw_get_publisher_names_and_types_by_node(node, &alloc, "bad name", "/", false, &nt));
    size_t count = 0;
    report_rc("count publishers null topic", rmw_count_publishers(node, NULL, &count));
    report_rc("count publishers bad topic", rmw_count_publishers(node, "bad topic", &count));
    report_rc("count publishers null count", rmw_count_publishers(node, "/oracle/topic", NULL));

    /* --- init and init options --- */
    rmw_init_options_t zero_opts = rmw_get_zero_initialized_init_options();
    rmw_context_t c2 = rmw_get_zero_initialized_context();
    report_rc("init zero options", rmw_init(&zero_opts, &c2));
    report_rc("init initialized context", rmw_init(&opts, &ctx));
    report_rc("init null options", rmw_init(NULL, &c2));
    report_rc("init options init twice", rmw_init_options_init(&opts, rcutils_get_default_allocator()));
    rcutils_allocator_t bad_alloc = rcutils_get_zero_initialized_allocator();
    rmw_init_options_t o3 = rmw_get_zero_initialized_init_options();
    report_rc("init options bad allocator", rmw_init_options_init(&o3, bad_alloc));
    report_rc("init options copy null", rmw_init_options_copy(NULL, &o3));
    report_rc("init options copy into initialized", rmw_init_options_copy(&opts, &opts));
    report_rc("init options fini zero", rmw_init_options_fini(&o3));
    rmw_init_options_t o4 = rmw_get_zero_initialized_init_options();
    report_rc("init options copy zero src", rmw_init_options_copy(&o3, &o4));
    report_rc("context fini before shutdown", rmw_context_fini(&ctx));
    report_ptr("create node invalid name", rmw_create_node(&ctx, "bad name", "/"));
    report_ptr("create node invalid namespace", rmw_create_node(&ctx, "x", "no_slash"));
    report_ptr("create publisher invalid topic", rmw_create_publisher(node, string_ts(), "bad topic", &qos, &popts));
    report_ptr("create service invalid name", rmw_create_service(node, srv_ts(), "bad name", &qos));

    /* --- take, wait, graph queries --- */
    rmw_message_info_t minfo = rmw_get_zero_initialized_message_info();
    report_rc("take with info null info", rmw_take_with_info(sub, &m, &taken, NULL, NULL));
    report_rc("take with info null taken", rmw_take_with_info(sub, &m, NULL, &minfo, NULL));
    rmw_wait_set_t *ws0 = rmw_create_wait_set(&ctx, 1);
    rmw_time_t zero_t = {0, 0};
    report_rc("wait null wait set", rmw_wait(NULL, NULL, NULL, NULL, NULL, NULL, &zero_t));
    if (ws0) {
      const char *saved_ws = ws0->implementation_identifier;
      ws0->implementation_identifier = FOREIGN;
      report_rc("wait foreign wait set", rmw_wait(NULL, NULL, NULL, NULL, NULL, ws0, &zero_t));
      report_rc("destroy wait set foreign", rmw_destroy_wait_set(ws0));
      ws0->implementation_identifier = saved_ws;
      report_rc("wait empty", rmw_wait(NULL, NULL, NULL, NULL, NULL, ws0, &zero_t));
      report_rc("destroy wait set", rmw_destroy_wait_set(ws0));
    }
    rcutils_string_array_t nn = rcutils_get_zero_initialized_string_array();
    rcutils_string_array_t ns = rcutils_get_zero_initialized_string_array();
    report_rc("node names null names", rmw_get_node_names(node, NULL, &ns));
    report_rc("node names null node", rmw_get_node_names(NULL, &nn, &ns));
    if (rcutils_string_array_init(&nn, 1, &alloc) == RCUTILS_RET_OK) {
      report_rc("node names non-zero array", rmw_get_node_names(node, &nn, &ns));
      rcutils_string_array_fini(&nn);
    }
    rmw_names_and_types_t tnt = rmw_get_zero_initialized_names_and_types();
    report_rc("topic names null allocator", rmw_get_topic_names_and_types(node, NULL, false, &tnt));
    report_rc("topic names null out", rmw_get_topic_names_and_types(node, &alloc, false, NULL));
    rmw_ret_t trc = rmw_get_topic_names_and_types(node, &alloc, false, &tnt);
    report_rc("topic names", trc);
    if (trc == RMW_RET_OK) {
      report_rc("topic names non-zero out", rmw_get_topic_names_and_types(node, &alloc, false, &tnt));
      report_rc("names and types fini", rmw_names_and_types_fini(&tnt));
    }
    rmw_serialized_message_t ser = rmw_get_zero_initialized_serialized_message();
    ISO_RC("serialize null message", rmw_serialize(NULL, string_ts(), &ser));
    ISO_RC("serialize null type support", rmw_serialize(&m, NULL, &ser));
    ISO_RC("serialize null out", rmw_serialize(&m, string_ts(), NULL));
    ISO_RC("deserialize null message", rmw_deserialize(NULL, string_ts(), &m));

    /* --- a response to a client that is gone --- */
    rmw_client_t *gone = rmw_create_client(node, srv_ts(), "/oracle/srv", &qos);
    report_ptr("create second client", gone);
    if (gone) {
      for (int i = 0; i < 200; i++) {  /* matched both ways before the request */
        bool up = false;
        if (rmw_service_server_is_available(node, gone, &up) == RMW_RET_OK && up) break;
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
      }
      rmw_reset_error();
      report_rc("send request", rmw_send_request(gone, &req, &seq));
      bool got = false;
      rmw_wait_set_t *wsr = rmw_create_wait_set(&ctx, 1);
      for (int i = 0; i < 200 && !got; i++) {
        void *slot[1] = {srv->data};
        rmw_services_t ss = {1, slot};
        rmw_time_t t10 = {0, 10 * 1000 * 1000};
        if (rmw_wait(NULL, NULL, &ss, NULL, NULL, wsr, &t10) == RMW_RET_OK && slot[0]) {
          rmw_take_request(srv, &info, &req, &got);
        }
      }
      rmw_reset_error();
      if (wsr) rmw_destroy_wait_set(wsr);
      report_bool("request taken", got);
      report_rc("destroy second client", rmw_destroy_client(node, gone));
      if (got) {
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);  /* let the client's going reach the server's side */
        report_rc("send response to a client that is gone", rmw_send_response(srv, &info.request_id, &resp));
      }
    }

    /* --- after rmw_shutdown: which entities can still be made, used and destroyed --- */
    report_rc("shutdown", rmw_shutdown(&ctx));
    report_rc("shutdown again", rmw_shutdown(&ctx));
    rmw_node_t *late_node = rmw_create_node(&ctx, "late", "/");
    report_ptr("after shutdown: create node", late_node);
    rmw_publisher_t *late_pub = rmw_create_publisher(node, string_ts(), "/oracle/late", &qos, &popts);
    report_ptr("after shutdown: create publisher", late_pub);
    rmw_subscription_t *late_sub = rmw_create_subscription(node, string_ts(), "/oracle/late", &qos, &sopts);
    report_ptr("after shutdown: create subscription", late_sub);
    rmw_service_t *late_srv = rmw_create_service(node, srv_ts(), "/oracle/late_srv", &qos);
    report_ptr("after shutdown: create service", late_srv);
    rmw_client_t *late_cli = rmw_create_client(node, srv_ts(), "/oracle/late_srv", &qos);
    report_ptr("after shutdown: create client", late_cli);
    rmw_guard_condition_t *gc = rmw_create_guard_condition(&ctx);
    report_ptr("after shutdown: create guard condition", gc);
    rmw_wait_set_t *ws = rmw_create_wait_set(&ctx, 4);
    report_ptr("after shutdown: create wait set", ws);
    if (gc) report_rc("after shutdown: trigger guard condition", rmw_trigger_guard_condition(gc));
    if (gc && ws) {
      void *slots[1] = {gc->data};
      rmw_guard_conditions_t gcs = {1, slots};
      rmw_time_t zero = {0, 0};
      report_rc("after shutdown: wait", rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &zero));
    }
    rosidl_runtime_c__String__assign(&m.data, "after shutdown");
    report_rc("after shutdown: publish", rmw_publish(pub, &m, NULL));
    taken = false;
    report_rc("after shutdown: take", rmw_take(sub, &m, &taken, NULL));
    report_rc("after shutdown: count matched", rmw_publisher_count_matched_subscriptions(pub, &n));
    report_rc("after shutdown: count publishers", rmw_count_publishers(node, "/oracle/topic", &count));
    rcutils_string_array_t names = rcutils_get_zero_initialized_string_array();
    rcutils_string_array_t nss = rcutils_get_zero_initialized_string_array();
    rmw_ret_t rc = rmw_get_node_names(node, &names, &nss);
    report_rc("after shutdown: node names", rc);
    if (rc == RMW_RET_OK) {
      rcutils_string_array_fini(&names);
      rcutils_string_array_fini(&nss);
    }
    report_rc("after shutdown: send request", rmw_send_request(cli, &req, &seq));
    report_rc("after shutdown: server is available", rmw_service_server_is_available(node, cli, &avail));
    report_rc("after shutdown: graph guard condition",
              rmw_node_get_graph_guard_condition(node) ? RMW_RET_OK : RMW_RET_ERROR);
    if (ws) report_rc("after shutdown: destroy wait set", rmw_destroy_wait_set(ws));
    if (gc) report_rc("after shutdown: destroy guard condition", rmw_destroy_guard_condition(gc));
    if (late_cli) report_rc("after shutdown: destroy late client", rmw_destroy_client(node, late_cli));
    if (late_srv) report_rc("after shutdown: destroy late service", rmw_destroy_service(node, late_srv));
    if (late_sub) report_rc("after shutdown: destroy late subscription", rmw_destroy_subscription(node, late_sub));
    if (late_pub) report_rc("after shutdown: destroy late publisher", rmw_destroy_publisher(node, late_pub));
    if (late_node) report_rc("after shutdown: destroy late node", rmw_destroy_node(late_node));
    report_rc("after shutdown: destroy client", rmw_destroy_client(node, cli));
    report_rc("after shutdown: destroy service", rmw_destroy_service(node, srv));
    report_rc("after shutdown: destroy subscription", rmw_destroy_subscription(node, sub));
    report_rc("after shutdown: destroy publisher", rmw_destroy_publisher(node, pub));
    report_rc("after shutdown: destroy node", rmw_destroy_node(node));
    test_msgs__srv__BasicTypes_Request__fini(&req);
    test_msgs__srv__BasicTypes_Response__fini(&resp);
    std_msgs__msg__String__fini(&m);
  } else {
    report_rc("shutdown", rmw_shutdown(&ctx));
  }
  report_rc("context fini", rmw_context_fini(&ctx));
  report_bool("context zeroed", ctx.implementation_identifier == NULL && ctx.impl == NULL);
  report_rc("context fini again", rmw_context_fini(&ctx));
  report_rc("shutdown after fini", rmw_shutdown(&ctx));
  report_rc("options fini", rmw_init_options_fini(&opts));
  printf("done\n");
  return 0;
}
