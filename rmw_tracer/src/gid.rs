//! Global ids of rmw entities (`rmw_gid_t`): 16 meaningful bytes.
//!
//! Layout: bytes 0..8 name the context that made the entity (the process id and a per-process
//! context counter mixed with the start time, so two processes or two contexts never share
//! them), bytes 8..16 count the entities of that context. The context half lets a subscription
//! tell its own context's publishers apart (`ignore_local_publications`).

/// A 16-byte global id and the source of a context's ids live in the ROS-free
/// `tracer_recording` (shared with libtracer's C API); [`to_rmw`] makes the `rmw_gid_t`.
pub use tracer_recording::gid::GidSource;
pub use tracer_recording::Gid;

/// The `rmw_gid_t` of `g`.
pub fn to_rmw(g: Gid) -> ffi::rmw_gid_t {
    ffi::rmw_gid_t {
        implementation_identifier: crate::IDENTIFIER.as_ptr(),
        data: g.0,
    }
}
