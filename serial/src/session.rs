//! The host side of one serial line (docs/serial.md sections 4-7), sans I/O: bytes and time in,
//! events and bytes out. The caller (the host link) reads the port into [`Session::handle_bytes`],
//! writes what [`Session::poll_transmit`] returns, calls [`Session::handle_timeout`] when
//! [`Session::poll_timeout`] is due, and takes [`Event`]s with [`Session::poll_event`]. Times are
//! milliseconds of any monotonic clock.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::codec::{encode_message, encode_packet, Deframer, MAX_FRAME};
use crate::error::SendError;
use crate::frame::{
    Declare, Hello, Packet, CDR_HEADER, ENCAP_CDR_LE, FLAG_RELIABLE, FLAG_SUBSCRIPTION,
};
use crate::stream::{Drop, Piece, Reply, RxStream, TxStream};
pub use crate::types::{gid, Endpoint, EndpointKind, Event, NodeInfo, SessionConfig, Stats};

struct Ep {
    info: Arc<Endpoint>,
    rx: RxStream,
    tx: TxStream,
}

struct Peer {
    node: Arc<NodeInfo>,
    hello_uptime: u32,
    hello_at: u64,
    n: u8,
    /// Bit a: alias a declared in this boot (kept across the boot's repeated HELLOs: an alias
    /// is fixed for the boot and a changed declaration is seen as it comes).
    declared: u64,
    ready: bool,
    eps: Vec<Option<Ep>>,
}

/// The bytes to send and when the last went, apart from the rest so they can be written while
/// a peer's endpoint is borrowed.
struct Out {
    bytes: Vec<u8>,
    last_tx: u64,
}

impl Out {
    fn send(&mut self, now: u64, p: &Packet<'_>) {
        encode_packet(p, &mut self.bytes);
        self.last_tx = now;
    }
}

/// Messages the application has not taken (`Event::Data` waiting in `poll_event`) past which
/// the session refuses a reliable one (`on_piece`), which the MCU sends again: what it holds
/// for an application that is held back. Above what one read of 4 KiB from the line brings
/// (585 of the shortest frames), so an application that takes after every read meets it only
/// when it stops taking; a reliable stream never brings more at once than the MCU's window.
pub const MAX_UNDELIVERED: usize = 1024;
/// The same for a best-effort message, which is then lost (its gap says so): a best-effort
/// stream has no window, and a burst of one may come in one read of a large buffer; this only
/// bounds memory (at most 32 MiB of the largest messages) while the application takes nothing.
pub const MAX_UNDELIVERED_BEST_EFFORT: usize = 16 * MAX_UNDELIVERED;

pub struct Session {
    cfg: SessionConfig,
    deframer: Deframer,
    peer: Option<Peer>,
    events: VecDeque<Event>,
    /// `Event::Data` among `events`: counted as they go in and out, since `on_piece` asks for
    /// it with every message.
    undelivered: usize,
    out: Out,
    last_rx: u64,
    last_sync: Option<u64>,
    stats: Stats,
}

impl Session {
    /// A session that has just started: it asks any MCU on the line to declare (SYNC).
    pub fn new(cfg: SessionConfig, now: u64) -> Session {
        let mut s = Session {
            cfg,
            deframer: Deframer::new(MAX_FRAME),
            peer: None,
            events: VecDeque::new(),
            undelivered: 0,
            out: Out {
                bytes: Vec::new(),
                last_tx: now,
            },
            last_rx: now,
            last_sync: None,
            stats: Stats::default(),
        };
        s.sync(now);
        s
    }

    fn sync(&mut self, now: u64) {
        self.out.send(now, &Packet::Sync);
        self.last_sync = Some(now);
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The node of the current session, once its HELLO came.
    pub fn node(&self) -> Option<Arc<NodeInfo>> {
        self.peer.as_ref().map(|p| p.node.clone())
    }

    pub fn is_ready(&self) -> bool {
        self.peer.as_ref().is_some_and(|p| p.ready)
    }

    pub fn endpoint(&self, alias: u8) -> Option<Arc<Endpoint>> {
        let peer = self.peer.as_ref()?;
        peer.eps
            .get(usize::from(alias))?
            .as_ref()
            .map(|e| e.info.clone())
    }

    /// Reliable messages sent to an MCU subscription and not yet acknowledged.
    pub fn in_flight(&self, alias: u8) -> usize {
        let ep = self
            .peer
            .as_ref()
            .and_then(|p| p.eps.get(usize::from(alias))?.as_ref());
        ep.map_or(0, |e| e.tx.in_flight())
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        let ev = self.events.pop_front();
        if matches!(ev, Some(Event::Data { .. })) {
            self.undelivered -= 1;
        }
        ev
    }

    /// The bytes to write to the line, if any.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        (!self.out.bytes.is_empty()).then(|| std::mem::take(&mut self.out.bytes))
    }

