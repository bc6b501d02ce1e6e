//! Tokens of a filter expression, each with the byte offset where it starts.
//!
//! Keywords are case-insensitive (`and`, `AND`); field names are case-sensitive, as ROS field
//! names are. A number may carry a sign (`-3`, `+2.5e3`): the grammar has no arithmetic, so a
//! sign before a digit can only belong to the literal.

use crate::FilterError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A field name segment (`data`, `header`); dots and brackets are their own tokens.
    Ident(String),
    /// An integer literal, decimal or `0x` hexadecimal, with its sign.
    Int(i128),
    Float(Float),
    /// `'text'`; a quote inside is written twice (`'it''s'`), as in SQL.
    Str(String),
    /// `%N`, N in 0..=99.
    Param(usize),
    Op(RelOp),
    And,
    Or,
    Not,
    Between,
    Like,
    True,
    False,
    LParen,
    RParen,
    Dot,
    LBracket,
    RBracket,
}

/// A float literal read from its text at both widths: `f64` for every comparison but those
/// with a `float32` field, which compare at the field's own precision (`f32`: `3.14159` is then
/// the float nearest 3.14159, as a C program writing `3.14159f` stores it; rounding the `f64`
/// instead could land one ulp away).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Float {
    pub wide: f64,
    pub narrow: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Like,
}

impl RelOp {
    pub fn text(self) -> &'static str {
        match self {
            RelOp::Eq => "=",
            RelOp::Ne => "<>",
            RelOp::Lt => "<",
            RelOp::Le => "<=",
            RelOp::Gt => ">",
            RelOp::Ge => ">=",
            RelOp::Like => "LIKE",
        }
    }
}

/// The largest `%N` (DDS and the rmw header: "smaller than 100").
pub const MAX_PARAM: usize = 99;

pub fn tokens(src: &str) -> Result<Vec<(usize, Tok)>, FilterError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let err = |reason: String| FilterError::at(start, reason);
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let tok = match c {
            b'(' => {
                i += 1;
                Tok::LParen
            }
            b')' => {
                i += 1;
                Tok::RParen
            }
            b'.' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                Tok::Dot
            }
            b'[' => {
                i += 1;
                Tok::LBracket
            }
            b']' => {
                i += 1;
                Tok::RBracket
            }
            b'=' => {
                i += 1;
                Tok::Op(RelOp::Eq)
            }
            b'!' if b.get(i + 1) == Some(&b'=') => {
                i += 2;
                Tok::Op(RelOp::Ne)
            }
            b'<' => match b.get(i + 1) {
                Some(b'>') => {
                    i += 2;
                    Tok::Op(RelOp::Ne)
                }
                Some(b'=') => {
                    i += 2;
                    Tok::Op(RelOp::Le)
                }
                _ => {
                    i += 1;
                    Tok::Op(RelOp::Lt)
                }
            },
            b'>' => {
                if b.get(i + 1) == Some(&b'=') {
                    i += 2;
                    Tok::Op(RelOp::Ge)
                } else {
                    i += 1;
                    Tok::Op(RelOp::Gt)
                }
            }
            b'%' => {
                i += 1;
                let d = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n: usize = src[d..i].parse().map_err(|_| {
                    err("`%` must be followed by a parameter number (%0 .. %99)".into())
                })?;
                if n > MAX_PARAM {
                    return Err(err(format!("parameter %{n}: the largest is %{MAX_PARAM}")));
                }
                Tok::Param(n)
            }
            b'\'' => {
                i += 1;
                let mut s = String::new();
                loop {
                    match src[i..].find('\'') {
                        None => return Err(err("string literal is not closed by `'`".into())),
                        Some(k) => {
                            s.push_str(&src[i..i + k]);
                            i += k + 1;
                            if b.get(i) == Some(&b'\'') {
                                s.push('\'');
                                i += 1;
                            } else {
                                break;
                            }
                        }
                    }
                }
                Tok::Str(s)
            }
            b'0'..=b'9' | b'.' | b'-' | b'+' => {
                let (t, n) = number(&src[i..]).map_err(|r| err(r.to_string()))?;
                i += n;
                t
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let w = &src[start..i];
                match w.to_ascii_uppercase().as_str() {
                    "AND" => Tok::And,
                    "OR" => Tok::Or,
                    "NOT" => Tok::Not,
                    "BETWEEN" => Tok::Between,
                    "LIKE" => Tok::Like,
                    "TRUE" => Tok::True,
                    "FALSE" => Tok::False,
                    _ => Tok::Ident(w.to_owned()),
                }
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(err(format!("unexpected character {ch:?}")));
            }
        };
        out.push((start, tok));
    }
    Ok(out)
}

/// A numeric literal at the start of `s`: `[+-]digits`, `0x..`, or a float with `.`/exponent.
/// Returns the token and the bytes it took.
fn number(s: &str) -> Result<(Tok, usize), &'static str> {
    let b = s.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    if !b.get(i).is_some_and(|c| {
        c.is_ascii_digit() || (*c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
    }) {
        return Err("a sign must be followed by a number");
    }
    if b.get(i) == Some(&b'0') && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        let d = i + 2;
        let mut e = d;
        while e < b.len() && b[e].is_ascii_hexdigit() {
            e += 1;
        }
        let v = i128::from_str_radix(&s[d..e], 16).map_err(|_| "malformed hexadecimal number")?;
        return Ok((Tok::Int(if neg { -v } else { v }), e));
    }
    let mut e = i;
    let mut float = false;
    while e < b.len() && b[e].is_ascii_digit() {
        e += 1;
    }
    if b.get(e) == Some(&b'.') {
        float = true;
        e += 1;
        while e < b.len() && b[e].is_ascii_digit() {
            e += 1;
        }
    }
    if matches!(b.get(e), Some(b'e' | b'E')) {
        let mut x = e + 1;
        if matches!(b.get(x), Some(b'+' | b'-')) {
            x += 1;
        }
        if !b.get(x).is_some_and(u8::is_ascii_digit) {
            return Err("an exponent needs digits");
        }
        while x < b.len() && b[x].is_ascii_digit() {
            x += 1;
        }
        float = true;
        e = x;
    }
    if b.get(e)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return Err("a number runs into a name");
    }
    let text = &s[..e];
    if float {
        let wide: f64 = text.parse().map_err(|_| "malformed number")?;
        let narrow: f32 = text.parse().map_err(|_| "malformed number")?;
        Ok((Tok::Float(Float { wide, narrow }), e))
    } else {
        let v: i128 = text.parse().map_err(|_| "integer out of range")?;
        Ok((Tok::Int(v), e))
    }
}
