/* libtracer C API test program (ros_tests/test_capi.py, built with AddressSanitizer): every
 * call with NULL arguments and with destroyed handles returns its code and sets the thread's
 * error string; nothing crashes, nothing is read after it was freed.
 *
 * Prints one line per case, "case <name> rc=<code> fn=<function the error string names>", then
 * "done". */
#include <stdio.h>
#include <string.h>

#include "tracer.h"

/* rc, and the function the thread's error string names (up to its first ':'): a failure must
 * name the call that failed, not an earlier one. */
static void report(const char *name, tracer_result_t rc) {
  const char *e = tracer_last_error();
  const char *colon = e ? strchr(e, ':') : NULL;
  int len = colon ? (int)(colon - e) : 0;
  printf("case %s rc=%d fn=%.*s\n", name, (int)rc, len, e ? e : "");
}

#define CASE(name, call) report(name, call)

int main(void) {
  tracer_context_t *ctx = NULL;
  tracer_publisher_t *pub = NULL;
  tracer_subscription_t *sub = NULL;
  tracer_loan_t *loan = NULL;
  tracer_view_t *view = NULL;
  tracer_graph_t *graph = NULL;
  uint8_t *mem = NULL;
  const uint8_t *data = NULL;
  size_t n = 0;
  uint8_t buf[64];
  tracer_sample_info_t info;
  tracer_entity_t ent;
  static const uint8_t msg[] = {0, 1, 0, 0, 3, 0, 0, 0, 'h', 'i', 0};

  /* NULL everywhere */
  CASE("context_create_null_out", tracer_context_create("n", "/", -1, NULL));
  CASE("context_create_null_name", tracer_context_create(NULL, "/", -1, &ctx));
  CASE("context_destroy_null", tracer_context_destroy(NULL));
  CASE("publisher_create_null_ctx", tracer_publisher_create(NULL, "/t", "std_msgs/msg/String", "", NULL, &pub));
  CASE("publish_null_pub", tracer_publish(NULL, msg, sizeof msg));
  CASE("set_definition_null_pub", tracer_publisher_set_definition(NULL, "string data"));
  CASE("subscription_create_null_ctx", tracer_subscription_create(NULL, "/t", "std_msgs/msg/String", NULL, &sub));
  CASE("take_null_sub", tracer_take(NULL, buf, sizeof buf, &n, &info));
  CASE("wait_null_sub", tracer_subscription_wait(NULL, 0));
  uint64_t lost = 0;
  CASE("take_lost_null_sub", tracer_subscription_take_lost(NULL, &lost));
  CASE("view_take_null_sub", tracer_view_take(NULL, &view, &data, &n, NULL));
  CASE("view_return_null", tracer_view_return(NULL));
  CASE("loan_borrow_null_pub", tracer_loan_borrow(NULL, 16, &loan, &mem));
  CASE("loan_publish_null", tracer_loan_publish(NULL, 4));
  CASE("loan_return_null", tracer_loan_return(NULL));
  CASE("graph_create_null_ctx", tracer_graph_create(NULL, &graph));
  CASE("graph_count_null", tracer_graph_count(NULL, &n));
  CASE("graph_get_null", tracer_graph_get(NULL, 0, &ent));
  CASE("set_callback_null", tracer_subscription_set_callback(NULL, NULL, NULL));
  CASE("subscription_count_null", tracer_publisher_subscription_count(NULL, &n));
  tracer_server_t *srv = NULL;
  tracer_client_t *cli = NULL;
  tracer_request_id_t rid;
  uint64_t seq;
  CASE("server_create_null_ctx", tracer_server_create(NULL, "/s", "test_msgs/srv/Empty", "", NULL, &srv));
  CASE("server_take_null", tracer_server_take_request(NULL, buf, sizeof buf, &n, &rid));
  CASE("server_send_response_null", tracer_server_send_response(NULL, &rid, msg, sizeof msg));
  CASE("client_create_null_ctx", tracer_client_create(NULL, "/s", "test_msgs/srv/Empty", "", NULL, &cli));
  CASE("client_send_null", tracer_client_send_request(NULL, msg, sizeof msg, &seq));
  CASE("client_take_null", tracer_client_take_response(NULL, buf, sizeof buf, &n, &seq));

  /* Live handles, then NULL arguments beside them */
  if (tracer_context_create("bad_use", "/", -1, &ctx) != TRACER_OK) {
    printf("no context: %s\n", tracer_last_error());
    return 1;
  }
  CASE("publisher_create_null_topic", tracer_publisher_create(ctx, NULL, "std_msgs/msg/String", "", NULL, &pub));
  CASE("publisher_create_bad_type", tracer_publisher_create(ctx, "/t", "String", "", NULL, &pub));
  CASE("publisher_create_bad_hash", tracer_publisher_create(ctx, "/t", "std_msgs/msg/String", "RIHS01_xyz", NULL, &pub));
  tracer_qos_t bad_qos = {7, 0, 0, 0};
  CASE("publisher_create_bad_qos", tracer_publisher_create(ctx, "/t", "std_msgs/msg/String", "", &bad_qos, &pub));
  CASE("publisher_create_bad_topic", tracer_publisher_create(ctx, "t//x", "std_msgs/msg/String", "", NULL, &pub));
  CASE("publisher_create_ok", tracer_publisher_create(ctx, "/t", "std_msgs/msg/String", "", NULL, &pub));
  CASE("publish_null_data", tracer_publish(pub, NULL, 4));
  CASE("set_definition_null_text", tracer_publisher_set_definition(pub, NULL));
  CASE("set_definition_ok", tracer_publisher_set_definition(pub, "string data"));
  CASE("publish_not_cdr", tracer_publish(pub, (const uint8_t *)"xy", 2));
  CASE("subscription_create_ok", tracer_subscription_create(ctx, "/t", "std_msgs/msg/String", NULL, &sub));
  CASE("take_null_buffer", tracer_take(sub, NULL, 0, &n, NULL));
  CASE("take_null_len", tracer_take(sub, buf, sizeof buf, NULL, NULL));
  CASE("take_empty", tracer_take(sub, buf, sizeof buf, &n, NULL));
  CASE("wait_timeout", tracer_subscription_wait(sub, 1000000));
  CASE("publish_ok", tracer_publish(pub, msg, sizeof msg));
  CASE("wait_ok", tracer_subscription_wait(sub, 5000000000LL));
  CASE("take_too_small", tracer_take(sub, buf, 4, &n, NULL));
  CASE("take_ok", tracer_take(sub, buf, sizeof buf, &n, &info));
  CASE("take_lost_null_out", tracer_subscription_take_lost(sub, NULL));
  CASE("take_lost_ok", tracer_subscription_take_lost(sub, &lost));
  CASE("loan_borrow_null_out", tracer_loan_borrow(pub, 16, NULL, &mem));
  CASE("loan_borrow_ok", tracer_loan_borrow(pub, 16, &loan, &mem));
  CASE("loan_return_ok", tracer_loan_return(loan));
  /* Destroyed handles */
  CASE("loan_return_twice", tracer_loan_return(loan));
  CASE("loan_publish_returned", tracer_loan_publish(loan, 4));
  CASE("publish_ok_again", tracer_publish(pub, msg, sizeof msg));
  CASE("wait_ok_again", tracer_subscription_wait(sub, 5000000000LL));
  CASE("view_take_ok", tracer_view_take(sub, &view, &data, &n, NULL));
  CASE("view_return_ok", tracer_view_return(view));
  CASE("view_return_twice", tracer_view_return(view));
  CASE("graph_create_ok", tracer_graph_create(ctx, &graph));
  CASE("graph_get_past_end", tracer_graph_get(graph, 100000, &ent));
  CASE("graph_destroy_ok", tracer_graph_destroy(graph));
  CASE("graph_count_destroyed", tracer_graph_count(graph, &n));
  CASE("publisher_destroy_ok", tracer_publisher_destroy(pub));
  CASE("publish_destroyed", tracer_publish(pub, msg, sizeof msg));
  CASE("set_definition_destroyed", tracer_publisher_set_definition(pub, "string data"));
  CASE("publisher_destroy_twice", tracer_publisher_destroy(pub));
  CASE("loan_borrow_destroyed", tracer_loan_borrow(pub, 16, &loan, &mem));
  CASE("subscription_destroy_ok", tracer_subscription_destroy(sub));
  CASE("take_destroyed", tracer_take(sub, buf, sizeof buf, &n, NULL));
  CASE("wait_destroyed", tracer_subscription_wait(sub, 0));
  CASE("take_lost_destroyed", tracer_subscription_take_lost(sub, &lost));
  CASE("subscription_destroy_twice", tracer_subscription_destroy(sub));
  CASE("server_create_ok", tracer_server_create(ctx, "/s", "test_msgs/srv/Empty", "", NULL, &srv));
  CASE("client_create_ok", tracer_client_create(ctx, "/s", "test_msgs/srv/Empty", "", NULL, &cli));
  CASE("server_send_response_null_id", tracer_server_send_response(srv, NULL, msg, sizeof msg));
  CASE("client_send_null_data", tracer_client_send_request(cli, NULL, 0, &seq));
  CASE("server_wait_timeout", tracer_server_wait(srv, 1000000));
  CASE("server_destroy_ok", tracer_server_destroy(srv));
  CASE("server_take_destroyed", tracer_server_take_request(srv, buf, sizeof buf, &n, &rid));
  CASE("client_destroy_ok", tracer_client_destroy(cli));
  CASE("client_send_destroyed", tracer_client_send_request(cli, msg, sizeof msg, &seq));
  /* A handle of one type passed as another */
  CASE("wrong_type", tracer_subscription_destroy((tracer_subscription_t *)ctx));
  CASE("context_destroy_ok", tracer_context_destroy(ctx));
  CASE("context_destroy_twice", tracer_context_destroy(ctx));
  CASE("publisher_create_destroyed_ctx", tracer_publisher_create(ctx, "/t", "std_msgs/msg/String", "", NULL, &pub));
  CASE("garbage_handle", tracer_publisher_destroy((tracer_publisher_t *)(uintptr_t)0xdeadbeef));
  printf("result_str %s\n", tracer_result_str(TRACER_ERR_INVALID_HANDLE));
  printf("done\n");
  return 0;
}
