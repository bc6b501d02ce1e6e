//! The C library (mcu/tracer_mcu.c, built for the host with `cc` together with
//! mcu/host/loopback_main.c) against the Rust host session, over the child's stdin/stdout and
//! once over a pseudo-terminal: declarations, counter values in order, reliable delivery through
//! a line that drops or corrupts 1% of the bytes each way, the echo of a subscription, MCU
//! resets, host restarts, garbage.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{
    build_loopback, build_loopback_sanitized, int32, temp_dir, Host, Rng, Wire, INT32_HASH,
};
use tracer_serial::{
    encode_packet, Deframer, EndpointKind, Event, Packet, SendError, Session, SessionConfig,
};

fn loopback() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| build_loopback(&temp_dir("interop")))
        .clone()
}

fn spawn(bin: &Path, count: u32, reliable: bool, nonce: u32, period_ms: u32) -> Wire {
    let args = [count, u32::from(reliable), 4, nonce, period_ms].map(|v| v.to_string());
    Wire::spawn(bin, &args)
}

/// Sends `n` values on /mcu/led (reliable) and waits for them on /mcu/echo.
fn echo_round(h: &mut Host, wire: &mut Wire, first: i32, n: i32, limit: Duration) {
    let led = h.alias("/mcu/led").expect("/mcu/led declared");
    let before = h.values("/mcu/echo").len();
    let mut next = first;
    let ok = h.run_until(wire, limit, |h| {
        while next < first + n {
            let now = h.now();
            match h.session.send(now, led, &int32(next)) {
                Ok(()) => next += 1,
                Err(SendError::WindowFull) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        h.values("/mcu/echo").len() >= before + n as usize
    });
    let got: Vec<i32> = h.values("/mcu/echo")[before..]
        .iter()
        .map(|v| v.1)
        .collect();
    assert!(ok, "echo: {} of {n} came back: {got:?}", got.len());
    assert_eq!(got, (first..first + n).collect::<Vec<_>>());
}

#[test]
fn declarations_counter_and_echo() {
    let Some(bin) = loopback() else { return };
    let mut wire = spawn(&bin, 2000, false, 1, 0);
    let mut h = Host::new(0);
    let ok = h.run_until(&mut wire, Duration::from_secs(20), |h| {
        h.values("/mcu/counter").len() >= 2000
    });
    assert!(ok, "counter values: {}", h.values("/mcu/counter").len());
    let declared: Vec<_> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Declared { alias, endpoint } => Some((*alias, endpoint.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(declared.len(), 3);
    let (a, counter) = &declared[0];
    assert_eq!(
        (*a, counter.topic.as_str(), counter.kind),
        (0, "/mcu/counter", EndpointKind::Publisher)
    );
    assert_eq!(counter.type_name, "std_msgs/msg/Int32");
    assert_eq!(counter.type_hash, INT32_HASH);
    assert!(!counter.reliable);
    assert_eq!(counter.node.name, "mcu_host");
    assert_eq!(declared[1].1.topic, "/mcu/echo");
    assert!(declared[1].1.reliable);
    assert_eq!(declared[2].1.kind, EndpointKind::Subscription);
    let v = h.values("/mcu/counter");
    for (i, (seq, value)) in v.iter().enumerate() {
        assert_eq!(
            (*seq, *value),
            (i as u64 + 1, i as i32),
            "in order, every one"
        );
    }
    assert_eq!(h.count(|e| matches!(e, Event::Gap { .. })), 0);
    echo_round(&mut h, &mut wire, 100, 50, Duration::from_secs(10));
    assert_eq!(h.session.stats().bad_frames, 0);
}

#[test]
fn reliable_through_one_percent_loss_and_corruption() {
    let Some(bin) = loopback() else { return };
    let mut wire = spawn(&bin, 400, true, 2, 0);
    let mut h = Host::new(10);
    let ok = h.run_until(&mut wire, Duration::from_secs(60), |h| {
        h.values("/mcu/counter").len() >= 400
    });
    let v = h.values("/mcu/counter");
    assert!(ok, "reliable counter values: {} of 400", v.len());
    for (i, (seq, value)) in v.iter().enumerate() {
        assert_eq!((*seq, *value), (i as u64 + 1, i as i32));
    }
    echo_round(&mut h, &mut wire, 1000, 40, Duration::from_secs(60));
    let st = h.session.stats();
    println!("1% loss: {st:?}");
    assert!(st.bad_frames > 0, "the line did lose bytes");
    assert_eq!(h.count(|e| matches!(e, Event::Reset { .. })), 0);
}

#[test]
fn mcu_reset_is_detected_and_recovered() {
    let Some(bin) = loopback() else { return };
    let mut h = Host::new(0);
    let mut wire = spawn(&bin, 1_000_000, true, 10, 10);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= 20));
    // Reboot at once: a HELLO of another boot within the liveness time.
    wire.kill();
    let mut wire = spawn(&bin, 1_000_000, true, 11, 10);
    let before = h.values("/mcu/counter").len();
    let ok = h.run_until(&mut wire, Duration::from_secs(10), |h| {
        h.count(|e| matches!(e, Event::Reset { .. })) == 1
            && h.values("/mcu/counter").len() >= before + 20
    });
    assert!(
        ok,
        "reset not seen or no data after it: {:?}",
        h.session.stats()
    );
    let after = &h.values("/mcu/counter")[before..];
    assert_eq!(after[0], (1, 0), "the new boot's counter starts again");
    assert_eq!(h.count(|e| matches!(e, Event::Ready { .. })), 2);
    // Pulled cable: silence, Lost within 2 s, then back.
    wire.kill();
    let t = h.now();
    assert!(h.run_until(&mut wire, Duration::from_secs(3), |h| h
        .count(|e| matches!(e, Event::Lost { .. }))
        == 1));
    let lost_after = h.now() - t;
    assert!(lost_after <= 2000, "lost after {lost_after} ms");
    let mut wire = spawn(&bin, 1_000_000, true, 11, 10);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .count(|e| matches!(e, Event::Ready { .. }))
        == 3));
    echo_round(&mut h, &mut wire, 5, 5, Duration::from_secs(10));
    println!("pulled cable noticed after {lost_after} ms");
}

