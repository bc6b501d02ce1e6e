//! Benchmarks for docs/serial.md section 11 (ignored by default; run with
//! `cargo test --release -p tracer-serial --test bench -- --ignored --nocapture --test-threads 1`):
//! bytes on the line per message, messages per second and round trips through the host-built
//! library over pipes and through the firmware under QEMU, host CPU per message of the codec,
//! and how often CRC-8 lets a damaged CDATA frame through.

mod common;

use std::time::{Duration, Instant};

use common::{build_loopback, int32, qemu, temp_dir, Host, Rng, Wire};
use tracer_serial::{encode_message, encode_packet, Event, Packet, Session, SessionConfig};

fn line_bytes(body: usize, reliable: bool, alias: u8) -> usize {
    let mut out = Vec::new();
    encode_message(alias, 1, &vec![0x11; body], reliable, 254, &mut out);
    out.len()
}

#[test]
#[ignore]
fn bytes_per_message() {
    let mut ack = Vec::new();
    encode_packet(&Packet::Ack { alias: 0, seq: 2 }, &mut ack);
    println!("best-effort Int32: {} bytes", line_bytes(4, false, 0));
    println!(
        "reliable Int32: {} bytes + ACK {} bytes",
        line_bytes(4, true, 0),
        ack.len()
    );
    println!(
        "best-effort Int32, alias >= 8: {} bytes",
        line_bytes(4, false, 9)
    );
    println!("64-byte body: {} bytes", line_bytes(64, false, 0));
    println!("1 KiB body: {} bytes", line_bytes(1024, false, 0));
    assert_eq!(line_bytes(4, false, 0), 8);
}

/// Messages per second and bytes per message from the C library over pipes (or a pty).
fn pipe_rate(bin: &std::path::Path, n: u32, reliable: bool, body: usize) {
    line_rate(bin, n, reliable, body, false)
}

fn line_rate(bin: &std::path::Path, n: u32, reliable: bool, body: usize, pty: bool) {
    let args = [n, u32::from(reliable), body as u32, 1, 0].map(|v| v.to_string());
    let mut wire = if pty {
        Wire::spawn_pty(bin, &args)
    } else {
        Wire::spawn(bin, &args)
    };
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| !h
        .values("/mcu/counter")
        .is_empty()));
    let (t0, b0, n0) = (Instant::now(), h.bytes_in, h.values("/mcu/counter").len());
    let ok = h.run_until(&mut wire, Duration::from_secs(60), |h| {
        h.values("/mcu/counter").len() >= n as usize
    });
    assert!(ok);
    let secs = t0.elapsed().as_secs_f64();
    let got = (n as usize - n0) as f64;
    let per = (h.bytes_in - b0) as f64 / got;
    let rel = if reliable { "reliable" } else { "best effort" };
    let line = if pty { "pty" } else { "pipe" };
    println!(
        "{line} {rel} body {body}: {:.0} msg/s, {per:.1} bytes/msg on the line",
        got / secs
    );
}

fn rtt(h: &mut Host, wire: &mut Wire, n: i32) -> (Duration, Duration) {
    let led = h.alias("/mcu/led").unwrap();
    let mut rtts = Vec::new();
    for i in 0..n {
        let before = h.values("/mcu/echo").len();
        let t = Instant::now();
        h.session.send(h.now(), led, &int32(i)).unwrap();
        h.flush(wire);
        assert!(h.run_until(wire, Duration::from_secs(5), |h| h
            .values("/mcu/echo")
            .len()
            > before));
        rtts.push(t.elapsed());
    }
    rtts.sort();
    (rtts[rtts.len() / 2], rtts[rtts.len() * 99 / 100])
}

/// Echo throughput: as many /mcu/led values as the window allows, counted back on /mcu/echo.
fn echo_rate(h: &mut Host, wire: &mut Wire, n: usize) -> f64 {
    let led = h.alias("/mcu/led").unwrap();
    let before = h.values("/mcu/echo").len();
    let t0 = Instant::now();
    let mut sent = 0;
    let ok = h.run_until(wire, Duration::from_secs(60), |h| {
        while sent < n && h.session.send(h.now(), led, &int32(sent as i32)).is_ok() {
            sent += 1;
        }
        h.values("/mcu/echo").len() >= before + n
    });
    assert!(ok);
    n as f64 / t0.elapsed().as_secs_f64()
}

#[test]
#[ignore]
fn pipes() {
    let dir = temp_dir("bench-pipes");
    let Some(bin) = build_loopback(&dir) else {
        return;
    };
    pipe_rate(&bin, 200_000, false, 4);
    pipe_rate(&bin, 50_000, true, 4);
    pipe_rate(&bin, 50_000, false, 64);
    pipe_rate(&bin, 10_000, false, 1024);
    pipe_rate(&bin, 5_000, true, 1024);
    let mut wire = Wire::spawn(&bin, &["0", "1", "4", "3", "0"].map(String::from));
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    let (med, p99) = rtt(&mut h, &mut wire, 2000);
    println!("pipe echo RTT (reliable Int32 both ways): median {med:?}, p99 {p99:?}");
    println!(
        "pipe echo throughput (window 4): {:.0} msg/s",
        echo_rate(&mut h, &mut wire, 20_000)
    );
}

