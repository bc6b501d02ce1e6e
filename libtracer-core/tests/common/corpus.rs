//! A deterministic fuzz corpus for the decoders' corpus tests (no nightly, no libFuzzer): a
//! seeded xorshift generator, random byte strings and mutations of valid seeds.

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

/// Input `i` of a corpus: every fourth one random bytes (up to `max_random` of them), the others
/// a seed; then up to three mutations: flip a bit, insert or delete a byte, or truncate.
pub fn input(rng: &mut Rng, i: usize, seeds: &[Vec<u8>], max_random: usize) -> Vec<u8> {
    let mut input = if i.is_multiple_of(4) {
        (0..rng.below(max_random))
            .map(|_| rng.next() as u8)
            .collect::<Vec<u8>>()
    } else {
        seeds[rng.below(seeds.len())].clone()
    };
    for _ in 0..rng.below(4) {
        if input.is_empty() {
            break;
        }
        let at = rng.below(input.len());
        match rng.below(4) {
            0 => input[at] ^= 1 << rng.below(8),
            1 => input.insert(at, rng.next() as u8),
            2 => {
                input.remove(at);
            }
            _ => input.truncate(at),
        }
    }
    input
}
