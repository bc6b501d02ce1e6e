//! The consumer's end of a paced edge over a link (docs/wire.md section 2, "Flow control"):
//! each sample that lands from the edge holds one message and its bytes of credit, given back
//! here when the sample goes; the credit travels back to the producer in CREDIT frames,
//! batched, once the producer has said that it paces.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::LinkState;
use crate::sample::CreditSink;
use crate::wire::frame::{EdgeId, Frame};
use crate::wire::policy::Window;

/// At most this long between CREDIT frames while credit is owed and samples are being taken.
const BATCH: Duration = Duration::from_millis(2);

pub(crate) struct RemoteCredit {
    link: Weak<LinkState>,
    edge: EdgeId,
    window: Window,
    /// The producer's empty CREDIT came: it paces, so credit is worth sending. Until then
    /// (and for ever with a producer that predates paced edges) credit only adds up here.
    confirmed: AtomicBool,
    state: Mutex<Owed>,
}

struct Owed {
    /// Given back and not sent yet.
    back: Window,
    /// Samples of the edge held here (landed, not yet given back).
    held: u64,
    /// When a CREDIT was last sent.
    sent: Instant,
}

impl RemoteCredit {
    pub(crate) fn new(link: Weak<LinkState>, edge: EdgeId, window: Window) -> RemoteCredit {
        RemoteCredit {
            link,
            edge,
            window,
            confirmed: AtomicBool::new(false),
            state: Mutex::new(Owed {
                back: Window::default(),
                held: 0,
                sent: Instant::now(),
            }),
        }
    }

    /// A sample of the edge landed (its `Credit` will give back here).
    pub(crate) fn landed(&self) {
        self.state.lock().held += 1;
    }

    /// The producer paces: send what came back meanwhile.
    pub(crate) fn confirm(&self) {
        self.confirmed.store(true, Ordering::Release);
        let back = {
            let mut s = self.state.lock();
            s.sent = Instant::now();
            std::mem::take(&mut s.back)
        };
        self.send(back);
    }

    fn send(&self, back: Window) {
        if back == Window::default() {
            return;
        }
        if let Some(l) = self.link.upgrade() {
            // A failed send means the link is going down, and the edge with it.
            let _ = l.send(&Frame::Credit {
                edge: self.edge,
                window: back,
            });
        }
    }
}

impl CreditSink for RemoteCredit {
    /// Sent when a quarter of the window has come back, when nothing of the edge is held any
    /// more (a producer waiting for the rest of its window must not wait for takes that will
    /// never come), or when the last CREDIT is `BATCH` old: a reader that takes slowly returns
    /// each sample's credit as it goes, so its writer waits for the reader, not for a batch
    /// (its wait is bounded: `DEFAULT_MAX_BLOCKING`); a fast one sends a few hundred CREDIT
    /// frames a second, not one per sample.
    fn give_back(&self, messages: u32, bytes: u64) {
        let due = {
            let mut s = self.state.lock();
            s.back.messages = s.back.messages.saturating_add(messages);
            s.back.bytes = s.back.bytes.saturating_add(bytes);
            s.held = s.held.saturating_sub(1);
            let due = self.confirmed.load(Ordering::Acquire)
                && (s.held == 0
                    || s.back.messages >= self.window.messages / 4
                    || s.back.bytes >= self.window.bytes / 4
                    || s.sent.elapsed() >= BATCH);
            if due {
                s.sent = Instant::now();
                Some(std::mem::take(&mut s.back))
            } else {
                None
            }
        };
        if let Some(back) = due {
            self.send(back);
        }
    }
}
