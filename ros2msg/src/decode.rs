//! XCDR1 (plain CDR) bytes to a [`Value`], guided by a [`Schema`]: the wire format of
//! docs/cdr.md, which is what Fast DDS and rmw_tracer write.
//!
//! A 4-byte encapsulation header (`00 01` little endian, `00 00` big endian; options
//! ignored), then the body. A primitive of size n is aligned to n relative to the body's first
//! byte; strings are a uint32 length counting the NUL, the bytes, the NUL; wstrings a uint32
//! count of UTF-16 code units, each widened to a uint32, no terminator; fixed arrays their
//! elements; sequences a uint32 count then the elements. A message without fields carries one
//! uint8 (rosidl's `structure_needs_at_least_one_member`). Bytes after the message are ignored.
//!
//! Hostile input cannot make it allocate beyond the input: every count is checked against the
//! bytes left (n elements need at least n times the element's smallest wire size) first.

use std::fmt;

use crate::schema::{BaseType, Field, MessageDef, Multiplicity, Primitive, Schema};
use crate::value::Value;

/// Why bytes do not decode: the field path, where in the payload, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// `pkg/Name.field.sub[2]`.
    pub path: String,
    /// Offset in the payload (encapsulation header included).
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}: {}", self.path, self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one CDR payload (with its encapsulation header) of the schema's root type.
pub fn decode(schema: &Schema, payload: &[u8]) -> Result<Value, DecodeError> {
    let root = schema.root_def();
    let header_error = |reason: String| DecodeError {
        path: root.name.clone(),
        offset: 0,
        reason,
    };
    let truncated = || {
        header_error(format!(
            "truncated: {} bytes, shorter than the 4-byte encapsulation header",
            payload.len()
        ))
    };
    let little = match payload.get(..2) {
        Some([0x00, 0x01]) => true,
        Some([0x00, 0x00]) => false,
        Some([a, b]) => {
            return Err(header_error(format!(
                "encapsulation {a:02x} {b:02x} is not plain CDR (00 00 big endian, 00 01 little endian)"
            )))
        }
        _ => return Err(truncated()),
    };
    if payload.len() < 4 {
        return Err(truncated());
    }
    let mut r = Reader {
        body: &payload[4..],
        pos: 0,
        little,
        schema,
        path: vec![root.name.clone()],
    };
    r.message(root)
}

/// Field path segments as one path: `pkg/T.a.b[2].c` (list indices are `[i]` segments).
pub(crate) fn field_path(segments: &[String]) -> String {
    let mut path = String::new();
    for (i, seg) in segments.iter().enumerate() {
        if i > 0 && !seg.starts_with('[') {
            path.push('.');
        }
        path.push_str(seg);
    }
    path
}

struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
    little: bool,
    schema: &'a Schema,
    /// Field path segments, for errors.
    path: Vec<String>,
}

impl<'a> Reader<'a> {
    fn fail(&self, reason: String) -> DecodeError {
        DecodeError {
            path: field_path(&self.path),
            offset: self.pos + 4,
            reason,
        }
    }

