//! The holder's loop for one port (docs/serial.md section 9, steps 2-5): one thread, one
//! `tracer_serial::Session`, the port opened again whenever it breaks, the MCU's node joining
//! the graph on `Ready` (a [`Proxy`]) and leaving on `Reset` or `Lost`, messages of MCU
//! publishers written into the proxy's topic vertices, messages for MCU subscriptions taken
//! from the proxy's rings into `Session::send` as the reliable window allows. Nothing here
//! waits on anything but the port, the wake socket and the session's next timer: a message a
//! RELIABLE + KEEP_ALL subscription has no room for is kept and written again every
//! millisecond, the session's next messages wait behind it, and past its bound the session
//! refuses the MCU's (which sends them again): the MCU is held back, nothing is lost.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::Payload;
use tracer_serial::{Endpoint, EndpointKind, Event, SendError, Session, SessionConfig, Stats};

use super::port::{drain_wake, wait, Port, PortSpec};
use super::proxy::{Proxy, Template};
use crate::log::log;

/// How long the thread sleeps at most, so that it sees the stop flag even if a wake is lost.
const MAX_SLEEP: Duration = Duration::from_millis(250);
/// A port that failed to open, or broke, is tried again this often.
const REOPEN: Duration = Duration::from_millis(500);
/// How long a write waits for room in the kernel's buffer before the rest is dropped.
const WRITE_PATIENCE: Duration = Duration::from_millis(20);
/// How often a message kept for a subscription without room is written again.
const RETRY: Duration = Duration::from_millis(1);

pub struct Driver {
    spec: PortSpec,
    template: Template,
    session: Session,
    window: usize,
    port: Option<Port>,
    next_open: u64,
    epoch: Instant,
    /// Endpoints of the current session, by alias, from its `Declared` events.
    declared: BTreeMap<u8, Arc<Endpoint>>,
    proxy: Option<Proxy>,
    /// A message of the MCU that a RELIABLE + KEEP_ALL subscription had no room for, written
    /// again before any other (docs/serial.md section 9).
    kept: Option<Kept>,
    /// An endpoint changed while the node was in the graph: it joins again with it.
    redeclared: bool,
    wake_rx: UnixStream,
    wake_tx: Arc<UnixStream>,
    /// What was already logged, so that each problem is told once.
    told: Told,
}

struct Kept {
    alias: u8,
    gid: [u8; 16],
    sequence: u64,
    payload: Payload,
}

#[derive(Default)]
struct Told {
    open_failed: bool,
    stats: Stats,
    refused: bool,
}

