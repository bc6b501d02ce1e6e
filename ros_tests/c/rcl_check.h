/* What the rcl-level test programs (C and C++) share: CHECK(call) runs an rcl call and ends the
 * program with exit status 1, naming the call, its return code and the rcl error string, when it
 * does not return RCL_RET_OK; node_up / node_down bring one context with one node up (default
 * init options, empty namespace) and down again; qos(depth) is reliable, volatile keep_last(depth). */
#ifndef RMW_TRACER_TESTS_RCL_CHECK_H
#define RMW_TRACER_TESTS_RCL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <rcl/error_handling.h>
#include <rcl/init.h>
#include <rcl/node.h>
#include <rcl/types.h>
#include <rmw/qos_profiles.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    rcl_ret_t rc_ = (call);                                                          \
    if (rc_ != RCL_RET_OK) {                                                         \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)rc_,                       \
              rcl_get_error_string().str);                                           \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

/* A fresh context (rcl_init with default options, no arguments) and a node `name` in it. */
static inline void node_up(rcl_context_t *context, rcl_node_t *node, const char *name) {
  rcl_init_options_t io = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&io, rcl_get_default_allocator()));
  *context = rcl_get_zero_initialized_context();
  CHECK(rcl_init(0, NULL, &io, context));
  CHECK(rcl_init_options_fini(&io));
  *node = rcl_get_zero_initialized_node();
  rcl_node_options_t no = rcl_node_get_default_options();
  CHECK(rcl_node_init(node, name, "", context, &no));
}

/* The node, then the context: shutdown and fini. */
static inline void node_down(rcl_context_t *context, rcl_node_t *node) {
  CHECK(rcl_node_fini(node));
  CHECK(rcl_shutdown(context));
  CHECK(rcl_context_fini(context));
}

/* The default profile made reliable and volatile, keep_last(depth). */
static inline rmw_qos_profile_t qos(size_t depth) {
  rmw_qos_profile_t q = rmw_qos_profile_default;
  q.depth = depth;
  q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  q.durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
  return q;
}

#endif
