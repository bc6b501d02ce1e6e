//! A decoded message: fields by name in definition order, and its JSON and YAML-like forms.

use std::fmt::Write;

use serde_json::{Map, Number, Value as Json};

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    /// int8 .. int64.
    Int(i64),
    /// byte, char, uint8 .. uint64.
    Uint(u64),
    Float32(f32),
    Float64(f64),
    String(String),
    /// Fixed arrays and sequences alike.
    List(Vec<Value>),
    /// A message: (field name, value) in definition order.
    Message(Vec<(String, Value)>),
}

fn float_json(x: f64) -> Json {
    // JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf".
    match Number::from_f64(x) {
        Some(n) => Json::Number(n),
        None if x.is_nan() => Json::from("nan"),
        None if x > 0.0 => Json::from("inf"),
        None => Json::from("-inf"),
    }
}

impl Value {
    /// JSON: numbers exact (64-bit integers as integers, float32 widened to f64 exactly),
    /// messages as objects with the fields in definition order, lists as arrays.
    pub fn to_json(&self) -> Json {
        match self {
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Uint(u) => Json::from(*u),
            Value::Float32(x) => float_json(f64::from(*x)),
            Value::Float64(x) => float_json(*x),
            Value::String(s) => Json::String(s.clone()),
            Value::List(v) => Json::Array(v.iter().map(Value::to_json).collect()),
            Value::Message(fs) => {
                let mut m = Map::new();
                for (k, v) in fs {
                    m.insert(k.clone(), v.to_json());
                }
                Json::Object(m)
            }
        }
    }

    /// The value at a dotted path of field names (`header.stamp.sec`); a list element by its
    /// index (`points.0.x`).
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        let mut v = self;
        for seg in path.split('.').filter(|s| !s.is_empty()) {
            v = match v {
                Value::Message(fs) => fs.iter().find(|(k, _)| k == seg).map(|(_, v)| v)?,
                Value::List(items) => items.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// Text in the style of `ros2 topic echo`: `name: value` per line, nested messages
    /// indented by two spaces, lists of scalars inline (`[1, 2, 3]`), lists of messages as
    /// `- ` items.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Value::Message(fs) if !fs.is_empty() => yaml_fields(fs, 0, &mut out),
            Value::Message(_) => out.push_str("{}\n"),
            other => {
                let _ = writeln!(out, "{}", scalar_yaml(other));
            }
        }
        out
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::List(_) | Value::Message(_))
}

fn scalar_yaml(v: &Value) -> String {
    match v {
        Value::String(s) => {
            // Quoted like YAML when it could be read as something else.
            if s.is_empty()
                || s.contains([':', '#', '\'', '"', '\n', '[', ']', '{', '}', ','])
                || s.trim() != s
                || s.parse::<f64>().is_ok()
                || matches!(s.as_str(), "true" | "false" | "null" | "~")
            {
                format!("'{}'", s.replace('\'', "''"))
            } else {
                s.clone()
            }
        }
        Value::List(items) if items.iter().all(is_scalar) => {
            let inner: Vec<String> = items.iter().map(scalar_yaml).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Float32(x) => float_text(f64::from(*x)),
        Value::Float64(x) => float_text(*x),
        other => other.to_json().to_string(),
    }
}

fn float_text(x: f64) -> String {
    if x.is_nan() {
        ".nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { ".inf" } else { "-.inf" }.into()
    } else if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

fn yaml_fields(fs: &[(String, Value)], indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    for (k, v) in fs {
        match v {
            Value::Message(inner) if inner.is_empty() => {
                let _ = writeln!(out, "{pad}{k}: {{}}");
            }
            Value::Message(inner) => {
                let _ = writeln!(out, "{pad}{k}:");
                yaml_fields(inner, indent + 2, out);
            }
            Value::List(items) if !items.iter().all(is_scalar) => {
                let _ = writeln!(out, "{pad}{k}:");
                for item in items {
                    yaml_item(item, indent, out);
                }
            }
            scalar => {
                let _ = writeln!(out, "{pad}{k}: {}", scalar_yaml(scalar));
            }
        }
    }
}

fn yaml_item(item: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match item {
        Value::Message(fs) if !fs.is_empty() => {
            // `- first: ..` then the other fields aligned under it.
            let mut body = String::new();
            yaml_fields(fs, indent + 2, &mut body);
            let body = body.replacen(&format!("{pad}  "), &format!("{pad}- "), 1);
            out.push_str(&body);
        }
        Value::List(items) if !items.iter().all(is_scalar) => {
            let _ = writeln!(out, "{pad}-");
            for i in items {
                yaml_item(i, indent + 2, out);
            }
        }
        Value::Message(_) => {
            let _ = writeln!(out, "{pad}- {{}}");
        }
        scalar => {
            let _ = writeln!(out, "{pad}- {}", scalar_yaml(scalar));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        Value::Message(vec![
            (
                "header".into(),
                Value::Message(vec![
                    (
                        "stamp".into(),
                        Value::Message(vec![
                            ("sec".into(), Value::Int(1)),
                            ("nanosec".into(), Value::Uint(2)),
                        ]),
                    ),
                    ("frame_id".into(), Value::String("map".into())),
                ]),
            ),
            (
                "xs".into(),
                Value::List(vec![Value::Float64(1.0), Value::Float32(0.5)]),
            ),
            (
                "pts".into(),
                Value::List(vec![
                    Value::Message(vec![
                        ("x".into(), Value::Int(1)),
                        ("y".into(), Value::Int(2)),
                    ]),
                    Value::Message(vec![
                        ("x".into(), Value::Int(3)),
                        ("y".into(), Value::Int(4)),
                    ]),
                ]),
            ),
            ("s".into(), Value::String("a: b".into())),
            ("n".into(), Value::Float64(f64::NAN)),
        ])
    }

    #[test]
    fn json_keeps_field_order_and_names_non_finite_floats() {
        let j = sample().to_json().to_string();
        assert_eq!(
            j,
            r#"{"header":{"stamp":{"sec":1,"nanosec":2},"frame_id":"map"},"xs":[1.0,0.5],"pts":[{"x":1,"y":2},{"x":3,"y":4}],"s":"a: b","n":"nan"}"#
        );
    }

    #[test]
    fn yaml_like_text() {
        assert_eq!(
            sample().to_yaml(),
            "header:\n  stamp:\n    sec: 1\n    nanosec: 2\n  frame_id: map\nxs: [1.0, 0.5]\npts:\n- x: 1\n  y: 2\n- x: 3\n  y: 4\ns: 'a: b'\nn: .nan\n"
        );
    }

    #[test]
    fn paths() {
        let v = sample();
        assert_eq!(v.get_path("header.stamp.sec"), Some(&Value::Int(1)));
        assert_eq!(v.get_path("pts.1.y"), Some(&Value::Int(4)));
        assert_eq!(v.get_path("pts.2"), None);
        assert_eq!(v.get_path("nope"), None);
        assert!(std::ptr::eq(v.get_path("").unwrap(), &v));
    }
}
