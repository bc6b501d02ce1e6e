//! The `ros2msg` schema: a message definition with its dependencies, as one text.
//!
//! The form rmw_tracer's recorder and rosbag2 write (MCAP profile `ros2`): the root type's
//! `.msg` text, then for each dependency a line of `=` (80 by convention; any run of three or
//! more is taken), a line `MSG: pkg/Name` (or `MSG: pkg/msg/Name`), and its `.msg` text.
//!
//! A field line is `TYPE NAME [DEFAULT]`; `TYPE NAME=VALUE` (or `TYPE NAME = VALUE`) is a
//! constant, which is not on the wire and is skipped, as are default values and comments.
//! TYPE is a primitive, `string` / `wstring` (optionally `<=N`), or a message type named
//! `Name` (same package as the definition it appears in), `pkg/Name` or `pkg/msg/Name`;
//! followed by `[N]` (fixed array), `[<=N]` (bounded sequence) or `[]` (sequence).
//! `Header` alone means `std_msgs/Header`, as in the ROS 1 convention some texts still use.

use std::collections::HashMap;
use std::fmt;

/// How many messages deep a type may nest (a type of depth 0 has only primitive and string
/// fields): decoding, printing and dropping a value recurse once per level, so a hostile
/// schema must not set the depth. ROS messages nest a handful of levels.
pub const MAX_NESTING: usize = 100;

/// A primitive type of the wire format (docs/cdr.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    Bool,
    Byte,
    Char,
    Int8,
    Uint8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Float32,
    Float64,
}

impl Primitive {
    fn from_name(s: &str) -> Option<Primitive> {
        use Primitive::*;
        Some(match s {
            "bool" => Bool,
            "byte" => Byte,
            "char" => Char,
            "int8" => Int8,
            "uint8" => Uint8,
            "int16" => Int16,
            "uint16" => Uint16,
            "int32" => Int32,
            "uint32" => Uint32,
            "int64" => Int64,
            "uint64" => Uint64,
            "float32" => Float32,
            "float64" => Float64,
            _ => return None,
        })
    }

    /// Size on the wire, which is also its XCDR1 alignment.
    pub fn size(self) -> usize {
        use Primitive::*;
        match self {
            Bool | Byte | Char | Int8 | Uint8 => 1,
            Int16 | Uint16 => 2,
            Int32 | Uint32 | Float32 => 4,
            Int64 | Uint64 | Float64 => 8,
        }
    }
}

/// The element type of a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BaseType {
    Primitive(Primitive),
    /// `string` or `string<=N` (the bound in bytes).
    String(Option<usize>),
    /// `wstring` or `wstring<=N` (the bound in UTF-16 code units).
    WString(Option<usize>),
    /// A message type, by its key in [`Schema`] (`pkg/Name`).
    Message(String),
}

/// Whether a field is one element or several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Multiplicity {
    Single,
    /// `T[N]`: exactly N elements, no length on the wire.
    Array(usize),
    /// `T[<=N]`: a length, then at most N elements.
    Bounded(usize),
    /// `T[]`: a length, then the elements.
    Sequence,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub base: BaseType,
    pub multiplicity: Multiplicity,
}

/// One message type: its fields in wire order (constants left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageDef {
    /// `pkg/Name`.
    pub name: String,
    pub fields: Vec<Field>,
}

/// A parsed definition: the root type and every type it uses, each resolved.
#[derive(Clone, Debug)]
pub struct Schema {
    root: String,
    types: HashMap<String, MessageDef>,
}

