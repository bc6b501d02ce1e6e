/* The rmw API of librmw_tracer.so called directly (no rcl), checking what rmw documents for the
 * R1 entry points: argument validation and error codes, the error string, rmw_wait's timeout
 * semantics, guard conditions, on-new-message callbacks, actual QoS, gids, serialized messages,
 * take_sequence and the context life cycle. Run under LD_PRELOAD of librmw_tracer.so.
 *
 * Prints "ok <check>" per passing check and "FAIL <check>: <why>" per failing one; exit status
 * is the number of failures (capped at 100).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/error_handling.h>
#include <rmw/rmw.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>

#include "common.h"

static int error_contains(const char *text) {
  return strstr(rmw_get_error_string().str, text) != NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const rosidl_message_type_support_t *string_ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
}

static void set_string(std_msgs__msg__String *m, const char *s) {
  rosidl_runtime_c__String__assign(&m->data, s);
}

static atomic_size_t callback_events;
static void on_new_message(const void *user_data, size_t n) {
  (void)user_data;
  atomic_fetch_add(&callback_events, n);
}

/* A callback that takes at once, from the notifying thread (as an executor might). */
static atomic_int taken_in_callback;
static void take_in_callback(const void *user_data, size_t n) {
  const rmw_subscription_t *s = (const rmw_subscription_t *)user_data;
  std_msgs__msg__String m;
  std_msgs__msg__String__init(&m);
  for (size_t i = 0; i < n; i++) {
    bool t = false;
    if (rmw_take(s, &m, &t, NULL) == RMW_RET_OK && t) atomic_fetch_add(&taken_in_callback, 1);
  }
  std_msgs__msg__String__fini(&m);
}

static rmw_guard_condition_t *async_gc;
static void *trigger_later(void *arg) {
  (void)arg;
  struct timespec d = {0, 50 * 1000 * 1000};
  nanosleep(&d, NULL);
  rmw_trigger_guard_condition(async_gc);
  return NULL;
}

/* rmw_wait on one guard condition. */
static rmw_ret_t wait_gc(rmw_wait_set_t *ws, rmw_guard_condition_t *gc, const rmw_time_t *timeout, void **slot_out) {
  void *slots[1] = {gc->data};
  rmw_guard_conditions_t gcs = {1, slots};
  rmw_ret_t rc = rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, timeout);
  *slot_out = slots[0];
  return rc;
}

static rmw_ret_t wait_sub(rmw_wait_set_t *ws, rmw_subscription_t *sub, const rmw_time_t *timeout, void **slot_out) {
  void *slots[1] = {sub->data};
  rmw_subscriptions_t subs = {1, slots};
  rmw_ret_t rc = rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, timeout);
  *slot_out = slots[0];
  return rc;
}

