//! Session tests against a small MCU written here from docs/serial.md (the C library is tested
//! against the session in tests/interop.rs): handshake, one byte at a time, garbage between
//! frames, a lossy line both ways, resets, liveness, sending, fragments, malformed input.

use std::collections::VecDeque;

use super::*;
use crate::frame::{kind, FLAG_RELIABLE, FLAG_SUBSCRIPTION};

pub(crate) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// True with probability `per_mille` / 1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }
}

/// Drops or corrupts each byte with probability `per_mille` / 1000 (half each).
pub(crate) fn lossy(bytes: &[u8], rng: &mut Rng, per_mille: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if rng.chance(per_mille) {
            if rng.next() & 1 == 0 {
                continue;
            }
            out.push(b ^ (1 + (rng.next() % 255) as u8));
        } else {
            out.push(b);
        }
    }
    out
}

/// An MCU per the spec: endpoint 0 a publisher, 1 a publisher, 2 a subscription.
struct Mcu {
    session: u32,
    boot_ms: u64,
    flags: [u8; 3],
    seq: [u64; 3],
    window: VecDeque<(u64, Vec<u8>)>,
    sent_at: u64,
    synced: bool,
    last_hello: Option<u64>,
    deframer: Deframer,
    out: Vec<u8>,
    received: Vec<Vec<u8>>,
}

const TOPICS: [&str; 3] = ["/mcu/counter", "/mcu/echo", "/mcu/led"];

impl Mcu {
    fn new(session: u32, boot_ms: u64, reliable: bool) -> Mcu {
        let r = if reliable { FLAG_RELIABLE } else { 0 };
        Mcu {
            session,
            boot_ms,
            flags: [r, r, FLAG_SUBSCRIPTION | r],
            seq: [1; 3],
            window: VecDeque::new(),
            sent_at: 0,
            synced: false,
            last_hello: None,
            deframer: Deframer::default(),
            out: Vec::new(),
            received: Vec::new(),
        }
    }

    fn hello(&mut self, now: u64) {
        let uptime_ms = (now - self.boot_ms) as u32;
        let h = Hello {
            session: self.session,
            uptime_ms,
            max_frame: 254,
            boot: !self.synced,
            n_endpoints: 3,
            max_msg: 2048,
            namespace: "/",
            name: "mcu",
        };
        encode_packet(&Packet::Hello(h), &mut self.out);
        for a in 0..3u8 {
            let i = usize::from(a);
            let seq = if i == 0 && self.flags[0] & FLAG_RELIABLE != 0 {
                self.window.front().map_or(self.seq[0], |m| m.0)
            } else {
                self.seq[i]
            };
            let d = Declare {
                alias: a,
                flags: self.flags[i],
                depth: 10,
                encap: 1,
                seq: seq as u32,
                topic: TOPICS[i],
                type_name: "std_msgs/msg/Int32",
                type_hash:
                    "RIHS01_b6578ded3c58c626cfe8d1a6fb6e04f706f97e9f03d2727c9ff4e74b1cef0deb",
            };
            encode_packet(&Packet::Declare(d), &mut self.out);
        }
        self.last_hello = Some(now);
    }

    /// Publishes on alias 0; false when the reliable window is full.
    fn publish(&mut self, now: u64, body: &[u8]) -> bool {
        let reliable = self.flags[0] & FLAG_RELIABLE != 0;
        if reliable && self.window.len() >= 4 {
            return false;
        }
        let seq = self.seq[0];
        self.seq[0] += 1;
        if reliable {
            if self.window.is_empty() {
                self.sent_at = now;
            }
            self.window.push_back((seq, body.to_vec()));
        }
        if self.synced {
            encode_message(0, seq, body, reliable, 254, &mut self.out);
        }
        true
    }

    fn resend(&mut self, now: u64) {
        for (seq, body) in &self.window {
            encode_message(0, *seq, body, true, 254, &mut self.out);
        }
        self.sent_at = now;
    }