    fn align(&mut self, n: usize) {
        self.pos = self.pos.div_ceil(n) * n;
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let left = self.body.len().saturating_sub(self.pos);
        if left < n {
            return Err(self.fail(format!("truncated: needs {n} bytes, {left} left")));
        }
        let s = &self.body[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.align(N);
        let b = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        if !self.little {
            a.reverse();
        }
        Ok(a) // now little endian
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.fixed::<4>()?))
    }

    fn primitive(&mut self, p: Primitive) -> Result<Value, DecodeError> {
        use Primitive::*;
        Ok(match p {
            Bool => match self.take(1)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    self.pos -= 1;
                    return Err(self.fail(format!("bool byte {b}, not 0 or 1")));
                }
            },
            Byte | Char | Uint8 => Value::Uint(u64::from(self.take(1)?[0])),
            Int8 => Value::Int(i64::from(self.take(1)?[0] as i8)),
            Int16 => Value::Int(i64::from(i16::from_le_bytes(self.fixed()?))),
            Uint16 => Value::Uint(u64::from(u16::from_le_bytes(self.fixed()?))),
            Int32 => Value::Int(i64::from(i32::from_le_bytes(self.fixed()?))),
            Uint32 => Value::Uint(u64::from(u32::from_le_bytes(self.fixed()?))),
            Int64 => Value::Int(i64::from_le_bytes(self.fixed()?)),
            Uint64 => Value::Uint(u64::from_le_bytes(self.fixed()?)),
            Float32 => Value::Float32(f32::from_le_bytes(self.fixed()?)),
            Float64 => Value::Float64(f64::from_le_bytes(self.fixed()?)),
        })
    }

    fn string(&mut self, bound: Option<usize>) -> Result<Value, DecodeError> {
        let at = self.pos;
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        // The length counts the NUL; a length of 0 and a missing NUL are tolerated (fastcdr).
        let text = match bytes.split_last() {
            Some((0, text)) => text,
            _ => bytes,
        };
        if let Some(b) = bound {
            if text.len() > b {
                self.pos = at;
                return Err(self.fail(format!(
                    "string of {} bytes exceeds the bound {b}",
                    text.len()
                )));
            }
        }
        match std::str::from_utf8(text) {
            Ok(s) => Ok(Value::String(s.to_owned())),
            Err(e) => {
                self.pos = at + 4 + e.valid_up_to();
                Err(self.fail("string is not UTF-8".into()))
            }
        }
    }

    fn wstring(&mut self, bound: Option<usize>) -> Result<Value, DecodeError> {
        let n = self.u32()? as usize;
        if let Some(b) = bound {
            if n > b {
                self.pos -= 4;
                return Err(self.fail(format!("wstring of {n} code units exceeds the bound {b}")));
            }
        }
        self.room_for(n, 4)?;
        let mut units = Vec::with_capacity(n);
        for _ in 0..n {
            let u = self.u32()?;
            let Ok(u) = u16::try_from(u) else {
                self.pos -= 4;
                return Err(self.fail(format!("wstring code unit {u:#x} exceeds 16 bits")));
            };
            units.push(u);
        }
        // An unpaired surrogate is shown as U+FFFD rather than refused: the text is for people.
        Ok(Value::String(String::from_utf16_lossy(&units)))
    }

    /// Refuses a count whose elements cannot fit in the bytes left, before allocating.
    fn room_for(&self, n: usize, min_size: usize) -> Result<(), DecodeError> {
        let left = self.body.len().saturating_sub(self.pos);
        if n.saturating_mul(min_size.max(1)) > left {
            return Err(self.fail(format!(
                "length {n} needs at least {} bytes, {left} left",
                n.saturating_mul(min_size.max(1))
            )));
        }
        Ok(())
    }

    fn element(&mut self, base: &BaseType) -> Result<Value, DecodeError> {
        match base {
            BaseType::Primitive(p) => self.primitive(*p),
            BaseType::String(b) => self.string(*b),
            BaseType::WString(b) => self.wstring(*b),
            BaseType::Message(k) => {
                let schema = self.schema;
                let def = schema.get(k).ok_or_else(|| {
                    self.fail(format!("type {k} has no definition (not a parsed schema?)"))
                })?;
                self.message(def)
            }
        }
    }

    fn message(&mut self, def: &MessageDef) -> Result<Value, DecodeError> {
        if def.fields.is_empty() {
            self.take(1)?; // structure_needs_at_least_one_member
            return Ok(Value::Message(Vec::new()));
        }
        let mut out = Vec::with_capacity(def.fields.len());
        for f in &def.fields {
            self.path.push(f.name.clone());
            let v = self.field(f)?;
            self.path.pop();
            out.push((f.name.clone(), v));
        }
        Ok(Value::Message(out))
    }

    fn field(&mut self, f: &Field) -> Result<Value, DecodeError> {
        let n = match f.multiplicity {
            Multiplicity::Single => return self.element(&f.base),
            Multiplicity::Array(n) => n,
            Multiplicity::Bounded(b) => {
                let n = self.u32()? as usize;
                if n > b {
                    self.pos -= 4;
                    return Err(self.fail(format!("length {n} exceeds the bound {b}")));
                }
                n
            }
            Multiplicity::Sequence => self.u32()? as usize,
        };
        self.room_for(n, min_size(self.schema, &f.base))?;
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            self.path.push(format!("[{i}]"));
            let v = self.element(&f.base)?;
            self.path.pop();
            items.push(v);
        }
        Ok(Value::List(items))
    }
}

