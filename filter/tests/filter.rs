//! The filter language end to end: expressions against a schema and hand-built messages,
//! every kind of refusal with its position, and generated inputs (random text never panics;
//! random well-formed conditions agree with a direct evaluation of the same tree).

use content_filter::{Filter, FilterError};
use ros2msg::{Schema, Value};

const DEF: &str = "\
int32 count
uint64 big
float64 temperature
float32 ratio
bool ok
string name
Point[] points
int16[3] fixed
================================================================================
MSG: demo/Point
float64 x
float64 y
string label
";

fn schema() -> Schema {
    Schema::parse("demo/msg/Reading", DEF).unwrap()
}

fn point(x: f64, y: f64, label: &str) -> Value {
    Value::Message(vec![
        ("x".into(), Value::Float64(x)),
        ("y".into(), Value::Float64(y)),
        ("label".into(), Value::String(label.into())),
    ])
}

fn reading(count: i64, temperature: f64, name: &str, points: Vec<Value>) -> Value {
    Value::Message(vec![
        ("count".into(), Value::Int(count)),
        ("big".into(), Value::Uint(u64::MAX)),
        ("temperature".into(), Value::Float64(temperature)),
        ("ratio".into(), Value::Float32(0.5)),
        ("ok".into(), Value::Bool(true)),
        ("name".into(), Value::String(name.into())),
        ("points".into(), Value::List(points)),
        (
            "fixed".into(),
            Value::List(vec![Value::Int(-1), Value::Int(0), Value::Int(1)]),
        ),
    ])
}

fn sample() -> Value {
    reading(
        7,
        21.5,
        "sensor_front",
        vec![point(1.0, 2.0, "a"), point(-3.5, 4.0, "it's")],
    )
}

fn eval(expr: &str, params: &[&str]) -> bool {
    let f = Filter::new(&schema(), expr, params).unwrap_or_else(|e| panic!("{expr}: {e}"));
    f.matches(&sample())
}

