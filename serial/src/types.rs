//! What the host session reports and is configured with (docs/serial.md sections 4-7): the
//! MCU node and its endpoints as declared, the events, the counters, the gid derivation.

use std::sync::Arc;

/// Timers and bounds; the defaults are the spec's (section 7).
#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub heartbeat_ms: u64,
    /// No valid frame for this long: [`Event::Lost`].
    pub lost_ms: u64,
    /// SYNC repeat while there is no session.
    pub sync_ms: u64,
    pub rto_ms: u64,
    /// Reliable messages in flight towards one MCU subscription (1..=127).
    pub window: usize,
    /// Largest message body the host reassembles.
    pub max_message: usize,
    /// Mixed into every gid, so MCUs on different ports or hosts that give the same name and
    /// session never share one (the link passes e.g. a hash of host name and port path).
    pub gid_salt: u64,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            heartbeat_ms: 250,
            lost_ms: 1000,
            sync_ms: 500,
            rto_ms: 100,
            window: 4,
            max_message: 65535,
            gid_salt: 0,
        }
    }
}

/// The MCU node, from its HELLO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub namespace: String,
    pub name: String,
    pub session: u32,
    pub max_frame: u8,
    pub max_msg: u16,
    /// When the MCU booted, on the clock given to the session (receive time of the HELLO
    /// minus its uptime): tells two boots apart even when the application gives the same
    /// `session` at every boot.
    pub boot_ms: u64,
    /// [`SessionConfig::gid_salt`].
    pub salt: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    Publisher,
    Subscription,
}

/// One declared endpoint: what DECLARE said once, so DATA frames need only the alias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub alias: u8,
    pub kind: EndpointKind,
    pub reliable: bool,
    pub depth: u8,
    pub topic: String,
    pub type_name: String,
    /// `RIHS01_<hex>` or empty.
    pub type_hash: String,
    /// The 16-byte gid (section 4): FNV-1a of the node and its boot, then alias + 1.
    pub gid: [u8; 16],
    pub node: Arc<NodeInfo>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The MCU rebooted: everything of the old session is gone (the new one follows).
    Reset { node: Arc<NodeInfo> },
    /// An endpoint (new, or changed since it was last declared).
    Declared { alias: u8, endpoint: Arc<Endpoint> },
    /// Every endpoint is declared and READY was sent: the node can join the graph.
    Ready { node: Arc<NodeInfo> },
    /// A message of an MCU publisher: full CDR with its header, the reconstructed sequence.
    Data {
        endpoint: Arc<Endpoint>,
        sequence: u64,
        payload: Vec<u8>,
    },
    /// Best-effort messages of the endpoint lost on the line just before the next `Data`.
    Gap { endpoint: Arc<Endpoint>, lost: u64 },
    /// Silence past `lost_ms`: the node is gone until it speaks again.
    Lost { node: Arc<NodeInfo> },
}

/// What the session dropped, for a link to log once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub frames_in: u64,
    /// Frames that failed COBS, length or check (garbage, noise, truncation).
    pub bad_frames: u64,
    /// Checked frames whose packet was malformed or not for the host.
    pub malformed: u64,
    /// DATA for an alias not (yet) declared.
    pub unknown_alias: u64,
    /// Reliable frames out of order, best-effort fragments out of order.
    pub out_of_order: u64,
    pub too_large: u64,
    pub retransmits: u64,
    pub resets: u64,
    /// Messages refused because the application had `MAX_UNDELIVERED` not taken (reliable ones
    /// come again from the MCU; best-effort ones are lost).
    pub refused: u64,
}

/// The gid of an endpoint (section 4): the same for every declaration of one boot seen by one
/// session, new for a new boot (whose sequence numbers start again).
pub fn gid(node: &NodeInfo, alias: u8) -> [u8; 16] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = node
        .namespace
        .bytes()
        .chain([b'/'])
        .chain(node.name.bytes());
    let boot = node
        .session
        .to_le_bytes()
        .into_iter()
        .chain(node.boot_ms.to_le_bytes());
    for b in bytes.chain(boot).chain(node.salt.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&h.to_le_bytes());
    g[8..].copy_from_slice(&(u64::from(alias) + 1).to_le_bytes());
    g
}
