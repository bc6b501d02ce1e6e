//! The CDR fuzz target's body (`cdr::exercise::exercise_deserialize`; fuzz/fuzz_targets/) over
//! the committed seed corpus (fuzz/seeds/deserialize/) and a seeded random corpus: random bytes
//! and mutations of the seeds (bit flips, insertions, deletions, truncations). Every input is
//! taken into a C and a C++ message of a real type (test_msgs, sensor_msgs): it becomes a
//! message or an error about the bytes, never a crash (ASan in the fuzz target checks the
//! writes as well).
//!
//! Needs the ROS libraries on LD_LIBRARY_PATH (`eval "$(tools/ros-env)"`, as tools/test does).
//! `cargo test --release -p rmw_tracer --test cdr_fuzz_corpus -- --ignored write_seeds`
//! rewrites the generated seeds (the regression inputs found by fuzzing are kept by hand).

use std::path::{Path, PathBuf};

use rmw_tracer::cdr::exercise::{exercise_deserialize, exercise_types, EXERCISE_TYPES};
use rmw_tracer::cdr::CdrError;

use ros2msg::schema::{BaseType, MessageDef, Multiplicity, Primitive};
use ros2msg::{Schema, Value};

#[path = "../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
use corpus::Rng;

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/deserialize")
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(seed_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(f).unwrap())
        })
        .collect()
}

#[test]
fn seeds_deserialize_and_serialize_to_the_same_bytes() {
    let seeds = seeds();
    let mut samples = 0;
    for (name, bytes) in &seeds {
        let out = exercise_deserialize(bytes).expect("a seed is not empty");
        if !name.starts_with("sample-") {
            continue;
        }
        // The generated seeds are ros2msg's encoding of filled messages: rmw_tracer reads each
        // and writes the same bytes back (two CDR writers agree).
        let out = out.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out, bytes[1..], "{name}");
        samples += 1;
    }
    // Three samples of every type.
    assert_eq!(samples, 3 * EXERCISE_TYPES.len(), "{} seeds", seeds.len());
}

#[test]
fn corpus_gives_messages_or_errors() {
    let seeds: Vec<Vec<u8>> = seeds().into_iter().map(|(_, b)| b).collect();
    let (mut taken, mut refused) = (0, 0);
    let mut rng = Rng(0x5eed_cd12_7a6e_0001);
    for i in 0..20_000 {
        let input = corpus::input(&mut rng, i, &seeds, 300, corpus::MORE);
        match exercise_deserialize(&input) {
            Some(Ok(_)) => taken += 1,
            Some(Err(_)) => refused += 1,
            None => {}
        }
    }
    // Neither side vacuous: mutations of the seeds are often still messages.
    assert!(
        taken > 2000 && refused > 2000,
        "{taken} taken, {refused} refused"
    );
}

