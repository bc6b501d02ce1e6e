//! Evaluating a bound condition against one decoded message. Cannot fail: a field the message
//! does not have (a sequence shorter than the index) makes its predicate false.

use std::cmp::Ordering;

use ros2msg::Value;

use crate::compile::{Bound, Step, Term};
use crate::lex::RelOp;
use crate::parse::Lit;

/// One side of a comparison, as it is compared.
enum Scalar<'a> {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(&'a str),
}

fn lookup<'v>(msg: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    let mut v = msg;
    for s in steps {
        v = match (s, v) {
            (Step::Field(i), Value::Message(fs)) => &fs.get(*i)?.1,
            (Step::Element(i), Value::List(items)) => items.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn scalar<'a>(msg: &'a Value, t: &'a Term) -> Option<Scalar<'a>> {
    match t {
        Term::Const(Lit::Int(i)) => Some(Scalar::Int(*i)),
        Term::Const(Lit::Float(f)) => Some(Scalar::Float(f.wide)),
        Term::Const(Lit::Bool(b)) => Some(Scalar::Bool(*b)),
        Term::Const(Lit::Str(s)) => Some(Scalar::Str(s)),
        Term::Field(steps) => match lookup(msg, steps)? {
            Value::Int(i) => Some(Scalar::Int(i128::from(*i))),
            Value::Uint(u) => Some(Scalar::Int(i128::from(*u))),
            Value::Float32(f) => Some(Scalar::Float(f64::from(*f))),
            Value::Float64(f) => Some(Scalar::Float(*f)),
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::String(s) => Some(Scalar::Str(s)),
            Value::List(_) | Value::Message(_) => None,
        },
    }
}

/// `None` when unordered (a NaN), or (only with a message that does not fit the schema) when
/// the two sides are not of one class.
fn compare(a: &Scalar<'_>, b: &Scalar<'_>) -> Option<Ordering> {
    match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => Some(x.cmp(y)),
        (Scalar::Int(x), Scalar::Float(y)) => (*x as f64).partial_cmp(y),
        (Scalar::Float(x), Scalar::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Scalar::Float(x), Scalar::Float(y)) => x.partial_cmp(y),
        (Scalar::Bool(x), Scalar::Bool(y)) => Some(x.cmp(y)),
        (Scalar::Str(x), Scalar::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

fn holds(op: RelOp, ord: Option<Ordering>) -> bool {
    match (op, ord) {
        // IEEE: NaN equals nothing, so it differs from everything.
        (RelOp::Ne, None) => true,
        (_, None) => false,
        (RelOp::Eq, Some(o)) => o == Ordering::Equal,
        (RelOp::Ne, Some(o)) => o != Ordering::Equal,
        (RelOp::Lt, Some(o)) => o == Ordering::Less,
        (RelOp::Le, Some(o)) => o != Ordering::Greater,
        (RelOp::Gt, Some(o)) => o == Ordering::Greater,
        (RelOp::Ge, Some(o)) => o != Ordering::Less,
        // Bound as `Bound::Like`, never as a comparison.
        (RelOp::Like, Some(_)) => false,
    }
}

pub fn eval(c: &Bound, msg: &Value) -> bool {
    match c {
        Bound::And(a, b) => eval(a, msg) && eval(b, msg),
        Bound::Or(a, b) => eval(a, msg) || eval(b, msg),
        Bound::Not(a) => !eval(a, msg),
        Bound::Compare {
            left, op, right, ..
        } => match (scalar(msg, left), scalar(msg, right)) {
            (Some(l), Some(r)) => holds(*op, compare(&l, &r)),
            _ => false,
        },
        Bound::Like { value, pattern } => match scalar(msg, value) {
            Some(Scalar::Str(s)) => pattern.matches(s),
            _ => false,
        },
        Bound::Between {
            value,
            low,
            high,
            negated,
        } => match (scalar(msg, value), scalar(msg, low), scalar(msg, high)) {
            (Some(v), Some(lo), Some(hi)) => {
                let inside =
                    holds(RelOp::Ge, compare(&v, &lo)) && holds(RelOp::Le, compare(&v, &hi));
                inside != *negated
            }
            _ => false,
        },
    }
}
