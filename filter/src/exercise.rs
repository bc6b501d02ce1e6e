//! The body of the fuzz target (fuzz/fuzz_targets/filter.rs), kept in the library so a normal
//! test (tests/fuzz_corpus.rs) runs it over a seeded random corpus too. Any expression and
//! parameters (user text, through rcl) must compile or be refused, never panic or hang, and a
//! compiled filter must evaluate on any message of its type. Cheap checks on the way: a filter
//! compiles the same way twice, `NOT (e)` decides the opposite of `e`, and the LIKE matcher
//! agrees with a plain dynamic-programming matcher.

use std::sync::OnceLock;

use ros2msg::{Schema, Value};

use crate::like::Pattern;
use crate::{Filter, MAX_EXPRESSION_LEN};

/// What one input reached, so a corpus test can tell it was not vacuous.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExerciseReport {
    pub compiled: usize,
    pub refused: usize,
    pub matched: usize,
}

impl ExerciseReport {
    pub fn add(&mut self, o: ExerciseReport) {
        self.compiled += o.compiled;
        self.refused += o.refused;
        self.matched += o.matched;
    }
}

/// The message types expressions are compiled against (the first input byte picks one).
pub const EXERCISE_SCHEMAS: &[(&str, &str)] = &[
    (
        "demo/msg/Reading",
        "int32 count\nuint64 big\nfloat64 temperature\nfloat32 ratio\nbool ok\nstring name\n\
         Point[] points\nint16[3] fixed\nstd_msgs/Header header\n\
         ================================================================================\n\
         MSG: demo/Point\nfloat64 x\nfloat64 y\nstring label\n\
         ================================================================================\n\
         MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
         ================================================================================\n\
         MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n",
    ),
    (
        "fuzz/msg/All",
        "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\n\
         uint32 u32\nint64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nstring<=4 bs\n\
         wstring w\nuint8[] bytes\nInner[<=3] xs\nfloat64[2] fs\n\
         ================================================================================\n\
         MSG: fuzz/Inner\nstring t\nfloat64 x\n",
    ),
];