/// The packets of `bytes` that carry messages (DATA, FRAG, CDATA).
fn messages_in(bytes: &[u8]) -> usize {
    let mut d = Deframer::new(tracer_serial::MAX_FRAME);
    let mut input = bytes;
    let mut n = 0;
    while let Some(r) = d.next_packet(&mut input) {
        if let Ok(Ok(p)) = r.map(Packet::decode) {
            n += usize::from(matches!(
                p,
                Packet::Data { .. } | Packet::Frag { .. } | Packet::CData { .. }
            ));
        }
    }
    n
}

#[test]
fn an_mcu_without_ready_ignores_a_previous_sessions_acks() {
    // A reset with no silence: the host still speaks to the previous boot when the new one
    // comes up, holding reliable counter values it has not sent. An ACK of the old session
    // must not move the new window (those values would be skipped, never sent), nor a NACK
    // make it send DATA before its HELLO has been answered.
    let Some(bin) = loopback() else { return };
    // Flags 1 | 4: a reliable counter published before READY, as the firmware does.
    let args = [1_000_000, 1 | 4, 4, 40, 5].map(|v: u32| v.to_string());
    let mut wire = Wire::spawn(&bin, &args);
    let before = wire.read_for(Duration::from_millis(150));
    assert_eq!(messages_in(&before), 0, "no DATA before READY");
    let mut stale = Vec::new();
    for p in [
        Packet::Ack { alias: 0, seq: 3 },
        Packet::Nack { alias: 0, seq: 3 },
        Packet::Heartbeat,
    ] {
        encode_packet(&p, &mut stale);
    }
    wire.write(&stale);
    let after = wire.read_for(Duration::from_millis(150));
    assert_eq!(messages_in(&after), 0, "a stale NACK sent DATA");
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= 10));
    let v = h.values("/mcu/counter");
    assert_eq!(v[0], (1, 0), "the first value of the boot comes first");
    for w in v.windows(2) {
        assert_eq!(
            (w[1].0, w[1].1),
            (w[0].0 + 1, w[0].1 + 1),
            "in order, no gap"
        );
    }
}