#[test]
#[ignore]
fn pty() {
    let dir = temp_dir("bench-pty");
    let Some(bin) = build_loopback(&dir) else {
        return;
    };
    line_rate(&bin, 100_000, false, 4, true);
    line_rate(&bin, 20_000, true, 4, true);
    line_rate(&bin, 5_000, false, 1024, true);
    let mut wire = Wire::spawn_pty(&bin, &["0", "1", "4", "3", "0"].map(String::from));
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h.session.is_ready()));
    let (med, p99) = rtt(&mut h, &mut wire, 2000);
    println!("pty echo RTT (reliable Int32 both ways): median {med:?}, p99 {p99:?}");
}

#[test]
#[ignore]
fn qemu_firmware() {
    let dir = temp_dir("bench-qemu");
    let Some(elf) = qemu::build_firmware(&dir) else {
        return;
    };
    let Some((_qemu, mut wire)) = qemu::start(&elf, &dir) else {
        return;
    };
    let mut h = Host::new(0);
    assert!(h.run_until(&mut wire, Duration::from_secs(20), |h| h
        .values("/mcu/counter")
        .len()
        > 10));
    let (t0, b0, n0) = (Instant::now(), h.bytes_in, h.values("/mcu/counter").len());
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= n0 + 500));
    let got = (h.values("/mcu/counter").len() - n0) as f64;
    println!(
        "QEMU counter: {:.1} msg/s, {:.2} bytes/msg on the line (heartbeats included)",
        got / t0.elapsed().as_secs_f64(),
        (h.bytes_in - b0) as f64 / got
    );
    let (med, p99) = rtt(&mut h, &mut wire, 1000);
    println!("QEMU echo RTT: median {med:?}, p99 {p99:?}");
    println!(
        "QEMU echo throughput (window 4): {:.0} msg/s",
        echo_rate(&mut h, &mut wire, 5000)
    );
}

#[test]
#[ignore]
fn host_cpu_per_message() {
    // A second's worth of frames of a fast MCU, decoded by one session: the host's cost.
    let mut line = Vec::new();
    let mut hello = Vec::new();
    let h = tracer_serial::Hello {
        session: 1,
        uptime_ms: 0,
        max_frame: 254,
        boot: true,
        n_endpoints: 1,
        max_msg: 64,
        namespace: "/",
        name: "b",
    };
    encode_packet(&Packet::Hello(h.clone()), &mut hello);
    let d = tracer_serial::Declare {
        alias: 0,
        flags: 0,
        depth: 1,
        encap: 1,
        seq: 1,
        topic: "/t",
        type_name: "std_msgs/msg/Int32",
        type_hash: "",
    };
    encode_packet(&Packet::Declare(d.clone()), &mut hello);
    let n = 1_000_000u64;
    for s in 1..=n {
        encode_message(0, s, &(s as u32).to_le_bytes(), false, 254, &mut line);
    }
    let mut session = Session::new(SessionConfig::default(), 0);
    session.handle_bytes(0, &hello);
    let t = Instant::now();
    let mut got = 0u64;
    for chunk in line.chunks(4096) {
        session.handle_bytes(1, chunk);
        while let Some(e) = session.poll_event() {
            got += u64::from(matches!(e, Event::Data { .. }));
        }
    }
    let el = t.elapsed();
    assert_eq!(got, n);
    println!(
        "host decode, best-effort Int32: {:.0} ns/msg",
        el.as_nanos() as f64 / n as f64
    );

    // The other way: the host sending best-effort Int32s to an MCU subscription.
    let mut decl = Vec::new();
    let h = tracer_serial::Hello {
        n_endpoints: 1,
        ..h
    };
    encode_packet(&Packet::Hello(h), &mut decl);
    let d = tracer_serial::Declare {
        flags: tracer_serial::frame::FLAG_SUBSCRIPTION,
        ..d
    };
    encode_packet(&Packet::Declare(d), &mut decl);
    let mut session = Session::new(SessionConfig::default(), 0);
    session.handle_bytes(0, &decl);
    assert!(session.is_ready());
    let cdr = int32(7);
    let t = Instant::now();
    let mut bytes = 0;
    for i in 0..n {
        session.send(1, 0, &cdr).unwrap();
        if i % 64 == 0 {
            bytes += session.poll_transmit().map_or(0, |b| b.len());
        }
    }
    let el = t.elapsed();
    assert!(bytes > 0);
    println!(
        "host encode (send), best-effort Int32: {:.0} ns/msg",
        el.as_nanos() as f64 / n as f64
    );
}

#[test]
#[ignore]
fn crc8_residual() {
    // A CDATA Int32 frame with 1 to 3 bytes corrupted or dropped: how many still decode, and
    // as something else than what was sent?
    let mut rng = Rng(99);
    let (mut wrong, trials) = (0u64, 1_000_000u64);
    for _ in 0..trials {
        let v = rng.next() as u32;
        let mut f = Vec::new();
        encode_message(0, 1, &v.to_le_bytes(), false, 254, &mut f);
        for _ in 0..1 + rng.next() % 3 {
            let at = (rng.next() as usize) % (f.len() - 1);
            if rng.next() & 1 == 0 {
                f[at] ^= 1 + (rng.next() % 255) as u8;
            } else {
                f.remove(at);
            }
        }
        let mut d = tracer_serial::Deframer::default();
        let mut input = &f[..];
        while let Some(r) = d.next_packet(&mut input) {
            if let Ok(p) = r {
                if let Ok(Packet::CData { body, .. }) = Packet::decode(p) {
                    if body != v.to_le_bytes() {
                        wrong += 1;
                    }
                }
            }
        }
    }
    println!(
        "CDATA with 1-3 damaged bytes accepted wrong: {wrong} of {trials} ({:.4}%)",
        100.0 * wrong as f64 / trials as f64
    );
}