/// What is wrong with a definition text, and on which line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "ros2msg schema: {}", self.reason)
        } else {
            write!(f, "ros2msg schema line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for SchemaError {}

/// `pkg/msg/Name` and `pkg/Name` are one key, `pkg/Name`.
pub fn type_key(name: &str) -> String {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [pkg, "msg", n] => format!("{pkg}/{n}"),
        _ => name.to_owned(),
    }
}

fn package_of(key: &str) -> &str {
    key.split('/').next().unwrap_or("")
}

impl Schema {
    /// Parses the text of the type `root` (e.g. `std_msgs/msg/String`) and its dependencies.
    pub fn parse(root: &str, text: &str) -> Result<Schema, SchemaError> {
        let root = type_key(root);
        let mut types = HashMap::new();
        let mut current = MessageDef {
            name: root.clone(),
            fields: Vec::new(),
        };
        let mut expect_msg_line = false;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let err = |reason: String| SchemaError {
                line: line_no,
                reason,
            };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.len() >= 3 && line.bytes().all(|b| b == b'=') {
                let done = std::mem::replace(
                    &mut current,
                    MessageDef {
                        name: String::new(),
                        fields: Vec::new(),
                    },
                );
                insert(&mut types, done).map_err(err)?;
                expect_msg_line = true;
                continue;
            }
            if line.is_empty() {
                continue;
            }
            if expect_msg_line {
                let name = line.strip_prefix("MSG:").ok_or_else(|| {
                    err(format!(
                        "expected `MSG: pkg/Name` after the `===` separator, found {line:?}"
                    ))
                })?;
                let name = name.trim();
                if name.split('/').count() < 2 {
                    return Err(err(format!("{name:?} is not a package-qualified type")));
                }
                current.name = type_key(name);
                expect_msg_line = false;
                continue;
            }
            if let Some(rest) = line.strip_prefix("IDL:") {
                return Err(err(format!(
                    "an IDL section ({}) in a ros2msg schema: ros2idl is not supported",
                    rest.trim()
                )));
            }
            if let Some(f) = parse_field(line, &current.name).map_err(err)? {
                // A name used twice would make the JSON and YAML forms (and `encode`) lose a
                // field; rosidl refuses such a definition too.
                if current.fields.iter().any(|g| g.name == f.name) {
                    return Err(err(format!("field {:?} is defined twice", f.name)));
                }
                current.fields.push(f);
            }
        }
        if expect_msg_line {
            return Err(SchemaError {
                line: text.lines().count(),
                reason: "the text ends after a `===` separator without `MSG:`".into(),
            });
        }
        insert(&mut types, current).map_err(|reason| SchemaError { line: 0, reason })?;
        let s = Schema { root, types };
        s.check()?;
        Ok(s)
    }

    /// The root type's key (`pkg/Name`).
    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn root_def(&self) -> &MessageDef {
        &self.types[&self.root]
    }

    /// A type by key; every [`BaseType::Message`] of a parsed schema resolves.
    pub fn get(&self, key: &str) -> Option<&MessageDef> {
        self.types.get(key)
    }

    /// Every referenced type is defined, and no type contains itself (which CDR could not end).
    fn check(&self) -> Result<(), SchemaError> {
        for def in self.types.values() {
            for f in &def.fields {
                if let BaseType::Message(k) = &f.base {
                    if !self.types.contains_key(k) {
                        return Err(SchemaError {
                            line: 0,
                            reason: format!(
                                "{}.{}: type {k} has no definition in the schema",
                                def.name, f.name
                            ),
                        });
                    }
                }
            }
        }
        let mut state: HashMap<&str, bool> = HashMap::new(); // false: visiting, true: done
        fn visit<'a>(
            s: &'a Schema,
            k: &'a str,
            state: &mut HashMap<&'a str, bool>,
            depth: usize,
        ) -> Result<(), String> {
            match state.get(k) {
                Some(true) => return Ok(()),
                Some(false) => return Err(format!("type {k} contains itself")),
                None => {}
            }
            if depth > MAX_NESTING {
                return Err(format!(
                    "type {k} is nested more than {MAX_NESTING} messages deep"
                ));
            }
            state.insert(k, false);
            for f in &s.types[k].fields {
                if let BaseType::Message(d) = &f.base {
                    visit(s, d, state, depth + 1)?;
                }
            }
            state.insert(k, true);
            Ok(())
        }
        for k in self.types.keys() {
            visit(self, k, &mut state, 0).map_err(|reason| SchemaError { line: 0, reason })?;
        }
        Ok(())
    }
}

fn insert(types: &mut HashMap<String, MessageDef>, def: MessageDef) -> Result<(), String> {
    if types.contains_key(&def.name) {
        return Err(format!("type {} is defined twice", def.name));
    }
    types.insert(def.name.clone(), def);
    Ok(())
}

fn parse_bound(s: &str, what: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .map_err(|_| format!("bad {what} bound {s:?}"))
}