    /// Heap bytes held by buffers that input could grow (the collected frame, reassembly,
    /// reliable messages held). Events and output not yet polled are the caller's to drain.
    pub fn heap_bytes(&self) -> usize {
        let eps = self.peer.iter().flat_map(|p| p.eps.iter().flatten());
        self.deframer.heap_bytes()
            + eps
                .map(|e| e.rx.heap_bytes() + e.tx.heap_bytes())
                .sum::<usize>()
    }

    /// Bytes read from the line.
    pub fn handle_bytes(&mut self, now: u64, mut bytes: &[u8]) {
        let mut packet = [0u8; MAX_FRAME];
        while let Some(r) = self.deframer.next_packet(&mut bytes) {
            match r {
                Ok(p) => {
                    let n = p.len();
                    packet[..n].copy_from_slice(p);
                    self.handle_packet(now, &packet[..n]);
                }
                Err(_) => self.stats.bad_frames += 1,
            }
        }
    }

    /// One checked packet (for a transport whose own framing already checks, as CAN will).
    pub fn handle_packet(&mut self, now: u64, bytes: &[u8]) {
        self.last_rx = now;
        self.stats.frames_in += 1;
        let Ok(p) = Packet::decode(bytes) else {
            self.stats.malformed += 1;
            return;
        };
        match p {
            Packet::Hello(h) => self.on_hello(now, &h),
            Packet::Declare(d) => self.on_declare(now, &d),
            Packet::Heartbeat => {}
            Packet::Ack { alias, seq } | Packet::Nack { alias, seq } => {
                let nack = matches!(p, Packet::Nack { .. });
                self.on_ack(now, alias, seq, nack);
            }
            Packet::Data { alias, seq, body } => {
                self.on_piece(now, alias, seq, 8, Piece::Whole(body))
            }
            Packet::CData { alias, seq, body } => {
                self.on_piece(now, alias, seq, 4, Piece::Whole(body))
            }
            Packet::Frag {
                alias,
                seq,
                index,
                total,
                bytes,
            } => self.on_piece(
                now,
                alias,
                seq,
                8,
                Piece::Frag {
                    index,
                    total,
                    bytes,
                },
            ),
            Packet::Ready { .. } | Packet::Sync => self.stats.malformed += 1,
        }
    }

    fn on_hello(&mut self, now: u64, h: &Hello<'_>) {
        if h.n_endpoints > 64 || usize::from(h.max_frame) < 16 {
            self.stats.malformed += 1;
            return;
        }
        if let Some(peer) = &self.peer {
            // Same boot: same session and a clock that did not go backwards (section 6).
            let elapsed = now.saturating_sub(peer.hello_at);
            let expected = u64::from(peer.hello_uptime) + elapsed;
            let slack = 250 + elapsed / 64;
            let same = h.session == peer.node.session && u64::from(h.uptime_ms) + slack >= expected;
            if same {
                let peer = self.peer.as_mut().expect("checked above");
                peer.hello_uptime = h.uptime_ms;
                peer.hello_at = now;
                // What was declared in this boot stays declared: on a noisy line the HELLO and
                // every DECLARE after it seldom all get through together (a DECLARE with its
                // hash is about 115 bytes), one at a time they do. The MCU repeats HELLO while
                // it has no READY, so READY goes out again now if nothing is missing.
                peer.declared &= all_aliases(h.n_endpoints);
                peer.n = h.n_endpoints;
                peer.eps.resize_with(usize::from(h.n_endpoints), || None);
                self.complete(now);
                return;
            }
            self.stats.resets += 1;
            let node = peer.node.clone();
            self.peer = None;
            self.events.push_back(Event::Reset { node });
        }
        let node = Arc::new(NodeInfo {
            namespace: h.namespace.to_string(),
            name: h.name.to_string(),
            session: h.session,
            max_frame: h.max_frame,
            max_msg: h.max_msg,
            boot_ms: now.saturating_sub(u64::from(h.uptime_ms)),
            salt: self.cfg.gid_salt,
        });
        let mut eps = Vec::new();
        eps.resize_with(usize::from(h.n_endpoints), || None);
        self.peer = Some(Peer {
            node,
            hello_uptime: h.uptime_ms,
            hello_at: now,
            n: h.n_endpoints,
            declared: 0,
            ready: false,
            eps,
        });
        self.complete(now);
    }

