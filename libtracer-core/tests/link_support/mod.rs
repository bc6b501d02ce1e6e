//! Shared by the link tests: a recording `LinkHandler` that also checks the callback contract,
//! and private temporary rendezvous directories.
#![allow(dead_code)]

use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{Link, LinkHandler};
use libtracer_core::wire::{Frame, ShmCaps};
use libtracer_core::{Meta, Payload};
use parking_lot::{Condvar, Mutex};

#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // a test's event log: its size does not matter
pub enum Ev {
    Up(String),
    Frame(String, Frame),
    Down(String),
}

#[derive(Default)]
struct State {
    events: Vec<Ev>,
    live: HashMap<String, Arc<dyn Link>>,
    violations: Vec<String>,
}

/// Records every callback; with `echo`, answers each WRITE with OK{req} from inside
/// `on_frame` (a send from the reader thread).
#[derive(Default)]
pub struct Recorder {
    state: Mutex<State>,
    cv: Condvar,
    pub echo: bool,
    /// Panic in `on_frame` (after recording it) when this frame arrives: a buggy handler.
    pub panic_on: Option<Frame>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }
    pub fn echoing() -> Arc<Self> {
        Arc::new(Recorder {
            echo: true,
            ..Recorder::default()
        })
    }
    pub fn panicking_on(frame: Frame) -> Arc<Self> {
        Arc::new(Recorder {
            panic_on: Some(frame),
            ..Recorder::default()
        })
    }
    pub fn events(&self) -> Vec<Ev> {
        self.state.lock().events.clone()
    }
    pub fn link(&self, peer: &str) -> Option<Arc<dyn Link>> {
        self.state.lock().live.get(peer).cloned()
    }
    pub fn live(&self) -> Vec<String> {
        let mut v: Vec<String> = self.state.lock().live.keys().cloned().collect();
        v.sort();
        v
    }
    /// Contract breaches seen so far (frame before up, two ups, a different Arc, ...).
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().violations.clone()
    }
    /// Wait until `pred(events)` holds; false on timeout.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&[Ev]) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        while !pred(&s.events) {
            if self.cv.wait_until(&mut s, deadline).timed_out() {
                return pred(&s.events);
            }
        }
        true
    }
    pub fn wait_up(&self, peer: &str, timeout: Duration) -> Arc<dyn Link> {
        assert!(
            self.wait_for(timeout, |e| e.contains(&Ev::Up(peer.into()))),
            "no link to {peer} came up"
        );
        self.link(peer).expect("link is live")
    }
    pub fn wait_down(&self, peer: &str, timeout: Duration) -> bool {
        self.wait_for(timeout, |e| e.contains(&Ev::Down(peer.into())))
    }
    pub fn frames_from(&self, peer: &str) -> Vec<Frame> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Ev::Frame(p, f) if p == peer => Some(f),
                _ => None,
            })
            .collect()
    }
    /// Forget the events recorded so far (and so drop the payloads they hold).
    pub fn clear_events(&self) {
        let gone = std::mem::take(&mut self.state.lock().events);
        drop(gone);
    }
    pub fn count(&self, ev: &Ev) -> usize {
        self.state.lock().events.iter().filter(|e| *e == ev).count()
    }
}

impl LinkHandler for Recorder {
    fn on_up(&self, link: Arc<dyn Link>) {
        let name = link.peer().name.clone();
        let mut s = self.state.lock();
        if s.live.insert(name.clone(), link).is_some() {
            s.violations
                .push(format!("second on_up for {name} while live"));
        }
        s.events.push(Ev::Up(name));
        self.cv.notify_all();
    }
    /// Recording is a push under a lock: the QUIC transport lands deliveries on its runtime
    /// thread, as it does for the graph's handler.
    fn deliveries_never_block(&self) -> bool {
        true
    }
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        let name = link.peer().name.clone();
        if self.echo {
            if let Frame::Write { req, .. } = &frame {
                if let Err(e) = link.send(&Frame::Ok { req: *req }) {
                    self.state
                        .lock()
                        .violations
                        .push(format!("echo send failed: {e}"));
                }
            }
        }
        let mut s = self.state.lock();
        match s.live.get(&name) {
            Some(l) if Arc::ptr_eq(l, link) => {}
            Some(_) => s
                .violations
                .push(format!("on_frame for {name} with another Arc")),
            None => s
                .violations
                .push(format!("on_frame for {name} before on_up or after on_down")),
        }
        let panic = self.panic_on.as_ref() == Some(&frame);
        s.events.push(Ev::Frame(name, frame));
        self.cv.notify_all();
        drop(s);
        if panic {
            panic!("handler bug (on purpose, a test of the link's reaction)");
        }
    }
    fn on_down(&self, link: &Arc<dyn Link>) {
        let name = link.peer().name.clone();
        let mut s = self.state.lock();
        match s.live.remove(&name) {
            Some(l) if Arc::ptr_eq(&l, link) => {}
            Some(l) => {
                s.violations
                    .push(format!("on_down for {name} with another Arc"));
                s.live.insert(name.clone(), l);
            }
            None => s
                .violations
                .push(format!("on_down for {name} without a live link")),
        }
        s.events.push(Ev::Down(name));
        self.cv.notify_all();
    }
}

/// A fresh private (0700) directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "lt-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const T: Duration = Duration::from_secs(5);

/// A UDP port on loopback that was free a moment ago.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("bind a UDP port on loopback")
        .port()
}

/// A QUIC transport configuration on loopback, with the directory on `port` as the one static
/// peer, and fast polling so that tests do not wait.
#[cfg(feature = "quic")]
pub fn loopback_quic(port: u16) -> libtracer_core::link::QuicConfig {
    let mut c = libtracer_core::link::QuicConfig::for_domain(0);
    c.bind = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    c.directory_port = port;
    c.static_peers = vec![format!("127.0.0.1:{port}")];
    c.poll_interval = Duration::from_millis(100);
    c.role_retry = Duration::from_millis(100);
    c.initial_wait = Duration::from_secs(3);
    c
}

/// A v1 HELLO from `node` as a peer on a Unix socket sends it (full frame bound, no shared
/// memory, no QUIC-only fields), for tests that play a peer by hand.
pub fn hello(node: &str) -> Frame {
    Frame::Hello {
        version: 1,
        node: node.to_owned(),
        max_frame: libtracer_core::wire::MAX_FRAME,
        shm: ShmCaps::NONE,
        permissions: None,
        directory: None,
    }
}

/// A DELIVERY on `edge` of writer `[7; 16]` with sequence `seq` and `len` payload bytes (each
/// the low byte of `seq`), as the QUIC stream tests send them.
pub fn delivery(edge: u64, seq: u64, len: usize) -> Frame {
    Frame::Delivery {
        edge,
        meta: Meta {
            source_timestamp_ns: 1,
            sequence: seq,
            writer: [7; 16],
        },
        suffix: None,
        payload: Payload::from(vec![seq as u8; len]),
    }
}
