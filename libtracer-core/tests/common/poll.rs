//! Waiting for what another thread or process makes true, for every test binary: `common`
//! declares this module, and a test that uses `link_support` instead takes the file by
//! `#[path]` (as `corpus.rs` is taken), so that no test includes both shared modules for it.
//! `link_support` cannot declare it too: `link_multiprocess` includes both, and one file
//! loaded twice is what `clippy::duplicate_mod` refuses.

use std::time::{Duration, Instant};

/// Poll `f` every millisecond until it holds (`Some`, with the time that took) or `timeout`
/// passes (`None`). A waiting test calls `.expect(what)` on it or asserts `is_some()`; the
/// tests that time a reaction read the `Duration`, which the 1 ms step keeps fine-grained.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if f() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
