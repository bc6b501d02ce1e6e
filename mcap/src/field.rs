//! Field encodings and values of the message-fields extension (spec 2.4, 2.5), the entry
//! codec, and the value order used for min/max and seeking (D9).

use std::cmp::Ordering;
use std::collections::HashMap;

/// Field declarations by id, as a reader has seen them.
pub type FieldTable = HashMap<u16, FieldDef>;

use crate::records::{Field, FIELD_LENGTH_VARIABLE};

/// The well-known field encodings (spec 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldEncoding {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Float16,
    Float32,
    Float64,
    Timestamp,
    String,
    Bytes,
}

impl FieldEncoding {
    pub const ALL: [FieldEncoding; 15] = [
        Self::Bool,
        Self::Int8,
        Self::Int16,
        Self::Int32,
        Self::Int64,
        Self::Uint8,
        Self::Uint16,
        Self::Uint32,
        Self::Uint64,
        Self::Float16,
        Self::Float32,
        Self::Float64,
        Self::Timestamp,
        Self::String,
        Self::Bytes,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Int8 => "int8",
            Self::Int16 => "int16",
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::Uint8 => "uint8",
            Self::Uint16 => "uint16",
            Self::Uint32 => "uint32",
            Self::Uint64 => "uint64",
            Self::Float16 => "float16",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
            Self::Timestamp => "timestamp",
            Self::String => "string",
            Self::Bytes => "bytes",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == s)
    }
    /// The `length` byte this encoding requires; D1: variable-length writes exactly 0x80.
    pub fn length(self) -> u8 {
        match self {
            Self::Bool | Self::Int8 | Self::Uint8 => 1,
            Self::Int16 | Self::Uint16 | Self::Float16 => 2,
            Self::Int32 | Self::Uint32 | Self::Float32 => 4,
            Self::Int64 | Self::Uint64 | Self::Float64 | Self::Timestamp => 8,
            Self::String | Self::Bytes => FIELD_LENGTH_VARIABLE,
        }
    }
    /// Only 64-bit orderable encodings may be indexed (spec 2.4).
    pub fn indexable(self) -> bool {
        matches!(
            self,
            Self::Int64 | Self::Uint64 | Self::Float64 | Self::Timestamp
        )
    }
    /// D9: unsigned for timestamp/uint64, signed for int64, IEEE totalOrder for float64.
    pub fn compare_raw(self, a: u64, b: u64) -> Ordering {
        match self {
            Self::Int64 => (a as i64).cmp(&(b as i64)),
            Self::Float64 => f64::from_bits(a).total_cmp(&f64::from_bits(b)),
            _ => a.cmp(&b),
        }
    }
}

/// A field value. `Raw` carries the bytes of an unknown encoding or of a well-known encoding
/// with the wrong length (D4).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    Bool(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Uint8(u8),
    Uint16(u16),
    Uint32(u32),
    Uint64(u64),
    /// IEEE binary16 bits.
    Float16(u16),
    Float32(f32),
    Float64(f64),
    Timestamp(u64),
    String(String),
    Bytes(Vec<u8>),
    Raw(Vec<u8>),
}

impl FieldValue {
    pub fn encoding(&self) -> Option<FieldEncoding> {
        Some(match self {
            Self::Bool(_) => FieldEncoding::Bool,
            Self::Int8(_) => FieldEncoding::Int8,
            Self::Int16(_) => FieldEncoding::Int16,
            Self::Int32(_) => FieldEncoding::Int32,
            Self::Int64(_) => FieldEncoding::Int64,
            Self::Uint8(_) => FieldEncoding::Uint8,
            Self::Uint16(_) => FieldEncoding::Uint16,
            Self::Uint32(_) => FieldEncoding::Uint32,
            Self::Uint64(_) => FieldEncoding::Uint64,
            Self::Float16(_) => FieldEncoding::Float16,
            Self::Float32(_) => FieldEncoding::Float32,
            Self::Float64(_) => FieldEncoding::Float64,
            Self::Timestamp(_) => FieldEncoding::Timestamp,
            Self::String(_) => FieldEncoding::String,
            Self::Bytes(_) => FieldEncoding::Bytes,
            Self::Raw(_) => return None,
        })
    }

