//! The HELLO exchange on a connection (docs/network.md section 3, wire.md section 6; the
//! engine's watcher, section 4a): the initiator opens the control stream and says HELLO; the
//! acceptor reads it and answers HELLO, or ERROR when the transport refuses the peer (a name
//! taken, the connect race lost); all within the handshake's bound, a deadline the engine
//! wakes the watcher for. Then the link is made and takes the connection over. The
//! transport's table, bounds and race are the caller's (`Admit`, `MakeLink`,
//! `handshake.rs`); how the greeting ended is told once (`Ended`). The peer's side of the
//! exchange is read chunk by chunk (`HelloRx`): the first frame must be HELLO, or ERROR when
//! the peer refuses us, within the handshake's frame bound.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use quinn_proto::{Connection, ConnectionError, Dir, Event, StreamId, VarInt};

use super::engine::{Conn, Watcher};
use super::link::{Forward, QuicLink, LINGER};
use crate::wire::{
    encode_parts, ErrorCode, Frame, FrameDecoder, ShmCaps, MAX_FRAME, PROTOCOL_VERSION,
};

/// Frame bound before the HELLO exchange: the Unix transport's 8 KiB, plus room for the
/// PERMISSIONS a peer with SROS2 sends in it (docs/wire.md section 2).
pub(crate) const HANDSHAKE_FRAME: u32 = 8 * 1024 + crate::wire::MAX_PERMISSIONS as u32;

pub(crate) struct PeerHello {
    pub node: String,
    pub max_frame: u32,
    /// The peer's signed permissions document, if it sent one.
    pub permissions: Option<Bytes>,
    /// The UDP port of the peer's host directory, if it said (older nodes do not).
    pub directory: Option<u16>,
}

pub(crate) enum HelloOutcome {
    /// The peer's HELLO, the decoder (now at the full frame bound) and the bytes read past it.
    Hello(PeerHello, FrameDecoder, Bytes),
    /// The peer answered ERROR: it refused this connection.
    Refused(String),
}

/// Our HELLO: with our permissions document when SROS2 is on, and our host directory's port.
pub(crate) fn hello(local: &str, permissions: Option<Bytes>, directory: u16) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
        // Shared memory never crosses a host.
        shm: ShmCaps::NONE,
        permissions,
        directory: Some(directory),
    }
}

/// The control stream until the peer's first frame.
pub(crate) struct HelloRx {
    dec: Option<FrameDecoder>,
}

impl Default for HelloRx {
    fn default() -> HelloRx {
        HelloRx {
            dec: Some(FrameDecoder::new(HANDSHAKE_FRAME)),
        }
    }
}

