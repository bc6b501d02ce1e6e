/* What Jazzy's test_rmw_implementation (2.15.4) and rclpy's test_qos_event.py expect where
 * rmw_tracer answered otherwise (issue 28), as one "case <name> rc=<answer> err=<0|1>" line per
 * call (oracle.h): test_contract_upstream.py runs it on rmw_tracer and on Fast DDS, compares the
 * lines and holds what the upstream suite expects.
 *
 *  1. a sample refused by the content filter does not wake rmw_wait (test_subscription.cpp
 *     no_content_filter_set, content_filter_get_later, content_filter_reset);
 *  2. `float32_value = %0` with "3.14159" matches 3.14159f (content_filter_get_begin);
 *  3. rmw_destroy_wait_set(NULL), rmw_service_server_is_available with a null argument and the
 *     return of a subscription loan never lent: RMW_RET_ERROR;
 *  4. rmw_serialize / rmw_deserialize of a type support with an identifier of no known type
 *     support (serialize_with_bad_arguments);
 *  5. rmw_take_event with nothing pending: taken, with the status as it stands (test_event.cpp,
 *     test_qos_event.py).
 *
 * The status of a take is printed field by field after the struct was filled with 0x7f bytes,
 * so a status left untouched shows as 2139062143. Exits 0 unless it could not make what it
 * needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcutils/allocator.h>
#include <rmw/error_handling.h>
#include <rmw/event.h>
#include <rmw/rmw.h>
#include <rmw/subscription_content_filter_options.h>
#include <rosidl_runtime_c/string_functions.h>
#include <test_msgs/msg/basic_types.h>
#include <test_msgs/srv/basic_types.h>

#include "common.h"
#include "oracle.h"

static const rosidl_message_type_support_t *basic_ts(void) {
  return ROSIDL_GET_MSG_TYPE_SUPPORT(test_msgs, msg, BasicTypes);
}

static const rosidl_service_type_support_t *srv_ts(void) {
  return ROSIDL_GET_SRV_TYPE_SUPPORT(test_msgs, srv, BasicTypes);
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* One line with a free-form answer (no spaces). */
static void report_text(const char *name, const char *answer) {
  printf("case %s rc=%s err=%d\n", name, answer, rmw_error_is_set() ? 1 : 0);
  rmw_reset_error();
}

/* rmw_wait on one subscription for up to `ms`. */
static rmw_ret_t wait_sub(rmw_context_t *ctx, rmw_subscription_t *sub, long ms) {
  void *slot[1] = {sub->data};
  rmw_subscriptions_t subs = {1, slot};
  rmw_wait_set_t *ws = rmw_create_wait_set(ctx, 1);
  rmw_time_t t = {(uint64_t)(ms / 1000), (uint64_t)((ms % 1000) * 1000000L)};
  rmw_ret_t rc = rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &t);
  rmw_destroy_wait_set(ws);
  return rc;
}

/* rmw_wait on one event for up to `ms`. */
static rmw_ret_t wait_event(rmw_context_t *ctx, rmw_event_t *ev, long ms) {
  void *slot[1] = {ev};
  rmw_events_t evs = {1, slot};
  rmw_wait_set_t *ws = rmw_create_wait_set(ctx, 1);
  rmw_time_t t = {(uint64_t)(ms / 1000), (uint64_t)((ms % 1000) * 1000000L)};
  rmw_ret_t rc = rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &t);
  rmw_destroy_wait_set(ws);
  return rc;
}

/* Up to 5 s for `sub` to match one publisher. */
static int await_match(rmw_subscription_t *sub) {
  for (int i = 0; i < 500; i++) {
    size_t n = 0;
    if (rmw_subscription_count_matched_publishers(sub, &n) == RMW_RET_OK && n > 0) return 1;
    sleep_ms(10);
  }
  return 0;
}

/* Take one BasicTypes: "none", or "taken:<float32_value>". */
static void report_take(const char *name, rmw_subscription_t *sub) {
  test_msgs__msg__BasicTypes m;
  test_msgs__msg__BasicTypes__init(&m);
  bool taken = false;
  rmw_ret_t rc = rmw_take(sub, &m, &taken, NULL);
  char buf[64];
  if (rc != RMW_RET_OK) {
    snprintf(buf, sizeof buf, "error:%d", (int)rc);
  } else if (!taken) {
    snprintf(buf, sizeof buf, "none");
  } else {
    snprintf(buf, sizeof buf, "taken:%.7g", (double)m.float32_value);
  }
  report_text(name, buf);
  test_msgs__msg__BasicTypes__fini(&m);
}

