//! Unit tests of the recording's pieces that need no process (the end-to-end checks are
//! `ros_tests/test_record.py` and `ros_tests/test_capi.py`).

use super::session::Window;

/// Ruling (issue 4, item 3): a message several subscriptions of one process take is recorded
/// once; every new sequence number of a writer is recorded.
#[test]
fn window_records_each_sequence_once() {
    let mut w = Window::default();
    assert!((1..=100).all(|s| w.first_time(s)));
    assert!((1..=100).all(|s| !w.first_time(s)));
    // Out of order within the window.
    assert!(w.first_time(105));
    assert!(w.first_time(103));
    assert!(!w.first_time(103));
    assert!(w.first_time(101));
    // A jump larger than the window forgets the old bits, and older numbers count as seen.
    assert!(w.first_time(100 + 3 * Window::SPAN));
    assert!(!w.first_time(105));
    assert!(w.first_time(100 + 3 * Window::SPAN - 1));
}
