//! The bodies of the fuzz targets (fuzz/fuzz_targets/), kept in the library so a normal test
//! (tests/fuzz_corpus.rs) runs them over a seeded random corpus too. Any input must give a
//! schema, a value or an error: never a panic, a hang, or an allocation beyond the input's
//! size times a small factor. Each also checks what is cheap to check: a decoded value
//! re-encodes to bytes that decode to the same value.

use crate::{decode, encode, split_service, Schema, Value};

/// What one input reached, so a corpus test can tell it was not vacuous.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExerciseReport {
    pub schemas: usize,
    pub decoded: usize,
    pub errors: usize,
}

impl ExerciseReport {
    pub fn add(&mut self, o: ExerciseReport) {
        self.schemas += o.schemas;
        self.decoded += o.decoded;
        self.errors += o.errors;
    }
}

/// Definitions the CDR target decodes against (the first input byte picks one): common
/// message shapes, with every primitive, strings, wstrings, bounds, arrays, sequences, nested
/// and empty messages.
pub const EXERCISE_SCHEMAS: &[(&str, &str)] = &[
    ("std_msgs/msg/String", "string data\n"),
    (
        "std_msgs/msg/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n\
         ================================================================================\n\
         MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n",
    ),
    (
        "fuzz/msg/All",
        "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\n\
         uint32 u32\nint64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nstring<=4 bs\n\
         wstring w\nwstring<=2 bw\nuint8[] bytes\nInner[<=3] xs\nint16[2] fixed\nEmpty e\n\
         float64[] fs\nstring[] names\nInner[] many\n\
         ================================================================================\n\
         MSG: fuzz/Inner\nstring t\nfloat64 x\nint8[<=2] small\n\
         ================================================================================\n\
         MSG: fuzz/Empty\n",
    ),
    (
        "sensor_msgs/msg/PointCloud2",
        "std_msgs/Header header\nuint32 height\nuint32 width\nsensor_msgs/PointField[] fields\n\
         bool is_bigendian\nuint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n\
         ================================================================================\n\
         MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
         ================================================================================\n\
         MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n\
         ================================================================================\n\
         MSG: sensor_msgs/PointField\nuint8 INT8=1\nstring name\nuint32 offset\n\
         uint8 datatype\nuint32 count\n",
    ),
];

/// The root type name a fuzzed schema text is parsed as.
const FUZZ_ROOT: &str = "fuzz/msg/T";

/// CDR bytes against the fixed [`EXERCISE_SCHEMAS`]: the first byte picks the schema, the rest
/// is the payload (encapsulation header included).
pub fn exercise_cdr(bytes: &[u8]) -> ExerciseReport {
    let Some((pick, payload)) = bytes.split_first() else {
        return ExerciseReport::default();
    };
    let (root, text) = EXERCISE_SCHEMAS[usize::from(*pick) % EXERCISE_SCHEMAS.len()];
    let schema = Schema::parse(root, text).expect("a built-in exercise schema parses");
    decode_checked(&schema, payload)
}

/// A schema text and a payload: the bytes before the first NUL are the definition text (as
/// an MCAP schema record carries it, lossily read as UTF-8), parsed as a message and split as
/// a service; the bytes after it are CDR decoded against the parsed schema.
pub fn exercise_schema(bytes: &[u8]) -> ExerciseReport {
    let (text, payload) = match bytes.iter().position(|b| *b == 0) {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    let mut report = ExerciseReport::default();
    if let Ok((req, resp)) = split_service(&text) {
        for part in [req, resp] {
            if let Ok(s) = Schema::parse(FUZZ_ROOT, &part) {
                report.schemas += 1;
                report.add(decode_checked(&s, payload));
            }
        }
    }
    match Schema::parse(FUZZ_ROOT, &text) {
        Ok(s) => {
            report.schemas += 1;
            // The same text parses the same way again (no hidden state, no order dependence).
            let again = Schema::parse(FUZZ_ROOT, &text).expect("a schema parses twice");
            assert_eq!(
                again.root_def(),
                s.root_def(),
                "schema changed across parses"
            );
            report.add(decode_checked(&s, payload));
        }
        Err(e) => {
            let _ = e.to_string();
            report.errors += 1;
        }
    }
    report
}

/// Decodes `payload`; a value prints, re-encodes, and decodes back to the same JSON.
fn decode_checked(schema: &Schema, payload: &[u8]) -> ExerciseReport {
    match decode(schema, payload) {
        Ok(v) => {
            let json = v.to_json();
            let _ = v.to_yaml();
            let bytes = encode(schema, &json).expect("a decoded value re-encodes");
            let back = decode(schema, &bytes).expect("a re-encoded value decodes");
            assert_eq!(back.to_json(), json, "value changed across re-encode");
            // Little-endian bytes written by encode are canonical: a second round is identical.
            assert_eq!(
                encode(schema, &back.to_json()).expect("re-encodes twice"),
                bytes,
                "encode is not stable"
            );
            if let Value::Message(_) = v {
            } else {
                panic!("a decoded root is not a message: {v:?}");
            }
            ExerciseReport {
                decoded: 1,
                ..Default::default()
            }
        }
        Err(e) => {
            assert!(e.offset <= payload.len().max(4) + 8, "error offset {e}");
            ExerciseReport {
                errors: 1,
                ..Default::default()
            }
        }
    }
}
