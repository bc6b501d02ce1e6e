#![forbid(unsafe_code)]
//! libtracer-core: see docs/libtracer.md.
