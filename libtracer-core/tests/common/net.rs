//! Helpers of the tests of graphs over links (`graph_net*.rs`): two graphs linked over the
//! in-process `MemoryFabric` (real codec).

use std::time::Duration;

use libtracer_core::link::{MemoryFabric, MemoryNode};
use libtracer_core::Graph;

use super::graph;
use super::poll::eventually;

/// Bound on every wait of these tests.
pub const T: Duration = Duration::from_secs(10);

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
    eventually(T, || a.peers() == ["b"] && b.peers() == ["a"]).expect("a and b mounted");
    (a, b, na, nb, fabric)
}
