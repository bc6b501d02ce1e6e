//! Binding a parsed condition to a message type: `%N` replaced by its parameter's literal, each
//! field path resolved to indices into the decoded [`Value`] and given a type class, and every
//! comparison checked for operands of one class. After this, evaluation cannot fail.

use ros2msg::schema::{BaseType, Multiplicity, Primitive};
use ros2msg::Schema;

use crate::lex::{self, RelOp, Tok};
use crate::like::Pattern;
use crate::parse::{Cond, Lit, Operand, Seg};
use crate::FilterError;

/// What a comparison compares: numbers of any width (integers exactly, floats as IEEE
/// doubles), booleans, or strings (byte-wise).
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
                let (value, vc) = self.term(left)?;
                let (pat, pc) = self.term(right)?;
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
                let (l, lc) = self.term(left)?;
                let (r, rc) = self.term(right)?;
                if lc != rc {
                    return Err(FilterError::at(
                        *at,
                        format!("`{}` compares {} with {}", op.text(), lc.name(), rc.name()),
                    ));
                }
                Bound::Compare {
                    left: l,
                    op: *op,
                    right: r,
                }
            }
            Cond::Between {
                value,
                low,
                high,
                negated,
                at,
            } => {
                let (v, vc) = self.term(value)?;
                let (lo, lc) = self.term(low)?;
                let (hi, hc) = self.term(high)?;
                if lc != vc || hc != vc {
                    return Err(FilterError::at(
                        *at,
                        format!(
                            "BETWEEN: {} between {} and {}",
                            vc.name(),
                            lc.name(),
                            hc.name()
                        ),
                    ));
                }
                Bound::Between {
                    value: v,
                    low: lo,
                    high: hi,
                    negated: *negated,
                }
            }
        })
    }

    fn term(&self, o: &Operand) -> Result<(Term, Class), FilterError> {
        match o {
            Operand::Lit { lit, .. } => Ok((Term::Const(lit.clone()), lit_class(lit))),
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
                Ok((Term::Const(lit.clone()), lit_class(lit)))
            }
            Operand::Field { path, at } => self.field(path, *at),
        }
    }

    /// Resolves `a.b[2].c` against the schema: each name a field of the message reached so
    /// far, each index an element of an array or sequence (a fixed array's bound checked
    /// here, a sequence's length at evaluation), ending on a primitive or a string.
    fn field(&self, path: &[Seg], at: usize) -> Result<(Term, Class), FilterError> {
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
            return Ok((Term::Field(steps), class));
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
