#![forbid(unsafe_code)]
//! DDS content-filter expressions for ROS 2 messages, without ROS: the subset of the DDS 1.4
//! Annex B filter grammar that ROS users write (`data > %0 AND header.frame_id = 'map'`),
//! parsed once with its `%N` parameters against a message type's [`ros2msg::Schema`], then
//! evaluated against each decoded message ([`ros2msg::decode`]).
//!
//! ```
//! let schema = ros2msg::Schema::parse("std_msgs/msg/Int32", "int32 data\n").unwrap();
//! let f = content_filter::Filter::new(&schema, "data BETWEEN %0 AND 10", &["3"]).unwrap();
//! let msg = ros2msg::decode(&schema, &[0, 1, 0, 0, 5, 0, 0, 0]).unwrap();
//! assert!(f.matches(&msg));
//! ```
//!
//! Used by rmw_tracer's `rmw_subscription_set_content_filter`. The language, its types and
//! coercions, its limits and how it differs from Fast DDS: docs/content-filter.md.

mod compile;
mod eval;
pub mod exercise;
mod lex;
mod like;
mod parse;

use std::fmt;

use ros2msg::{Schema, Value};

pub use exercise::exercise_filter;
pub use lex::MAX_PARAM;
pub use parse::MAX_DEPTH;

/// The longest expression taken, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 16 * 1024;

/// Why an expression or a parameter is refused: where (a byte offset into the expression, or
/// the parameter's number) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// Byte offset into the expression (0-based); meaningless when `parameter` is set.
    pub offset: usize,
    /// The parameter (`%N`) whose text is wrong, if that is what is wrong.
    pub parameter: Option<usize>,
    pub reason: String,
}

impl FilterError {
    fn at(offset: usize, reason: String) -> FilterError {
        FilterError {
            offset,
            parameter: None,
            reason,
        }
    }

    fn param(n: usize, reason: String) -> FilterError {
        FilterError {
            offset: 0,
            parameter: Some(n),
            reason,
        }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parameter {
            Some(_) => write!(f, "{}", self.reason),
            None => write!(f, "at column {}: {}", self.offset + 1, self.reason),
        }
    }
}

impl std::error::Error for FilterError {}

/// A filter expression with its parameters, bound to one message type.
#[derive(Clone, Debug)]
pub struct Filter {
    cond: compile::Bound,
}

impl Filter {
    /// Parses `expression`, reads each parameter as a literal, resolves every field against
    /// `schema` and checks each comparison's operand types. Every `%N` used must have a
    /// parameter; parameters not used are allowed (as in DDS), at most 100.
    pub fn new<S: AsRef<str>>(
        schema: &Schema,
        expression: &str,
        parameters: &[S],
    ) -> Result<Filter, FilterError> {
        if expression.len() > MAX_EXPRESSION_LEN {
            return Err(FilterError::at(
                MAX_EXPRESSION_LEN,
                format!(
                    "the expression is {} bytes long; at most {MAX_EXPRESSION_LEN} are taken",
                    expression.len()
                ),
            ));
        }
        if parameters.len() > MAX_PARAM + 1 {
            return Err(FilterError::param(
                MAX_PARAM + 1,
                format!(
                    "{} parameters given; at most {} are taken",
                    parameters.len(),
                    MAX_PARAM + 1
                ),
            ));
        }
        let toks = lex::tokens(expression)?;
        let cond = parse::parse(expression, &toks)?;
        let params = parameters
            .iter()
            .enumerate()
            .map(|(n, p)| compile::parameter(n, p.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let cond = compile::Binder {
            schema,
            params: &params,
        }
        .bind(&cond)?;
        Ok(Filter { cond })
    }

    /// Whether a decoded message of the schema's root type passes.
    pub fn matches(&self, msg: &Value) -> bool {
        eval::eval(&self.cond, msg)
    }
}
