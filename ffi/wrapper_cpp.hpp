// The C++ introspection type support: its structs differ from the C ones only in two
// function-pointer signatures (resize returns void, init takes the C++ MessageInitialization),
// so they are generated from the real header in C++ mode rather than copied by hand.

#include <rosidl_typesupport_introspection_cpp/field_types.hpp>
#include <rosidl_typesupport_introspection_cpp/identifier.hpp>
#include <rosidl_typesupport_introspection_cpp/message_introspection.hpp>
#include <rosidl_typesupport_introspection_cpp/service_introspection.hpp>
