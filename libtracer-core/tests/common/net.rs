//! Helpers of the tests of graphs over links (`graph_net*.rs`): two graphs linked over the
//! in-process `MemoryFabric` (real codec), and waiting for what another thread makes true.

use std::time::{Duration, Instant};

use libtracer_core::link::{MemoryFabric, MemoryNode};
use libtracer_core::Graph;

use super::graph;

/// Bound on every wait of these tests.
pub const T: Duration = Duration::from_secs(10);

/// Wait for a condition that another thread makes true (no timing is asserted).
pub fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `g` joins the fabric under its own name.
pub fn join(fabric: &MemoryFabric, g: &Graph) -> MemoryNode {
    fabric.join(g.name(), g.link_handler()).unwrap()
}

/// Graphs `a` and `b`, each mounted on the other. The link lasts as long as both nodes (drop one
/// to drop it) and the fabric.
pub fn pair() -> (Graph, Graph, MemoryNode, MemoryNode, MemoryFabric) {
    let fabric = MemoryFabric::new();
    let a = graph("a");
    let b = graph("b");
    let na = join(&fabric, &a);
    let nb = join(&fabric, &b);
    eventually("a and b mounted", || {
        a.peers() == ["b"] && b.peers() == ["a"]
    });
    (a, b, na, nb, fabric)
}
