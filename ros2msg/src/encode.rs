//! JSON to XCDR1 (plain CDR, little endian) bytes, guided by a [`Schema`]: the inverse of
//! [`crate::decode`], with the same wire rules (docs/cdr.md) and the same JSON form, so
//! `encode(decode(bytes))` gives the bytes back and `decode(encode(json))` the JSON.
//!
//! The JSON is a message as [`crate::Value::to_json`] prints it: an object with fields by name;
//! integers as numbers (`byte`, `char` and `uint8` too), floats as numbers or `"nan"`, `"inf"`,
//! `"-inf"`; strings; arrays for fixed arrays and sequences. A field left out takes its type's
//! zero (false, 0, "", an empty sequence, a fixed array of zeros), as a message built in rclpy
//! without it does. A field the type does not have, a value of the wrong kind, a number out of
//! the type's range, an array of the wrong length or past its bound are errors naming the field.
//! The header is `00 01 00 00` (little endian, no options), what rmw_tracer and Fast DDS write.

use std::fmt;

use serde_json::Value as Json;

use crate::decode::field_path;
use crate::schema::{BaseType, Field, MessageDef, Multiplicity, Primitive, Schema};

/// What could not be encoded, at which field path (`pkg/Type.a.b[2]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    pub path: String,
    pub reason: String,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for EncodeError {}

/// Encodes `value` (a JSON object) as one CDR payload of the schema's root type, with its
/// encapsulation header.
pub fn encode(schema: &Schema, value: &Json) -> Result<Vec<u8>, EncodeError> {
    let root = schema.root_def();
    let mut w = Writer {
        out: vec![0x00, 0x01, 0x00, 0x00],
        schema,
        path: vec![root.name.clone()],
    };
    w.message(root, Some(value))?;
    Ok(w.out)
}

struct Writer<'a> {
    out: Vec<u8>,
    schema: &'a Schema,
    path: Vec<String>,
}

