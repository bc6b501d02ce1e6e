//! ROS messages in memory, as rcl hands them to publish and take: the pointer is vouched for
//! once, where it comes in, and then (de)serialized by `crate::cdr` without more unsafe code.

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::cdr::{CdrError, Destination, MessageType};

use super::error::{RmwError, RmwResult};

/// A message to read (publish).
pub struct MessageRef<'a> {
    p: *const c_void,
    _life: PhantomData<&'a ()>,
}

impl<'a> MessageRef<'a> {
    /// # Safety
    /// `p` is null or points to an initialized ROS message of the type of the publisher it is
    /// used with, in that type support's layout, not mutated during `'a`.
    pub unsafe fn new(p: *const c_void, arg: &'static str) -> RmwResult<MessageRef<'a>> {
        if p.is_null() {
            return Err(RmwError::Null(arg));
        }
        Ok(MessageRef {
            p,
            _life: PhantomData,
        })
    }

    /// CDR of the message into `out` (cleared first).
    pub fn serialize(&self, ty: &MessageType, out: &mut Vec<u8>) -> RmwResult<()> {
        // SAFETY: `new`'s contract: an initialized message of `ty`, unchanged meanwhile.
        unsafe { ty.serialize(self.p, out) }.map_err(RmwError::from)
    }
}

impl MessageRef<'_> {
    /// The CDR size of the message, header included.
    pub fn serialized_size(&self, ty: &MessageType) -> RmwResult<usize> {
        // SAFETY: `new`'s contract: an initialized message of `ty`, unchanged meanwhile.
        unsafe { ty.serialized_size(self.p) }.map_err(RmwError::from)
    }

    /// CDR of the message into `out`, sized by [`serialized_size`](Self::serialized_size) and
    /// read next where `destination` says.
    pub fn serialize_into(
        &self,
        ty: &MessageType,
        out: &mut [u8],
        destination: Destination,
    ) -> RmwResult<usize> {
        // SAFETY: `new`'s contract: an initialized message of `ty`, unchanged meanwhile.
        unsafe { ty.serialize_into(self.p, out, destination) }.map_err(RmwError::from)
    }
}

/// A message to fill (take).
pub struct MessageMut<'a> {
    p: *mut c_void,
    _life: PhantomData<&'a mut ()>,
}

impl<'a> MessageMut<'a> {
    /// # Safety
    /// `p` is null or points to an initialized ROS message of the type of the subscription it is
    /// used with, in that type support's layout, accessed by nothing else during `'a`.
    pub unsafe fn new(p: *mut c_void, arg: &'static str) -> RmwResult<MessageMut<'a>> {
        if p.is_null() {
            return Err(RmwError::Null(arg));
        }
        Ok(MessageMut {
            p,
            _life: PhantomData,
        })
    }

    /// Fill the message from CDR `bytes`. On error the message may be partly overwritten but
    /// stays valid (another deserialize or its fini function handles it).
    pub fn deserialize(&mut self, ty: &MessageType, bytes: &[u8]) -> Result<(), CdrError> {
        // SAFETY: `new`'s contract: an initialized message of `ty`, exclusively ours.
        unsafe { ty.deserialize(bytes, self.p) }
    }
}

/// Fill a plain message (docs/loans.md) held in `buf` from CDR `bytes`: a subscription's loan
/// of a sample that cannot be lent in place.
pub fn deserialize_plain(ty: &MessageType, bytes: &[u8], buf: &mut [u8]) -> Result<(), CdrError> {
    if ty.plain_size().is_none()
        || buf.len() < ty.size_of()
        || !(buf.as_ptr() as usize).is_multiple_of(crate::loan::ALIGN)
    {
        return Err(CdrError::BadMessage(
            "not an aligned buffer for a plain message",
        ));
    }
    // SAFETY: a plain type is fixed-size and pointerless: any `size_of` bytes, aligned, are an
    // initialized message of it (deserialize writes every field), and `buf` is ours alone.
    unsafe { ty.deserialize(bytes, buf.as_mut_ptr().cast()) }
}

/// Resolve the type support rcl passes to `rmw_create_publisher` / `_subscription` (an
/// introspection handle or a C / C++ dispatcher) and read the type's name, hash and definition
/// (`None` if the type support carries no description).
///
/// # Safety
/// `ts` is null or a valid type support handle whose library stays loaded for the process.
pub unsafe fn message_type(
    ts: *const ffi::rosidl_message_type_support_t,
) -> RmwResult<(MessageType, Option<crate::cdr::TypeInfo>)> {
    if ts.is_null() {
        return Err(RmwError::Null("type_support"));
    }
    // SAFETY: forwarded caller guarantee.
    let ty = unsafe { MessageType::from_type_support(ts) }?;
    // A dispatcher that lacks one flavor leaves an rcutils error behind after a successful
    // lookup of the other; it must not leak into the next reported error.
    super::clib::reset_error();
    // SAFETY: forwarded caller guarantee.
    let info = unsafe { crate::cdr::type_info(ts) }.ok();
    super::clib::reset_error();
    Ok((ty, info))
}
