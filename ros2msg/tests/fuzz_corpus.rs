//! The fuzz targets' bodies (`exercise_cdr`, `exercise_schema`; fuzz/fuzz_targets/) over the
//! committed seed corpus (fuzz/seeds/<target>/) and a seeded random corpus: random bytes and
//! mutations of the seeds (bit flips, insertions, deletions, truncations). Any input gives a
//! value or an error, never a panic or a hang, and what decodes re-encodes to the same value.
//!
//! `cargo test --release -p tracer-ros2msg --test fuzz_corpus -- --ignored write_seeds`
//! rewrites the generated seeds (the regression inputs found by fuzzing are kept by hand).

use std::path::{Path, PathBuf};

use ros2msg::exercise::{ExerciseReport, EXERCISE_SCHEMAS};
use ros2msg::{encode, exercise_cdr, exercise_schema, Schema};
use serde_json::json;

#[path = "../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
use corpus::Rng;

fn seed_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(seed_dir(target))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let s: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(s.len() >= 4, "{target}: {} seeds", s.len());
    s
}

fn run(target: &str, f: fn(&[u8]) -> ExerciseReport, n: usize, seed: u64) -> ExerciseReport {
    let seeds = seeds(target);
    let mut totals = ExerciseReport::default();
    for s in &seeds {
        totals.add(f(s));
    }
    // Every generated seed decodes: the corpus starts from valid inputs.
    assert!(totals.decoded >= seeds.len() / 2, "{target}: {totals:?}");
    let mut rng = Rng(seed);
    for i in 0..n {
        totals.add(f(&corpus::input(&mut rng, i, &seeds, 300, corpus::MORE)));
    }
    totals
}

#[test]
fn cdr_corpus_gives_values_or_errors() {
    let t = run("cdr", exercise_cdr, 30_000, 0x5eed_cd12_0000_0001);
    assert!(t.decoded > 3000 && t.errors > 3000, "{t:?}");
}

#[test]
fn schema_corpus_gives_schemas_values_or_errors() {
    let t = run("schema", exercise_schema, 30_000, 0x5eed_5c4e_0000_0002);
    assert!(
        t.schemas > 3000 && t.decoded > 1000 && t.errors > 3000,
        "{t:?}"
    );
}

/// A sequence or string length of 2^32 - 1 in a few bytes is refused before anything of its
/// size is allocated (the test would abort on the allocation otherwise).
#[test]
fn huge_lengths_are_refused_without_allocating() {
    for text in [
        "uint64[] a\n",
        "string a\n",
        "wstring a\n",
        "string[] a\n",
        "E[] a\n===\nMSG: fuzz/E\n",
    ] {
        let s = Schema::parse("fuzz/msg/T", text).unwrap();
        let mut p = vec![0, 1, 0, 0];
        p.extend_from_slice(&u32::MAX.to_le_bytes());
        p.extend_from_slice(&[0; 16]);
        assert!(ros2msg::decode(&s, &p).is_err(), "{text}");
        let mut input = text.as_bytes().to_vec();
        input.push(0);
        input.extend_from_slice(&p);
        exercise_schema(&input);
    }
}

