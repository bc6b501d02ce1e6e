//! The C++ shim (`cxx_string.cpp`, compiled by build.rs): std::string and std::u16string through
//! their own API, and C++ resize functions with exceptions caught.

use std::ffi::{c_char, c_void};

use super::plan::ResizeCpp;

unsafe extern "C" {
    pub fn rmw_tracer_cxx_string_view(s: *const c_void, len: *mut usize) -> *const c_char;
    pub fn rmw_tracer_cxx_string_assign(s: *mut c_void, data: *const c_char, len: usize) -> bool;
    pub fn rmw_tracer_cxx_u16string_view(s: *const c_void, len: *mut usize) -> *const u16;
    pub fn rmw_tracer_cxx_u16string_assign(s: *mut c_void, data: *const u16, len: usize) -> bool;
    pub fn rmw_tracer_cxx_call_resize(resize: ResizeCpp, member: *mut c_void, size: usize) -> bool;
}