impl HelloRx {
    /// Take the next chunk of the stream: `Ok(None)` until the first frame is whole, then its
    /// outcome (once; the decoder goes with a HELLO to the link). `Err`: not a HELLO, or one
    /// this side does not speak with.
    pub(crate) fn push(&mut self, chunk: Bytes) -> Result<Option<HelloOutcome>, String> {
        let Some(dec) = self.dec.as_mut() else {
            return Err("the HELLO exchange is over".into());
        };
        let mut rest = chunk;
        let taken = dec.push(&rest);
        rest.advance(taken);
        match dec.pop() {
            Ok(None) => Ok(None),
            Ok(Some(Frame::Hello {
                version,
                node,
                max_frame,
                permissions,
                directory,
                ..
            })) => {
                if version < 1 {
                    return Err(format!("peer speaks protocol version {version}"));
                }
                if max_frame < 1024 {
                    return Err(format!(
                        "peer frame bound {max_frame} is below the 1 KiB minimum"
                    ));
                }
                let mut dec = self.dec.take().expect("checked above");
                dec.set_max_frame(MAX_FRAME);
                let hello = PeerHello {
                    node,
                    max_frame,
                    permissions,
                    directory,
                };
                Ok(Some(HelloOutcome::Hello(hello, dec, rest)))
            }
            Ok(Some(Frame::Error { message, .. })) => Ok(Some(HelloOutcome::Refused(message))),
            Ok(Some(other)) => Err(format!("first frame is not HELLO: {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Which side of the connection we are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Initiator,
    Acceptor,
}

/// The transport's word on a peer's HELLO: `Err` refuses the peer with that code and reason
/// (the acceptor answers ERROR with them; the initiator closes).
pub(crate) type Admit = Box<dyn Fn(&PeerHello) -> Result<(), (ErrorCode, String)> + Send + Sync>;
/// Makes the link once the HELLOs are exchanged, from the connection (the handle and, held,
/// the state: its peer's certificates), the peer's HELLO, the control stream, its decoder and
/// what was read past the HELLO. `None`: no link after all (the connection closes).
pub(crate) type MakeLink = Box<
    dyn Fn(
            Arc<Conn>,
            &mut Connection,
            PeerHello,
            StreamId,
            FrameDecoder,
            Bytes,
        ) -> Option<Arc<QuicLink>>
        + Send
        + Sync,
>;

/// How a greeting ended (told once, to `Greeting::on_end`'s hook).
#[derive(Debug)]
pub(crate) enum Ended {
    /// The link is made.
    Linked,
    /// `MakeLink` made none.
    NoLink,
    /// The peer answered ERROR: it refused us.
    Refused(String),
    /// `Admit` refused the peer.
    WeRefused,
    /// No HELLO in time, not a HELLO, or the connection failed (with its error when it was
    /// lost: a TLS alert is a peer refused by its certificate).
    Failed(Option<ConnectionError>),
}

/// Told how a greeting ended.
pub(crate) type OnEnd = Box<dyn FnOnce(Ended) + Send>;

/// A connection's watcher from its start to its link.
pub(crate) struct Greeting {
    side: Side,
    /// The connection, set by the caller once the engine made it (then `Conn::poke`: the
    /// greeting does nothing before).
    pub(crate) conn: OnceLock<Arc<Conn>>,
    ours: Bytes,
    deadline: Instant,
    admit: Admit,
    make: MakeLink,
    state: Mutex<State>,
    link: Forward,
    on_end: Mutex<Option<OnEnd>>,
}

struct State {
    control: Option<StreamId>,
    /// What we say when we may (the initiator at once, the acceptor after the peer's HELLO),
    /// and how much of it is written.
    say: Option<Bytes>,
    written: usize,
    rx: HelloRx,
    /// The link is made, or the greeting failed (the connection closes).
    over: bool,
    /// We refused the peer: the connection closes once it has our ERROR, or by then.
    linger: Option<Instant>,
    /// Why the connection was lost, if it was.
    lost: Option<ConnectionError>,
}

fn encode(frame: &Frame) -> Bytes {
    let e = encode_parts(frame, MAX_FRAME).expect("a HELLO or an ERROR encodes");
    let mut v = e.head;
    if let Some(p) = e.payload {
        v.extend_from_slice(&p);
    }
    Bytes::from(v)
}

impl Greeting {
    /// `hello` is ours; the exchange must be over by `deadline`.
    pub(crate) fn new(
        side: Side,
        hello: &Frame,
        deadline: Instant,
        admit: Admit,
        make: MakeLink,
    ) -> Greeting {
        let ours = encode(hello);
        Greeting {
            side,
            conn: OnceLock::new(),
            deadline,
            admit,
            make,
            state: Mutex::new(State {
                control: None,
                say: (side == Side::Initiator).then(|| ours.clone()),
                written: 0,
                rx: HelloRx::default(),
                over: false,
                linger: None,
                lost: None,
            }),
            ours,
            link: Forward::default(),
            on_end: Mutex::new(None),
        }
    }

    /// Tell `f` how the greeting ended (once; set it before the connection starts).
    pub(crate) fn on_end(self, f: OnEnd) -> Greeting {
        *self.on_end.lock() = Some(f);
        self
    }

    fn end(&self, how: Ended) {
        if let Some(f) = self.on_end.lock().take() {
            f(how);
        }
    }

    /// The link, once made.
    #[cfg(test)]
    pub(crate) fn link(&self) -> Option<&Arc<QuicLink>> {
        self.link.0.get()
    }

    fn fail(&self, st: &mut State, conn: &mut Connection, why: &'static [u8], how: Ended) {
        st.over = true;
        conn.close(Instant::now(), VarInt::from_u32(0), Bytes::from_static(why));
        self.end(how);
    }

    /// Refuse the peer: ERROR{code, why} on the control stream, then close once the peer has
    /// it (`linger`). The initiator's HELLO is written already; the acceptor never says its own.
    fn refuse(
        &self,
        st: &mut State,
        c: &Conn,
        conn: &mut Connection,
        id: StreamId,
        code: ErrorCode,
        why: &str,
    ) {
        let no = encode(&crate::link::refusal(code, why));
        let _ = conn.send_stream(id).write(&no);
        let _ = conn.send_stream(id).finish();
        st.over = true;
        st.linger = Some(Instant::now() + LINGER);
        Self::linger(st, c, conn);
        self.end(Ended::WeRefused);
    }

    /// After our ERROR: close once the peer has it (nothing of ours unacknowledged), or at
    /// the linger's end.
    fn linger(st: &mut State, c: &Conn, conn: &mut Connection) {
        let Some(until) = st.linger else {
            return;
        };
        if conn.streams().send_streams() == 0 || Instant::now() >= until {
            st.linger = None;
            conn.close(
                Instant::now(),
                VarInt::from_u32(0),
                Bytes::from_static(b"refused"),
            );
        } else {
            c.wake_at(until);
        }
    }
}

impl Drop for Greeting {
    /// A greeting let go before it ended (its connection drained, its engine gone) ended all
    /// the same: whoever counts greetings is told.
    fn drop(&mut self) {
        self.end(Ended::Failed(None));
    }
}

impl Watcher for Greeting {
    fn progress(&self, conn: &mut Connection) {
        if self.link.0.get().is_some() {
            return self.link.progress(conn);
        }
        let Some(c) = self.conn.get() else {
            return;
        };
        let mut st = self.state.lock();
        if st.over {
            while conn.poll().is_some() {}
            return Self::linger(&mut st, c, conn);
        }
        if Instant::now() >= self.deadline {
            return self.fail(&mut st, conn, b"no HELLO in time", Ended::Failed(None));
        }
        // The engine wakes us by the deadline whatever happens.
        c.wake_at(self.deadline);
        // Events are the link's business: a greeting looks at the connection itself.
        while let Some(ev) = conn.poll() {
            if let Event::ConnectionLost { reason } = ev {
                st.lost = Some(reason);
            }
        }
        if conn.is_closed() {
            st.over = true;
            let lost = st.lost.take();
            drop(st);
            return self.end(Ended::Failed(lost));
        }
        if conn.is_handshaking() {
            return;
        }
        let id = match (st.control, self.side) {
            (Some(id), _) => id,
            (None, Side::Initiator) => match conn.streams().open(Dir::Bi) {
                Some(id) => id,
                None => return,
            },
            (None, Side::Acceptor) => match conn.streams().accept(Dir::Bi) {
                Some(id) => id,
                None => return,
            },
        };
        st.control = Some(id);
        let mut outcome = None;
        if let Ok(mut chunks) = conn.recv_stream(id).read(true) {
            while let Ok(Some(c)) = chunks.next(HANDSHAKE_FRAME as usize) {
                match st.rx.push(c.bytes) {
                    Ok(None) => {}
                    Ok(Some(o)) => {
                        outcome = Some(Ok(o));
                        break;
                    }
                    Err(why) => {
                        outcome = Some(Err(why));
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        let made = match outcome {
            None => None,
            Some(Err(_)) => {
                return self.fail(&mut st, conn, b"not a HELLO", Ended::Failed(None));
            }
            Some(Ok(HelloOutcome::Refused(why))) => {
                return self.fail(&mut st, conn, b"refused", Ended::Refused(why));
            }
            Some(Ok(HelloOutcome::Hello(h, dec, rest))) => {
                // Either side may refuse the other's HELLO, and says why with ERROR: the peer
                // logs the reason instead of a bare close.
                if let Err((code, why)) = (self.admit)(&h) {
                    return self.refuse(&mut st, c, conn, id, code, &why);
                }
                if self.side == Side::Acceptor {
                    st.say = Some(self.ours.clone());
                }
                Some((h, dec, rest))
            }
        };
        if let Some(say) = st.say.clone() {
            if st.written < say.len() {
                match conn.send_stream(id).write(&say[st.written..]) {
                    Ok(n) => st.written += n,
                    Err(_) => {
                        let how = Ended::Failed(None);
                        return self.fail(&mut st, conn, b"control stream gone", how);
                    }
                }
            }
        }
        if let Some((h, dec, rest)) = made {
            st.over = true;
            drop(st);
            let link = (self.make)(c.clone(), conn, h, id, dec, rest);
            match link {
                Some(link) => {
                    let _ = self.link.0.set(link);
                    self.end(Ended::Linked);
                    // What came with the HELLO is read now.
                    self.link.progress(conn);
                }
                None => {
                    conn.close(
                        Instant::now(),
                        VarInt::from_u32(0),
                        Bytes::from_static(b"no link"),
                    );
                    self.end(Ended::NoLink);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode_parts;

    fn bytes_of(f: &Frame) -> Vec<u8> {
        let e = encode_parts(f, MAX_FRAME).unwrap();
        let mut v = e.head;
        if let Some(p) = e.payload {
            v.extend_from_slice(&p);
        }
        v
    }

    #[test]
    fn a_hello_in_pieces_then_what_follows_it() {
        let mut stream = bytes_of(&super::hello("peer", None, 7400));
        stream.extend(bytes_of(&Frame::Ok { req: 1 }));
        let mut rx = HelloRx::default();
        let mut outcome = None;
        for piece in stream.chunks(5) {
            if let Some(o) = rx.push(Bytes::copy_from_slice(piece)).unwrap() {
                outcome = Some(o);
                break;
            }
        }
        let Some(HelloOutcome::Hello(h, _, _)) = outcome else {
            panic!("no HELLO");
        };
        assert_eq!((h.node.as_str(), h.directory), ("peer", Some(7400)));
        assert!(rx.push(Bytes::new()).is_err());
    }

    #[test]
    fn a_refusal_or_another_first_frame() {
        let refusal = crate::link::refusal(crate::wire::ErrorCode::Malformed, "no");
        let mut rx = HelloRx::default();
        let got = rx.push(Bytes::from(bytes_of(&refusal))).unwrap();
        assert!(matches!(got, Some(HelloOutcome::Refused(m)) if m == "no"));
        let mut rx = HelloRx::default();
        assert!(rx
            .push(Bytes::from(bytes_of(&Frame::Ok { req: 1 })))
            .is_err());
    }
}