static void publish(rmw_publisher_t *pub, float value) {
  test_msgs__msg__BasicTypes m;
  test_msgs__msg__BasicTypes__init(&m);
  m.float32_value = value;
  m.int32_value = 7;
  rmw_ret_t rc = rmw_publish(pub, &m, NULL);
  if (rc != RMW_RET_OK) printf("publish failed: %s\n", rmw_get_error_string().str);
  rmw_reset_error();
  test_msgs__msg__BasicTypes__fini(&m);
}

/* Set a filter of one parameter (NULL parameter: none; "" expression: reset). */
static rmw_ret_t set_filter(rmw_subscription_t *sub, const char *expr, const char *param) {
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  rmw_subscription_content_filter_options_t o = rmw_get_zero_initialized_content_filter_options();
  const char *params[1] = {param};
  rmw_ret_t rc = rmw_subscription_content_filter_options_init(expr, param ? 1 : 0,
                                                              param ? params : NULL, &alloc, &o);
  if (rc != RMW_RET_OK) return rc;
  rc = rmw_subscription_set_content_filter(sub, &o);
  rmw_subscription_content_filter_options_fini(&o, &alloc);
  return rc;
}

/* --- 1 and 2: content filters and the wait set ------------------------------------------- */
static int content_filter(rmw_context_t *ctx, rmw_node_t *node) {
  rmw_qos_profile_t qos = rmw_qos_profile_default;
  qos.depth = 10;
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_subscription_t *sub = rmw_create_subscription(node, basic_ts(), "/upstream/filter", &qos, &sopts);
  rmw_publisher_t *pub = rmw_create_publisher(node, basic_ts(), "/upstream/filter", &qos, &popts);
  if (!sub || !pub || !await_match(sub)) {
    printf("content filter setup failed: %s\n", rmw_get_error_string().str);
    return -1;
  }
  /* No filter: a sample wakes the wait set (no_content_filter_set). */
  publish(pub, 3.14f);
  report_rc("no filter: wait", wait_sub(ctx, sub, 2000));
  report_take("no filter: take", sub);
  /* A filter the sample fails: no wake-up, nothing to take (content_filter_get_later). */
  report_rc("filter 3.14159: set", set_filter(sub, "float32_value = %0", "3.14159"));
  sleep_ms(1000); /* as the upstream test: time for the filter to reach the writer */
  publish(pub, 3.14f);
  report_rc("filter 3.14159: wait for 3.14", wait_sub(ctx, sub, 1000));
  report_take("filter 3.14159: take after 3.14", sub);
  /* float32 equality at the field's precision (content_filter_get_begin). */
  publish(pub, 3.14159f);
  report_rc("filter 3.14159: wait for 3.14159", wait_sub(ctx, sub, 2000));
  report_take("filter 3.14159: take after 3.14159", sub);
  /* Several refused samples in a row wake nothing either. */
  for (int i = 0; i < 5; i++) publish(pub, 1.0f + (float)i);
  report_rc("filter 3.14159: wait for five others", wait_sub(ctx, sub, 1000));
  /* The filter reset: the next sample wakes (content_filter_reset). */
  report_rc("filter reset", set_filter(sub, "", NULL));
  sleep_ms(1000);
  publish(pub, 3.14f);
  report_rc("after reset: wait", wait_sub(ctx, sub, 2000));
  report_take("after reset: take", sub);
  report_take("after reset: take again", sub);
  /* A sample queued before a filter is set stays queued. */
  publish(pub, 2.5f);
  sleep_ms(500);
  report_rc("queued then filtered: set", set_filter(sub, "float32_value = %0", "3.14159"));
  report_rc("queued then filtered: wait", wait_sub(ctx, sub, 1000));
  report_take("queued then filtered: take", sub);
  report_take("queued then filtered: take again", sub);
  rmw_destroy_publisher(node, pub);
  rmw_destroy_subscription(node, sub);
  rmw_reset_error();
  return 0;
}

/* --- 3: return codes --------------------------------------------------------------------- */
static int return_codes(rmw_node_t *node) {
  report_rc("destroy wait set null", rmw_destroy_wait_set(NULL));
  rmw_qos_profile_t qos = rmw_qos_profile_services_default;
  rmw_client_t *cli = rmw_create_client(node, srv_ts(), "/upstream/srv", &qos);
  if (!cli) {
    printf("client setup failed: %s\n", rmw_get_error_string().str);
    return -1;
  }
  bool avail = true;
  report_rc("server is available null node", rmw_service_server_is_available(NULL, cli, &avail));
  report_rc("server is available null client", rmw_service_server_is_available(node, NULL, &avail));
  report_rc("server is available null result", rmw_service_server_is_available(node, cli, NULL));
  report_rc("server is available", rmw_service_server_is_available(node, cli, &avail));
  report_bool("server is available: answer", avail);
  rmw_destroy_client(node, cli);

  rmw_qos_profile_t sqos = rmw_qos_profile_default;
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_subscription_t *sub = rmw_create_subscription(node, basic_ts(), "/upstream/loan", &sqos, &sopts);
  if (!sub) {
    printf("loan subscription setup failed: %s\n", rmw_get_error_string().str);
    return -1;
  }
  report_bool("loan subscription can loan", sub->can_loan_messages);
  test_msgs__msg__BasicTypes msg;
  report_rc("return loan null subscription", rmw_return_loaned_message_from_subscription(NULL, &msg));
  report_rc("return loan null message", rmw_return_loaned_message_from_subscription(sub, NULL));
  report_rc("return loan never loaned", rmw_return_loaned_message_from_subscription(sub, &msg));
  rmw_destroy_subscription(node, sub);
  rmw_reset_error();
  return 0;
}

