//! A deterministic fuzz corpus for the decoders' corpus tests (no nightly, no libFuzzer): a
//! seeded xorshift generator, random byte strings and mutations of valid seeds. The one copy:
//! the corpus tests of every crate include this file (`#[path]`); each uses what it needs.
#![allow(dead_code)]

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// How a seed is mutated: up to `max` mutations, each a bit flip with weight `flips` against
/// one each for an inserted byte, a removed byte and a truncation.
#[derive(Clone, Copy)]
pub struct Mutations {
    pub max: usize,
    pub flips: usize,
}

/// Up to 3 mutations, a flip as likely as each other kind (the core's decoders).
pub const FEW: Mutations = Mutations { max: 3, flips: 1 };
/// Up to 4 mutations, a flip twice as likely (the schema, filter and SROS2 readers).
pub const MORE: Mutations = Mutations { max: 4, flips: 2 };

/// Mutate `input` in place as `m` says.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, m: Mutations) {
    for _ in 0..rng.below(m.max + 1) {
        if input.is_empty() {
            break;
        }
        let at = rng.below(input.len());
        let kind = rng.below(m.flips + 3);
        if kind < m.flips {
            input[at] ^= 1 << rng.below(8);
        } else if kind == m.flips {
            input.insert(at, rng.next() as u8);
        } else if kind == m.flips + 1 {
            input.remove(at);
        } else {
            input.truncate(at);
        }
    }
}

/// Input `i` of a corpus: every fourth one random bytes (up to `max_random` of them), the others
/// a seed; then mutated as `m` says.
pub fn input(
    rng: &mut Rng,
    i: usize,
    seeds: &[Vec<u8>],
    max_random: usize,
    m: Mutations,
) -> Vec<u8> {
    let mut input = if i.is_multiple_of(4) {
        (0..rng.below(max_random))
            .map(|_| rng.next() as u8)
            .collect::<Vec<u8>>()
    } else {
        seeds[rng.below(seeds.len())].clone()
    };
    mutate(rng, &mut input, m);
    input
}
