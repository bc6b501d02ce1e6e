//! The receiving side of a link on the runtime-free engine (stage 2 of docs/network.md
//! section 4a), run by the link's watcher on the engine loop (or by whoever holds the
//! connection when the loop left it something): the peer's edge streams are accepted and read
//! through their `EdgeRx`, the control stream through its `ControlRx`, datagrams decoded, and
//! every frame handed to the link's [`Sink`] (its strand) in order per stream. A barrier
//! parks the control stream until the named
//! streams have handed up its marker; a full sink stops the reading (the bytes stay in
//! quinn-proto, no credit goes back, QUIC holds the peer) until the link's strand has drained
//! ([`Inbound::resume`], then [`Conn::poke`]).
//!
//! [`Conn::poke`]: super::engine::Conn::poke

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, Dir, Event, StreamId};

use super::receive::{decode_datagram, Control, ControlRx, EdgeRx, Markers};
use super::streams::CLASSES;
use crate::wire::{Frame, FrameDecoder};

/// Where a link's frames go (its strand), and what the receiving side tells the link.
pub(crate) trait Sink: Send + Sync {
    /// A frame for the handler; false when the sink is full (the reading stops until poked).
    fn frame(&self, frame: Frame) -> bool;
    /// A frame of the control stream, seen before the handler gets it (the sending side
    /// learns the routes of a SUBSCRIBE).
    fn learn(&self, _frame: &Frame) {}
    /// The peer's PING: answer PONG.
    fn ping(&self, nonce: u64);
    /// The peer broke the protocol: the link answers ERROR{malformed} and closes.
    fn malformed(&self, why: String);
    /// The connection is gone (closed by either side, or lost).
    fn lost(&self);
    /// The peer closed its link: its control stream and every edge stream it opened have
    /// ended, and everything on them was handed up.
    fn ended(&self) {
        self.lost();
    }
}

pub(crate) struct Inbound {
    pub(crate) markers: Markers,
    state: Mutex<State>,
    /// How long a barrier may wait for its markers (the link's write timeout).
    barrier_wait: Duration,
}

struct State {
    control: StreamId,
    control_rx: ControlRx,
    /// A barrier the control stream waits for: (number, classes, since).
    parked: Option<(u64, u8, Instant)>,
    edges: HashMap<StreamId, EdgeRx>,
    /// Bytes read but not handed up (the sink was full, or the control stream parked).
    left: HashMap<StreamId, Bytes>,
    paused: bool,
    done: bool,
    /// The peer finished the control stream (it closed its link).
    control_fin: bool,
}

impl Inbound {
    /// The receiving side of a link whose control stream is `control`; `dec` is the decoder
    /// the HELLO exchange used, and `rest` what it read past the HELLO.
    pub(crate) fn new(
        control: StreamId,
        dec: FrameDecoder,
        rest: Bytes,
        barrier_wait: Duration,
    ) -> Inbound {
        let mut left = HashMap::new();
        if !rest.is_empty() {
            left.insert(control, rest);
        }
        Inbound {
            markers: Markers::default(),
            state: Mutex::new(State {
                control,
                control_rx: ControlRx::new(dec),
                parked: None,
                edges: HashMap::new(),
                left,
                paused: false,
                done: false,
                control_fin: false,
            }),
            barrier_wait,
        }
    }

    /// The link's watcher: take the connection's events and read what it has for us.
    pub(crate) fn progress(&self, conn: &mut Connection, sink: &dyn Sink) {
        let mut st = self.state.lock();
        if st.done {
            return;
        }
        while let Some(ev) = conn.poll() {
            // Streams are looked at below whatever their events said.
            if let Event::ConnectionLost { .. } = ev {
                st.done = true;
                sink.lost();
                return;
            }
        }
        // Accepted whether or not their `Opened` was seen here: a stream the peer opened
        // while the HELLO exchange still had the connection is not lost.
        while let Some(id) = conn.streams().accept(Dir::Uni) {
            st.edges.insert(id, EdgeRx::default());
        }
        if st.paused {
            // Until the strand has room (`resume`): the bytes stay in quinn-proto, whose
            // windows then hold the peer back; datagrams wait in its bounded buffer.
            return;
        }
        // Datagrams: one best-effort DELIVERY each.
        while let Some(d) = conn.datagrams().recv() {
            match decode_datagram(&d) {
                Ok(f) => {
                    if !sink.frame(f) {
                        st.paused = true;
                        break;
                    }
                }
                Err(why) => return self.fail(&mut st, sink, why),
            }
        }
        // Every edge stream (a few per link: reading one with nothing costs a lookup), then the
        // control stream, whose barrier may wait for the edge streams' markers.
        let mut ids: Vec<StreamId> = st.edges.keys().copied().collect();
        ids.sort_unstable();
        let control = st.control;
        ids.push(control);
        for id in ids {
            if st.paused || st.done {
                break;
            }
            if let Err(why) = self.read(conn, &mut st, id, sink) {
                return self.fail(&mut st, sink, why);
            }
        }
        // The peer closed its link and all it wrote is handed up: the link ends here (the
        // peer's close lingers until then, `link.rs`).
        if st.control_fin && st.edges.is_empty() && st.left.is_empty() && st.parked.is_none() {
            st.done = true;
            sink.ended();
        }
    }