#[test]
fn host_restart_declares_again_and_streams_continue() {
    let Some(bin) = loopback() else { return };
    let mut wire = spawn(&bin, 1_000_000, true, 20, 5);
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= 30));
    let last = *h.values("/mcu/counter").last().unwrap();
    // A new host process: no state, it sends SYNC; the MCU declares again from where it is.
    let mut h2 = Host::new(0);
    h2.session = Session::new(SessionConfig::default(), h2.now());
    assert!(h2.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= 30));
    let v = h2.values("/mcu/counter");
    assert!(v[0].0 > last.0, "continues after {last:?}: {:?}", v[0]);
    for w in v.windows(2) {
        assert_eq!(
            (w[1].0, w[1].1),
            (w[0].0 + 1, w[0].1 + 1),
            "in order, no gap"
        );
    }
    assert_eq!(h2.count(|e| matches!(e, Event::Reset { .. })), 0);
}

#[test]
fn c_library_survives_garbage() {
    // Noise, floods without delimiters, and valid frames with damaged fields, into the library
    // built with AddressSanitizer and UBSan: it must neither crash nor stop working.
    let dir = temp_dir("interop-asan");
    let Some(bin) = build_loopback_sanitized(&dir) else {
        return;
    };
    let mut wire = spawn(&bin, 0, true, 30, 0);
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    let mut rng = Rng(0xC0FF_EE00);
    for round in 0..200 {
        let mut junk = Vec::new();
        match round % 4 {
            0 => junk.extend((0..rng.next() % 512).map(|_| rng.next() as u8)),
            1 => junk.extend((0..600).map(|_| rng.next() as u8 | 1)),
            _ => {
                for _ in 0..8 {
                    let (alias, seq) = ((rng.next() % 5) as u8, rng.next() as u8);
                    let body = vec![rng.next() as u8; 1 + (rng.next() % 300) as usize];
                    let total = Some(rng.next() as u16);
                    let packets = [
                        Packet::Data {
                            alias,
                            seq,
                            body: &body[..body.len().min(100)],
                        },
                        Packet::Frag {
                            alias,
                            seq,
                            index: seq % 3,
                            total,
                            bytes: &body[..1],
                        },
                        Packet::Ack { alias, seq },
                        Packet::Nack { alias, seq },
                        Packet::Ready {
                            session: rng.next() as u32 % 40,
                            n_endpoints: alias,
                        },
                        Packet::CData {
                            alias: alias & 7,
                            seq: seq & 15,
                            body: &body[..body.len().min(8)],
                        },
                    ];
                    let p = &packets[(rng.next() % 6) as usize];
                    let mut f = Vec::new();
                    encode_packet(p, &mut f);
                    if rng.next().is_multiple_of(3) {
                        let at = (rng.next() as usize) % f.len();
                        f[at] ^= rng.next() as u8 | 1;
                    }
                    junk.extend_from_slice(&f);
                }
            }
        }
        junk.push(0);
        wire.write(&junk);
        h.step(&mut wire);
    }
    assert!(wire.alive(), "the C library died on garbage");
    // Whatever the garbage did to its state (a stray SYNC makes it declare again, a stray
    // ACK moves a window), a fresh host gets it declared and echoing.
    let mut fresh = Host::new(0);
    assert!(fresh.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    echo_round(&mut fresh, &mut wire, 7, 10, Duration::from_secs(20));
    let status = wire
        .close_and_wait(Duration::from_secs(10))
        .expect("exits at EOF");
    assert!(status.success(), "sanitizers reported a fault: {status}");
}

#[test]
fn over_a_pty_like_a_serial_port() {
    // The node on a pseudo-terminal (raw mode), the host opening its path as it would open
    // /dev/ttyACM0: declarations, counter values in order, echo.
    let Some(bin) = loopback() else { return };
    let args = [500u32, 1, 4, 40, 0].map(|v| v.to_string());
    let mut wire = Wire::spawn_pty(&bin, &args);
    let mut h = Host::new(0);
    let ok = h.run_until(&mut wire, Duration::from_secs(20), |h| {
        h.values("/mcu/counter").len() >= 500
    });
    assert!(
        ok,
        "counter values over the pty: {}",
        h.values("/mcu/counter").len()
    );
    for (i, (seq, value)) in h.values("/mcu/counter").iter().enumerate() {
        assert_eq!((*seq, *value), (i as u64 + 1, i as i32));
    }
    echo_round(&mut h, &mut wire, 3, 20, Duration::from_secs(10));
    let status = wire
        .close_and_wait(Duration::from_secs(10))
        .expect("exits at EOF");
    assert!(status.success());
}

fn echoes(h: &Host) -> Vec<Vec<u8>> {
    let data = h.events.iter().filter_map(|e| match e {
        Event::Data {
            endpoint, payload, ..
        } if endpoint.topic == "/mcu/echo" => Some(payload.clone()),
        _ => None,
    });
    data.collect()
}

#[test]
fn edge_sized_and_fragmented_messages_both_ways() {
    // Bodies around the frame limits (248-250 fill a 254-byte frame, a full COBS block) and
    // fragmented ones, host -> C library (reliable /mcu/led) -> host (reliable /mcu/echo),
    // compared byte for byte.
    let Some(bin) = loopback() else { return };
    let mut wire = spawn(&bin, 0, true, 50, 0);
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    let led = h.alias("/mcu/led").unwrap();
    for len in [0usize, 1, 8, 9, 247, 248, 249, 250, 251, 500, 1000, 1100] {
        let mut cdr = vec![0, 1, 0, 0];
        cdr.extend((0..len).map(|i| (i * 7 + len) as u8 | 1));
        let before = echoes(&h).len();
        h.session.send(h.now(), led, &cdr).expect("send");
        let ok = h.run_until(&mut wire, Duration::from_secs(10), |h| {
            echoes(h).len() > before
        });
        assert!(ok, "no echo of a {len}-byte body");
        assert_eq!(echoes(&h)[before], cdr, "{len}-byte body");
    }
    let mut too_big = vec![0u8; 4 + 1101];
    too_big[1] = 1;
    assert!(matches!(
        h.session.send(h.now(), led, &too_big),
        Err(SendError::TooLarge { .. })
    ));
}

#[test]
fn best_effort_subscription_takes_compact_frames() {
    // /mcu/led best effort: the host sends Int32s as 8-byte CDATA frames to the C library.
    let Some(bin) = loopback() else { return };
    let args = [0u32, 2, 4, 60, 0].map(|v| v.to_string());
    let mut wire = Wire::spawn(&bin, &args);
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    let led = h.alias("/mcu/led").unwrap();
    assert!(!h.session.endpoint(led).unwrap().reliable);
    for i in 0..40 {
        let before = echoes(&h).len();
        h.session.send(h.now(), led, &int32(i)).expect("send");
        let sent = h.session.poll_transmit().expect("bytes");
        assert_eq!(sent.len(), 8, "a best-effort Int32 is 8 bytes on the line");
        wire.write(&sent);
        assert!(
            h.run_until(&mut wire, Duration::from_secs(5), |h| echoes(h).len()
                > before)
        );
        assert_eq!(echoes(&h)[before], int32(i));
    }
}