    /// The raw 8-byte value used by Field Index, Field Chunk Index and bounds.
    pub fn index_key(&self) -> Option<u64> {
        match self {
            Self::Int64(v) => Some(*v as u64),
            Self::Uint64(v) | Self::Timestamp(v) => Some(*v),
            Self::Float64(v) => Some(v.to_bits()),
            _ => None,
        }
    }

    /// Appends the wire form of the value (without the field id).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Bool(v) => out.push(*v as u8),
            Self::Int8(v) => out.push(*v as u8),
            Self::Uint8(v) => out.push(*v),
            Self::Int16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Uint16(v) | Self::Float16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Int32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Uint32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Float32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Int64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Uint64(v) | Self::Timestamp(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Float64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::String(s) => {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Self::Bytes(b) => {
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
            Self::Raw(b) => out.extend_from_slice(b),
        }
    }

    fn decode(enc: Option<FieldEncoding>, length: u8, b: &[u8]) -> FieldValue {
        let Some(enc) = enc else {
            return Self::Raw(b.to_vec());
        };
        let fixed = |n: usize| b.len() == n;
        match enc {
            FieldEncoding::Bool if fixed(1) => Self::Bool(b[0] != 0),
            FieldEncoding::Int8 if fixed(1) => Self::Int8(b[0] as i8),
            FieldEncoding::Uint8 if fixed(1) => Self::Uint8(b[0]),
            FieldEncoding::Int16 if fixed(2) => Self::Int16(i16::from_le_bytes([b[0], b[1]])),
            FieldEncoding::Uint16 if fixed(2) => Self::Uint16(u16::from_le_bytes([b[0], b[1]])),
            FieldEncoding::Float16 if fixed(2) => Self::Float16(u16::from_le_bytes([b[0], b[1]])),
            FieldEncoding::Int32 if fixed(4) => {
                Self::Int32(i32::from_le_bytes(b.try_into().expect("4")))
            }
            FieldEncoding::Uint32 if fixed(4) => {
                Self::Uint32(u32::from_le_bytes(b.try_into().expect("4")))
            }
            FieldEncoding::Float32 if fixed(4) => {
                Self::Float32(f32::from_le_bytes(b.try_into().expect("4")))
            }
            FieldEncoding::Int64 if fixed(8) => {
                Self::Int64(i64::from_le_bytes(b.try_into().expect("8")))
            }
            FieldEncoding::Uint64 if fixed(8) => {
                Self::Uint64(u64::from_le_bytes(b.try_into().expect("8")))
            }
            FieldEncoding::Timestamp if fixed(8) => {
                Self::Timestamp(u64::from_le_bytes(b.try_into().expect("8")))
            }
            FieldEncoding::Float64 if fixed(8) => {
                Self::Float64(f64::from_le_bytes(b.try_into().expect("8")))
            }
            FieldEncoding::String if length & FIELD_LENGTH_VARIABLE != 0 => {
                match std::str::from_utf8(b) {
                    Ok(s) => Self::String(s.to_string()),
                    Err(_) => Self::Raw(b.to_vec()),
                }
            }
            FieldEncoding::Bytes if length & FIELD_LENGTH_VARIABLE != 0 => Self::Bytes(b.to_vec()),
            _ => Self::Raw(b.to_vec()),
        }
    }
}

/// A Field declaration resolved for decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub record: Field,
    /// None for an unknown encoding name.
    pub encoding: Option<FieldEncoding>,
}

impl FieldDef {
    pub fn new(record: Field) -> Self {
        let encoding = FieldEncoding::from_name(&record.encoding);
        FieldDef { record, encoding }
    }
    /// D4: a well-known encoding whose length does not match is read as raw bytes.
    pub fn length_matches(&self) -> bool {
        match self.encoding {
            Some(e) => {
                let want = e.length();
                if want & FIELD_LENGTH_VARIABLE != 0 {
                    self.record.length & FIELD_LENGTH_VARIABLE != 0
                } else {
                    want == self.record.length
                }
            }
            None => true,
        }
    }
}

