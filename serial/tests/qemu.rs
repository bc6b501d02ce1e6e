//! The firmware (mcu/firmware/, LM3S6965 Cortex-M3) under qemu-system-arm, its UART on a Unix
//! socket, driven by the Rust host session: /mcu/counter declared and 100 consecutive values in
//! order at 100 Hz, values sent on /mcu/led coming back on /mcu/echo, a reboot (a new QEMU)
//! detected with a new writer gid. Skipped (printed) when
//! qemu-system-arm or the ARM toolchain is missing. QEMU is killed at the end in every case.

mod common;

use std::time::{Duration, Instant};

use common::{int32, qemu, temp_dir, Host, INT32_HASH};
use tracer_serial::{EndpointKind, Event};

#[test]
fn firmware_under_qemu() {
    let dir = temp_dir("qemu");
    let Some(elf) = qemu::build_firmware(&dir) else {
        return;
    };
    let Some((vm, mut wire)) = qemu::start(&elf, &dir) else {
        return;
    };
    let mut h = Host::new(0);

    let ok = h.run_until(&mut wire, Duration::from_secs(20), |h| {
        h.values("/mcu/counter").len() >= 101
    });
    assert!(
        ok,
        "counter values: {}; events: {:?}",
        h.values("/mcu/counter").len(),
        h.events
    );
    let counter = h
        .session
        .endpoint(h.alias("/mcu/counter").unwrap())
        .unwrap();
    assert_eq!(counter.type_name, "std_msgs/msg/Int32");
    assert_eq!(counter.type_hash, INT32_HASH);
    assert_eq!(
        (counter.kind, counter.reliable),
        (EndpointKind::Publisher, false)
    );
    assert_eq!(counter.node.name, "mcu");
    let v = &h.values("/mcu/counter")[..101];
    for w in v.windows(2) {
        assert_eq!(
            (w[1].0, w[1].1),
            (w[0].0 + 1, w[0].1 + 1),
            "consecutive and in order"
        );
    }

    // 100 values at 100 Hz: about a second between the first and the 101st.
    let t0 = h.now();
    let n0 = h.values("/mcu/counter").len();
    assert!(h.run_until(&mut wire, Duration::from_secs(10), |h| h
        .values("/mcu/counter")
        .len()
        >= n0 + 200));
    let rate = 200.0 * 1000.0 / (h.now() - t0) as f64;
    println!("counter rate {rate:.1} msg/s");
    assert!((70.0..130.0).contains(&rate), "rate {rate}");

    // Round trips: one value at a time on /mcu/led, back on /mcu/echo.
    let led = h.alias("/mcu/led").unwrap();
    let mut rtts = Vec::new();
    for i in 0..30 {
        let before = h.values("/mcu/echo").len();
        let t = Instant::now();
        h.session.send(h.now(), led, &int32(i)).expect("send");
        h.flush(&mut wire);
        assert!(h.run_until(&mut wire, Duration::from_secs(5), |h| h
            .values("/mcu/echo")
            .len()
            > before));
        rtts.push(t.elapsed());
        assert_eq!(h.values("/mcu/echo").last().unwrap().1, i);
    }
    rtts.sort();
    println!(
        "QEMU echo RTT: median {:?}, max {:?}",
        rtts[rtts.len() / 2],
        rtts[rtts.len() - 1]
    );
    assert_eq!(
        h.count(|e| matches!(e, Event::Reset { .. } | Event::Lost { .. })),
        0
    );
    assert_eq!(h.session.stats().bad_frames, 0);

    // Reboot: a new QEMU, same firmware, same session id. The host tells the boot by the
    // clock that went backwards (or, if QEMU took over a second to start, by the silence).
    let old_gid = counter.gid;
    drop(wire);
    drop(vm);
    let Some((_vm, mut wire)) = qemu::start(&elf, &dir) else {
        return;
    };
    let before = h.values("/mcu/counter").len();
    let ok = h.run_until(&mut wire, Duration::from_secs(20), |h| {
        h.count(|e| matches!(e, Event::Ready { .. })) == 2
            && h.values("/mcu/counter").len() > before + 10
    });
    assert!(ok, "no data after the reboot: {:?}", h.session.stats());
    let reset = h.count(|e| matches!(e, Event::Reset { .. }));
    let lost = h.count(|e| matches!(e, Event::Lost { .. }));
    println!("reboot seen as: {reset} reset, {lost} lost");
    assert_eq!(reset + lost, 1);
    let counter = h
        .session
        .endpoint(h.alias("/mcu/counter").unwrap())
        .unwrap();
    assert_ne!(counter.gid, old_gid, "a new boot is a new writer");
    let after = &h.values("/mcu/counter")[before..];
    assert!(
        after[0].0 < 100,
        "sequences of the new boot start again: {:?}",
        after[0]
    );
}
