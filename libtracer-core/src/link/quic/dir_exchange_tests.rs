//! The directory's server on the engine against a client that breaks its rules: each is
//! closed (docs/network.md section 4a, stage 3), and a client that keeps them is
//! answered again and again over its one connection.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::Dir;

use super::super::{chores, QuicConfig, QuicTransport};
use super::{DirClient, REQUEST};
use crate::link::{Link, LinkHandler};
use crate::wire::Frame;

struct Quiet;

impl LinkHandler for Quiet {
    fn on_up(&self, _link: Arc<dyn Link>) {}
    fn on_frame(&self, _link: &Arc<dyn Link>, _frame: Frame) {}
    fn on_down(&self, _link: &Arc<dyn Link>) {}
}

const HS: Duration = Duration::from_millis(400);

/// A transport on the engine holding its host's role (the directory on a free port).
fn holder(tag: &str) -> (QuicTransport, SocketAddr, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("dir-exchange-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .unwrap()
        .port();
    let mut cfg = QuicConfig::for_domain(0);
    cfg.bind = IpAddr::V4(Ipv4Addr::LOCALHOST);
    cfg.directory_port = port;
    cfg.handshake_timeout = HS;
    cfg.poll_interval = Duration::from_millis(100);
    let t = QuicTransport::start(&dir, "a", Arc::new(Quiet), cfg).unwrap();
    assert!(t.holds_role());
    (t, SocketAddr::from(([127, 0, 0, 1], port)), dir)
}

/// Run `f` on the chores' thread and wait for its output.
fn on_chores<T: Send + 'static>(f: impl std::future::Future<Output = T> + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    drop(chores::spawn(async move {
        let _ = tx.send(f.await);
    }));
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

/// Write `bytes` on a new stream of `c`, finished or not.
fn question(c: &DirClient, bytes: &'static [u8], finish: bool) {
    let mut g = c.conn.lock();
    let id = g.streams().open(Dir::Bi).unwrap();
    let mut s = g.send_stream(id);
    assert_eq!(s.write(bytes).unwrap(), bytes.len());
    if finish {
        s.finish().unwrap();
    }
}

/// How long until `c` is closed (`None`: not within `bound`).
async fn closed_within(c: &DirClient, bound: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    chores::timeout(bound, c.closed()).await.ok()?;
    Some(t0.elapsed())
}

#[test]
fn the_directory_on_the_engine_answers_and_closes_clients_that_break_its_rules() {
    let (t, at, dir) = holder("rules");
    let inner = t.inner.clone();
    let answers = on_chores(async move {
        let c = DirClient::dial(&inner, at, HS).await.unwrap();
        let mut out = Vec::new();
        for _ in 0..3 {
            out.push(chores::timeout(HS, c.ask()).await.unwrap().unwrap());
        }
        // A question other than `members\n`: closed at once.
        let bad = DirClient::dial(&inner, at, HS).await.unwrap();
        question(&bad, b"hello\n", true);
        let bad_closed = closed_within(&bad, HS).await;
        // A question never finished: closed within the handshake timeout.
        let slow = DirClient::dial(&inner, at, HS).await.unwrap();
        question(&slow, &REQUEST[..4], false);
        let slow_closed = closed_within(&slow, HS * 3).await;
        // The well-behaved one was kept meanwhile (it last asked less than the idle bound
        // ago).
        out.push(chores::timeout(HS, c.ask()).await.unwrap().unwrap());
        // A client that asks nothing (this one, from now on): closed after the timeout and
        // two poll intervals.
        let idle_closed = closed_within(&c, HS * 4).await;
        (out, bad_closed, slow_closed, idle_closed)
    });
    let (out, bad, slow, idle) = answers;
    let me = format!("a {}\n", t.port());
    for a in &out {
        assert_eq!(String::from_utf8_lossy(a), me);
    }
    assert!(bad.is_some_and(|d| d < HS), "bad question: {bad:?}");
    let slow = slow.expect("an unfinished question was not closed");
    assert!(
        slow >= HS - Duration::from_millis(50),
        "closed too soon: {slow:?}"
    );
    let idle = idle.expect("an idle client was not closed");
    assert!(idle >= HS, "idle client closed too soon: {idle:?}");
    drop(t);
    let _ = std::fs::remove_dir_all(dir);
}