    fn input(&mut self, now: u64, mut bytes: &[u8]) {
        let mut packets = Vec::new();
        while let Some(r) = self.deframer.next_packet(&mut bytes) {
            if let Ok(p) = r {
                packets.push(p.to_vec());
            }
        }
        for p in packets {
            let decoded = Packet::decode(&p);
            // Without READY, only READY and SYNC count (docs/serial.md section 6).
            if !self.synced && !matches!(decoded, Ok(Packet::Ready { .. } | Packet::Sync)) {
                continue;
            }
            match decoded {
                Ok(Packet::Ready {
                    session,
                    n_endpoints: 3,
                }) if session == self.session && !self.synced => {
                    self.synced = true;
                    self.resend(now);
                }
                Ok(Packet::Sync) => {
                    self.synced = false;
                    self.hello(now);
                }
                Ok(Packet::Ack { alias: 0, seq } | Packet::Nack { alias: 0, seq }) => {
                    let Some(base) = self.window.front().map(|m| m.0) else {
                        continue;
                    };
                    let d = u64::from(seq.wrapping_sub(base as u8));
                    if d as usize > self.window.len() {
                        continue;
                    }
                    self.window.drain(..d as usize);
                    self.sent_at = now;
                    if p[0] == kind::NACK {
                        self.resend(now);
                    }
                }
                Ok(Packet::Data {
                    alias: 2,
                    seq,
                    body,
                }) if seq == self.seq[2] as u8 => {
                    self.seq[2] += 1;
                    self.received.push(body.to_vec());
                    let ack = Packet::Ack {
                        alias: 2,
                        seq: self.seq[2] as u8,
                    };
                    encode_packet(&ack, &mut self.out);
                }
                Ok(Packet::Data { alias: 2, .. }) => {
                    let nack = Packet::Nack {
                        alias: 2,
                        seq: self.seq[2] as u8,
                    };
                    encode_packet(&nack, &mut self.out);
                }
                _ => {}
            }
        }
    }

    fn tick(&mut self, now: u64) {
        if !self.synced && self.last_hello.is_none_or(|t| now - t >= 500) {
            self.hello(now);
        }
        if self.synced && !self.window.is_empty() && now - self.sent_at >= 100 {
            self.resend(now);
        }
        if self.synced && now.is_multiple_of(250) {
            encode_packet(&Packet::Heartbeat, &mut self.out);
        }
    }
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn values(evs: &[Event]) -> Vec<(u64, Vec<u8>)> {
    let data = evs.iter().filter_map(|e| match e {
        Event::Data {
            sequence, payload, ..
        } => Some((*sequence, payload.clone())),
        _ => None,
    });
    data.collect()
}

fn cdr(v: u32) -> Vec<u8> {
    let mut c = CDR_HEADER.to_vec();
    c.extend_from_slice(&v.to_le_bytes());
    c
}

/// Runs MCU and host over a line losing `per_mille` of the bytes each way; the MCU publishes
/// `n` values of `body_len` bytes (the value in the first 4). Returns the host's events.
fn run(n: u32, reliable: bool, per_mille: u64, body_len: usize, one_byte: bool) -> Vec<Event> {
    run_held(n, reliable, per_mille, body_len, one_byte, 0..0, &mut 0)
}

/// `run`, with an application that takes no event while `now` is in `held`; `most` is set to
/// the most messages the host held for it at once.
fn run_held(
    n: u32,
    reliable: bool,
    per_mille: u64,
    body_len: usize,
    one_byte: bool,
    held: std::ops::Range<u64>,
    most: &mut usize,
) -> Vec<Event> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(7, 0, reliable);
    let mut evs = Vec::new();
    let mut next = 0u32;
    for now in 0..120_000u64 {
        if mcu.synced && next < n {
            let mut body = vec![0xA5; body_len];
            body[..4].copy_from_slice(&next.to_le_bytes());
            if mcu.publish(now, &body) {
                next += 1;
            }
        }
        mcu.tick(now);
        let up = lossy(&std::mem::take(&mut mcu.out), &mut rng, per_mille);
        if one_byte {
            for b in &up {
                host.handle_bytes(now, std::slice::from_ref(b));
            }
        } else {
            host.handle_bytes(now, &up);
        }
        if host.poll_timeout() <= now {
            host.handle_timeout(now);
        }
        if let Some(down) = host.poll_transmit() {
            mcu.input(now, &lossy(&down, &mut rng, per_mille));
        }
        *most = (*most).max(host.undelivered());
        if !held.contains(&now) {
            evs.extend(events(&mut host));
        }
        let got = values(&evs).len();
        if next == n && (got == n as usize || !reliable && mcu.out.is_empty()) && now % 1000 == 999
        {
            break;
        }
    }
    evs
}

