//! The vertex tree: a path index for O(1) lookup plus per-vertex child maps for subtree walks.
//! Structural changes (create, remove, role, schema) are serialised by one reentrant lock so the
//! structural feed sees them in a single order; re-entrant because a sink that receives a
//! structural event may itself create a vertex on the same thread. `Vertex::write` takes neither
//! the index lock nor the structure lock.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::{ReentrantMutex, ReentrantMutexGuard, RwLock};

use crate::path::{join, Path};
use crate::vertex::Node;

pub(crate) struct Tree {
    pub(crate) root: Arc<Node>,
    index: RwLock<HashMap<Arc<str>, Arc<Node>>>,
    lock: ReentrantMutex<()>,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        let root = Arc::new(Node::new(Arc::from("/"), None));
        let mut index = HashMap::new();
        index.insert(root.path.clone(), root.clone());
        Tree {
            root,
            index: RwLock::new(index),
            lock: ReentrantMutex::new(()),
        }
    }

    pub(crate) fn lock(&self) -> ReentrantMutexGuard<'_, ()> {
        self.lock.lock()
    }

    pub(crate) fn get(&self, path: &str) -> Option<Arc<Node>> {
        self.index.read().get(path).cloned()
    }

    /// The nearest existing vertex at or above `p`.
    pub(crate) fn nearest(&self, p: &Path) -> Arc<Node> {
        let idx = self.index.read();
        let mut s = p.base();
        loop {
            if let Some(n) = idx.get(s) {
                return n.clone();
            }
            match s.rfind('/') {
                Some(0) | None => return self.root.clone(),
                Some(i) => s = &s[..i],
            }
        }
    }

    /// mkdir -p: returns the vertex at `p` and the vertices this call created, root first.
    /// The caller holds the structure lock and has checked CREATE.
    pub(crate) fn create(&self, p: &Path) -> (Arc<Node>, Vec<Arc<Node>>) {
        let mut cur = self.root.clone();
        let mut created = Vec::new();
        for seg in p.segments() {
            let next = {
                let mut ch = cur.children.lock();
                match ch.get(seg) {
                    Some(n) => n.clone(),
                    None => {
                        let n = Arc::new(Node::new(
                            Arc::from(join(&cur.path, seg).as_str()),
                            Some(cur.clone()),
                        ));
                        ch.insert(seg.into(), n.clone());
                        self.index.write().insert(n.path.clone(), n.clone());
                        created.push(n.clone());
                        n
                    }
                }
            };
            cur = next;
        }
        (cur, created)
    }

    /// `node` and its descendants, pre-order (tree order), children sorted by name.
    pub(crate) fn subtree(&self, node: &Arc<Node>, include_self: bool) -> Vec<Arc<Node>> {
        let mut out = Vec::new();
        fn walk(n: &Arc<Node>, out: &mut Vec<Arc<Node>>) {
            let ch: Vec<Arc<Node>> = n.children.lock().values().cloned().collect();
            for c in ch {
                out.push(c.clone());
                walk(&c, out);
            }
        }
        if include_self {
            out.push(node.clone());
        }
        walk(node, &mut out);
        out
    }

    /// Unlink the subtree at `node` from the tree; returns it post-order (children first,
    /// siblings by name).
    /// The caller holds the structure lock.
    pub(crate) fn detach(&self, node: &Arc<Node>) -> Vec<Arc<Node>> {
        fn post(n: &Arc<Node>, out: &mut Vec<Arc<Node>>) {
            let ch: Vec<Arc<Node>> = n.children.lock().values().cloned().collect();
            for c in ch {
                post(&c, out);
            }
            out.push(n.clone());
        }
        let mut nodes = Vec::new();
        post(node, &mut nodes);
        if let Some(p) = &node.parent {
            let name = &node.path[node.path.rfind('/').map_or(0, |i| i + 1)..];
            p.children.lock().remove(name);
        }
        let mut idx = self.index.write();
        for n in &nodes {
            n.removed.store(true, Ordering::Release);
            idx.remove(&n.path);
        }
        nodes
    }
}

impl Drop for Tree {
    /// Parents and children hold each other, and edges hold their targets: break every cycle.
    fn drop(&mut self) {
        let all: Vec<Arc<Node>> = self.index.get_mut().drain().map(|(_, n)| n).collect();
        for n in all {
            n.children.lock().clear();
            n.edges.take_all();
            n.struct_edges.take_all();
            n.incoming.lock().clear();
        }
    }
}
