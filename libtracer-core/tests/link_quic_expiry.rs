#![cfg(feature = "quic")]
//! When a QUIC link's credentials end (docs/network.md section 5, "When credentials end"): a
//! link stands on both ends' certificates and on the grant the peer sent, each valid until a
//! moment of its own; at the first of them the link is closed, and the next handshake decides
//! afresh (an expired certificate is refused, an expired grant is no grant). Everything binds
//! loopback.

#[path = "common/keys.rs"]
mod keys;
mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libtracer_core::link::{
    GrantTurn, PermissionsExchange, QuicConfig, QuicSecurity, QuicTransport,
};
use link_support::{free_udp_port, loopback_quic, Recorder, TempDir, T};
use parking_lot::Mutex;
use poll::eventually;

/// A transport's log lines.
type Lines = Arc<Mutex<Vec<String>>>;

/// A whole second `ahead` from now: certificates and grants name seconds.
fn second_ahead(ahead: Duration) -> SystemTime {
    let secs = (SystemTime::now() + ahead)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// `sec` on loopback `port`, its log lines kept in `lines`.
fn secured(port: u16, sec: &QuicSecurity, lines: &Lines) -> QuicConfig {
    let mut c = loopback_quic(port);
    c.security = Some(sec.clone());
    let l = lines.clone();
    c.log = Some(Arc::new(move |m: &str| l.lock().push(m.to_owned())));
    c
}

fn logged(lines: &Mutex<Vec<String>>, text: &str) -> bool {
    lines.lock().iter().any(|l| l.contains(text))
}

#[test]
fn a_link_closes_when_a_certificate_runs_out_and_is_not_made_again() {
    let keys = TempDir::new("quic-expiry-keys");
    // b's certificate is valid through a second 3-4 s from now.
    let last = second_ahead(Duration::from_secs(4));
    let s = keys::enclaves_until(keys.path(), &[("/net/a", None), ("/net/b", Some(last))]);
    let dir = TempDir::new("quic-expiry-cert");
    let port = free_udp_port();
    let (la, lb) = (Lines::default(), Lines::default());
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = QuicTransport::start(dir.path(), "a", ra.clone(), secured(port, &s[0], &la)).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), secured(port, &s[1], &lb)).unwrap();
    ra.wait_up("b", T);
    rb.wait_up("a", T);
    assert!(
        ra.wait_down("b", Duration::from_secs(10)),
        "the link outlived b's certificate"
    );
    // Not before the certificate ran out: it is valid through the second it names.
    assert!(SystemTime::now() >= last + Duration::from_secs(1));
    assert!(rb.wait_down("a", T));
    // Each end says whose certificate it was, once.
    let said = |lines: &Mutex<Vec<String>>, text: &str| {
        let n = lines.lock().iter().filter(|l| l.contains(text)).count();
        assert_eq!(n, 1, "{text}: {:?}", lines.lock());
    };
    said(
        &la,
        "security: closed the link to b: its certificate ran out at ",
    );
    said(
        &lb,
        "security: closed the link to a: our certificate ran out at ",
    );
    // The next handshakes fail on the expired certificate (said once per address), and no
    // link comes back.
    assert!(
        eventually(T, || logged(&la, "security: refused the peer at ")
            || logged(&lb, "security: refused the peer at "))
        .is_some(),
        "{:?} {:?}",
        la.lock(),
        lb.lock()
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(ra.live().is_empty() && rb.live().is_empty());
}

/// a and b authenticated on loopback, b sending its permissions document; a's check of it
/// answers `first(moment)` the first time, for a moment 2-3 s from now, and `None` after (what
/// a link made after the turn learns: no grant that ends, or one valid for good). a's link to
/// b is closed at that moment and made again; `needle`, a's line about it, is logged once.
/// Returns a's log and b's.
fn grant_turns(tag: &str, first: fn(SystemTime) -> GrantTurn, needle: &str) -> (Lines, Lines) {
    let keys = TempDir::new(&format!("{tag}-keys"));
    let s = keys::enclaves(keys.path(), &["/net/a", "/net/b"]);
    let dir = TempDir::new(tag);
    let port = free_udp_port();
    let (la, lb) = (Lines::default(), Lines::default());
    let moment = second_ahead(Duration::from_secs(3));
    let learned = Arc::new(AtomicUsize::new(0));
    let n = learned.clone();
    let mut ca = secured(port, &s[0], &la);
    ca.permissions = Some(PermissionsExchange {
        document: Arc::from(&b"a's permissions"[..]),
        learn: Arc::new(move |subject, doc| {
            assert_eq!((subject, doc), ("CN=/net/b", Some(&b"b's permissions"[..])));
            (n.fetch_add(1, Ordering::SeqCst) == 0).then(|| first(moment))
        }),
    });
    let mut cb = secured(port, &s[1], &lb);
    cb.permissions = Some(PermissionsExchange {
        document: Arc::from(&b"b's permissions"[..]),
        learn: Arc::new(|_, _| None),
    });
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = QuicTransport::start(dir.path(), "a", ra.clone(), ca).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), cb).unwrap();
    ra.wait_up("b", T);
    assert!(
        ra.wait_down("b", Duration::from_secs(10)),
        "the link outlived the grant's turn"
    );
    assert!(SystemTime::now() >= moment);
    // The link is made again at once (no cool-down: the connection died, nobody closed the
    // link), and its handshake learned afresh: nothing turns for this one.
    ra.clear_events();
    ra.wait_up("b", T);
    assert_eq!(learned.load(Ordering::SeqCst), 2);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(ra.live(), vec!["b".to_owned()]);
    let closes: Vec<String> = la
        .lock()
        .iter()
        .filter(|l| l.contains("closed the link"))
        .cloned()
        .collect();
    assert!(
        closes.len() == 1 && closes[0].starts_with(needle),
        "{closes:?}"
    );
    (la, lb)
}

#[test]
fn a_link_closes_when_the_grant_the_peer_sent_runs_out_and_is_made_again_without_it() {
    let (_, lb) = grant_turns(
        "quic-expiry-grant",
        GrantTurn::Ends,
        "security: closed the link to b: the grant it sent ran out at ",
    );
    // b's end of it only saw the connection go.
    assert!(!logged(&lb, "closed the link"), "{:?}", lb.lock());
}

#[test]
fn a_link_closes_when_a_grant_not_valid_yet_starts_and_the_next_link_takes_it() {
    grant_turns(
        "quic-expiry-starts",
        GrantTurn::Starts,
        "security: closed the link to b: the grant it sent starts at ",
    );
}