fn msg(fields: Vec<(&str, Value)>) -> Value {
    Value::Message(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn text(s: &str) -> Value {
    Value::String(s.into())
}

fn samples() -> [Vec<Value>; 2] {
    use Value::{Bool, Float32, Float64, Int, List, Uint};
    let point = |x: f64, y: f64, l: &str| {
        msg(vec![
            ("x", Float64(x)),
            ("y", Float64(y)),
            ("label", text(l)),
        ])
    };
    let reading = |count: i64, t: f64, r: f32, name: &str, points: Vec<Value>| {
        msg(vec![
            ("count", Int(count)),
            ("big", Uint(u64::MAX)),
            ("temperature", Float64(t)),
            ("ratio", Float32(r)),
            ("ok", Bool(true)),
            ("name", text(name)),
            ("points", List(points)),
            ("fixed", List(vec![Int(1), Int(-2), Int(3)])),
            (
                "header",
                msg(vec![
                    ("stamp", msg(vec![("sec", Int(17)), ("nanosec", Uint(9))])),
                    ("frame_id", text("map")),
                ]),
            ),
        ])
    };
    let all = msg(vec![
        ("b", Bool(true)),
        ("y", Uint(255)),
        ("c", Uint(65)),
        ("i8", Int(-128)),
        ("u8", Uint(7)),
        ("i16", Int(-300)),
        ("u16", Uint(65535)),
        ("i32", Int(1)),
        ("u32", Uint(2)),
        ("i64", Int(i64::MIN)),
        ("u64", Uint(u64::MAX)),
        ("f32", Float32(1.1)),
        ("f64", Float64(-0.0)),
        ("s", text("a%b_c")),
        ("bs", text("ab")),
        ("w", text("a\u{e9}")),
        ("bytes", List(vec![Uint(1), Uint(2)])),
        (
            "xs",
            List(vec![msg(vec![("t", text("x")), ("x", Float64(1e300))])]),
        ),
        ("fs", List(vec![Float64(1.5), Float64(f64::NAN)])),
    ]);
    [
        vec![
            reading(
                5,
                21.5,
                0.25,
                "sensor_a",
                vec![
                    point(1.0, -2.0, "p0"),
                    point(f64::NAN, f64::INFINITY, "it's"),
                ],
            ),
            reading(
                i64::from(i32::MIN),
                f64::NEG_INFINITY,
                f32::NAN,
                "%_\u{e9}",
                Vec::new(),
            ),
        ],
        vec![all],
    ]
}

/// Each schema with a few messages of it: all zeros (decoded from zero bytes), typical values
/// and extremes (each checked against the schema by a trip through CDR).
fn fixtures() -> &'static [(Schema, Vec<Value>)] {
    static F: OnceLock<Vec<(Schema, Vec<Value>)>> = OnceLock::new();
    F.get_or_init(|| {
        EXERCISE_SCHEMAS
            .iter()
            .zip(samples())
            .map(|((root, text), vs)| {
                let s = Schema::parse(root, text).expect("an exercise schema parses");
                let mut zeros = vec![0, 1, 0, 0];
                zeros.resize(4096, 0);
                let mut msgs = vec![ros2msg::decode(&s, &zeros).expect("zeros decode")];
                for v in vs {
                    let b = ros2msg::encode(&s, &v.to_json()).expect("an exercise sample encodes");
                    msgs.push(ros2msg::decode(&s, &b).expect("an exercise sample decodes"));
                }
                (s, msgs)
            })
            .collect()
    })
}

/// The first byte picks the schema; the rest, split at NUL bytes, is the expression then its
/// parameters (each read lossily as UTF-8).
pub fn exercise_filter(bytes: &[u8]) -> ExerciseReport {
    let Some((pick, rest)) = bytes.split_first() else {
        return ExerciseReport::default();
    };
    let (schema, msgs) = &fixtures()[usize::from(*pick) % EXERCISE_SCHEMAS.len()];
    let mut parts = rest.split(|b| *b == 0).map(String::from_utf8_lossy);
    let expression = parts.next().unwrap_or_default();
    let params: Vec<_> = parts.collect();
    check_like(&expression, &params);
    let mut report = ExerciseReport::default();
    let f = match Filter::new(schema, &expression, &params) {
        Ok(f) => f,
        Err(e) => {
            let _ = e.to_string();
            assert!(
                e.parameter.is_some() || e.offset <= expression.len(),
                "error offset {} past the expression ({} bytes): {e}",
                e.offset,
                expression.len()
            );
            report.refused += 1;
            return report;
        }
    };
    report.compiled += 1;
    let again = Filter::new(schema, &expression, &params).expect("compiles twice");
    let negated = format!("NOT ({expression})");
    let not = (negated.len() <= MAX_EXPRESSION_LEN)
        .then(|| Filter::new(schema, &negated, &params).ok())
        .flatten();
    for m in msgs {
        let yes = f.matches(m);
        report.matched += usize::from(yes);
        assert_eq!(
            again.matches(m),
            yes,
            "{expression:?}: two compilations differ"
        );
        if let Some(not) = &not {
            assert_eq!(not.matches(m), !yes, "{expression:?}: NOT does not negate");
        }
    }
    report
}

/// The LIKE matcher against a plain O(n·m) table, on the expression as pattern and each
/// parameter as text (bounded, so the reference stays cheap).
fn check_like(pattern: &str, texts: &[std::borrow::Cow<'_, str>]) {
    if pattern.len() > 256 {
        return;
    }
    let p = Pattern::new(pattern);
    let pc: Vec<char> = pattern.chars().collect();
    for t in texts.iter().take(4).filter(|t| t.len() <= 256) {
        let tc: Vec<char> = t.chars().collect();
        assert_eq!(
            p.matches(t),
            like_reference(&pc, &tc),
            "LIKE {pattern:?} on {t:?}"
        );
    }
}

fn like_reference(p: &[char], t: &[char]) -> bool {
    // m[j]: p[..i] matches t[..j].
    let mut m = vec![false; t.len() + 1];
    m[0] = true;
    for &pc in p {
        let mut next = vec![false; t.len() + 1];
        for j in 0..=t.len() {
            next[j] = match pc {
                '%' => m[j] || (j > 0 && next[j - 1]),
                '_' => j > 0 && m[j - 1],
                c => j > 0 && m[j - 1] && t[j - 1] == c,
            };
        }
        m = next;
    }
    m[t.len()]
}
