#![forbid(unsafe_code)]
//! MCAP format: see docs/mcap.md.