    fn on_declare(&mut self, now: u64, d: &Declare<'_>) {
        let Some(peer) = self.peer.as_mut() else {
            // A DECLARE without its HELLO (we restarted, or the HELLO was lost).
            self.resync(now);
            return;
        };
        if d.alias >= peer.n || d.encap != ENCAP_CDR_LE {
            self.stats.malformed += 1;
            return;
        }
        let kind = if d.flags & FLAG_SUBSCRIPTION != 0 {
            EndpointKind::Subscription
        } else {
            EndpointKind::Publisher
        };
        let info = Endpoint {
            alias: d.alias,
            kind,
            reliable: d.flags & FLAG_RELIABLE != 0,
            depth: d.depth,
            topic: d.topic.to_string(),
            type_name: d.type_name.to_string(),
            type_hash: d.type_hash.to_string(),
            gid: gid(&peer.node, d.alias),
            node: peer.node.clone(),
        };
        let seq = u64::from(d.seq);
        let slot = &mut peer.eps[usize::from(d.alias)];
        match slot {
            Some(ep) if *ep.info == info => {
                // Declared again (after SYNC, a lost READY, a pulled cable): continue.
                ep.rx.next = ep.rx.next.max(seq);
                ep.tx.on_declared(seq);
            }
            _ => {
                let info = Arc::new(info);
                *slot = Some(Ep {
                    info: info.clone(),
                    rx: RxStream::new(seq, info.reliable),
                    tx: TxStream::new(seq, info.reliable),
                });
                self.events.push_back(Event::Declared {
                    alias: d.alias,
                    endpoint: info,
                });
            }
        }
        let bit = 1u64 << d.alias;
        let fresh = peer.declared & bit == 0;
        peer.declared |= bit;
        // A DECLARE repeated after READY (the MCU sends HELLO and its DECLAREs together) needs
        // no READY of its own: the HELLO's answered it.
        if fresh {
            self.complete(now);
        }
    }

    /// READY once every alias of the HELLO has been declared in this boot.
    fn complete(&mut self, now: u64) {
        let Some(peer) = self.peer.as_mut() else {
            return;
        };
        if peer.declared != all_aliases(peer.n) {
            return;
        }
        let session = peer.node.session;
        self.out.send(
            now,
            &Packet::Ready {
                session,
                n_endpoints: peer.n,
            },
        );
        if !peer.ready {
            peer.ready = true;
            self.events.push_back(Event::Ready {
                node: peer.node.clone(),
            });
        }
    }

    /// Asks the MCU to declare again, at most once per `sync_ms`.
    fn resync(&mut self, now: u64) {
        if self
            .last_sync
            .is_none_or(|t| now.saturating_sub(t) >= self.cfg.sync_ms)
        {
            self.sync(now);
        }
    }

    fn on_ack(&mut self, now: u64, alias: u8, seq: u8, nack: bool) {
        let Some(peer) = self.peer.as_mut() else {
            return;
        };
        let Some(Some(ep)) = peer.eps.get_mut(usize::from(alias)) else {
            self.stats.unknown_alias += 1;
            return;
        };
        if ep.info.kind != EndpointKind::Subscription || !ep.info.reliable {
            self.stats.malformed += 1;
            return;
        }
        if ep.tx.on_ack(now, seq, nack) {
            let max_frame = usize::from(peer.node.max_frame);
            resend(
                &mut self.out,
                &mut self.stats,
                now,
                alias,
                &mut ep.tx,
                max_frame,
            );
        }
    }

    fn on_piece(&mut self, now: u64, alias: u8, seq: u8, bits: u32, piece: Piece<'_>) {
        // The application is not taking messages (a RELIABLE + KEEP_ALL subscriber of the host
        // has no room): refuse this one, neither acknowledged nor advanced over, so the MCU
        // sends it again after its timeout and its window fills (back-pressure, as an MCU
        // application's refusal does the other way; docs/serial.md section 5). A best-effort
        // one is lost, and its gap says so.
        let known = self
            .peer
            .as_mut()
            .and_then(|p| p.eps.get_mut(usize::from(alias))?.as_mut());
        let Some(ep) = known else {
            self.stats.unknown_alias += 1;
            self.resync(now);
            return;
        };
        if ep.info.kind != EndpointKind::Publisher {
            self.stats.malformed += 1;
            return;
        }
        let bound = if ep.info.reliable {
            MAX_UNDELIVERED
        } else {
            MAX_UNDELIVERED_BEST_EFFORT
        };
        if self.undelivered >= bound {
            self.stats.refused += 1;
            return;
        }
        let (delivered, reply, drop) =
            ep.rx
                .on_piece(now, self.cfg.rto_ms, seq, bits, piece, self.cfg.max_message);
        match drop {
            Drop::None => {}
            Drop::OutOfOrder => self.stats.out_of_order += 1,
            Drop::TooLarge => self.stats.too_large += 1,
        }
        match reply {
            Reply::None => {}
            Reply::Ack(s) => self.out.send(now, &Packet::Ack { alias, seq: s }),
            Reply::Nack(s) => self.out.send(now, &Packet::Nack { alias, seq: s }),
        }
        if let Some(d) = delivered {
            let endpoint = ep.info.clone();
            if d.lost > 0 {
                self.events.push_back(Event::Gap {
                    endpoint: endpoint.clone(),
                    lost: d.lost,
                });
            }
            self.undelivered += 1;
            self.events.push_back(Event::Data {
                endpoint,
                sequence: d.sequence,
                payload: d.payload,
            });
        }
    }

