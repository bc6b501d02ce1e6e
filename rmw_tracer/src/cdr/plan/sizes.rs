//! Sizes read off a plan's fields: the fewest bytes a message takes on the wire, the most it
//! can take (when everything is bounded), and whether its struct is its own CDR body.

use super::{Field, Kind, Shape};
use crate::cdr::wire;

/// `Some(size_of)` when a struct of `fields` (`size_of` bytes) is its own CDR body
/// (docs/loans.md, "Which types are loanable"). Only on a little-endian host: the body is
/// CDR_LE.
pub fn plain_size(fields: &[Field], size_of: usize) -> Option<usize> {
    if cfg!(target_endian = "big") {
        return None;
    }
    let end = plain_end(fields, 0, 0)?;
    (end <= size_of).then_some(size_of)
}

/// Walks `fields` of a struct at address `base` whose CDR starts at body offset `pos`: the body
/// offset where they end, when every element's body offset is its address; None otherwise or
/// for a field that is not a fixed-size primitive, bool or plain message.
fn plain_end(fields: &[Field], base: usize, mut pos: usize) -> Option<usize> {
    for f in fields {
        let n = match f.shape {
            Shape::Single => 1,
            Shape::Array(n) => n,
            Shape::Sequence { .. } => return None,
        };
        let first = base + f.offset;
        match &f.kind {
            Kind::Bool | Kind::Prim(_) => {
                let size = if let Kind::Prim(k) = f.kind { k } else { 1 };
                // Elements of a primitive array are contiguous in both (size = alignment).
                pos += wire::padding(pos, size);
                if pos != first {
                    return None;
                }
                pos += n * size;
            }
            Kind::Message(t) => {
                for i in 0..n {
                    pos = plain_end(&t.fields, first + i * t.size_of, pos)?;
                }
            }
            Kind::WChar | Kind::String | Kind::WString => return None,
        }
    }
    Some(pos)
}

pub(super) fn field_min_size(f: &Field) -> usize {
    match f.shape {
        Shape::Single => f.kind.min_wire_size(),
        Shape::Array(n) => n.saturating_mul(f.kind.min_wire_size()),
        Shape::Sequence { .. } => 4,
    }
}

/// Alignment of an element's first byte on the wire.
fn wire_align(k: &Kind) -> usize {
    match k {
        Kind::Bool => 1,
        Kind::Prim(n) => *n,
        Kind::WChar | Kind::String | Kind::WString => 4,
        Kind::Message(_) => 1,
    }
}

/// End offset of the largest encoding of `fields` starting at body offset `pos`, or None if a
/// string or sequence is unbounded. Every step (align, then add) is monotonic in its start, so
/// the maximal lengths give the maximal end.
pub fn max_size_from(fields: &[Field], mut pos: usize) -> Option<usize> {
    for f in fields {
        let elems = match f.shape {
            Shape::Single => 1,
            Shape::Array(n) => n,
            Shape::Sequence { bound } => {
                pos += wire::padding(pos, 4) + 4;
                bound?
            }
        };
        for _ in 0..elems {
            pos = max_elem_end(f, pos)?;
        }
    }
    Some(pos)
}

fn max_elem_end(f: &Field, pos: usize) -> Option<usize> {
    let pos = pos + wire::padding(pos, wire_align(&f.kind));
    Some(match &f.kind {
        Kind::Bool => pos + 1,
        Kind::Prim(n) => pos + n,
        Kind::WChar => pos + 4,
        Kind::String => pos + 4 + f.string_bound? + 1,
        Kind::WString => pos + 4 + 4 * f.string_bound?,
        Kind::Message(t) => max_size_from(&t.fields, pos)?,
    })
}
