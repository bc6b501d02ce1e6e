//! The boundary layer: the only place where rmw_tracer touches C.
//!
//! Every `extern "C"` entry point in `crate::entry` is one call through [`panic`] into safe Rust.
//! Raw pointers become references only in [`handle`] (rmw handles) and [`cstr`] (C strings);
//! errors become `rmw_ret_t` plus the rmw error string only in [`error`].

pub mod clib;
pub mod cstr;
pub mod error;
pub mod event_callback;
pub mod graph_out;
pub mod handle;
pub mod message;
pub mod panic;
pub mod service_types;

pub use error::{RmwError, RmwResult};
pub use panic::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};
