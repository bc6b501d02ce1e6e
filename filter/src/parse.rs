//! The expression grammar (DDS 1.4 Annex B, "Syntax for Queries and Filters", the filter part),
//! by recursive descent; precedence NOT > AND > OR, all left-associative:
//!
//! ```text
//! Condition  ::= Term { OR Term }
//! Term       ::= Factor { AND Factor }
//! Factor     ::= NOT Factor | '(' Condition ')' | Predicate
//! Predicate  ::= Operand RelOp Operand
//!              | Operand [NOT] BETWEEN Operand AND Operand
//! RelOp      ::= '=' | '<>' | '!=' | '<' | '<=' | '>' | '>=' | LIKE
//! Operand    ::= FieldPath | Literal | '%'N
//! FieldPath  ::= NAME { '.' NAME | '[' INTEGER ']' }
//! Literal    ::= INTEGER | FLOAT | 'string' | TRUE | FALSE
//! ```

use crate::lex::{Float, RelOp, Tok};
use crate::FilterError;

/// Nesting of NOT and parentheses deeper than this is refused (bounded stack, any input).
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
    Compare {
        left: Operand,
        op: RelOp,
        right: Operand,
        /// Byte offset of the operator.
        at: usize,
    },
    Between {
        value: Operand,
        low: Operand,
        high: Operand,
        negated: bool,
        at: usize,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Field { path: Vec<Seg>, at: usize },
    Lit { lit: Lit, at: usize },
    Param { n: usize, at: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Seg {
    Name(String),
    Index(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Int(i128),
    Float(Float),
    Str(String),
    Bool(bool),
}

pub fn parse(src: &str, toks: &[(usize, Tok)]) -> Result<Cond, FilterError> {
    if toks.is_empty() {
        return Err(FilterError::at(0, "the expression is empty".into()));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        end: src.len(),
        depth: 0,
    };
    let c = p.condition()?;
    if let Some((at, t)) = p.toks.get(p.pos) {
        return Err(FilterError::at(
            *at,
            format!("unexpected {} after a complete condition", describe(t)),
        ));
    }
    Ok(c)
}

struct Parser<'a> {
    toks: &'a [(usize, Tok)],
    pos: usize,
    end: usize,
    depth: usize,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("name `{s}`"),
        Tok::Int(v) => format!("number {v}"),
        Tok::Float(v) => format!("number {}", v.wide),
        Tok::Str(s) => format!("string '{s}'"),
        Tok::Param(n) => format!("parameter %{n}"),
        Tok::Op(o) => format!("`{}`", o.text()),
        Tok::And => "AND".into(),
        Tok::Or => "OR".into(),
        Tok::Not => "NOT".into(),
        Tok::Between => "BETWEEN".into(),
        Tok::Like => "LIKE".into(),
        Tok::True => "TRUE".into(),
        Tok::False => "FALSE".into(),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Dot => "`.`".into(),
        Tok::LBracket => "`[`".into(),
        Tok::RBracket => "`]`".into(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }

    /// Offset of the next token (the end of the text when there is none).
    fn here(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(a, _)| *a)
    }

    fn next(&mut self) -> Option<(usize, Tok)> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expected(&self, what: &str) -> FilterError {
        match self.toks.get(self.pos) {
            Some((at, t)) => {
                FilterError::at(*at, format!("expected {what}, found {}", describe(t)))
            }
            None => FilterError::at(self.end, format!("expected {what}, found the end")),
        }
    }

    fn condition(&mut self) -> Result<Cond, FilterError> {
        let mut c = self.term()?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            c = Cond::Or(Box::new(c), Box::new(self.term()?));
        }
        Ok(c)
    }

    fn term(&mut self) -> Result<Cond, FilterError> {
        let mut c = self.factor()?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            c = Cond::And(Box::new(c), Box::new(self.factor()?));
        }
        Ok(c)
    }

    fn factor(&mut self) -> Result<Cond, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::at(
                self.here(),
                format!("NOT and parentheses nested deeper than {MAX_DEPTH}"),
            ));
        }
        let c = match self.peek() {
            Some(Tok::Not) => {
                self.pos += 1;
                Cond::Not(Box::new(self.factor()?))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let c = self.condition()?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(self.expected("`)`"));
                }
                self.pos += 1;
                c
            }
            _ => self.predicate()?,
        };
        self.depth -= 1;
        Ok(c)
    }

    fn predicate(&mut self) -> Result<Cond, FilterError> {
        let left = self.operand()?;
        let at = self.here();
        match self.peek() {
            Some(Tok::Op(op)) => {
                let op = *op;
                self.pos += 1;
                let right = self.operand()?;
                Ok(Cond::Compare {
                    left,
                    op,
                    right,
                    at,
                })
            }
            Some(Tok::Like) => {
                self.pos += 1;
                let right = self.operand()?;
                Ok(Cond::Compare {
                    left,
                    op: RelOp::Like,
                    right,
                    at,
                })
            }
            Some(Tok::Between) | Some(Tok::Not) => {
                let negated = self.peek() == Some(&Tok::Not);
                if negated {
                    self.pos += 1;
                    if self.peek() != Some(&Tok::Between) {
                        return Err(self.expected("BETWEEN after NOT"));
                    }
                }
                self.pos += 1;
                let low = self.operand()?;
                if self.peek() != Some(&Tok::And) {
                    return Err(self.expected("AND between the BETWEEN bounds"));
                }
                self.pos += 1;
                let high = self.operand()?;
                Ok(Cond::Between {
                    value: left,
                    low,
                    high,
                    negated,
                    at,
                })
            }
            _ => Err(self.expected("a comparison (=, <>, <, <=, >, >=, LIKE, BETWEEN)")),
        }
    }

    fn operand(&mut self) -> Result<Operand, FilterError> {
        let at = self.here();
        let Some((_, t)) = self.next() else {
            self.pos -= 1;
            return Err(self.expected("a field name, a literal or a parameter"));
        };
        let lit = |lit| Ok(Operand::Lit { lit, at });
        match t {
            Tok::Int(v) => lit(Lit::Int(v)),
            Tok::Float(v) => lit(Lit::Float(v)),
            Tok::Str(s) => lit(Lit::Str(s)),
            Tok::True => lit(Lit::Bool(true)),
            Tok::False => lit(Lit::Bool(false)),
            Tok::Param(n) => Ok(Operand::Param { n, at }),
            Tok::Ident(name) => {
                let mut path = vec![Seg::Name(name)];
                loop {
                    match self.peek() {
                        Some(Tok::Dot) => {
                            self.pos += 1;
                            match self.next() {
                                Some((_, Tok::Ident(n))) => path.push(Seg::Name(n)),
                                _ => {
                                    self.pos -= 1;
                                    return Err(self.expected("a field name after `.`"));
                                }
                            }
                        }
                        Some(Tok::LBracket) => {
                            self.pos += 1;
                            let i = match self.next() {
                                Some((_, Tok::Int(i))) if i >= 0 => i,
                                _ => {
                                    self.pos -= 1;
                                    return Err(self.expected("an array index"));
                                }
                            };
                            let i = usize::try_from(i).map_err(|_| {
                                FilterError::at(
                                    self.toks[self.pos - 1].0,
                                    "array index too large".into(),
                                )
                            })?;
                            path.push(Seg::Index(i));
                            if self.peek() != Some(&Tok::RBracket) {
                                return Err(self.expected("`]`"));
                            }
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                Ok(Operand::Field { path, at })
            }
            _ => {
                self.pos -= 1;
                Err(self.expected("a field name, a literal or a parameter"))
            }
        }
    }
}
