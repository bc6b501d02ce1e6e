//! Binding a parsed condition to a message type: `%N` replaced by its parameter's literal, each
//! field path resolved to indices into the decoded [`Value`] and given a type class, and every
//! comparison checked for operands of one class. After this, evaluation cannot fail.

use ros2msg::schema::{BaseType, Multiplicity, Primitive};
use ros2msg::Schema;

use crate::lex::{self, Float, RelOp, Tok};
use crate::like::Pattern;
use crate::parse::{Cond, Lit, Operand, Seg};
use crate::FilterError;

/// What a comparison compares: numbers of any width (integers exactly, floats as IEEE
/// doubles, a float literal against a `float32` field at `f32` precision), booleans, or
/// strings (byte-wise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Number,
    Bool,
    Str,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Number => "a number",
            Class::Bool => "a boolean",
            Class::Str => "a string",
        }
    }
}

/// A step into a decoded message: a field by its position in the definition, or a list
/// element by index.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Field(usize),
    Element(usize),
}

#[derive(Clone, Debug)]
pub enum Term {
    Field(Vec<Step>),
    Const(Lit),
}

#[derive(Clone, Debug)]
pub enum Bound {
    And(Box<Bound>, Box<Bound>),
    Or(Box<Bound>, Box<Bound>),
    Not(Box<Bound>),
    Compare {
        left: Term,
        op: RelOp,
        right: Term,
    },
    Like {
        value: Term,
        pattern: Pattern,
    },
    Between {
        value: Term,
        low: Term,
        high: Term,
        negated: bool,
    },
}

/// A parameter's text as a literal: a number, `'string'`, TRUE or FALSE (one token).
pub fn parameter(n: usize, text: &str) -> Result<Lit, FilterError> {
    let bad = |why: &str| FilterError::param(n, format!("parameter %{n} ({text:?}) {why}"));
    let toks = lex::tokens(text).map_err(|e| bad(&format!("is not a literal: {}", e.reason)))?;
    match toks.as_slice() {
        [(_, Tok::Int(v))] => Ok(Lit::Int(*v)),
        [(_, Tok::Float(v))] => Ok(Lit::Float(*v)),
        [(_, Tok::Str(s))] => Ok(Lit::Str(s.clone())),
        [(_, Tok::True)] => Ok(Lit::Bool(true)),
        [(_, Tok::False)] => Ok(Lit::Bool(false)),
        [] => Err(bad("is empty")),
        _ => Err(bad(
            "is not one literal (a number, a 'quoted string', TRUE or FALSE)",
        )),
    }
}

/// One operand as bound: its term, its class, and whether it is a `float32` field (a float
/// constant compared with it is read at `f32` precision).
struct Side {
    term: Term,
    class: Class,
    float32: bool,
}

/// `t` as compared with a `float32` field when `narrow`: a float constant becomes the `f32`
/// nearest its text, so `float32_value = 3.14159` holds for a field set to `3.14159f` (as with
/// Fast DDS, and as rmw's test_rmw_implementation expects); other terms are unchanged.
fn at_field_precision(t: Term, narrow: bool) -> Term {
    match t {
        Term::Const(Lit::Float(f)) if narrow => Term::Const(Lit::Float(Float {
            wide: f64::from(f.narrow),
            narrow: f.narrow,
        })),
        t => t,
    }
}

pub struct Binder<'a> {
    pub schema: &'a Schema,
    pub params: &'a [Lit],
}

fn lit_class(l: &Lit) -> Class {
    match l {
        Lit::Int(_) | Lit::Float(_) => Class::Number,
        Lit::Str(_) => Class::Str,
        Lit::Bool(_) => Class::Bool,
    }
}

fn prim_class(p: Primitive) -> Class {
    match p {
        Primitive::Bool => Class::Bool,
        _ => Class::Number,
    }
}