/// A field line, `None` for a constant.
fn parse_field(line: &str, owner: &str) -> Result<Option<Field>, String> {
    let mut parts = line.split_whitespace();
    let ty = parts.next().unwrap_or("");
    let Some(name) = parts.next() else {
        return Err(format!("{line:?}: a field needs a type and a name"));
    };
    if name.contains('=') || parts.next().is_some_and(|t| t.starts_with('=')) {
        return Ok(None);
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{name:?} is not a field name"));
    }
    let (elem, multiplicity) = match ty.split_once('[') {
        None => (ty, Multiplicity::Single),
        Some((e, rest)) => {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("{ty:?}: unclosed `[`"))?;
            let m = if inner.is_empty() {
                Multiplicity::Sequence
            } else if let Some(n) = inner.strip_prefix("<=") {
                Multiplicity::Bounded(parse_bound(n, "sequence")?)
            } else {
                // `T[0]` takes no bytes: an array of such elements (or of messages made only
                // of them) would cost work and memory unbounded by the payload. rosidl and IDL
                // want a positive size too.
                match parse_bound(inner, "array")? {
                    0 => return Err(format!("{ty:?}: a fixed array of 0 elements")),
                    n => Multiplicity::Array(n),
                }
            };
            (e, m)
        }
    };
    let base = if let Some(p) = Primitive::from_name(elem) {
        BaseType::Primitive(p)
    } else if elem == "string" {
        BaseType::String(None)
    } else if elem == "wstring" {
        BaseType::WString(None)
    } else if let Some(n) = elem.strip_prefix("string<=") {
        BaseType::String(Some(parse_bound(n, "string")?))
    } else if let Some(n) = elem.strip_prefix("wstring<=") {
        BaseType::WString(Some(parse_bound(n, "wstring")?))
    } else if elem == "Header" {
        BaseType::Message("std_msgs/Header".into())
    } else if elem.contains('/') {
        BaseType::Message(type_key(elem))
    } else if elem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && elem.starts_with(|c: char| c.is_ascii_uppercase())
    {
        BaseType::Message(format!("{}/{elem}", package_of(owner)))
    } else {
        return Err(format!("{elem:?} is not a type"));
    };
    Ok(Some(Field {
        name: name.to_owned(),
        base,
        multiplicity,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar() -> String {
        "=".repeat(80)
    }

    #[test]
    fn fields_constants_defaults_and_comments() {
        let s = Schema::parse(
            "pkg/msg/T",
            "# a comment\nint32 X=3\nstring S = \"a # b\"\nuint8 a 7 # default\nstring<=5 b \"x\"\nfloat64[3] c\nint16[<=4] d\nwstring<=2[] e\n",
        )
        .unwrap();
        let f = &s.root_def().fields;
        assert_eq!(f.len(), 5);
        assert_eq!(f[0].base, BaseType::Primitive(Primitive::Uint8));
        assert_eq!(f[1].base, BaseType::String(Some(5)));
        assert_eq!(f[2].multiplicity, Multiplicity::Array(3));
        assert_eq!(f[3].multiplicity, Multiplicity::Bounded(4));
        assert_eq!(f[4].base, BaseType::WString(Some(2)));
        assert_eq!(f[4].multiplicity, Multiplicity::Sequence);
    }

    #[test]
    fn dependencies_resolve_in_both_spellings() {
        let text = format!(
            "Inner a\nother/Thing b\nHeader h\n{b}\nMSG: pkg/msg/Inner\nint8 x\n{b}\nMSG: other/Thing\nInner2 y\n{b}\nMSG: other/Inner2\nbool z\n{b}\nMSG: std_msgs/Header\nstring frame_id\n",
            b = bar()
        );
        let s = Schema::parse("pkg/msg/T", &text).unwrap();
        assert_eq!(s.root(), "pkg/T");
        let f = &s.root_def().fields;
        assert_eq!(f[0].base, BaseType::Message("pkg/Inner".into()));
        assert_eq!(f[1].base, BaseType::Message("other/Thing".into()));
        assert_eq!(f[2].base, BaseType::Message("std_msgs/Header".into()));
        assert_eq!(
            s.get("other/Thing").unwrap().fields[0].base,
            BaseType::Message("other/Inner2".into())
        );
    }

    #[test]
    fn bad_texts_name_the_line() {
        let e = Schema::parse("p/T", "int32 a\nfoo!bar b\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Schema::parse("p/T", &format!("int32 a\n{}\nint8 b\n", bar())).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = Schema::parse("p/T", "Missing m\n").unwrap_err();
        assert!(e.to_string().contains("p/Missing has no definition"), "{e}");
        let e = Schema::parse("p/T", &format!("T t\n{}\nMSG: p/T\nint8 x\n", bar())).unwrap_err();
        assert!(e.to_string().contains("defined twice"), "{e}");
        let e = Schema::parse("p/T", "int32[x] a\n").unwrap_err();
        assert!(e.to_string().contains("bad array bound"), "{e}");
        let e = Schema::parse("p/T", "int32\n").unwrap_err();
        assert!(e.to_string().contains("type and a name"), "{e}");
        let e = Schema::parse(
            "p/T",
            &format!("A a\n{b}\nMSG: p/A\nB b\n{b}\nMSG: p/B\nA a\n", b = bar()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("contains itself"), "{e}");
    }
}