int main(void) {
  rcutils_allocator_t alloc = rcutils_get_default_allocator();

  /* --- identity and features --- */
  check(strcmp(rmw_get_implementation_identifier(), "rmw_tracer") == 0, "identifier", "not rmw_tracer");
  check(strcmp(rmw_get_serialization_format(), "cdr") == 0, "serialization format", "not cdr");
  check(rmw_feature_supported(RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER), "feature publication seq", "false");
  check(!rmw_feature_supported(RMW_MIDDLEWARE_CAN_TAKE_DYNAMIC_MESSAGE), "feature dynamic message", "true");
  check(rmw_set_log_severity(RMW_LOG_SEVERITY_WARN) == RMW_RET_OK, "set log severity", "not ok");
  check(rmw_set_log_severity((rmw_log_severity_t)7) == RMW_RET_INVALID_ARGUMENT, "set bad log severity", "not invalid");

  /* --- init options --- */
  rmw_init_options_t opts = rmw_get_zero_initialized_init_options();
  check(rmw_init_options_init(NULL, alloc) == RMW_RET_INVALID_ARGUMENT, "init options null", "not invalid");
  check(rmw_init_options_init(&opts, alloc) == RMW_RET_OK, "init options", "not ok");
  check(rmw_init_options_init(&opts, alloc) == RMW_RET_INVALID_ARGUMENT, "init options twice", "not invalid");
  opts.enclave = rcutils_strdup("/", alloc);
  rmw_init_options_t copy = rmw_get_zero_initialized_init_options();
  check(rmw_init_options_copy(&opts, &copy) == RMW_RET_OK && copy.enclave != opts.enclave &&
            strcmp(copy.enclave, "/") == 0, "init options copy", "enclave not deep-copied");
  check(rmw_init_options_copy(&opts, &copy) == RMW_RET_INVALID_ARGUMENT, "copy into initialized", "not invalid");
  check(rmw_init_options_fini(&copy) == RMW_RET_OK && copy.implementation_identifier == NULL, "init options fini", "not zeroed");
  rmw_init_options_t foreign = opts;
  foreign.implementation_identifier = "rmw_fastrtps_cpp";
  rmw_context_t ctx = rmw_get_zero_initialized_context();
  check(rmw_init(&foreign, &ctx) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "init foreign options", "not incorrect implementation");
  check(rmw_init(&opts, NULL) == RMW_RET_INVALID_ARGUMENT, "init null context", "not invalid");
  opts.domain_id = 77;
  check(rmw_init(&opts, &ctx) == RMW_RET_OK, "init", "not ok");
  check(ctx.actual_domain_id == 77 && strcmp(ctx.implementation_identifier, "rmw_tracer") == 0, "context fields", "wrong");
  check(rmw_init(&opts, &ctx) == RMW_RET_INVALID_ARGUMENT, "init twice", "not invalid");

  /* --- nodes and names --- */
  check(rmw_create_node(&ctx, "bad name", "/") == NULL && error_contains("node name"), "invalid node name", "accepted");
  check(rmw_create_node(&ctx, "n", "no_slash") == NULL && error_contains("namespace"), "invalid namespace", "accepted");
  check(rmw_create_node(&ctx, NULL, "/") == NULL && error_contains("rmw_create_node"), "null node name", "accepted");
  rmw_node_t *node = rmw_create_node(&ctx, "api", "/test");
  check(node != NULL && strcmp(node->name, "api") == 0 && strcmp(node->namespace_, "/test") == 0, "create node", "no node");
  check(rmw_node_get_graph_guard_condition(node) != NULL, "graph guard condition", "null");
  rmw_node_t fake = *node;
  fake.implementation_identifier = "rmw_fastrtps_cpp";
  check(rmw_destroy_node(&fake) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "foreign node", "not incorrect implementation");

  /* --- publishers, subscriptions, QoS --- */
  rmw_qos_profile_t sysdef = rmw_qos_profile_system_default;
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  check(rmw_create_publisher(node, string_ts(), "not/absolute", &sysdef, &popts) == NULL && error_contains("topic name"),
        "invalid topic name", "accepted");
  check(rmw_create_publisher(node, NULL, "/t", &sysdef, &popts) == NULL, "null type support", "accepted");
  rmw_publisher_t *pub = rmw_create_publisher(node, string_ts(), "/api/topic", &sysdef, &popts);
  check(pub != NULL && strcmp(pub->topic_name, "/api/topic") == 0, "create publisher", "no publisher");
  rmw_qos_profile_t actual;
  check(rmw_publisher_get_actual_qos(pub, &actual) == RMW_RET_OK && actual.history == RMW_QOS_POLICY_HISTORY_KEEP_LAST &&
            actual.depth == 10 && actual.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE &&
            actual.durability == RMW_QOS_POLICY_DURABILITY_VOLATILE &&
            actual.liveliness == RMW_QOS_POLICY_LIVELINESS_AUTOMATIC && actual.deadline.sec == 9223372036LL,
        "actual qos resolved", "system defaults left");
  size_t n = 99;
  check(rmw_publisher_count_matched_subscriptions(pub, &n) == RMW_RET_OK && n == 0, "no match yet", "count not 0");
  rmw_qos_profile_t deep = rmw_qos_profile_default;
  deep.depth = 20;
  rmw_subscription_t *sub = rmw_create_subscription(node, string_ts(), "/api/topic", &deep, &sopts);
  check(sub != NULL, "create subscription", "no subscription");
  check(rmw_publisher_count_matched_subscriptions(pub, &n) == RMW_RET_OK && n == 1, "publisher matched", "count not 1");
  check(rmw_subscription_count_matched_publishers(sub, &n) == RMW_RET_OK && n == 1, "subscription matched", "count not 1");

  /* --- gids --- */
  rmw_gid_t g1, g2;
  bool eq = false;
  check(rmw_get_gid_for_publisher(pub, &g1) == RMW_RET_OK && rmw_get_gid_for_publisher(pub, &g2) == RMW_RET_OK &&
            rmw_compare_gids_equal(&g1, &g2, &eq) == RMW_RET_OK && eq, "gid equal", "not equal");
  g2.data[15] ^= 1;
  check(rmw_compare_gids_equal(&g1, &g2, &eq) == RMW_RET_OK && !eq, "gid differs", "equal");
  g2.implementation_identifier = "rmw_fastrtps_cpp";
  check(rmw_compare_gids_equal(&g1, &g2, &eq) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "foreign gid", "accepted");

  /* --- wait sets and guard conditions --- */
  rmw_wait_set_t *ws = rmw_create_wait_set(&ctx, 4);
  rmw_guard_condition_t *gc = rmw_create_guard_condition(&ctx);
  check(ws != NULL && gc != NULL, "create wait set and guard condition", "null");
  rmw_time_t zero = {0, 0};
  rmw_time_t fifty_ms = {0, 50 * 1000 * 1000};
  void *slot = NULL;
  double t0 = now_s();
  rmw_ret_t polled = wait_gc(ws, gc, &zero, &slot);
  bool error_set = rmw_error_is_set();
  check(polled == RMW_RET_TIMEOUT && slot == NULL && now_s() - t0 < 0.04,
        "zero timeout polls", "not an immediate timeout with the slot nulled");
  check(!error_set, "timeout sets no error string", "error string set");
  t0 = now_s();
  check(wait_gc(ws, gc, &fifty_ms, &slot) == RMW_RET_TIMEOUT && now_s() - t0 >= 0.049, "timed wait", "returned early");
  check(rmw_trigger_guard_condition(gc) == RMW_RET_OK, "trigger", "not ok");
  check(wait_gc(ws, gc, &zero, &slot) == RMW_RET_OK && slot == gc->data, "triggered is ready", "not ready");
  check(wait_gc(ws, gc, &zero, &slot) == RMW_RET_TIMEOUT && slot == NULL, "trigger consumed", "still ready");
  async_gc = gc;
  pthread_t th;
  pthread_create(&th, NULL, trigger_later, NULL);
  t0 = now_s();
  check(wait_gc(ws, gc, NULL, &slot) == RMW_RET_OK && slot == gc->data && now_s() - t0 >= 0.04,
        "null timeout blocks until triggered", "did not block or not ready");
  pthread_join(th, NULL);

  /* The graph guard condition is raised when an entity appears (and consumed by the wait). */
  rmw_guard_condition_t *graph_gc = (rmw_guard_condition_t *)rmw_node_get_graph_guard_condition(node);
  rmw_time_t second = {1, 0};
  while (wait_gc(ws, graph_gc, &zero, &slot) == RMW_RET_OK) {
  }
  rmw_reset_error();
  rmw_publisher_t *extra = rmw_create_publisher(node, string_ts(), "/api/other", &sysdef, &popts);
  check(extra != NULL && wait_gc(ws, graph_gc, &second, &slot) == RMW_RET_OK && slot == graph_gc->data,
        "graph guard condition on a new publisher", "not raised");
  while (wait_gc(ws, graph_gc, &zero, &slot) == RMW_RET_OK) {
  }
  rmw_reset_error();
  check(rmw_destroy_publisher(node, extra) == RMW_RET_OK && wait_gc(ws, graph_gc, &second, &slot) == RMW_RET_OK,
        "graph guard condition on a destroyed publisher", "not raised");
  rmw_time_t most_of_a_second = {0, 700 * 1000 * 1000};
  check(wait_gc(ws, graph_gc, &most_of_a_second, &slot) == RMW_RET_TIMEOUT,
        "graph guard condition quiet without graph changes", "raised with nothing new");

  /* --- publish, wait, take, on-new-message --- */
  check(wait_sub(ws, sub, &zero, &slot) == RMW_RET_TIMEOUT && slot == NULL, "empty subscription not ready", "ready");
  std_msgs__msg__String msg;
  std_msgs__msg__String__init(&msg);
  for (int i = 0; i < 3; i++) {
    char text[32];
    snprintf(text, sizeof text, "m%d", i);
    set_string(&msg, text);
    if (rmw_publish(pub, &msg, NULL) != RMW_RET_OK) check(0, "publish", "failed");
  }
  check(wait_sub(ws, sub, &zero, &slot) == RMW_RET_OK && slot == sub->data, "subscription ready", "not ready");

  /* --- rmw_publisher_wait_for_all_acked (rmw.h): a subscription of this process has every
   * sample once rmw_publish returns, so even a zero timeout is met. --- */
  rmw_time_t infinite = RMW_DURATION_INFINITE;
  check(rmw_publisher_wait_for_all_acked(NULL, zero) == RMW_RET_INVALID_ARGUMENT && error_contains("publisher"),
        "wait_for_all_acked null publisher", "not invalid with the error string");
  rmw_publisher_t foreign_pub = *pub;
  foreign_pub.implementation_identifier = "rmw_fastrtps_cpp";
  check(rmw_publisher_wait_for_all_acked(&foreign_pub, zero) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION &&
            error_contains("rmw_fastrtps_cpp"), "wait_for_all_acked foreign publisher", "not incorrect implementation");
  rmw_publisher_t zeroed_pub = {0};
  check(rmw_publisher_wait_for_all_acked(&zeroed_pub, zero) == RMW_RET_INVALID_ARGUMENT,
        "wait_for_all_acked zero-initialized publisher", "not invalid");
  check(rmw_publisher_wait_for_all_acked(pub, zero) == RMW_RET_OK && !rmw_error_is_set(),
        "wait_for_all_acked in process, zero timeout", "not ok");
  check(rmw_publisher_wait_for_all_acked(pub, infinite) == RMW_RET_OK, "wait_for_all_acked infinite", "not ok");
  rmw_qos_profile_t be = rmw_qos_profile_sensor_data;
  rmw_publisher_t *be_pub = rmw_create_publisher(node, string_ts(), "/api/best_effort", &be, &popts);
  check(be_pub != NULL && rmw_publisher_wait_for_all_acked(be_pub, zero) == RMW_RET_OK &&
            rmw_destroy_publisher(node, be_pub) == RMW_RET_OK, "wait_for_all_acked best-effort publisher", "not ok");
  check(rmw_subscription_set_on_new_message_callback(sub, on_new_message, NULL) == RMW_RET_OK &&
            atomic_load(&callback_events) == 3, "callback gets the waiting count", "not 3");
  set_string(&msg, "m3");
  rmw_publish(pub, &msg, NULL);
  set_string(&msg, "m4");
  rmw_publish(pub, &msg, NULL);
  double deadline = now_s() + 5;
  while (atomic_load(&callback_events) < 5 && now_s() < deadline) {
    struct timespec d = {0, 5 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  check(atomic_load(&callback_events) == 5, "callback per new message", "events != 5");
  check(rmw_subscription_set_on_new_message_callback(sub, NULL, NULL) == RMW_RET_OK, "clear callback", "not ok");
  bool taken = false;
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  check(rmw_take_with_info(sub, &msg, &taken, &info, NULL) == RMW_RET_OK && taken && strcmp(msg.data.data, "m0") == 0 &&
            info.publication_sequence_number == 1 && info.from_intra_process, "take with info", "wrong message or info");
  check(rmw_compare_gids_equal(&g1, &info.publisher_gid, &eq) == RMW_RET_OK && eq, "info publisher gid", "not the publisher");

  /* --- take_sequence --- */
  rmw_message_sequence_t seq = rmw_get_zero_initialized_message_sequence();
  rmw_message_info_sequence_t iseq = rmw_get_zero_initialized_message_info_sequence();
  rmw_message_sequence_init(&seq, 10, &alloc);
  rmw_message_info_sequence_init(&iseq, 10, &alloc);
  std_msgs__msg__String msgs[10];
  for (int i = 0; i < 10; i++) {
    std_msgs__msg__String__init(&msgs[i]);
    seq.data[i] = &msgs[i];
  }
  size_t got = 0;
  check(rmw_take_sequence(sub, 0, &seq, &iseq, &got, NULL) == RMW_RET_INVALID_ARGUMENT, "take_sequence count 0", "accepted");
  check(rmw_take_sequence(sub, 11, &seq, &iseq, &got, NULL) == RMW_RET_INVALID_ARGUMENT, "take_sequence over capacity", "accepted");
  check(rmw_take_sequence(sub, 10, &seq, &iseq, &got, NULL) == RMW_RET_OK && got == 4 && seq.size == 4 &&
            strcmp(msgs[0].data.data, "m1") == 0 && strcmp(msgs[3].data.data, "m4") == 0 &&
            iseq.data[3].publication_sequence_number == 5, "take_sequence", "wrong count or order");
  check(rmw_take(sub, &msg, &taken, NULL) == RMW_RET_OK && !taken, "take on empty", "took something");

  /* --- KEEP_LAST(20): 25 publications leave the newest 20 --- */
  for (int i = 0; i < 25; i++) {
    char text[32];
    snprintf(text, sizeof text, "k%d", i);
    set_string(&msg, text);
    rmw_publish(pub, &msg, NULL);
  }
  int kept = 0;
  char first[32] = "";
  while (rmw_take(sub, &msg, &taken, NULL) == RMW_RET_OK && taken) {
    if (kept++ == 0) snprintf(first, sizeof first, "%s", msg.data.data);
  }
  check(kept == 20 && strcmp(first, "k5") == 0, "keep_last depth bounds the ring", "not the newest 20");

  /* --- serialized messages --- */
  rmw_serialized_message_t ser = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&ser, 0, &alloc);
  set_string(&msg, "serialized");
  check(rmw_serialize(&msg, string_ts(), &ser) == RMW_RET_OK && ser.buffer_length == 4 + 4 + 11, "serialize", "wrong size");
  check(rmw_publish_serialized_message(pub, &ser, NULL) == RMW_RET_OK, "publish serialized", "not ok");
  rmw_serialized_message_t back = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&back, 2, &alloc);  /* too small: take must grow it */
  check(rmw_take_serialized_message(sub, &back, &taken, NULL) == RMW_RET_OK && taken &&
            back.buffer_length == ser.buffer_length && memcmp(back.buffer, ser.buffer, ser.buffer_length) == 0,
        "take serialized grows the buffer", "bytes differ");
  /* A writer that is not a valid String (any libtracer writer can write the vertex): dropped,
   * and the next message is taken. */
  uint8_t garbage[] = {0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0x7f, 'x'};
  rmw_serialized_message_t bad = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&bad, sizeof garbage, &alloc);
  memcpy(bad.buffer, garbage, sizeof garbage);
  bad.buffer_length = sizeof garbage;
  check(rmw_publish_serialized_message(pub, &bad, NULL) == RMW_RET_OK, "publish garbage", "not ok");
  set_string(&msg, "after garbage");
  rmw_publish(pub, &msg, NULL);
  set_string(&msg, "");
  check(rmw_take(sub, &msg, &taken, NULL) == RMW_RET_OK && taken && strcmp(msg.data.data, "after garbage") == 0,
        "malformed sample skipped", "not the next valid message");
  rmw_serialized_message_fini(&bad);
  rmw_serialized_message_fini(&ser);
  rmw_serialized_message_fini(&back);

  /* --- allocations, unsupported entry points --- */
  rmw_publisher_allocation_t pa;
  check(rmw_init_publisher_allocation(string_ts(), NULL, &pa) == RMW_RET_OK && rmw_fini_publisher_allocation(&pa) == RMW_RET_OK,
        "publisher allocation", "not ok");
  void *loan = NULL;
  /* std_msgs/String is not plain: no loans (docs/loans.md; test_loans.py covers the rest). */
  check(rmw_take_loaned_message(sub, &loan, &taken, NULL) == RMW_RET_UNSUPPORTED &&
            error_contains("rmw_tracer: rmw_take_loaned_message: loaning messages of std_msgs/msg/String"),
        "no loans of a type that is not plain", "wrong code or text");

  /* --- ignore_local_publications: this context's own writes are not taken --- */
  rmw_subscription_options_t ignore = rmw_get_default_subscription_options();
  ignore.ignore_local_publications = true;
  rmw_subscription_t *deaf = rmw_create_subscription(node, string_ts(), "/api/topic", &deep, &ignore);
  set_string(&msg, "to myself");
  rmw_publish(pub, &msg, NULL);
  check(deaf != NULL && rmw_take(deaf, &msg, &taken, NULL) == RMW_RET_OK && !taken,
        "ignore_local_publications", "took its own context's message");
  check(rmw_take(sub, &msg, &taken, NULL) == RMW_RET_OK && taken, "others still take it", "not taken");
  check(rmw_destroy_subscription(node, deaf) == RMW_RET_OK, "destroy ignoring subscription", "not ok");

  /* --- a callback that takes from inside the callback --- */
  for (int i = 0; i < 2; i++) rmw_publish(pub, &msg, NULL);
  check(rmw_subscription_set_on_new_message_callback(sub, take_in_callback, sub) == RMW_RET_OK &&
            atomic_load(&taken_in_callback) == 2, "callback may take (waiting messages)", "not 2");
  for (int i = 0; i < 3; i++) rmw_publish(pub, &msg, NULL);
  deadline = now_s() + 5;
  while (atomic_load(&taken_in_callback) < 5 && now_s() < deadline) {
    struct timespec d = {0, 5 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  check(atomic_load(&taken_in_callback) == 5, "callback may take (new messages)", "not 5");
  rmw_subscription_set_on_new_message_callback(sub, NULL, NULL);

  /* --- rmw_event_set_callback: a publisher's matched event hears a subscription come and go,
   * and its status says by how much --- */
  rmw_event_t mev = rmw_get_zero_initialized_event();
  rmw_matched_status_t ms;
  check(rmw_publisher_event_init(&mev, pub, RMW_EVENT_PUBLICATION_MATCHED) == RMW_RET_OK &&
            rmw_take_event(&mev, &ms, &taken) == RMW_RET_OK, "matched event", "not ok");
  atomic_store(&callback_events, 0);
  check(rmw_event_set_callback(&mev, on_new_message, NULL) == RMW_RET_OK, "event callback set", "not ok");
  rmw_subscription_t *joiner = rmw_create_subscription(node, string_ts(), "/api/topic", &deep, &sopts);
  deadline = now_s() + 5;
  while (atomic_load(&callback_events) < 1 && now_s() < deadline) {
    struct timespec d = {0, 5 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  size_t after_join = atomic_load(&callback_events);
  check(joiner != NULL && after_join >= 1 && rmw_take_event(&mev, &ms, &taken) == RMW_RET_OK && taken &&
            ms.current_count_change == 1 && ms.current_count == 2,
        "event callback on a match", "no callback or wrong status");
  check(rmw_destroy_subscription(node, joiner) == RMW_RET_OK, "destroy joining subscription", "not ok");
  deadline = now_s() + 5;
  while (atomic_load(&callback_events) <= after_join && now_s() < deadline) {
    struct timespec d = {0, 5 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  check(atomic_load(&callback_events) > after_join && rmw_take_event(&mev, &ms, &taken) == RMW_RET_OK && taken &&
            ms.current_count_change == -1 && ms.current_count == 1,
        "event callback on an unmatch", "no callback or wrong status");
  check(rmw_event_set_callback(&mev, NULL, NULL) == RMW_RET_OK && rmw_event_fini(&mev) == RMW_RET_OK,
        "event callback clear", "not ok");

  /* --- teardown and the context life cycle --- */
  for (int i = 0; i < 10; i++) std_msgs__msg__String__fini(&msgs[i]);
  rmw_message_sequence_fini(&seq);
  rmw_message_info_sequence_fini(&iseq);
  std_msgs__msg__String__fini(&msg);
  check(rmw_destroy_subscription(node, sub) == RMW_RET_OK, "destroy subscription", "not ok");
  check(rmw_publisher_count_matched_subscriptions(pub, &n) == RMW_RET_OK && n == 0, "unmatched after destroy", "count not 0");
  check(rmw_destroy_publisher(node, pub) == RMW_RET_OK, "destroy publisher", "not ok");
  check(rmw_destroy_guard_condition(gc) == RMW_RET_OK && rmw_destroy_wait_set(ws) == RMW_RET_OK, "destroy gc and wait set", "not ok");
  check(rmw_destroy_node(node) == RMW_RET_OK, "destroy node", "not ok");
  check(rmw_context_fini(&ctx) == RMW_RET_INVALID_ARGUMENT, "fini before shutdown", "accepted");
  check(rmw_shutdown(&ctx) == RMW_RET_OK, "shutdown", "not ok");
  check(rmw_create_node(&ctx, "late", "/") == NULL, "no node after shutdown", "created");
  check(rmw_context_fini(&ctx) == RMW_RET_OK && ctx.implementation_identifier == NULL, "context fini", "not zeroed");
  check(rmw_init_options_fini(&opts) == RMW_RET_OK, "options fini", "not ok");
  printf("done %d failures\n", failures);
  return exit_status();
}
