// Access to the C++ standard-library objects inside rclcpp messages, for the CDR walker in Rust.
//
// The C++ introspection type support describes std::string / std::u16string fields only by
// their offset and gives no functions for them, and its resize functions may throw. These
// wrappers let Rust use those objects through the standard API (never through an assumed
// layout) and turn exceptions into a `false` return, so that none unwinds into Rust.

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" {

const char * rmw_tracer_cxx_string_view(const void * s, size_t * len)
{
  const auto * str = static_cast<const std::string *>(s);
  *len = str->size();
  return str->data();
}

bool rmw_tracer_cxx_string_assign(void * s, const char * data, size_t len)
{
  try {
    static_cast<std::string *>(s)->assign(data, len);
    return true;
  } catch (...) {
    return false;
  }
}

const uint16_t * rmw_tracer_cxx_u16string_view(const void * s, size_t * len)
{
  const auto * str = static_cast<const std::u16string *>(s);
  *len = str->size();
  static_assert(sizeof(char16_t) == sizeof(uint16_t), "char16_t is 16 bits");
  return reinterpret_cast<const uint16_t *>(str->data());
}

bool rmw_tracer_cxx_u16string_assign(void * s, const uint16_t * data, size_t len)
{
  try {
    static_cast<std::u16string *>(s)->assign(reinterpret_cast<const char16_t *>(data), len);
    return true;
  } catch (...) {
    return false;
  }
}

// The resize function of a C++ introspection member (std::vector::resize) may throw
// std::bad_alloc or std::length_error.
bool rmw_tracer_cxx_call_resize(void (* resize)(void *, size_t), void * member, size_t size)
{
  try {
    resize(member, size);
    return true;
  } catch (...) {
    return false;
  }
}

}  // extern "C"
