//! The fuzz target's body (`exercise_filter`; fuzz/fuzz_targets/filter.rs) over the committed
//! seed corpus (fuzz/seeds/filter/) and a seeded random corpus: random bytes, random token
//! soup, and mutations of the seeds (bit flips, insertions, deletions, truncations). Any
//! expression compiles or is refused, never a panic or a hang; a compiled filter evaluates on
//! every message of its type, and `NOT (e)` decides the opposite of `e`.

use std::path::{Path, PathBuf};

use content_filter::exercise::ExerciseReport;
use content_filter::exercise_filter;

#[path = "../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
use corpus::Rng;

const WORDS: &[&str] = &[
    "count",
    "big",
    "temperature",
    "ratio",
    "ok",
    "name",
    "points",
    "fixed",
    "header",
    "stamp",
    "sec",
    "frame_id",
    "x",
    "y",
    "label",
    "b",
    "f32",
    "u64",
    "s",
    "xs",
    "fs",
    "w",
    ".",
    "[",
    "]",
    "0",
    "1",
    "2",
    "-3",
    "0x1f",
    "1.5e3",
    "'a%'",
    "'it''s'",
    "%0",
    "%1",
    "%99",
    "%100",
    "=",
    "<>",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "LIKE",
    "AND",
    "OR",
    "NOT",
    "BETWEEN",
    "TRUE",
    "FALSE",
    "(",
    ")",
    " ",
    "\0",
    "nan",
];

/// Input `i`: a quarter random bytes, a quarter words of the language strung together, the
/// rest a seed; then up to four byte mutations.
fn input(rng: &mut Rng, i: usize, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut input: Vec<u8> = match i % 4 {
        0 => (0..rng.below(120)).map(|_| rng.next() as u8).collect(),
        1 => {
            let mut v = vec![rng.next() as u8];
            for _ in 0..rng.below(16) {
                v.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
                if rng.below(2) == 0 {
                    v.push(b' ');
                }
            }
            v
        }
        _ => seeds[rng.below(seeds.len())].clone(),
    };
    corpus::mutate(rng, &mut input, corpus::MORE);
    input
}

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/filter")
}

fn seeds() -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(seed_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

#[test]
fn seeds_compile() {
    for (i, s) in seeds().iter().enumerate() {
        let r = exercise_filter(s);
        // The samples are valid expressions, but for the one kept as a LIKE pattern/text pair.
        assert!(r.compiled == 1 || i == 6, "seed {i}: {r:?}");
    }
}

#[test]
fn corpus_compiles_or_refuses_never_panics() {
    let seeds = seeds();
    let mut rng = Rng(0x5eed_f117_0000_0001);
    let mut totals = ExerciseReport::default();
    for i in 0..40_000 {
        totals.add(exercise_filter(&input(&mut rng, i, &seeds)));
    }
    assert!(
        totals.compiled > 3000 && totals.refused > 3000 && totals.matched > 1000,
        "{totals:?}"
    );
}

/// The longest expressions and deepest nesting taken still compile and evaluate within the
/// stack (a long AND chain is a left-deep tree).
#[test]
fn long_and_deep_expressions() {
    let mut chain = vec![0u8];
    chain.extend_from_slice(b"count = 5");
    while chain.len() + 14 < content_filter::MAX_EXPRESSION_LEN {
        chain.extend_from_slice(b" AND count = 5");
    }
    let r = exercise_filter(&chain);
    assert_eq!(r.compiled, 1, "{r:?}");
    let depth = content_filter::MAX_DEPTH;
    let mut deep = vec![0u8];
    deep.extend_from_slice("(".repeat(depth + 1).as_bytes());
    deep.extend_from_slice(b"ok = TRUE");
    deep.extend_from_slice(")".repeat(depth + 1).as_bytes());
    assert_eq!(exercise_filter(&deep).refused, 1);
}