/// Writes the generated seeds: each exercise schema with sample values (cdr), and the same
/// definitions as schema text + NUL + payload (schema), plus a service.
#[test]
#[ignore]
fn write_seeds() {
    let samples = [
        (0, json!({"data": "hello"})),
        (0, json!({"data": ""})),
        (
            1,
            json!({"stamp": {"sec": 1700000000, "nanosec": 5}, "frame_id": "map"}),
        ),
        (
            2,
            json!({
                "b": true, "y": 255, "c": 65, "i8": -128, "u8": 7, "i16": -300, "u16": 65535,
                "i32": -5, "u32": 7, "i64": -9, "u64": 1, "f32": 1.5, "f64": -0.1,
                "s": "héllo", "bs": "abcd", "w": "aé😀", "bw": "ab", "bytes": [0, 1, 255],
                "xs": [{"t": "", "x": 1.0, "small": [1]}, {"t": "abc", "x": 2.5, "small": []}],
                "fixed": [-1, 5], "e": {}, "fs": ["nan", "inf", 0.0], "names": ["a", "bc"],
                "many": [{"t": "z"}]
            }),
        ),
        (2, json!({})),
        (
            3,
            json!({
                "header": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": "lidar"},
                "height": 1, "width": 2,
                "fields": [{"name": "x", "offset": 0, "datatype": 7, "count": 1}],
                "point_step": 4, "row_step": 8, "data": [1, 2, 3, 4, 5, 6, 7, 8], "is_dense": true
            }),
        ),
    ];
    for target in ["cdr", "schema"] {
        std::fs::create_dir_all(seed_dir(target)).unwrap();
    }
    for (i, (k, v)) in samples.iter().enumerate() {
        let (root, text) = EXERCISE_SCHEMAS[*k];
        let s = Schema::parse(root, text).unwrap();
        let payload = encode(&s, v).unwrap();
        let mut cdr = vec![*k as u8];
        cdr.extend_from_slice(&payload);
        std::fs::write(seed_dir("cdr").join(format!("sample{i}.bin")), cdr).unwrap();
        // The schema target parses the text as `fuzz/msg/T`: same-package names become
        // `fuzz/...`, which these definitions do not use.
        let mut both = text.as_bytes().to_vec();
        both.push(0);
        both.extend_from_slice(&payload);
        std::fs::write(seed_dir("schema").join(format!("sample{i}.bin")), both).unwrap();
    }
    let srv = "# request\nstring[] names\n---\nParameterValue[] values\n\
               ================================================================================\n\
               MSG: rcl_interfaces/msg/ParameterValue\nuint8 type\nint64 integer_value\n";
    let mut both = srv.as_bytes().to_vec();
    both.push(0);
    both.extend_from_slice(&[0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, b'a', 0]);
    std::fs::write(seed_dir("schema").join("service.bin"), both).unwrap();
}

/// Regressions found by fuzzing, each also a file in fuzz/seeds/schema/: a field name used
/// twice (the JSON form lost one), and nested fixed arrays of a zero-size element
/// (`T[0]`), which decoded 60^6 values from 70 payload bytes.
#[test]
fn regressions_are_refused() {
    for (file, why) in [
        ("regress-duplicate-field.bin", "defined twice"),
        ("regress-zero-size-array-hang.bin", "fixed array of 0"),
    ] {
        let b = std::fs::read(seed_dir("schema").join(file)).unwrap();
        let text = std::str::from_utf8(&b[..b.iter().position(|c| *c == 0).unwrap()]).unwrap();
        let e = Schema::parse("fuzz/msg/T", text).unwrap_err();
        assert!(e.reason.contains(why), "{file}: {e}");
        exercise_schema(&b);
    }
}

/// A chain of nested types deeper than `MAX_NESTING` is refused before anything recurses
/// down it (a 100 000-deep chain would overflow the stack of decode, to_json and drop).
#[test]
fn deep_nesting_is_refused() {
    let mut text = String::from("T0 a\n");
    for i in 0..100_000 {
        text.push_str(&format!("===\nMSG: fuzz/T{i}\nT{} a\n", i + 1));
    }
    text.push_str("===\nMSG: fuzz/T100000\nint8 x\n");
    let e = Schema::parse("fuzz/msg/T", &text).unwrap_err();
    assert!(e.reason.contains("nested more than"), "{e}");
    let mut text = String::from("T0 a\n");
    for i in 0..ros2msg::schema::MAX_NESTING - 1 {
        text.push_str(&format!("===\nMSG: fuzz/T{i}\nT{} a\n", i + 1));
    }
    text.push_str(&format!(
        "===\nMSG: fuzz/T{}\nint8 x\n",
        ros2msg::schema::MAX_NESTING - 1
    ));
    let s = Schema::parse("fuzz/msg/T", &text).unwrap();
    let v = ros2msg::decode(&s, &[0, 1, 0, 0, 7]).unwrap();
    let path = format!("{}x", "a.".repeat(ros2msg::schema::MAX_NESTING));
    assert_eq!(v.get_path(&path), Some(&ros2msg::Value::Int(7)));
}