/* --- 4: a type support of no known identifier -------------------------------------------- */
static void serialization(void) {
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  test_msgs__msg__BasicTypes m;
  test_msgs__msg__BasicTypes__init(&m);
  m.int16_value = -3;
  rmw_serialized_message_t ser = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&ser, 0, &alloc);
  rosidl_message_type_support_t *ts = (rosidl_message_type_support_t *)basic_ts();
  report_rc("serialize", rmw_serialize(&m, ts, &ser));
  const char *id = ts->typesupport_identifier;
  ts->typesupport_identifier = "not-a-typesupport-identifier";
  report_rc("serialize bad identifier", rmw_serialize(&m, ts, &ser));
  report_rc("deserialize bad identifier", rmw_deserialize(&ser, ts, &m));
  size_t size = 0;
  report_rc("serialized size bad identifier", rmw_get_serialized_message_size(ts, NULL, &size));
  ts->typesupport_identifier = id;
  report_rc("serialize restored", rmw_serialize(&m, ts, &ser));
  report_rc("deserialize restored", rmw_deserialize(&ser, ts, &m));
  rmw_serialized_message_fini(&ser);
  test_msgs__msg__BasicTypes__fini(&m);
}

/* --- 5: rmw_take_event with nothing pending ---------------------------------------------- */
union status {
  rmw_matched_status_t matched;
  rmw_message_lost_status_t lost;
  rmw_offered_deadline_missed_status_t deadline;
  rmw_liveliness_lost_status_t liveliness_lost;
  rmw_liveliness_changed_status_t liveliness_changed;
  rmw_qos_incompatible_event_status_t qos;
  rmw_incompatible_type_status_t type;
};

/* "rc:<rc>:taken:<0|1>:<fields>" of one take of `ev` (of type `t`). */
static void report_event_take(const char *name, rmw_event_t *ev, rmw_event_type_t t) {
  union status s;
  memset(&s, 0x7f, sizeof s);
  bool taken = false;
  rmw_ret_t rc = rmw_take_event(ev, &s, &taken);
  char buf[160];
  int n = snprintf(buf, sizeof buf, "%d:taken:%d:", (int)rc, taken ? 1 : 0);
  switch (t) {
    case RMW_EVENT_PUBLICATION_MATCHED:
    case RMW_EVENT_SUBSCRIPTION_MATCHED:
      snprintf(buf + n, sizeof buf - n, "%zu,%zu,%zu,%d", s.matched.total_count,
               s.matched.total_count_change, s.matched.current_count,
               (int)s.matched.current_count_change);
      break;
    case RMW_EVENT_MESSAGE_LOST:
      snprintf(buf + n, sizeof buf - n, "%zu,%zu", s.lost.total_count, s.lost.total_count_change);
      break;
    case RMW_EVENT_LIVELINESS_CHANGED:
      snprintf(buf + n, sizeof buf - n, "%d,%d,%d,%d", s.liveliness_changed.alive_count,
               s.liveliness_changed.not_alive_count, s.liveliness_changed.alive_count_change,
               s.liveliness_changed.not_alive_count_change);
      break;
    case RMW_EVENT_OFFERED_QOS_INCOMPATIBLE:
    case RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE:
      snprintf(buf + n, sizeof buf - n, "%d,%d,%d", s.qos.total_count, s.qos.total_count_change,
               (int)s.qos.last_policy_kind);
      break;
    default: /* deadline, liveliness lost, incompatible type: total, change */
      snprintf(buf + n, sizeof buf - n, "%d,%d", s.deadline.total_count,
               s.deadline.total_count_change);
      break;
  }
  report_text(name, buf);
}

struct kind {
  const char *name;
  rmw_event_type_t type;
  int publisher;
};