fn refused(expr: &str, params: &[&str]) -> FilterError {
    match Filter::new(&schema(), expr, params) {
        Ok(_) => panic!("{expr:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn comparisons_on_every_class() {
    for (expr, want) in [
        ("count = 7", true),
        ("count <> 7", false),
        ("count != 7", false),
        ("count < 8", true),
        ("count <= 7", true),
        ("count > 7", false),
        ("count >= 7", true),
        ("7 = count", true),
        ("count = 7.0", true),
        ("count < 7.5", true),
        ("big = 18446744073709551615", true),
        ("big > 0x7fffffffffffffff", true),
        ("big > -1", true),
        ("temperature > 21.4", true),
        ("temperature > 2.15e1", false),
        ("ratio = 0.5", true),
        ("ok = TRUE", true),
        ("ok = false", false),
        ("name = 'sensor_front'", true),
        ("name > 'sensor'", true),
        ("name < 'sensor'", false),
        ("count = count", true),
        ("temperature > count", true),
    ] {
        assert_eq!(eval(expr, &[]), want, "{expr}");
    }
}

#[test]
fn logic_precedence_and_parentheses() {
    assert!(eval("count = 1 OR count = 7 AND ok = TRUE", &[]));
    assert!(!eval("(count = 1 OR count = 7) AND ok = FALSE", &[]));
    assert!(eval("NOT count = 1", &[]));
    assert!(eval("NOT (count = 1 OR name = 'x')", &[]));
    assert!(!eval("NOT NOT count = 1", &[]));
    assert!(eval(
        "count = 7 and temperature < 30 or name like 'zz%'",
        &[]
    ));
}

#[test]
fn between_and_not_between() {
    assert!(eval("count BETWEEN 7 AND 9", &[]));
    assert!(eval("count BETWEEN 1 AND 7", &[]));
    assert!(!eval("count BETWEEN 8 AND 9", &[]));
    assert!(eval("count NOT BETWEEN 8 AND 9", &[]));
    assert!(eval(
        "temperature BETWEEN %0 AND %1 AND ok = TRUE",
        &["20", "22.5"]
    ));
    assert!(eval("name BETWEEN 'a' AND 'z'", &[]));
}

#[test]
fn like_patterns() {
    assert!(eval("name LIKE 'sensor%'", &[]));
    assert!(eval("name LIKE '%front'", &[]));
    assert!(eval("name LIKE 'sensor_front'", &[]));
    assert!(eval("name LIKE 's_nsor%'", &[]));
    assert!(!eval("name LIKE 'front'", &[]));
    assert!(eval("name LIKE %0", &["'%_front'"]));
}

#[test]
fn nested_fields_and_elements() {
    assert!(eval("points[0].x = 1.0", &[]));
    assert!(eval("points[1].label = 'it''s'", &[]));
    assert!(eval("points[1].x < points[0].x", &[]));
    assert!(eval("fixed[0] = -1 AND fixed[2] = 1", &[]));
    // A sequence shorter than the index: the predicate is false (and NOT of it true).
    assert!(!eval("points[5].x = 0", &[]));
    assert!(eval("NOT points[5].x = 0", &[]));
}

#[test]
fn parameters() {
    assert!(eval("count = %0", &["7"]));
    assert!(eval("count > %0 AND name = %1", &["-3", "'sensor_front'"]));
    assert!(eval("temperature > %1", &["'unused'", "1e1"]));
    assert!(eval("ok = %0", &["TRUE"]));
    assert!(eval("count = %0", &[" 7 "]));
    // Parameters nobody uses are allowed.
    assert!(eval("count = 7", &["1", "2"]));
}

#[test]
fn nan_compares_as_ieee() {
    let f = Filter::new(&schema(), "temperature = temperature", &[] as &[&str]).unwrap();
    let ne = Filter::new(&schema(), "temperature <> 1", &[] as &[&str]).unwrap();
    let lt = Filter::new(&schema(), "temperature < 1", &[] as &[&str]).unwrap();
    let m = reading(1, f64::NAN, "n", vec![]);
    assert!(!f.matches(&m));
    assert!(ne.matches(&m));
    assert!(!lt.matches(&m));
}

/// A `float32` field holding `x`, everything else as in `sample()`.
fn with_ratio(x: f32) -> Value {
    let Value::Message(mut fs) = sample() else {
        unreachable!()
    };
    fs[3].1 = Value::Float32(x);
    Value::Message(fs)
}

fn matches_ratio(expr: &str, params: &[&str], x: f32) -> bool {
    let f = Filter::new(&schema(), expr, params).unwrap_or_else(|e| panic!("{expr}: {e}"));
    f.matches(&with_ratio(x))
}

/// A float literal or parameter compared with a `float32` field is read at the field's own
/// precision (issue 28: rmw's `content_filter_get_begin` sets `float32_value = %0` with
/// "3.14159" and publishes 3.14159f).
#[test]
fn float32_fields_compare_at_their_own_precision() {
    #[allow(clippy::approx_constant)]
    let pi5 = 3.14159_f32;
    assert!(matches_ratio("ratio = %0", &["3.14159"], pi5));
    assert!(matches_ratio("ratio = 3.14159", &[], pi5));
    assert!(matches_ratio("3.14159 = ratio", &[], pi5));
    assert!(!matches_ratio("ratio <> %0", &["3.14159"], pi5));
    assert!(!matches_ratio("ratio = %0", &["3.1416"], pi5));
    // 0.1f is not 0.1, but at float32 precision the literal 0.1 is 0.1f.
    assert!(matches_ratio("ratio = 0.1", &[], 0.1));
    assert!(!matches_ratio("ratio > 0.1", &[], 0.1));
    assert!(matches_ratio("ratio >= %0 AND ratio <= %0", &["0.1"], 0.1));
    assert!(matches_ratio("ratio BETWEEN 0.1 AND 0.2", &[], 0.1));
    assert!(!matches_ratio(
        "ratio NOT BETWEEN %0 AND %1",
        &["0.1", "0.2"],
        0.2
    ));
    // The nearest f32 to the text, not the f64 rounded again (one ulp apart for this text,
    // which lies just above the midpoint of two floats while its nearest f64 lies on it).
    let text = "1.00000005960464477539062500001";
    let x: f32 = text.parse().unwrap();
    assert_eq!(x, 1.0 + f32::EPSILON);
    assert_ne!(x, text.parse::<f64>().unwrap() as f32);
    assert!(matches_ratio("ratio = %0", &[text], x));
    // Integers and float64 fields are as before: exact, and at double precision.
    assert!(matches_ratio("ratio = 2", &[], 2.0));
    assert!(!eval("temperature = %0", &["21.5000001"]));
    assert!(eval("temperature = %0", &["21.5"]));
    // A NaN field still equals nothing.
    assert!(!matches_ratio("ratio = ratio", &[], f32::NAN));
    assert!(matches_ratio("ratio <> 0.5", &[], f32::NAN));
}

#[test]
fn refusals_say_where_and_what() {
    let cases: &[(&str, &[&str], usize, &str)] = &[
        ("", &[], 0, "empty"),
        ("count =", &[], 7, "found the end"),
        ("count = 1 AND", &[], 13, "found the end"),
        ("count 1", &[], 6, "expected a comparison"),
        ("(count = 1", &[], 10, "expected `)`"),
        ("count = 1)", &[], 9, "unexpected `)`"),
        ("nope = 1", &[], 0, "no field `nope`"),
        ("points.x = 1", &[], 0, "name one element"),
        ("points[0] = 1", &[], 0, "is a demo/Point message"),
        ("fixed[3] = 1", &[], 0, "past the bound 3"),
        ("count.x = 1", &[], 0, "cannot follow"),
        ("count = 'seven'", &[], 6, "compares a number with a string"),
        ("ok = 1", &[], 3, "compares a boolean with a number"),
        ("count LIKE 'x'", &[], 6, "LIKE needs a string field"),
        ("count BETWEEN 'a' AND 3", &[], 6, "BETWEEN"),
        ("count NOT 3", &[], 10, "expected BETWEEN after NOT"),
        (
            "count = %1",
            &["1"],
            8,
            "parameter %1 is used but 1 parameter(s)",
        ),
        ("count = %100", &[], 8, "the largest is %99"),
        ("name = 'open", &[], 7, "not closed"),
        ("count = 1 # 2", &[], 10, "unexpected character '#'"),
        ("count = 12abc", &[], 8, "runs into a name"),
        ("count = -", &[], 8, "sign must be followed"),
    ];
    for (expr, params, offset, text) in cases {
        let e = refused(expr, params);
        assert_eq!(e.offset, *offset, "{expr:?}: {e}");
        assert!(e.reason.contains(text), "{expr:?}: {e}");
        assert!(e
            .to_string()
            .starts_with(&format!("at column {}", offset + 1)));
    }
}

#[test]
fn bad_parameters_name_their_number() {
    for (params, text) in [
        (&["hello"][..], "is not one literal"),
        (&[""][..], "is empty"),
        (&["1 2"][..], "is not one literal"),
        (&["'open"][..], "is not a literal"),
    ] {
        let e = refused("name = %0", params);
        assert_eq!(e.parameter, Some(0), "{params:?}");
        assert!(e.reason.contains(text), "{params:?}: {e}");
    }
    let many: Vec<String> = (0..101).map(|i| i.to_string()).collect();
    assert!(Filter::new(&schema(), "count = %0", &many).is_err());
    let hundred: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    assert!(Filter::new(&schema(), "count = %99", &hundred).is_ok());
}

#[test]
fn limits_hold() {
    let deep = format!("{}count = 1{}", "(".repeat(100), ")".repeat(100));
    assert!(refused(&deep, &[]).reason.contains("nested deeper"));
    let nots = format!("{}count = 1", "NOT ".repeat(1_000));
    assert!(refused(&nots, &[]).reason.contains("nested deeper"));
    let long = "count = 1 OR ".repeat(2000) + "count = 2";
    assert!(refused(&long, &[]).reason.contains("at most"));
    // Long but flat chains are fine (no recursion per OR).
    let chain = "count = 1 OR ".repeat(1000) + "count = 7";
    assert!(eval(&chain, &[]));
}

#[path = "../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
use corpus::Rng;

#[test]
fn random_text_never_panics() {
    let pieces = [
        "count",
        "name",
        "points",
        "[",
        "]",
        "0",
        "1",
        ".",
        "x",
        "(",
        ")",
        "=",
        "<>",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "AND",
        "OR",
        "NOT",
        "BETWEEN",
        "LIKE",
        "'a%'",
        "'",
        "%0",
        "%",
        "%99",
        "-",
        "+",
        "1.5e",
        "0x",
        "TRUE",
        "fixed",
        "temperature",
        " ",
        "é",
        "\0",
        "ok",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let s = schema();
    let m = sample();
    for _ in 0..20_000 {
        let mut e = String::new();
        for _ in 0..rng.below(14) {
            e.push_str(pieces[rng.below(pieces.len())]);
            if rng.below(3) > 0 {
                e.push(' ');
            }
        }
        if let Ok(f) = Filter::new(&s, &e, &["1", "'a'"]) {
            f.matches(&m);
        }
    }
    for _ in 0..5_000 {
        let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
        let e = String::from_utf8_lossy(&bytes);
        let _ = Filter::new(&s, &e, &[e.as_ref()]);
    }
}

#[test]
fn every_prefix_of_a_valid_expression_is_handled() {
    let e = "(count BETWEEN %0 AND 9 OR NOT name LIKE 'se%') AND points[1].label = 'it''s' AND fixed[2] >= -0x1";
    assert!(eval(e, &["1"]));
    for cut in 0..=e.len() {
        if let Some(p) = e.get(..cut) {
            let _ = Filter::new(&schema(), p, &["1"]);
        }
    }
}

/// A random condition tree, rendered to text and evaluated directly: the filter must agree.
enum Tree {
    Cmp(&'static str, &'static str, i64),
    Between(&'static str, i64, i64, bool),
    And(Box<Tree>, Box<Tree>),
    Or(Box<Tree>, Box<Tree>),
    Not(Box<Tree>),
}

fn gen(rng: &mut Rng, depth: usize) -> Tree {
    let fields = ["count", "fixed[0]", "fixed[2]", "temperature"];
    let ops = ["=", "<>", "<", "<=", ">", ">="];
    match if depth == 0 { 0 } else { rng.below(5) } {
        0 => Tree::Cmp(
            fields[rng.below(fields.len())],
            ops[rng.below(ops.len())],
            rng.below(40) as i64 - 10,
        ),
        1 => {
            let a = rng.below(40) as i64 - 10;
            Tree::Between(
                fields[rng.below(fields.len())],
                a,
                a + rng.below(15) as i64,
                rng.below(2) == 0,
            )
        }
        2 => Tree::And(Box::new(gen(rng, depth - 1)), Box::new(gen(rng, depth - 1))),
        3 => Tree::Or(Box::new(gen(rng, depth - 1)), Box::new(gen(rng, depth - 1))),
        _ => Tree::Not(Box::new(gen(rng, depth - 1))),
    }
}

fn field_value(f: &str) -> f64 {
    match f {
        "count" => 7.0,
        "fixed[0]" => -1.0,
        "fixed[2]" => 1.0,
        _ => 21.5,
    }
}

fn render(t: &Tree) -> String {
    match t {
        Tree::Cmp(f, op, v) => format!("{f} {op} {v}"),
        Tree::Between(f, a, b, neg) => {
            format!("{f} {}BETWEEN {a} AND {b}", if *neg { "NOT " } else { "" })
        }
        Tree::And(a, b) => format!("({}) AND ({})", render(a), render(b)),
        Tree::Or(a, b) => format!("({}) or ({})", render(a), render(b)),
        Tree::Not(a) => format!("NOT ({})", render(a)),
    }
}

fn direct(t: &Tree) -> bool {
    match t {
        Tree::Cmp(f, op, v) => {
            let (x, v) = (field_value(f), *v as f64);
            match *op {
                "=" => x == v,
                "<>" => x != v,
                "<" => x < v,
                "<=" => x <= v,
                ">" => x > v,
                _ => x >= v,
            }
        }
        Tree::Between(f, a, b, neg) => {
            let x = field_value(f);
            (x >= *a as f64 && x <= *b as f64) != *neg
        }
        Tree::And(a, b) => direct(a) && direct(b),
        Tree::Or(a, b) => direct(a) || direct(b),
        Tree::Not(a) => !direct(a),
    }
}

#[test]
fn generated_conditions_agree_with_direct_evaluation() {
    let mut rng = Rng(42);
    let s = schema();
    let m = sample();
    let mut seen = [0usize; 2];
    for _ in 0..3_000 {
        let t = gen(&mut rng, 4);
        let text = render(&t);
        let f = Filter::new(&s, &text, &[] as &[&str]).unwrap_or_else(|e| panic!("{text}: {e}"));
        let want = direct(&t);
        assert_eq!(f.matches(&m), want, "{text}");
        seen[usize::from(want)] += 1;
    }
    // Both outcomes were exercised.
    assert!(seen[0] > 100 && seen[1] > 100, "{seen:?}");
}