/// A salt for the gids (docs/serial.md section 4): the host's name and the port, so that MCUs
/// on two ports or hosts never share a gid even with the same name and session.
fn gid_salt(path: &str) -> u64 {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in host.trim().bytes().chain([0]).chain(path.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn session_config(path: &str) -> SessionConfig {
    SessionConfig {
        gid_salt: gid_salt(path),
        ..SessionConfig::default()
    }
}

impl Driver {
    pub fn new(
        spec: PortSpec,
        template: Template,
        wake_rx: UnixStream,
        wake_tx: Arc<UnixStream>,
    ) -> Driver {
        let cfg = session_config(&spec.path);
        let window = cfg.window;
        Driver {
            spec,
            template,
            session: Session::new(cfg, 0),
            window,
            port: None,
            next_open: 0,
            epoch: Instant::now(),
            declared: BTreeMap::new(),
            proxy: None,
            kept: None,
            redeclared: false,
            wake_rx,
            wake_tx,
            told: Told::default(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Runs until `stop` is set; the MCU's node leaves the graph when it returns.
    pub fn run(&mut self, stop: &AtomicBool) {
        let mut buf = vec![0u8; 4096];
        while !stop.load(Ordering::Acquire) {
            let now = self.now();
            if self.port.is_none() && now >= self.next_open {
                self.open(now);
            }
            self.flush();
            let due = self.session.poll_timeout();
            let mut sleep = Duration::from_millis(due.saturating_sub(now)).min(MAX_SLEEP);
            if self.kept.is_some() {
                sleep = sleep.min(RETRY);
            }
            if self.port.is_none() {
                sleep = sleep.min(Duration::from_millis(self.next_open.saturating_sub(now)));
            }
            let woken = wait(self.port.as_ref(), &self.wake_rx, sleep).ok();
            drain_wake(&self.wake_rx);
            let now = self.now();
            if let Some(w) = woken.filter(|_| self.port.is_some()) {
                if w.readable {
                    self.read(now, &mut buf);
                }
                if w.broken {
                    // Whatever was in flight is the session's to recover (it notices the
                    // silence, `Lost`, or the MCU declares again when the port is back).
                    self.port = None;
                    self.next_open = now + REOPEN.as_millis() as u64;
                }
            }
            if now >= self.session.poll_timeout() {
                self.session.handle_timeout(now);
            }
            self.events();
            self.feed(now);
            self.flush();
            self.log_stats();
        }
        self.leave();
    }

    /// The node leaves the graph (or joins again): what was kept for it goes too.
    fn leave(&mut self) {
        self.proxy = None;
        self.kept = None;
    }

    fn open(&mut self, now: u64) {
        match Port::open(&self.spec) {
            Ok(p) => {
                self.port = Some(p);
                self.told.open_failed = false;
                // A port just (re)opened: ask the MCU to declare again at once.
                self.session = Session::new(session_config(&self.spec.path), now);
                self.declared.clear();
                self.leave();
            }
            Err(e) => {
                if !std::mem::replace(&mut self.told.open_failed, true) {
                    log!(
                        RMW_LOG_SEVERITY_WARN,
                        "serial {}: cannot open: {e} (trying again every {} ms)",
                        self.spec.path,
                        REOPEN.as_millis()
                    );
                }
                self.next_open = now + REOPEN.as_millis() as u64;
            }
        }
    }

    /// Everything the port has, its messages taken after each read: the session holds at most
    /// `MAX_UNDELIVERED` for us, more than one read brings.
    fn read(&mut self, now: u64, buf: &mut [u8]) {
        while let Some(port) = self.port.as_mut() {
            match port.read(buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.session.handle_bytes(now, &buf[..n]);
                    self.events();
                }
                Err(_) => {
                    self.port = None;
                    self.next_open = now + REOPEN.as_millis() as u64;
                }
            }
        }
    }

    fn flush(&mut self) {
        let Some(bytes) = self.session.poll_transmit() else {
            return;
        };
        if let Some(port) = self.port.as_mut() {
            if port.write(&bytes, WRITE_PATIENCE).is_err() {
                self.port = None;
                self.next_open = self.now() + REOPEN.as_millis() as u64;
            }
        }
    }

    fn events(&mut self) {
        if let Some(k) = self.kept.take() {
            if let Some(p) = &self.proxy {
                if let Err(payload) = p.publish(k.alias, k.gid, k.sequence, k.payload) {
                    // Still no room: the session keeps the rest, up to its bound.
                    self.kept = Some(Kept { payload, ..k });
                    return;
                }
            }
        }
        while let Some(ev) = self.session.poll_event() {
            match ev {
                Event::Declared { alias, endpoint } => {
                    self.redeclared |= self.proxy.is_some();
                    self.declared.insert(alias, endpoint);
                }
                Event::Ready { .. } => self.join(),
                Event::Data {
                    endpoint,
                    sequence,
                    payload,
                } => {
                    let Some(p) = &self.proxy else {
                        continue;
                    };
                    let (alias, gid) = (endpoint.alias, endpoint.gid);
                    if let Err(payload) = p.publish(alias, gid, sequence, Payload::from(payload)) {
                        self.kept = Some(Kept {
                            alias,
                            gid,
                            sequence,
                            payload,
                        });
                        return;
                    }
                }
                // Lost best-effort messages: the sequence numbers' gap tells subscribers.
                Event::Gap { .. } => {}
                Event::Reset { node } | Event::Lost { node } => {
                    log!(
                        RMW_LOG_SEVERITY_INFO,
                        "serial {}: node {} left (MCU reset or silent)",
                        self.spec.path,
                        node.name
                    );
                    self.declared.clear();
                    self.leave();
                }
            }
        }
        if std::mem::take(&mut self.redeclared) && self.session.is_ready() {
            self.leave();
            self.join();
        }
    }

    /// The node and its declared endpoints join the graph.
    fn join(&mut self) {
        let Some(node) = self.session.node() else {
            return;
        };
        let endpoints: Vec<_> = self.declared.values().cloned().collect();
        let wake = self.wake_tx.clone();
        let on_inbox: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            // Full means a wake is already pending.
            let _ = (&*wake).write(&[1]);
        });
        self.leave();
        match Proxy::start(&self.template, &node, &endpoints, on_inbox) {
            Ok(p) => self.proxy = Some(p),
            Err(e) => log!(
                RMW_LOG_SEVERITY_WARN,
                "serial {}: node {} cannot join the graph: {e}",
                self.spec.path,
                node.name
            ),
        }
    }

    /// Messages for MCU subscriptions, as far as each reliable window allows.
    fn feed(&mut self, now: u64) {
        let Some(proxy) = &self.proxy else {
            return;
        };
        for inbox in &proxy.inboxes {
            let reliable = self
                .declared
                .get(&inbox.alias)
                .is_some_and(|e| e.reliable && e.kind == EndpointKind::Subscription);
            while !reliable || self.session.in_flight(inbox.alias) < self.window {
                let Some(sample) = inbox.ring.pop() else {
                    break;
                };
                match self.session.send(now, inbox.alias, sample.payload.as_ref()) {
                    Ok(()) => {}
                    Err(SendError::NotReady) => {
                        while inbox.ring.pop().is_some() {}
                        break;
                    }
                    Err(e) => {
                        if !std::mem::replace(&mut self.told.refused, true) {
                            log!(
                                RMW_LOG_SEVERITY_WARN,
                                "serial {}: a message for {} refused: {e}",
                                self.spec.path,
                                inbox.alias
                            );
                        }
                    }
                }
            }
        }
    }

    /// Each counter of what the session dropped is logged when it first moves.
    fn log_stats(&mut self) {
        let s = self.session.stats().clone();
        let t = &mut self.told.stats;
        let fresh = |now: u64, then: &mut u64| now > 0 && std::mem::replace(then, now) == 0;
        let mut what = Vec::new();
        if fresh(s.bad_frames, &mut t.bad_frames) {
            what.push("frames that failed their check (noise, a wrong baud rate?)");
        }
        if fresh(s.malformed, &mut t.malformed) {
            what.push("malformed packets");
        }
        if fresh(s.unknown_alias, &mut t.unknown_alias) {
            what.push("data for undeclared endpoints");
        }
        if fresh(s.too_large, &mut t.too_large) {
            what.push("messages larger than the host reassembles");
        }
        if !what.is_empty() {
            log!(
                RMW_LOG_SEVERITY_WARN,
                "serial {}: dropped {} (logged once)",
                self.spec.path,
                what.join(", ")
            );
        }
    }
}