#[test]
fn handshake_then_data_one_byte_at_a_time() {
    for one_byte in [false, true] {
        let evs = run(300, false, 0, 4, one_byte);
        let declared: Vec<_> = evs
            .iter()
            .filter_map(|e| match e {
                Event::Declared { alias, endpoint } => Some((*alias, endpoint.topic.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(declared.len(), 3, "{evs:?}");
        assert_eq!(declared[2], (2, "/mcu/led".to_string()));
        assert!(evs.iter().any(|e| matches!(e, Event::Ready { .. })));
        let v = values(&evs);
        assert_eq!(v.len(), 300);
        for (i, (seq, payload)) in v.iter().enumerate() {
            assert_eq!(
                *seq,
                i as u64 + 1,
                "sequence reconstructed across 4-bit wraps"
            );
            assert_eq!(payload, &cdr(i as u32));
        }
    }
}

#[test]
fn reliable_over_a_lossy_line() {
    // 1% of the bytes dropped or corrupted, both ways: every value, once, in order.
    // A fragmented message is sent again whole, so 1% of 600 bytes loses most of them:
    // fragments run at 0.1%.
    for (body_len, per_mille) in [(4, 10), (64, 10), (600, 1)] {
        let evs = run(500, true, per_mille, body_len, false);
        let v = values(&evs);
        assert_eq!(v.len(), 500, "body {body_len}");
        for (i, (seq, payload)) in v.iter().enumerate() {
            assert_eq!(*seq, i as u64 + 1);
            assert_eq!(payload[4..8], (i as u32).to_le_bytes());
            assert_eq!(payload.len(), 4 + body_len);
        }
        assert!(!evs
            .iter()
            .any(|e| matches!(e, Event::Reset { .. } | Event::Lost { .. })));
    }
}

#[test]
fn an_application_that_takes_nothing_holds_the_mcu_back_and_loses_nothing() {
    // The host's application (a RELIABLE + KEEP_ALL subscriber without room) takes nothing for
    // 3 s while the MCU publishes as fast as its window lets it: the host holds at most its
    // bound, refuses the rest unacknowledged, and the MCU sends them again once it takes.
    let mut most = 0;
    let evs = run_held(3000, true, 0, 4, false, 100..3100, &mut most);
    let v = values(&evs);
    assert_eq!(v.len(), 3000);
    for (i, (seq, payload)) in v.iter().enumerate() {
        assert_eq!(*seq, i as u64 + 1);
        assert_eq!(payload[4..8], (i as u32).to_le_bytes());
    }
    assert_eq!(most, MAX_UNDELIVERED, "held at most its bound");
}

#[test]
fn best_effort_messages_not_taken_are_bounded() {
    // A best-effort burst larger than the bound in one read, the application taking nothing:
    // the session holds the bound and counts the rest refused (lost: no window to hold back).
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(1, 0, false);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    mcu.input(0, &host.poll_transmit().unwrap());
    assert!(mcu.synced);
    events(&mut host);
    let n = MAX_UNDELIVERED_BEST_EFFORT + 100;
    for i in 0..n as u32 {
        mcu.publish(1, &i.to_le_bytes());
    }
    host.handle_bytes(1, &std::mem::take(&mut mcu.out));
    assert_eq!(host.undelivered(), MAX_UNDELIVERED_BEST_EFFORT);
    assert_eq!(host.stats().refused, 100);
    let v = values(&events(&mut host));
    assert!(v.iter().enumerate().all(|(i, (_, p))| *p == cdr(i as u32)));
}

#[test]
fn best_effort_over_a_lossy_line_counts_its_gaps() {
    // DATA frames (12-byte bodies: CRC-16): what arrives is right, gaps are counted.
    let evs = run(2000, false, 10, 12, false);
    let v = values(&evs);
    assert!(v.len() > 1500 && v.len() < 2000, "{}", v.len());
    let mut last = 0;
    for (seq, payload) in &v {
        assert!(*seq > last);
        assert_eq!(
            payload[4..8],
            (*seq as u32 - 1).to_le_bytes(),
            "no corrupted message accepted"
        );
        last = *seq;
    }
    let lost: u64 = evs
        .iter()
        .map(|e| {
            if let Event::Gap { lost, .. } = e {
                *lost
            } else {
                0
            }
        })
        .sum();
    assert_eq!(lost + v.len() as u64, last);
}

#[test]
fn garbage_between_frames() {
    let mut rng = Rng(42);
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(1, 0, false);
    mcu.hello(0);
    let mut line = Vec::new();
    let noise = |rng: &mut Rng, line: &mut Vec<u8>| {
        for _ in 0..rng.next() % 40 {
            line.push(rng.next() as u8);
        }
        line.push(0); // garbage ends at a delimiter at the latest
    };
    noise(&mut rng, &mut line);
    line.append(&mut mcu.out);
    host.handle_bytes(0, &line);
    mcu.input(0, &host.poll_transmit().unwrap());
    assert!(mcu.synced);
    line.clear();
    for i in 0..200u32 {
        noise(&mut rng, &mut line);
        mcu.publish(1, &(i.to_le_bytes()));
        line.append(&mut mcu.out);
    }
    host.handle_bytes(1, &line);
    let v = values(&events(&mut host));
    assert_eq!(v.len(), 200);
    assert!(v.iter().enumerate().all(|(i, (_, p))| *p == cdr(i as u32)));
    assert!(host.stats().bad_frames > 0);
}

#[test]
fn resets_and_redeclarations() {
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(1, 0, true);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    assert_eq!(events(&mut host).len(), 4); // 3 declared + ready
                                            // The same boot declares again (after a SYNC): nothing new.
    mcu.hello(3000);
    host.handle_bytes(3000, &std::mem::take(&mut mcu.out));
    assert_eq!(events(&mut host), vec![]);
    // Same session id, clock went backwards: a reboot.
    let first_gid = host.endpoint(0).unwrap().gid;
    let mut again = Mcu::new(1, 2990, true);
    again.hello(3000);
    host.handle_bytes(3000, &std::mem::take(&mut again.out));
    let evs = events(&mut host);
    assert!(matches!(evs[0], Event::Reset { .. }), "{evs:?}");
    assert_eq!(evs.len(), 5);
    // Same name, same session id, another boot: another gid (its sequences start again).
    assert_ne!(host.endpoint(0).unwrap().gid, first_gid);
    // Another session id: a reboot.
    let mut other = Mcu::new(2, 3100, true);
    other.hello(3500);
    host.handle_bytes(3500, &std::mem::take(&mut other.out));
    assert!(matches!(events(&mut host)[0], Event::Reset { .. }));
    assert_eq!(host.stats().resets, 2);
    // The gid changes with the boot.
    assert_ne!(
        gid(&host.node().unwrap(), 0),
        gid(
            &NodeInfo {
                session: 1,
                ..(*host.node().unwrap()).clone()
            },
            0
        )
    );
}

#[test]
fn declarations_add_up_across_repeated_hellos() {
    // A noisy line: each HELLO gets through with only some of its DECLAREs. READY comes once
    // each alias was declared in the boot, not only after a HELLO whose DECLAREs all arrived.
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(1, 0, true);
    let frames = |mcu: &mut Mcu, now: u64| {
        mcu.hello(now);
        let mut d = Deframer::default();
        let out = std::mem::take(&mut mcu.out);
        let mut input = &out[..];
        let mut packets = Vec::new();
        while let Some(p) = d.next_packet(&mut input) {
            let mut f = Vec::new();
            encode_packet(&Packet::decode(p.expect("valid")).expect("packet"), &mut f);
            packets.push(f);
        }
        packets // HELLO, DECLARE 0, 1, 2
    };
    let first = frames(&mut mcu, 0);
    for f in &first[..2] {
        host.handle_bytes(0, f);
    }
    let second = frames(&mut mcu, 500);
    host.handle_bytes(500, &second[0]);
    host.handle_bytes(500, &second[3]);
    assert!(!host.is_ready(), "alias 1 is still missing");
    let third = frames(&mut mcu, 1000);
    host.handle_bytes(1000, &third[0]);
    host.handle_bytes(1000, &third[2]);
    let evs = events(&mut host);
    assert!(matches!(evs.last(), Some(Event::Ready { .. })), "{evs:?}");
    assert_eq!(evs.len(), 4, "{evs:?}"); // 3 declared + ready
    assert!(host.poll_transmit().is_some(), "READY");
    // Repeats of the boot's HELLO are answered with READY at once; their DECLAREs add nothing.
    let fourth = frames(&mut mcu, 1500);
    host.handle_bytes(1500, &fourth[0]);
    let ready = host.poll_transmit().expect("READY again");
    for f in &fourth[1..] {
        host.handle_bytes(1500, f);
    }
    assert_eq!(host.poll_transmit(), None, "one READY per HELLO");
    let mut d = Deframer::default();
    let mut input = &ready[..];
    let p = d.next_packet(&mut input).expect("frame").expect("valid");
    assert!(matches!(
        Packet::decode(p),
        Ok(Packet::Ready {
            session: 1,
            n_endpoints: 3
        })
    ));
    assert_eq!(events(&mut host), vec![]);
}

#[test]
fn liveness_lost_then_sync() {
    let mut host = Session::new(SessionConfig::default(), 0);
    let _ = host.poll_transmit();
    let mut mcu = Mcu::new(1, 0, false);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    let _ = events(&mut host);
    let mut heartbeat = Vec::new();
    encode_packet(&Packet::Heartbeat, &mut heartbeat);
    let mut lost_at = None;
    let mut syncs = 0;
    for now in 1..3000u64 {
        if now <= 400 && now.is_multiple_of(250) {
            host.handle_bytes(now, &heartbeat);
        }
        if host.poll_timeout() <= now {
            host.handle_timeout(now);
        }
        if events(&mut host)
            .iter()
            .any(|e| matches!(e, Event::Lost { .. }))
        {
            lost_at = Some(now);
        }
        if let Some(b) = host.poll_transmit() {
            let mut d = Deframer::default();
            let mut input = &b[..];
            while let Some(Ok(p)) = d.next_packet(&mut input) {
                syncs += usize::from(p == [kind::SYNC]);
            }
        }
    }
    assert_eq!(lost_at, Some(250 + 1000));
    assert!(syncs >= 3, "SYNC every 500 ms while alone: {syncs}");
}

#[test]
fn sending_to_a_subscription() {
    let mut host = Session::new(SessionConfig::default(), 0);
    assert_eq!(host.send(0, 2, &cdr(1)), Err(SendError::NotReady));
    let mut mcu = Mcu::new(1, 0, true);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    mcu.input(0, &host.poll_transmit().unwrap());
    assert_eq!(host.send(1, 0, &cdr(1)), Err(SendError::NotSubscription(0)));
    assert_eq!(
        host.send(1, 2, &[1, 2, 3, 4, 5]),
        Err(SendError::BadEncapsulation)
    );
    for i in 0..4 {
        host.send(1, 2, &cdr(i)).unwrap();
    }
    assert_eq!(host.send(1, 2, &cdr(9)), Err(SendError::WindowFull));
    // Lost on the way: retransmitted after the timeout, then acknowledged.
    let _ = host.poll_transmit();
    host.handle_timeout(101);
    mcu.input(101, &host.poll_transmit().unwrap());
    host.handle_bytes(102, &std::mem::take(&mut mcu.out));
    assert_eq!(host.in_flight(2), 0);
    assert_eq!(mcu.received.len(), 4);
    assert_eq!(host.stats().retransmits, 4);
}

#[test]
fn fragments_are_bounded() {
    let cfg = SessionConfig {
        max_message: 1000,
        ..SessionConfig::default()
    };
    let mut host = Session::new(cfg, 0);
    let mut mcu = Mcu::new(1, 0, false);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    mcu.input(0, &host.poll_transmit().unwrap());
    let _ = events(&mut host);
    mcu.publish(1, &[7u8; 1000]);
    mcu.publish(1, &[8u8; 1001]);
    host.handle_bytes(1, &std::mem::take(&mut mcu.out));
    let v = values(&events(&mut host));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].1.len(), 1004);
    assert!(host.stats().too_large >= 1);
}

#[test]
fn malformed_inputs() {
    let mut host = Session::new(SessionConfig::default(), 0);
    let mut mcu = Mcu::new(1, 0, false);
    mcu.hello(0);
    host.handle_bytes(0, &std::mem::take(&mut mcu.out));
    mcu.input(0, &host.poll_transmit().unwrap());
    let _ = events(&mut host);
    let frame = |p: &[u8]| {
        let mut o = Vec::new();
        crate::codec::encode_frame(p, false, &mut o);
        o
    };
    let mut bad: Vec<Vec<u8>> = vec![
        vec![0x03, 0x10, 0x00, 0x00],   // COBS block past the end
        vec![0xFF; 600],                // oversize, no delimiter for long
        vec![0x01, 0x01, 0x01, 0x00],   // check fails
        frame(&[0x42]),                 // unknown kind
        frame(&[kind::HELLO, 1, 0, 0]), // truncated HELLO
        frame(&[
            kind::HELLO,
            9,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            64,
            0,
            3,
            64,
            0,
            0,
            0,
        ]), // version
        frame(&[kind::DECLARE, 40, 0, 1, 1, 0, 0, 0, 0, 1, b'x', 0, 0]), // alias out of range
        frame(&[kind::DECLARE, 0, 0, 1, 7, 0, 0, 0, 0, 1, b'x', 0, 0]), // unknown encap
        frame(&[kind::FRAG, 0, 1, 5, 1, 2, 3]), // fragment without its start
        frame(&[kind::FRAG, 0, 1, 0, 0xFF, 0xFF, 1]), // total above max_message
        frame(&[kind::ACK, 9, 1]),      // unknown alias
        frame(&[kind::ACK, 0, 1]),      // ACK for a publisher
        frame(&[kind::DATA, 2, 1, 1]),  // DATA to the MCU's own subscription
        frame(&[kind::DATA, 200, 1, 1]), // unknown alias
        frame(&[kind::READY, 1, 0, 0, 0, 3]), // READY from the MCU
        frame(&[0x80, 1, 2, 3, 4, 5, 6, 7, 8, 9]), // CDATA too long
        vec![0x00; 100],                // empty frames
    ];
    bad.push(vec![0x01; 300]);
    for b in &bad {
        host.handle_bytes(1, b);
        host.handle_bytes(1, &[0]);
    }
    let st = host.stats().clone();
    assert!(
        st.bad_frames >= 4 && st.malformed >= 6 && st.unknown_alias >= 2,
        "{st:?}"
    );
    // Still in the same session, still delivering.
    mcu.publish(2, &[1, 0, 0, 0]);
    host.handle_bytes(2, &std::mem::take(&mut mcu.out));
    let evs = events(&mut host);
    assert!(!evs.iter().any(|e| matches!(e, Event::Reset { .. })));
    assert_eq!(values(&evs).len(), 1);
    assert!(host.heap_bytes() < 4096);
}