impl Writer<'_> {
    fn fail(&self, reason: String) -> EncodeError {
        EncodeError {
            path: field_path(&self.path),
            reason,
        }
    }

    /// Pads to `n` relative to the body (the 4 header bytes are not counted).
    fn align(&mut self, n: usize) {
        let body = self.out.len() - 4;
        let pad = body.div_ceil(n) * n - body;
        self.out.resize(self.out.len() + pad, 0);
    }

    fn put(&mut self, le_bytes: &[u8]) {
        self.align(le_bytes.len());
        self.out.extend_from_slice(le_bytes);
    }

    fn length(&mut self, n: usize) -> Result<(), EncodeError> {
        let n = u32::try_from(n).map_err(|_| self.fail(format!("length {n} exceeds u32")))?;
        self.put(&n.to_le_bytes());
        Ok(())
    }

    fn message(&mut self, def: &MessageDef, v: Option<&Json>) -> Result<(), EncodeError> {
        let obj = match v {
            None => None,
            Some(Json::Object(m)) => Some(m),
            Some(other) => {
                return Err(self.fail(format!(
                    "expected an object for {}, found {other}",
                    def.name
                )))
            }
        };
        if let Some(m) = obj {
            if let Some(k) = m.keys().find(|k| !def.fields.iter().any(|f| &f.name == *k)) {
                return Err(self.fail(format!("{} has no field {k:?}", def.name)));
            }
        }
        if def.fields.is_empty() {
            self.out.push(0); // structure_needs_at_least_one_member
            return Ok(());
        }
        for f in &def.fields {
            self.path.push(f.name.clone());
            self.field(f, obj.and_then(|m| m.get(&f.name)))?;
            self.path.pop();
        }
        Ok(())
    }

    fn field(&mut self, f: &Field, v: Option<&Json>) -> Result<(), EncodeError> {
        if f.multiplicity == Multiplicity::Single {
            return self.element(&f.base, v);
        }
        let items: &[Json] = match v {
            None => &[],
            Some(Json::Array(a)) => a,
            Some(other) => return Err(self.fail(format!("expected an array, found {other}"))),
        };
        match f.multiplicity {
            Multiplicity::Array(n) => {
                if v.is_some() && items.len() != n {
                    return Err(self.fail(format!(
                        "a fixed array of {n} elements, given {}",
                        items.len()
                    )));
                }
                for i in 0..n {
                    self.path.push(format!("[{i}]"));
                    self.element(&f.base, items.get(i))?;
                    self.path.pop();
                }
                return Ok(());
            }
            Multiplicity::Bounded(b) if items.len() > b => {
                return Err(self.fail(format!("{} elements exceed the bound {b}", items.len())))
            }
            _ => {}
        }
        self.length(items.len())?;
        for (i, item) in items.iter().enumerate() {
            self.path.push(format!("[{i}]"));
            self.element(&f.base, Some(item))?;
            self.path.pop();
        }
        Ok(())
    }

    fn element(&mut self, base: &BaseType, v: Option<&Json>) -> Result<(), EncodeError> {
        match base {
            BaseType::Primitive(p) => self.primitive(*p, v),
            BaseType::String(bound) => {
                let s = self.text(v)?;
                if let Some(b) = bound {
                    if s.len() > *b {
                        return Err(
                            self.fail(format!("string of {} bytes exceeds the bound {b}", s.len()))
                        );
                    }
                }
                self.length(s.len() + 1)?;
                self.out.extend_from_slice(s.as_bytes());
                self.out.push(0);
                Ok(())
            }
            BaseType::WString(bound) => {
                let units: Vec<u16> = self.text(v)?.encode_utf16().collect();
                if let Some(b) = bound {
                    if units.len() > *b {
                        return Err(self.fail(format!(
                            "wstring of {} code units exceeds the bound {b}",
                            units.len()
                        )));
                    }
                }
                self.length(units.len())?;
                for u in units {
                    self.put(&u32::from(u).to_le_bytes());
                }
                Ok(())
            }
            BaseType::Message(k) => {
                let schema = self.schema;
                let def = schema
                    .get(k)
                    .ok_or_else(|| self.fail(format!("type {k} has no definition")))?;
                self.message(def, v)
            }
        }
    }

    fn text<'j>(&self, v: Option<&'j Json>) -> Result<&'j str, EncodeError> {
        match v {
            None => Ok(""),
            Some(Json::String(s)) => Ok(s),
            Some(other) => Err(self.fail(format!("expected a string, found {other}"))),
        }
    }

    fn primitive(&mut self, p: Primitive, v: Option<&Json>) -> Result<(), EncodeError> {
        use Primitive::*;
        let int = |w: &Self, lo: i128, hi: i128| -> Result<i128, EncodeError> {
            let n = match v {
                None => return Ok(0),
                Some(Json::Number(n)) => n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from)),
                Some(_) => None,
            };
            match n {
                Some(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(w.fail(format!(
                    "expected an integer in {lo}..={hi}, found {}",
                    v.map_or("nothing".into(), Json::to_string)
                ))),
            }
        };
        match p {
            Bool => match v {
                None | Some(Json::Bool(false)) => self.out.push(0),
                Some(Json::Bool(true)) => self.out.push(1),
                Some(other) => return Err(self.fail(format!("expected a bool, found {other}"))),
            },
            Byte | Char | Uint8 => self.out.push(int(self, 0, 255)? as u8),
            Int8 => self.out.push(int(self, -128, 127)? as i8 as u8),
            Int16 => self.put(&(int(self, i16::MIN.into(), i16::MAX.into())? as i16).to_le_bytes()),
            Uint16 => self.put(&(int(self, 0, u16::MAX.into())? as u16).to_le_bytes()),
            Int32 => self.put(&(int(self, i32::MIN.into(), i32::MAX.into())? as i32).to_le_bytes()),
            Uint32 => self.put(&(int(self, 0, u32::MAX.into())? as u32).to_le_bytes()),
            Int64 => self.put(&(int(self, i64::MIN.into(), i64::MAX.into())? as i64).to_le_bytes()),
            Uint64 => self.put(&(int(self, 0, u64::MAX.into())? as u64).to_le_bytes()),
            // float32: the f64 narrowed to the nearest f32 (exact for what decode printed).
            Float32 => self.put(&(self.float(v)? as f32).to_le_bytes()),
            Float64 => self.put(&self.float(v)?.to_le_bytes()),
        }
        Ok(())
    }

    fn float(&self, v: Option<&Json>) -> Result<f64, EncodeError> {
        match v {
            None => Ok(0.0),
            Some(Json::Number(n)) => n
                .as_f64()
                .ok_or_else(|| self.fail(format!("{n} is not a float"))),
            Some(Json::String(s)) if s == "nan" => Ok(f64::NAN),
            Some(Json::String(s)) if s == "inf" => Ok(f64::INFINITY),
            Some(Json::String(s)) if s == "-inf" => Ok(f64::NEG_INFINITY),
            Some(other) => Err(self.fail(format!("expected a number, found {other}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;
    use serde_json::json;

    fn schema() -> Schema {
        let text = format!(
            "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\nuint32 u32\n\
             int64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nstring<=4 bs\nwstring w\n\
             uint8[] bytes\nInner[<=3] xs\nint16[2] fixed\nEmpty e\nfloat64[] specials\n\
             {b}\nMSG: p/Inner\nstring t\nfloat64 x\n{b}\nMSG: p/Empty\n",
            b = "=".repeat(80)
        );
        Schema::parse("p/msg/T", &text).unwrap()
    }

    #[test]
    fn json_round_trips_through_cdr() {
        let s = schema();
        let v = json!({
            "b": true, "y": 255, "c": 65, "i8": -128, "u8": 7, "i16": -300, "u16": 65535,
            "i32": i32::MIN, "u32": u32::MAX, "i64": i64::MIN, "u64": u64::MAX, "f32": 1.5,
            "f64": -0.1, "s": "héllo", "bs": "abcd", "w": "aé😀", "bytes": [0, 1, 255],
            "xs": [{"t": "", "x": 1.0}, {"t": "abc", "x": 2.5}], "fixed": [-1, 5], "e": {},
            "specials": ["nan", "inf", "-inf", 0.0]
        });
        let bytes = encode(&s, &v).unwrap();
        assert_eq!(decode(&s, &bytes).unwrap().to_json(), v);
        // And bytes round-trip: encode(decode(b)) == b.
        let again = encode(&s, &decode(&s, &bytes).unwrap().to_json()).unwrap();
        assert_eq!(again, bytes);
    }

    #[test]
    fn the_wire_form_is_plain_cdr() {
        let s = Schema::parse("p/T", "uint8 a\nfloat64 b\nstring c\nint16[] d\n").unwrap();
        let bytes = encode(&s, &json!({"a": 7, "b": 2.5, "c": "hi", "d": [3]})).unwrap();
        let mut want = vec![0, 1, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(&2.5f64.to_le_bytes());
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(b"hi\0");
        want.push(0); // pad to 4 for the sequence length
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&3i16.to_le_bytes());
        assert_eq!(bytes, want);
    }

    #[test]
    fn left_out_fields_are_zero() {
        let s = schema();
        let bytes = encode(&s, &json!({})).unwrap();
        let v = decode(&s, &bytes).unwrap().to_json();
        assert_eq!(v["b"], json!(false));
        assert_eq!(v["s"], json!(""));
        assert_eq!(v["xs"], json!([]));
        assert_eq!(v["fixed"], json!([0, 0]));
        assert_eq!(v["e"], json!({}));
    }

    #[test]
    fn errors_name_the_field() {
        let s = schema();
        let err = |v: serde_json::Value| encode(&s, &v).unwrap_err().to_string();
        assert_eq!(err(json!({"nope": 1})), "p/T: p/T has no field \"nope\"");
        assert_eq!(
            err(json!({"u8": 256})),
            "p/T.u8: expected an integer in 0..=255, found 256"
        );
        assert_eq!(
            err(json!({"i8": 1.5})),
            "p/T.i8: expected an integer in -128..=127, found 1.5"
        );
        assert_eq!(
            err(json!({"bs": "abcde"})),
            "p/T.bs: string of 5 bytes exceeds the bound 4"
        );
        assert_eq!(
            err(json!({"fixed": [1]})),
            "p/T.fixed: a fixed array of 2 elements, given 1"
        );
        assert_eq!(
            err(json!({"xs": [{}, {}, {}, {}]})),
            "p/T.xs: 4 elements exceed the bound 3"
        );
        assert_eq!(
            err(json!({"xs": [{"x": "one"}]})),
            "p/T.xs[0].x: expected a number, found \"one\""
        );
        assert_eq!(
            err(json!([1])),
            "p/T: expected an object for p/T, found [1]"
        );
        assert_eq!(err(json!({"b": 1})), "p/T.b: expected a bool, found 1");
    }
}
