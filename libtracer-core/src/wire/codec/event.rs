//! Structural events: their TLVs inside a STRUCTURE frame, and the same TLVs as a sample
//! payload (`version:u8 | TLV*`, no length prefix), which is how the graph delivers the
//! `:children[]` feed locally.

use super::reader::{bit, Fields};
use super::writer::Enc;
use super::{tlv, MAX_PATH};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::frame::{StructEvent, PROTOCOL_VERSION};

const EVENT_CREATED: u8 = 1;
const EVENT_REMOVED: u8 = 2;
const EVENT_SCHEMA_SET: u8 = 3;

fn code_and_path(e: &StructEvent) -> (u8, &str) {
    match e {
        StructEvent::Created { path, .. } => (EVENT_CREATED, path),
        StructEvent::Removed { path } => (EVENT_REMOVED, path),
        StructEvent::SchemaSet { path, .. } => (EVENT_SCHEMA_SET, path),
    }
}

impl Enc {
    /// The EVENT, PATH and, by kind, ROLE and SCHEMA TLVs of `e`.
    pub(super) fn event(&mut self, e: &StructEvent) -> Result<(), EncodeError> {
        let (code, path) = code_and_path(e);
        self.u8(tlv::EVENT, code);
        self.str(tlv::PATH, "PATH", path, MAX_PATH)?;
        match e {
            StructEvent::Created { role, schema, .. } => {
                self.u8(tlv::ROLE, *role as u8);
                if let Some(s) = schema {
                    self.schema(s);
                }
            }
            StructEvent::Removed { .. } => {}
            StructEvent::SchemaSet { schema, .. } => self.schema(schema),
        }
        Ok(())
    }
}

impl Fields<'_> {
    /// The event carried by these fields; ROLE or SCHEMA where the kind has none is rejected.
    pub(super) fn event(&self) -> Result<StructEvent, DecodeError> {
        let code = self.u8(tlv::EVENT)?;
        let path = self.string(tlv::PATH, MAX_PATH)?;
        let forbid = |t: u8| match self.range(t) {
            Some(_) => Err(self.unexpected(t)),
            None => Ok(()),
        };
        match code {
            EVENT_CREATED => Ok(StructEvent::Created {
                path,
                role: self.role()?,
                schema: self.schema()?,
            }),
            EVENT_REMOVED => {
                forbid(tlv::ROLE)?;
                forbid(tlv::SCHEMA)?;
                Ok(StructEvent::Removed { path })
            }
            EVENT_SCHEMA_SET => {
                forbid(tlv::ROLE)?;
                let schema = self.schema()?.ok_or_else(|| self.missing(tlv::SCHEMA))?;
                Ok(StructEvent::SchemaSet { path, schema })
            }
            v => Err(DecodeError::BadValue {
                field: "EVENT",
                value: u64::from(v),
            }),
        }
    }
}

/// A structural event as a sample payload: `version:u8 | TLV*` with the EVENT, PATH, ROLE and
/// SCHEMA TLVs of a STRUCTURE frame. A path over [`MAX_PATH`] (which the graph never makes) is
/// encoded anyway and rejected by [`decode_struct_event`].
pub fn encode_struct_event(event: &StructEvent) -> Vec<u8> {
    let mut e = Enc::with_capacity(32);
    e.buf.push(PROTOCOL_VERSION);
    if e.event(event).is_err() {
        // Only a path over the limit fails; write it unchecked so the payload still says what
        // happened and the decoder names the problem.
        e.buf.truncate(1);
        let (code, path) = code_and_path(event);
        e.u8(tlv::EVENT, code);
        e.tlv(tlv::PATH, path.as_bytes());
    }
    e.buf
}

/// Decode a structural event payload made by [`encode_struct_event`].
pub fn decode_struct_event(buf: &[u8]) -> Result<StructEvent, DecodeError> {
    let Some(&version) = buf.first() else {
        return Err(DecodeError::Incomplete { have: 0, need: 1 });
    };
    if version != PROTOCOL_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    let allow = bit(tlv::EVENT) | bit(tlv::PATH) | bit(tlv::ROLE) | bit(tlv::SCHEMA);
    Fields::parse(buf, 1, "structural event", allow)?.event()
}