/// Appends entries in ascending field-id order (D5); `extra` is merged in at its place. The
/// common case, ids already ascending, allocates nothing.
pub fn encode_entries_into(
    out: &mut Vec<u8>,
    fields: &[(u16, FieldValue)],
    extra: Option<&(u16, FieldValue)>,
) {
    let put = |out: &mut Vec<u8>, (id, v): &(u16, FieldValue)| {
        out.extend_from_slice(&id.to_le_bytes());
        v.encode(out);
    };
    let sorted = fields.windows(2).all(|w| w[0].0 < w[1].0);
    if sorted && extra.is_none_or(|e| fields.last().is_none_or(|l| l.0 < e.0)) {
        fields.iter().for_each(|f| put(out, f));
        extra.into_iter().for_each(|f| put(out, f));
        return;
    }
    let mut all: Vec<&(u16, FieldValue)> = fields.iter().chain(extra).collect();
    all.sort_by_key(|(id, _)| *id);
    all.into_iter().for_each(|f| put(out, f));
}

/// Encodes entries in ascending field-id order (D5).
pub fn encode_entries(fields: &[(u16, FieldValue)]) -> Vec<u8> {
    let mut sorted: Vec<&(u16, FieldValue)> = fields.iter().collect();
    sorted.sort_by_key(|(id, _)| *id);
    let mut out = Vec::new();
    for (id, v) in sorted {
        out.extend_from_slice(&id.to_le_bytes());
        v.encode(&mut out);
    }
    out
}

/// Decodes entries against the declarations seen so far. Problems become warnings: D3 (an
/// undeclared id stops parsing, keeping what was read), D4 (raw), D5 (duplicate: first wins).
pub fn decode_entries(
    entries: &[u8],
    defs: &FieldTable,
    warnings: &mut Vec<String>,
) -> Vec<(u16, FieldValue)> {
    let mut out: Vec<(u16, FieldValue)> = Vec::new();
    let mut p = 0usize;
    while p < entries.len() {
        if entries.len() - p < 2 {
            warnings.push("message fields: trailing byte after the last entry".into());
            break;
        }
        let id = u16::from_le_bytes([entries[p], entries[p + 1]]);
        p += 2;
        let Some(def) = defs.get(&id) else {
            warnings.push(format!("message fields: field id {id} was never declared; the rest of the record is dropped"));
            break;
        };
        let len = def.record.length;
        let value_bytes = if len & FIELD_LENGTH_VARIABLE != 0 {
            if len != FIELD_LENGTH_VARIABLE {
                warnings.push(format!(
                    "field {id}: length byte {len:#04x} has low bits set; read as variable-length"
                ));
            }
            if entries.len() - p < 4 {
                warnings.push(format!("field {id}: truncated variable-length value"));
                break;
            }
            let n = u32::from_le_bytes(entries[p..p + 4].try_into().expect("4")) as usize;
            p += 4;
            if entries.len() - p < n {
                warnings.push(format!(
                    "field {id}: value of {n} bytes overruns the record"
                ));
                break;
            }
            let b = &entries[p..p + n];
            p += n;
            b
        } else {
            let n = len as usize;
            if entries.len() - p < n {
                warnings.push(format!(
                    "field {id}: value of {n} bytes overruns the record"
                ));
                break;
            }
            let b = &entries[p..p + n];
            p += n;
            b
        };
        let enc = if def.length_matches() {
            def.encoding
        } else {
            warnings.push(format!(
                "field {id} ({}): length {len} does not match encoding {}",
                def.record.name, def.record.encoding
            ));
            None
        };
        if out.iter().any(|(i, _)| *i == id) {
            warnings.push(format!(
                "field {id} appears twice in one record; the first is kept"
            ));
            continue;
        }
        out.push((id, FieldValue::decode(enc, len, value_bytes)));
    }
    out
}
