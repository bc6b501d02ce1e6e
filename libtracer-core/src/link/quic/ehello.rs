//! The HELLO exchange on an engine connection (stage 2 of docs/network.md section 4a; section
//! 3 and wire.md section 6 for the exchange itself): the initiator opens the control stream
//! and says HELLO; the acceptor reads it and answers HELLO, or ERROR when the transport
//! refuses the peer (a name taken, the connect race lost); all within the handshake's bound,
//! a deadline the engine wakes the watcher for. Then the link is made and takes the
//! connection over. The transport's table, bounds and race are the caller's (`Admit`).
#![allow(dead_code, reason = "the transport greets on the engine from stage 2")]

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, Dir, StreamId, VarInt};

use super::elink::{EngineLink, Forward};
use super::engine::{Conn, Watcher};
use super::hello::{HelloOutcome, HelloRx, PeerHello, HANDSHAKE_FRAME};
use crate::wire::{encode_parts, Frame, FrameDecoder, MAX_FRAME};

/// Which side of the connection we are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Initiator,
    Acceptor,
}

/// The transport's word on a peer's HELLO: `Err` refuses the peer with that reason.
pub(crate) type Admit = Box<dyn Fn(&PeerHello) -> Result<(), String> + Send + Sync>;
/// Makes the link once the HELLOs are exchanged, from the connection, the peer's HELLO, the
/// control stream, its decoder and what was read past the HELLO.
pub(crate) type MakeLink = Box<
    dyn Fn(Arc<Conn>, PeerHello, StreamId, FrameDecoder, Bytes) -> Option<Arc<EngineLink>>
        + Send
        + Sync,
>;

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
            }),
            ours,
            link: Forward::default(),
        }
    }

    /// The link, once made.
    pub(crate) fn link(&self) -> Option<&Arc<EngineLink>> {
        self.link.0.get()
    }

    fn fail(st: &mut State, conn: &mut Connection, why: &'static [u8]) {
        st.over = true;
        conn.close(Instant::now(), VarInt::from_u32(0), Bytes::from_static(why));
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
            return;
        }
        if Instant::now() >= self.deadline {
            return Self::fail(&mut st, conn, b"no HELLO in time");
        }
        // The engine wakes us by the deadline whatever happens.
        c.wake_at(self.deadline);
        // Events are the link's business: a greeting looks at the connection itself.
        while conn.poll().is_some() {}
        if conn.is_closed() {
            st.over = true;
            return;
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
            Some(Err(_)) => return Self::fail(&mut st, conn, b"not a HELLO"),
            Some(Ok(HelloOutcome::Refused(_))) => return Self::fail(&mut st, conn, b"refused"),
            Some(Ok(HelloOutcome::Hello(h, dec, rest))) => {
                if self.side == Side::Acceptor {
                    match (self.admit)(&h) {
                        Ok(()) => st.say = Some(self.ours.clone()),
                        Err(why) => {
                            let no = crate::link::refusal(
                                crate::wire::ErrorCode::PermissionDenied,
                                &why,
                            );
                            st.say = Some(encode(&no));
                            let _ = conn
                                .send_stream(id)
                                .write(st.say.as_deref().unwrap_or_default());
                            let _ = conn.send_stream(id).finish();
                            st.over = true;
                            return;
                        }
                    }
                } else if let Err(_why) = (self.admit)(&h) {
                    return Self::fail(&mut st, conn, b"refused");
                }
                Some((h, dec, rest))
            }
        };
        if let Some(say) = st.say.clone() {
            if st.written < say.len() {
                match conn.send_stream(id).write(&say[st.written..]) {
                    Ok(n) => st.written += n,
                    Err(_) => return Self::fail(&mut st, conn, b"control stream gone"),
                }
            }
        }
        if let Some((h, dec, rest)) = made {
            st.over = true;
            drop(st);
            let link = self
                .conn
                .get()
                .and_then(|c| (self.make)(c.clone(), h, id, dec, rest));
            match link {
                Some(link) => {
                    let _ = self.link.0.set(link);
                    // What came with the HELLO is read now.
                    self.link.progress(conn);
                }
                None => conn.close(
                    Instant::now(),
                    VarInt::from_u32(0),
                    Bytes::from_static(b"no link"),
                ),
            }
        }
    }
}