/// The fewest bytes one element can take on the wire (alignment aside).
fn min_size(schema: &Schema, base: &BaseType) -> usize {
    match base {
        BaseType::Primitive(p) => p.size(),
        BaseType::String(_) | BaseType::WString(_) => 4,
        // Any message takes at least one byte (an empty one its placeholder uint8).
        BaseType::Message(k) => schema
            .get(k)
            .and_then(|d| d.fields.first())
            .map_or(1, |f| match f.multiplicity {
                Multiplicity::Single => min_size(schema, &f.base),
                Multiplicity::Array(0) => 1,
                Multiplicity::Array(_) => min_size(schema, &f.base),
                _ => 4,
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(body: &[u8]) -> Vec<u8> {
        let mut v = vec![0, 1, 0, 0];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn primitives_align_to_their_size() {
        let s = Schema::parse("p/T", "uint8 a\nfloat64 b\nint16 c\nbool d\n").unwrap();
        let mut body = vec![7, 0, 0, 0, 0, 0, 0, 0];
        body.extend_from_slice(&2.5f64.to_le_bytes());
        body.extend_from_slice(&(-3i16).to_le_bytes());
        body.push(1);
        let v = decode(&s, &le(&body)).unwrap();
        assert_eq!(
            v.to_json().to_string(),
            r#"{"a":7,"b":2.5,"c":-3,"d":true}"#
        );
        // Big endian.
        let mut be = vec![0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        be.extend_from_slice(&2.5f64.to_be_bytes());
        be.extend_from_slice(&(-3i16).to_be_bytes());
        be.push(0);
        assert_eq!(
            decode(&s, &be).unwrap().to_json().to_string(),
            r#"{"a":7,"b":2.5,"c":-3,"d":false}"#
        );
    }

    #[test]
    fn strings_wstrings_sequences_and_nested() {
        let text = format!(
            "string s\nwstring w\nInner[] xs\nint32[2] fixed\nEmpty e\n{b}\nMSG: p/Inner\nstring<=3 t\n{b}\nMSG: p/Empty\n",
            b = "=".repeat(80)
        );
        let s = Schema::parse("p/msg/T", &text).unwrap();
        let mut b = Vec::new();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(b"hi\0");
        b.push(0); // pad to 4
        b.extend_from_slice(&4u32.to_le_bytes()); // "aé😀" as UTF-16 units widened
        for u in [0x61u32, 0xe9, 0xd83d, 0xde00] {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.push(0); // "" (length 1, NUL)
        b.extend_from_slice(&[0, 0, 0]);
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(b"abc\0");
        b.extend_from_slice(&(-1i32).to_le_bytes());
        b.extend_from_slice(&5i32.to_le_bytes());
        b.push(0); // Empty's placeholder
        let v = decode(&s, &le(&b)).unwrap();
        assert_eq!(
            v.to_json().to_string(),
            r#"{"s":"hi","w":"aé😀","xs":[{"t":""},{"t":"abc"}],"fixed":[-1,5],"e":{}}"#
        );
        // Every truncation is an error naming a field, never a panic.
        for n in 0..le(&b).len() {
            let e = decode(&s, &le(&b)[..n]).unwrap_err();
            assert!(e.path.starts_with("p/T"), "{e}");
        }
    }

    #[test]
    fn errors_say_what_and_where() {
        let s = Schema::parse("p/T", "int32 a\nstring<=2 b\nuint8[<=1] c\nbool d\n").unwrap();
        let e = decode(&s, &[0, 1, 0, 0, 1, 0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p/T.a at byte 4: truncated: needs 4 bytes, 2 left"
        );
        let mut b = 1i32.to_le_bytes().to_vec();
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(b"abc\0");
        let e = decode(&s, &le(&b)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p/T.b at byte 8: string of 3 bytes exceeds the bound 2"
        );
        let mut b = 1i32.to_le_bytes().to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.extend_from_slice(&2u32.to_le_bytes());
        let e = decode(&s, &le(&b)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p/T.c at byte 16: length 2 exceeds the bound 1"
        );
        let s = Schema::parse("p/T", "bool d\nuint64[] big\n").unwrap();
        let e = decode(&s, &le(&[2])).unwrap_err();
        assert_eq!(e.to_string(), "p/T.d at byte 4: bool byte 2, not 0 or 1");
        let mut b = vec![1, 0, 0, 0];
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = decode(&s, &le(&b)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("p/T.big at byte 12: length 4294967295 needs"),
            "{e}"
        );
        let e = decode(&s, &[0, 3, 0, 0, 1]).unwrap_err();
        assert!(e.reason.contains("not plain CDR"), "{e}");
    }
}
