//! Fuzz-style test of the host decoder (issue 27: "Fuzz host decoder"): 100,000 byte strings
//! from a deterministic xorshift, some pure noise and some valid frames mutated, through
//! `exercise_decoder`, which panics on a broken bound.

use tracer_serial::frame::{FLAG_RELIABLE, FLAG_SUBSCRIPTION};
use tracer_serial::{encode_message, encode_packet, exercise_decoder, Declare, Hello, Packet};

#[path = "../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
use corpus::Rng;

/// A valid conversation (HELLO, DECLAREs, messages, acks) that mutations start from, so the
/// fuzzing reaches the session's states, not only the deframer.
fn conversation(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let n = (rng.next() % 4) as u8 + 1;
    let hello = Hello {
        session: rng.next() as u32 % 3,
        uptime_ms: rng.next() as u32 % 5000,
        max_frame: 254,
        boot: true,
        n_endpoints: n,
        max_msg: 2048,
        namespace: "/",
        name: "fz",
    };
    encode_packet(&Packet::Hello(hello), &mut out);
    for a in 0..n {
        let flags = [
            0,
            FLAG_RELIABLE,
            FLAG_SUBSCRIPTION,
            FLAG_SUBSCRIPTION | FLAG_RELIABLE,
        ];
        let d = Declare {
            alias: a,
            flags: flags[(rng.next() % 4) as usize],
            depth: 1,
            encap: 1,
            seq: rng.next() as u32 % 300,
            topic: "/t",
            type_name: "std_msgs/msg/Int32",
            type_hash: "",
        };
        encode_packet(&Packet::Declare(d), &mut out);
    }
    for _ in 0..rng.next() % 8 {
        let alias = (rng.next() % 5) as u8;
        let len = [0, 4, 9, 300, 1100][(rng.next() % 5) as usize];
        let body = vec![rng.next() as u8; len];
        encode_message(
            alias,
            rng.next() % 300,
            &body,
            rng.next() & 1 == 0,
            254,
            &mut out,
        );
        if rng.next().is_multiple_of(3) {
            let p = Packet::Ack {
                alias,
                seq: rng.next() as u8,
            };
            encode_packet(&p, &mut out);
        }
    }
    out
}

#[test]
fn decoder_survives_100k_random_inputs() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let started = std::time::Instant::now();
    for i in 0..100_000u32 {
        let bytes: Vec<u8> = if i % 4 == 0 {
            let mut b = conversation(&mut rng);
            // Mutate a few bytes: flip, drop, insert zeros.
            for _ in 0..rng.next() % 6 {
                if b.is_empty() {
                    break;
                }
                let at = (rng.next() as usize) % b.len();
                match rng.next() % 3 {
                    0 => b[at] ^= rng.next() as u8 | 1,
                    1 => {
                        b.remove(at);
                    }
                    _ => b.insert(at, 0),
                }
            }
            b
        } else {
            let len = (rng.next() % 64) as usize;
            // Noise with fewer zeros than uniform, so frames run long and hit the bounds.
            (0..len)
                .map(|_| {
                    if rng.next().is_multiple_of(16) {
                        0
                    } else {
                        rng.next() as u8 | 1
                    }
                })
                .collect()
        };
        exercise_decoder(&bytes);
    }
    println!("100000 inputs in {:?}", started.elapsed());
}

#[test]
fn long_floods_stay_bounded() {
    let mut rng = Rng(7);
    let flood: Vec<u8> = (0..1_000_000).map(|_| rng.next() as u8 | 1).collect();
    exercise_decoder(&flood);
    let zeros = vec![0u8; 100_000];
    exercise_decoder(&zeros);
}