    /// The sink has room again: reading resumes at the connection's next progress (the
    /// strand's drain calls this, then `Conn::poke`).
    pub(crate) fn resume(&self) {
        self.state.lock().paused = false;
    }

    /// When a parked barrier gives up waiting for its markers: the link's watcher asks the
    /// engine to look again by then (`Conn::wake_at`), so the check does not wait for traffic.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let st = self.state.lock();
        st.parked
            .map(|(_, _, since)| since + self.barrier_wait + Duration::from_millis(1))
    }

    fn fail(&self, st: &mut State, sink: &dyn Sink, why: String) {
        st.done = true;
        sink.malformed(why);
    }

    /// Hand up what stream `id` has: what was left from before, then what quinn-proto has.
    fn read(
        &self,
        conn: &mut Connection,
        st: &mut State,
        id: StreamId,
        sink: &dyn Sink,
    ) -> Result<(), String> {
        if let Some(mut rest) = st.left.remove(&id) {
            self.feed(st, id, &mut rest, sink)?;
            if !rest.is_empty() {
                st.left.insert(id, rest);
                return Ok(());
            }
        }
        let mut rs = conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            // Reset or finished and read: a best-effort stream abandoned, or an edge stream
            // the peer is done with.
            st.edges.remove(&id);
            return Ok(());
        };
        let (mut r, mut fin) = (Ok(()), false);
        loop {
            let mut bytes = match chunks.next(super::link::READ_CHUNK) {
                Ok(Some(c)) => c.bytes,
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(_) => break,
            };
            r = self.feed(st, id, &mut bytes, sink);
            if r.is_err() {
                break;
            }
            if !bytes.is_empty() {
                st.left.insert(id, bytes);
                break;
            }
        }
        // Credit goes back for what was read (handed up or kept in `left`, which is bounded
        // by one read chunk per stream).
        let _ = chunks.finalize();
        if fin && id == st.control {
            st.control_fin = true;
        } else if fin {
            // Read to its end: the peer is done with it.
            st.edges.remove(&id);
        }
        r
    }

    /// Hand up the frames in `bytes` of stream `id` until the sink is full or a barrier parks
    /// the control stream; what is not taken stays in `bytes`.
    fn feed(
        &self,
        st: &mut State,
        id: StreamId,
        bytes: &mut Bytes,
        sink: &dyn Sink,
    ) -> Result<(), String> {
        if id != st.control {
            let Some(rx) = st.edges.get_mut(&id) else {
                return Ok(());
            };
            while let Some(f) = rx.next(bytes, &self.markers)? {
                if !sink.frame(f) {
                    st.paused = true;
                    return Ok(());
                }
            }
            return Ok(());
        }
        loop {
            if let Some((number, classes, since)) = st.parked {
                let met = (0..CLASSES as u8)
                    .filter(|c| classes & (1 << c) != 0)
                    .all(|c| self.markers.seen_of(c) >= number);
                if !met {
                    if since.elapsed() > self.barrier_wait {
                        return Err("a barrier's markers did not arrive".into());
                    }
                    return Ok(());
                }
                st.parked = None;
            }
            match st.control_rx.next(bytes)? {
                None => return Ok(()),
                Some(Control::Barrier { number, classes }) => {
                    st.parked = Some((number, classes, Instant::now()));
                }
                Some(Control::Ping(nonce)) => sink.ping(nonce),
                Some(Control::Frame(f)) => {
                    sink.learn(&f);
                    if !sink.frame(f) {
                        st.paused = true;
                        return Ok(());
                    }
                }
            }
        }
    }
}