/// A length of 2^32 - 1 in a 20-byte sample is refused by the length check, before anything
/// of that length is allocated: the error is the count's, at the count's offset, for every
/// kind of first field (primitive, string and wstring sequences and strings), in C and C++.
#[test]
fn huge_lengths_are_refused_before_allocating() {
    for name in [
        "UnboundedSequences",
        "BoundedSequences",
        "Strings",
        "WStrings",
    ] {
        let pick = EXERCISE_TYPES.iter().position(|(_, n)| *n == name).unwrap();
        let mut input = vec![pick as u8, 0, 1, 0, 0];
        input.extend_from_slice(&u32::MAX.to_le_bytes());
        input.extend_from_slice(&[0; 12]);
        let e = exercise_deserialize(&input).unwrap().unwrap_err();
        match e.root() {
            CdrError::Malformed { at: 4, what } if what.starts_with("length 4294967295") => {}
            other => panic!("{name}: {other} ({e})"),
        }
    }
    // The same at every 4-byte position of every filled sample: nothing panics, and each type
    // with a length field meets the length check at least once.
    for (name, seed) in seeds().iter().filter(|(n, _)| n.ends_with("-3.bin")) {
        let mut refused = 0;
        for at in (5..seed.len().saturating_sub(3)).step_by(4) {
            let mut input = seed.clone();
            input[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            if let Some(Err(e)) = exercise_deserialize(&input) {
                if matches!(e.root(), CdrError::Malformed { what, .. } if what.starts_with("length 4294967295"))
                {
                    refused += 1;
                }
            }
        }
        let fixed = ["BasicTypes", "Nested", "Builtins", "Defaults", "Empty"];
        if !fixed.iter().any(|f| name.contains(&format!("-{f}-"))) {
            assert!(refused > 0, "{name}: no length refused");
        }
    }
}

/// A value of a field's element type, varied by `salt`; strings and sequences as long as
/// `level` allows within their bounds.
fn element(schema: &Schema, base: &BaseType, level: usize, salt: usize) -> Value {
    match base {
        BaseType::Primitive(p) => match p {
            Primitive::Bool => Value::Bool(salt % 2 == 1),
            Primitive::Float32 => Value::Float32(salt as f32 * 1.5 - 2.0),
            Primitive::Float64 => Value::Float64(salt as f64 * -0.25 + 1e10),
            Primitive::Int8 | Primitive::Int16 | Primitive::Int32 | Primitive::Int64 => {
                Value::Int(-(salt as i64 % 100))
            }
            _ => Value::Uint(salt as u64 % 100),
        },
        BaseType::String(bound) | BaseType::WString(bound) => {
            let text: String = "héllo wörld, ÿ"
                .chars()
                .cycle()
                .skip(salt % 5)
                .take(level * 4)
                .collect();
            let mut text = text.as_str();
            // The bound counts bytes (string) or UTF-16 units (wstring, all in the BMP here).
            while bound.is_some_and(|b| {
                let n = match base {
                    BaseType::String(_) => text.len(),
                    _ => text.encode_utf16().count(),
                };
                n > b
            }) {
                text = &text[..text.char_indices().last().map_or(0, |(i, _)| i)];
            }
            Value::String(text.to_string())
        }
        BaseType::Message(key) => fill(schema, schema.get(key).unwrap(), level, salt),
    }
}

/// A message of `def` with every field set: `level` elements per sequence (within bounds).
fn fill(schema: &Schema, def: &MessageDef, level: usize, salt: usize) -> Value {
    let fields = def.fields.iter().enumerate().map(|(i, f)| {
        let salt = salt * 31 + i;
        let n = match f.multiplicity {
            Multiplicity::Single => None,
            Multiplicity::Array(n) => Some(n),
            Multiplicity::Bounded(b) => Some(level.min(b)),
            Multiplicity::Sequence => Some(level),
        };
        let v = match n {
            None => element(schema, &f.base, level, salt),
            Some(n) => Value::List(
                (0..n)
                    .map(|j| element(schema, &f.base, level, salt + j))
                    .collect(),
            ),
        };
        (f.name.clone(), v)
    });
    Value::Message(fields.collect())
}

/// Writes the generated seeds: each type's messages with every field at its default (level 0),
/// and filled with one and three elements per sequence, as ros2msg encodes them from the type's
/// own definition (its type support's type description, `ExerciseType::schema`).
#[test]
#[ignore]
fn write_seeds() {
    std::fs::create_dir_all(seed_dir()).unwrap();
    for (k, ((pkg, name), t)) in EXERCISE_TYPES.iter().zip(exercise_types()).enumerate() {
        let schema = &t.schema;
        for level in [0, 1, 3] {
            let v = fill(schema, schema.root_def(), level, k);
            let payload = ros2msg::encode(schema, &v.to_json()).unwrap();
            let mut input = vec![k as u8];
            input.extend_from_slice(&payload);
            let file = format!("sample-{k:02}-{pkg}-{name}-{level}.bin");
            std::fs::write(seed_dir().join(file), input).unwrap();
        }
    }
}