impl Binder<'_> {
    pub fn bind(&self, c: &Cond) -> Result<Bound, FilterError> {
        Ok(match c {
            Cond::And(a, b) => Bound::And(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Cond::Or(a, b) => Bound::Or(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Cond::Not(a) => Bound::Not(Box::new(self.bind(a)?)),
            Cond::Compare {
                left,
                op: RelOp::Like,
                right,
                at,
            } => {
                let Side {
                    term: value,
                    class: vc,
                    ..
                } = self.term(left)?;
                let Side {
                    term: pat,
                    class: pc,
                    ..
                } = self.term(right)?;
                match (vc, &pat) {
                    (Class::Str, Term::Const(Lit::Str(p))) if matches!(value, Term::Field(_)) => {
                        Bound::Like {
                            value,
                            pattern: Pattern::new(p),
                        }
                    }
                    _ => {
                        return Err(FilterError::at(
                            *at,
                            format!(
                            "LIKE needs a string field on the left and a 'pattern' on the right, \
                                 not {} and {}",
                            vc.name(),
                            pc.name()
                        ),
                        ))
                    }
                }
            }
            Cond::Compare {
                left,
                op,
                right,
                at,
            } => {
                let l = self.term(left)?;
                let r = self.term(right)?;
                if l.class != r.class {
                    return Err(FilterError::at(
                        *at,
                        format!(
                            "`{}` compares {} with {}",
                            op.text(),
                            l.class.name(),
                            r.class.name()
                        ),
                    ));
                }
                Bound::Compare {
                    left: at_field_precision(l.term, r.float32),
                    op: *op,
                    right: at_field_precision(r.term, l.float32),
                }
            }
            Cond::Between {
                value,
                low,
                high,
                negated,
                at,
            } => {
                let v = self.term(value)?;
                let lo = self.term(low)?;
                let hi = self.term(high)?;
                if lo.class != v.class || hi.class != v.class {
                    return Err(FilterError::at(
                        *at,
                        format!(
                            "BETWEEN: {} between {} and {}",
                            v.class.name(),
                            lo.class.name(),
                            hi.class.name()
                        ),
                    ));
                }
                Bound::Between {
                    value: at_field_precision(v.term, lo.float32 && hi.float32),
                    low: at_field_precision(lo.term, v.float32),
                    high: at_field_precision(hi.term, v.float32),
                    negated: *negated,
                }
            }
        })
    }

    fn term(&self, o: &Operand) -> Result<Side, FilterError> {
        let constant = |lit: &Lit| Side {
            term: Term::Const(lit.clone()),
            class: lit_class(lit),
            float32: false,
        };
        match o {
            Operand::Lit { lit, .. } => Ok(constant(lit)),
            Operand::Param { n, at } => {
                let lit = self.params.get(*n).ok_or_else(|| {
                    FilterError::at(
                        *at,
                        format!(
                            "parameter %{n} is used but {} parameter(s) were given",
                            self.params.len()
                        ),
                    )
                })?;
                Ok(constant(lit))
            }
            Operand::Field { path, at } => self.field(path, *at),
        }
    }

    /// Resolves `a.b[2].c` against the schema: each name a field of the message reached so
    /// far, each index an element of an array or sequence (a fixed array's bound checked
    /// here, a sequence's length at evaluation), ending on a primitive or a string.
    fn field(&self, path: &[Seg], at: usize) -> Result<Side, FilterError> {
        let text = path_text(path);
        let err = |why: String| FilterError::at(at, format!("field `{text}`: {why}"));
        let mut def = self.schema.root_def();
        let mut steps = Vec::with_capacity(path.len());
        let mut segs = path.iter().peekable();
        loop {
            let Some(Seg::Name(name)) = segs.next() else {
                return Err(err("an index must follow an array or sequence field".into()));
            };
            let (i, f) = def
                .fields
                .iter()
                .enumerate()
                .find(|(_, f)| &f.name == name)
                .ok_or_else(|| err(format!("{} has no field `{name}`", def.name)))?;
            steps.push(Step::Field(i));
            match f.multiplicity {
                Multiplicity::Single => {}
                m => {
                    let Some(Seg::Index(k)) = segs.next() else {
                        return Err(err(format!(
                            "`{name}` is an array or sequence: name one element (`{name}[0]`)"
                        )));
                    };
                    let bound = match m {
                        Multiplicity::Array(n) | Multiplicity::Bounded(n) => Some(n),
                        _ => None,
                    };
                    if bound.is_some_and(|n| *k >= n) {
                        return Err(err(format!(
                            "index {k} is past the bound {} of `{name}`",
                            bound.unwrap_or(0)
                        )));
                    }
                    steps.push(Step::Element(*k));
                }
            }
            let class = match &f.base {
                BaseType::Primitive(p) => prim_class(*p),
                BaseType::String(_) | BaseType::WString(_) => Class::Str,
                BaseType::Message(key) => {
                    def = self
                        .schema
                        .get(key)
                        .ok_or_else(|| err(format!("type {key} is not in the schema")))?;
                    if segs.peek().is_none() {
                        return Err(err(format!(
                            "is a {key} message: compare one of its fields (`{text}.<field>`)"
                        )));
                    }
                    continue;
                }
            };
            if let Some(extra) = segs.next() {
                let what = match extra {
                    Seg::Name(n) => format!("`.{n}`"),
                    Seg::Index(k) => format!("`[{k}]`"),
                };
                return Err(err(format!(
                    "`{name}` is not a message or list, so {what} cannot follow it"
                )));
            }
            return Ok(Side {
                term: Term::Field(steps),
                class,
                float32: matches!(f.base, BaseType::Primitive(Primitive::Float32)),
            });
        }
    }
}

fn path_text(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Name(n) if s.is_empty() => s.push_str(n),
            Seg::Name(n) => {
                s.push('.');
                s.push_str(n);
            }
            Seg::Index(k) => s.push_str(&format!("[{k}]")),
        }
    }
    s
}