    /// Messages delivered (`Event::Data`) and not yet taken by `poll_event`.
    #[cfg(test)]
    pub(crate) fn undelivered(&self) -> usize {
        self.undelivered
    }

    /// Sends a message (full CDR, header included) to the MCU subscription `alias`. Best
    /// effort: sent once. Reliable: held until acknowledged; `WindowFull` past the window.
    pub fn send(&mut self, now: u64, alias: u8, cdr: &[u8]) -> Result<(), SendError> {
        let peer = self
            .peer
            .as_mut()
            .filter(|p| p.ready)
            .ok_or(SendError::NotReady)?;
        let max_frame = usize::from(peer.node.max_frame);
        let max_msg = usize::from(peer.node.max_msg);
        let ep = peer
            .eps
            .get_mut(usize::from(alias))
            .and_then(Option::as_mut)
            .filter(|e| e.info.kind == EndpointKind::Subscription)
            .ok_or(SendError::NotSubscription(alias))?;
        let body = cdr
            .strip_prefix(&CDR_HEADER[..])
            .ok_or(SendError::BadEncapsulation)?;
        let frag_room = max_frame.min(MAX_FRAME) - 2 - 6;
        if body.len() > max_msg || body.len() > 256 * frag_room {
            return Err(SendError::TooLarge {
                len: body.len(),
                max: max_msg,
            });
        }
        if ep.info.reliable && ep.tx.in_flight() >= self.cfg.window.clamp(1, 127) {
            return Err(SendError::WindowFull);
        }
        let seq = ep.tx.push(now, body);
        encode_message(
            alias,
            seq,
            body,
            ep.info.reliable,
            max_frame,
            &mut self.out.bytes,
        );
        self.out.last_tx = now;
        Ok(())
    }

    /// Runs the timers: liveness, SYNC while alone, retransmission, HEARTBEAT.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.peer.is_some() && now.saturating_sub(self.last_rx) >= self.cfg.lost_ms {
            let peer = self.peer.take().expect("checked");
            self.events.push_back(Event::Lost { node: peer.node });
        }
        let Some(peer) = self.peer.as_mut() else {
            self.resync(now);
            return;
        };
        if peer.ready {
            let max_frame = usize::from(peer.node.max_frame);
            for (a, ep) in peer.eps.iter_mut().enumerate() {
                let Some(ep) = ep else { continue };
                if ep.tx.deadline(self.cfg.rto_ms).is_some_and(|d| now >= d) {
                    resend(
                        &mut self.out,
                        &mut self.stats,
                        now,
                        a as u8,
                        &mut ep.tx,
                        max_frame,
                    );
                }
            }
        }
        if now.saturating_sub(self.out.last_tx) >= self.cfg.heartbeat_ms {
            self.out.send(now, &Packet::Heartbeat);
        }
    }

    /// When [`Session::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> u64 {
        let Some(peer) = &self.peer else {
            return self.last_sync.map_or(0, |t| t + self.cfg.sync_ms);
        };
        let mut t = (self.last_rx + self.cfg.lost_ms).min(self.out.last_tx + self.cfg.heartbeat_ms);
        if peer.ready {
            for ep in peer.eps.iter().flatten() {
                if let Some(d) = ep.tx.deadline(self.cfg.rto_ms) {
                    t = t.min(d);
                }
            }
        }
        t
    }
}

/// The bits of aliases `0..n`.
fn all_aliases(n: u8) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Go-back-N: every held message of a subscription again.
fn resend(
    out: &mut Out,
    stats: &mut Stats,
    now: u64,
    alias: u8,
    tx: &mut TxStream,
    max_frame: usize,
) {
    for (seq, body) in tx.held() {
        encode_message(alias, seq, body, true, max_frame, &mut out.bytes);
        stats.retransmits += 1;
    }
    tx.mark_sent(now);
    out.last_tx = now;
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
