//! Content-filtered subscriptions, evaluated locally on the subscriber side: the expression
//! and parameters are compiled once (crate `tracer-filter`, against the type's `ros2msg`
//! definition), and each sample a take would deliver is decoded and tested; a sample that
//! fails is dropped there, neither delivered nor counted as lost. docs/content-filter.md.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::boundary::{RmwError, RmwResult};

/// The filter in force: exactly what was set (for `rmw_subscription_get_content_filter`),
/// and its compiled form.
pub struct Active {
    pub expression: String,
    pub parameters: Vec<String>,
    filter: content_filter::Filter,
    schema: Arc<ros2msg::Schema>,
}

impl Active {
    /// Whether the CDR payload passes. Bytes that do not decode as the type are `Err` (the
    /// caller drops and reports them, as a take does).
    pub fn passes(&self, payload: &[u8]) -> Result<bool, ros2msg::DecodeError> {
        let v = ros2msg::decode(&self.schema, payload)?;
        Ok(self.filter.matches(&v))
    }
}

/// A subscription's filter: none, or one [`Active`]. Replaced whole by a set, so a take that
/// already holds the old one finishes with it.
pub struct Slot {
    type_name: String,
    definition: String,
    schema: Mutex<Option<Arc<ros2msg::Schema>>>,
    active: Mutex<Option<Arc<Active>>>,
}

impl Slot {
    pub fn new(type_name: &str, definition: &str) -> Slot {
        Slot {
            type_name: type_name.to_owned(),
            definition: definition.to_owned(),
            schema: Mutex::new(None),
            active: Mutex::new(None),
        }
    }

    /// The type's schema, parsed at the first filter and kept.
    fn schema(&self) -> RmwResult<Arc<ros2msg::Schema>> {
        let mut s = self.schema.lock();
        if let Some(s) = &*s {
            return Ok(s.clone());
        }
        if self.definition.is_empty() {
            return Err(RmwError::UnsupportedFeature(format!(
                "a content filter on {} (its type support carries no message definition to \
                 resolve field names against)",
                self.type_name
            )));
        }
        let parsed = ros2msg::Schema::parse(&self.type_name, &self.definition).map_err(|e| {
            RmwError::failed(format!(
                "cannot read the definition of {}: {e}",
                self.type_name
            ))
        })?;
        let parsed = Arc::new(parsed);
        *s = Some(parsed.clone());
        Ok(parsed)
    }

    /// Sets the filter, or with an empty expression removes it (`RMW_RET_ERROR` when there is
    /// none to remove, as Fast DDS answers). A bad expression or parameter is
    /// `INVALID_ARGUMENT` with the column or parameter number, and leaves the filter in force
    /// unchanged. Returns whether a filter is now in force (`is_cft_enabled`).
    pub fn set(&self, expression: &str, parameters: Vec<String>) -> RmwResult<bool> {
        if expression.is_empty() {
            return match self.active.lock().take() {
                Some(_) => Ok(false),
                None => Err(RmwError::failed(
                    "this subscription has no content filter to remove",
                )),
            };
        }
        let schema = self.schema()?;
        let filter =
            content_filter::Filter::new(&schema, expression, &parameters).map_err(|e| {
                RmwError::invalid(format!("content filter expression {expression:?} {e}"))
            })?;
        *self.active.lock() = Some(Arc::new(Active {
            expression: expression.to_owned(),
            parameters,
            filter,
            schema,
        }));
        Ok(true)
    }

    pub fn get(&self) -> Option<Arc<Active>> {
        self.active.lock().clone()
    }
}
