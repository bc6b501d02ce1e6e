/* rmw_tracer_loans/msg/Blob<n>: a fixed-size message type built by hand as an introspection
 * type support, what rosidl would generate for `uint64 seq` + `uint8[n] data` (the C struct is
 * 8 + n bytes, rounded up to 8). Used by ros_tests/c/loans_rcl.c and tools/bench/loans.c, which
 * need plain types of any size and cannot build a message package from the wheels. Only
 * introspection type support: rmw_tracer runs it, rmw_fastrtps_cpp (which wants its own
 * generated type support) does not. One translation unit includes it once (static state). */
#ifndef RMW_TRACER_TESTS_BLOB_TYPE_H
#define RMW_TRACER_TESTS_BLOB_TYPE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rosidl_runtime_c/message_type_support_struct.h>
#include <test_msgs/msg/basic_types.h>

#include <rosidl_typesupport_introspection_c/field_types.h>
#include <rosidl_typesupport_introspection_c/identifier.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>

static size_t blob_n;
static char blob_name[64];
static rosidl_typesupport_introspection_c__MessageMember blob_members[2];
static rosidl_typesupport_introspection_c__MessageMembers blob_type;
static rosidl_message_type_support_t blob_ts;
static rosidl_type_hash_t blob_hash;
static rosidl_runtime_c__type_description__TypeDescription blob_description;
static rosidl_runtime_c__type_description__TypeSource__Sequence blob_sources;

static void blob_init(void *m, enum rosidl_runtime_c__message_initialization how) {
  (void)how;
  memset(m, 0, blob_type.size_of_);
}
static void blob_fini(void *m) { (void)m; }
static size_t blob_size(const void *arr) { (void)arr; return blob_n; }
static const void *blob_get_const(const void *arr, size_t i) { return (const uint8_t *)arr + i; }
static void *blob_get(void *arr, size_t i) { return (uint8_t *)arr + i; }
static void blob_fetch(const void *arr, size_t i, void *out) { *(uint8_t *)out = ((const uint8_t *)arr)[i]; }
static void blob_assign(void *arr, size_t i, const void *v) { ((uint8_t *)arr)[i] = *(const uint8_t *)v; }

static const rosidl_message_type_support_t *blob_handle(const rosidl_message_type_support_t *ts,
                                                        const char *id) {
  return strcmp(id, rosidl_typesupport_introspection_c__identifier) == 0 ? ts : NULL;
}
static const rosidl_type_hash_t *blob_get_hash(const rosidl_message_type_support_t *ts) {
  (void)ts;
  return &blob_hash;
}
static const rosidl_runtime_c__type_description__TypeDescription *blob_get_description(
    const rosidl_message_type_support_t *ts) {
  (void)ts;
  return &blob_description;
}
static const rosidl_runtime_c__type_description__TypeSource__Sequence *blob_get_sources(
    const rosidl_message_type_support_t *ts) {
  (void)ts;
  return &blob_sources;
}

static const rosidl_message_type_support_t *make_blob(size_t n) {
  blob_n = n;
  snprintf(blob_name, sizeof blob_name, "Blob%zu", n);
  memset(blob_members, 0, sizeof blob_members);
  blob_members[0].name_ = "seq";
  blob_members[0].type_id_ = rosidl_typesupport_introspection_c__ROS_TYPE_UINT64;
  blob_members[0].offset_ = 0;
  blob_members[1].name_ = "data";
  blob_members[1].type_id_ = rosidl_typesupport_introspection_c__ROS_TYPE_UINT8;
  blob_members[1].is_array_ = true;
  blob_members[1].array_size_ = n;
  blob_members[1].offset_ = 8;
  blob_members[1].size_function = blob_size;
  blob_members[1].get_const_function = blob_get_const;
  blob_members[1].get_function = blob_get;
  blob_members[1].fetch_function = blob_fetch;
  blob_members[1].assign_function = blob_assign;
  blob_type.message_namespace_ = "rmw_tracer_loans__msg";
  blob_type.message_name_ = blob_name;
  blob_type.member_count_ = 2;
  blob_type.size_of_ = (8 + n + 7) / 8 * 8;
  blob_type.members_ = blob_members;
  blob_type.init_function = blob_init;
  blob_type.fini_function = blob_fini;
  blob_hash.version = 1;
  memset(blob_hash.value, 0, sizeof blob_hash.value);
  memcpy(blob_hash.value, &n, sizeof n);
  /* rcl registers every type's description with the node: give it the name at least. */
  static char full_name[96];
  snprintf(full_name, sizeof full_name, "rmw_tracer_loans/msg/%s", blob_name);
  blob_description.type_description.type_name.data = full_name;
  blob_description.type_description.type_name.size = strlen(full_name);
  blob_description.type_description.type_name.capacity = sizeof full_name;
  blob_ts.typesupport_identifier = rosidl_typesupport_introspection_c__identifier;
  blob_ts.data = &blob_type;
  blob_ts.func = blob_handle;
  blob_ts.get_type_hash_func = blob_get_hash;
  blob_ts.get_type_description_func = blob_get_description;
  blob_ts.get_type_description_sources_func = blob_get_sources;
  return &blob_ts;
}

/* The type a loan program runs on, from its command line: "basic" (test_msgs/msg/BasicTypes)
 * or "blob:<n>" (Blob<n> above). Sets the three below; any other spec ends the program. */
static int is_blob;
static const rosidl_message_type_support_t *ts;
static size_t msg_size;

static void pick_type(const char *spec) {
  if (strcmp(spec, "basic") == 0) {
    ts = ROSIDL_GET_MSG_TYPE_SUPPORT(test_msgs, msg, BasicTypes);
    msg_size = sizeof(test_msgs__msg__BasicTypes);
  } else if (strncmp(spec, "blob:", 5) == 0) {
    is_blob = 1;
    ts = make_blob((size_t)strtoull(spec + 5, NULL, 10));
    msg_size = blob_type.size_of_;
  } else {
    fprintf(stderr, "unknown type %s\n", spec);
    exit(1);
  }
}

#endif
