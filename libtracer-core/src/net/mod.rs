//! The graph on its links: a link that comes up is mounted at `/net/<peer>` (`attach`), the
//! peer's frames are answered (`incoming`), and a link that drops takes its mount and every
//! edge bound to it (`detach`); `host` binds the transports' `LinkHandler` to these and starts
//! discovery.
//!
//! Above the graph's state (`state::GraphInner`) and its table of peers (`peers`); nothing
//! below imports it. The public `Graph` reaches it for `attach_link`, `link_frame`,
//! `link_down`, `link_handler`, `shutdown` and its constructor.

mod host;
mod incoming;

pub(crate) use host::start_host;
#[cfg(feature = "quic")]
pub(crate) use host::start_network;
pub use host::GraphHandler;
pub(crate) use incoming::on_frame;

use std::sync::Arc;

use crate::error::Error;
use crate::link::Link;
use crate::path::valid_segment;
use crate::peers::LinkId;
use crate::state::GraphInner;

/// A new link: mount `/net/<peer>` (a link to a name already mounted replaces the old one).
pub(crate) fn attach(g: &GraphInner, link: Arc<dyn Link>) -> Result<LinkId, Error> {
    let name = link.peer().name.clone();
    if !valid_segment(&name) || name == g.name {
        link.close();
        return Err(Error::InvalidPath {
            path: name,
            reason: "a peer name must be a valid segment other than our own name",
        });
    }
    if let Some(old) = g.peers.named(&name) {
        detach(g, old.id());
        old.close();
    }
    // Registered before the mount, so a subscribe prompted by the mount's `Created` event
    // finds the link.
    let st = g.peers.add(link);
    let m = g.mount(&name)?;
    st.set_mount(m);
    Ok(st.id())
}

/// The link dropped: the mount goes (a `Removed` on `/net/:children[]`), every edge the peer made
/// here goes, and every edge we made over it fails with `LinkDown`. The link is marked down
/// first, in the same step that takes it out of the table: no reader of the graph sees the
/// link gone and its edges still there, or the other way round.
pub(crate) fn detach(g: &GraphInner, id: LinkId) {
    let Some(st) = g.peers.remove(id) else {
        return;
    };
    if let Some(m) = st.take_mount() {
        g.remove_node(&m);
    }
    st.release();
}