static const struct kind KINDS[] = {
    {"publication matched", RMW_EVENT_PUBLICATION_MATCHED, 1},
    {"offered deadline missed", RMW_EVENT_OFFERED_DEADLINE_MISSED, 1},
    {"liveliness lost", RMW_EVENT_LIVELINESS_LOST, 1},
    {"offered qos incompatible", RMW_EVENT_OFFERED_QOS_INCOMPATIBLE, 1},
    {"publisher incompatible type", RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE, 1},
    {"subscription matched", RMW_EVENT_SUBSCRIPTION_MATCHED, 0},
    {"requested deadline missed", RMW_EVENT_REQUESTED_DEADLINE_MISSED, 0},
    {"liveliness changed", RMW_EVENT_LIVELINESS_CHANGED, 0},
    {"requested qos incompatible", RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE, 0},
    {"subscription incompatible type", RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE, 0},
    {"message lost", RMW_EVENT_MESSAGE_LOST, 0},
};

static int events(rmw_context_t *ctx, rmw_node_t *node) {
  /* Lone endpoints with a deadline and a manual liveliness, so that every event type has
   * something it could report; nothing happens to them here. */
  rmw_qos_profile_t qos = rmw_qos_profile_default;
  qos.deadline = (rmw_time_t){60, 0};
  qos.liveliness = RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
  qos.liveliness_lease_duration = (rmw_time_t){60, 0};
  rmw_publisher_options_t popts = rmw_get_default_publisher_options();
  rmw_subscription_options_t sopts = rmw_get_default_subscription_options();
  rmw_publisher_t *pub = rmw_create_publisher(node, basic_ts(), "/upstream/lone_pub", &qos, &popts);
  rmw_subscription_t *sub = rmw_create_subscription(node, basic_ts(), "/upstream/lone_sub", &qos, &sopts);
  if (!pub || !sub) {
    printf("event setup failed: %s\n", rmw_get_error_string().str);
    return -1;
  }
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
    rmw_event_t ev = rmw_get_zero_initialized_event();
    rmw_ret_t rc = KINDS[i].publisher ? rmw_publisher_event_init(&ev, pub, KINDS[i].type)
                                      : rmw_subscription_event_init(&ev, sub, KINDS[i].type);
    char name[96];
    snprintf(name, sizeof name, "event %s: init", KINDS[i].name);
    report_rc(name, rc);
    if (rc != RMW_RET_OK) continue;
    snprintf(name, sizeof name, "event %s: take with nothing pending", KINDS[i].name);
    report_event_take(name, &ev, KINDS[i].type);
    snprintf(name, sizeof name, "event %s: take again", KINDS[i].name);
    report_event_take(name, &ev, KINDS[i].type);
    rmw_event_fini(&ev);
  }
  rmw_destroy_publisher(node, pub);
  rmw_destroy_subscription(node, sub);

  /* basic_publisher_matched_event: empty, then one match, then nothing new, then unmatched. */
  rmw_qos_profile_t dq = rmw_qos_profile_default;
  pub = rmw_create_publisher(node, basic_ts(), "/upstream/matched", &dq, &popts);
  rmw_event_t ev = rmw_get_zero_initialized_event();
  if (!pub || rmw_publisher_event_init(&ev, pub, RMW_EVENT_PUBLICATION_MATCHED) != RMW_RET_OK) {
    printf("matched setup failed: %s\n", rmw_get_error_string().str);
    return -1;
  }
  report_event_take("matched: before any subscription", &ev, RMW_EVENT_PUBLICATION_MATCHED);
  sub = rmw_create_subscription(node, basic_ts(), "/upstream/matched", &dq, &sopts);
  report_rc("matched: wait for the subscription", wait_event(ctx, &ev, 5000));
  report_event_take("matched: one subscription", &ev, RMW_EVENT_PUBLICATION_MATCHED);
  report_event_take("matched: nothing new", &ev, RMW_EVENT_PUBLICATION_MATCHED);
  rmw_destroy_subscription(node, sub);
  report_rc("matched: wait for the unmatch", wait_event(ctx, &ev, 5000));
  report_event_take("matched: subscription gone", &ev, RMW_EVENT_PUBLICATION_MATCHED);
  report_event_take("matched: nothing new after it", &ev, RMW_EVENT_PUBLICATION_MATCHED);
  rmw_event_fini(&ev);
  rmw_destroy_publisher(node, pub);
  rmw_reset_error();
  return 0;
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
  rmw_node_t *node = rmw_create_node(&ctx, "upstream", "/");
  if (!node) {
    printf("node failed: %s\n", rmw_get_error_string().str);
    return 1;
  }
  if (return_codes(node) != 0) return 1;
  serialization();
  if (events(&ctx, node) != 0) return 1;
  if (content_filter(&ctx, node) != 0) return 1;
  rmw_destroy_node(node);
  rmw_shutdown(&ctx);
  rmw_context_fini(&ctx);
  rmw_init_options_fini(&opts);
  printf("done\n");
  return 0;
}
