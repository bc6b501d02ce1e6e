/* Every C header (Jazzy and Kilted alike) the rmw_tracer boundary layer needs, bound by build.rs with bindgen. */

#include <rcutils/allocator.h>
#include <rcutils/error_handling.h>
#include <rcutils/logging.h>
#include <rcutils/strdup.h>
#include <rcutils/time.h>
#include <rcutils/types.h>

#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/primitives_sequence.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/sequence_bound.h>
#include <rosidl_runtime_c/service_type_support_struct.h>
#include <rosidl_runtime_c/string.h>
#include <rosidl_runtime_c/string_functions.h>
#include <rosidl_runtime_c/type_hash.h>
#include <rosidl_runtime_c/u16string.h>
#include <rosidl_runtime_c/u16string_functions.h>
#include <rosidl_runtime_c/type_description/type_description__struct.h>
#include <rosidl_runtime_c/type_description/type_source__struct.h>

#include <rosidl_typesupport_interface/macros.h>

#include <rosidl_typesupport_introspection_c/field_types.h>
#include <rosidl_typesupport_introspection_c/identifier.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>
#include <rosidl_typesupport_introspection_c/service_introspection.h>

#include <rosidl_dynamic_typesupport/identifier.h>
#include <rosidl_dynamic_typesupport/types.h>
#include <rosidl_dynamic_typesupport/dynamic_message_type_support_struct.h>
#include <rosidl_dynamic_typesupport/api/serialization_support.h>
#include <rosidl_dynamic_typesupport/api/dynamic_data.h>
#include <rosidl_dynamic_typesupport/api/dynamic_type.h>

#include <rmw/allocators.h>
#include <rmw/convert_rcutils_ret_to_rmw_ret.h>
#include <rmw/discovery_options.h>
#include <rmw/domain_id.h>
#include <rmw/dynamic_message_type_support.h>
#include <rmw/error_handling.h>
#include <rmw/event.h>
#include <rmw/event_callback_type.h>
#include <rmw/events_statuses/events_statuses.h>
#include <rmw/features.h>
#include <rmw/get_network_flow_endpoints.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_service_names_and_types.h>
#include <rmw/get_topic_endpoint_info.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/init.h>
#include <rmw/init_options.h>
#include <rmw/message_sequence.h>
#include <rmw/names_and_types.h>
#include <rmw/network_flow_endpoint.h>
#include <rmw/network_flow_endpoint_array.h>
#include <rmw/publisher_options.h>
#include <rmw/qos_policy_kind.h>
#include <rmw/qos_profiles.h>
#include <rmw/qos_string_conversions.h>
#include <rmw/ret_types.h>
#include <rmw/rmw.h>
#include <rmw/sanity_checks.h>
#include <rmw/security_options.h>
#include <rmw/serialized_message.h>
#include <rmw/subscription_content_filter_options.h>
#include <rmw/subscription_options.h>
#include <rmw/time.h>
#include <rmw/topic_endpoint_info.h>
#include <rmw/topic_endpoint_info_array.h>
#include <rmw/types.h>
#include <rmw/validate_full_topic_name.h>
#include <rmw/validate_namespace.h>
#include <rmw/validate_node_name.h>
