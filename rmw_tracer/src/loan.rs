//! Loaned messages (docs/loans.md): the memory a publisher lends out and gets back, and the
//! samples a subscription lends out until they are returned.
//!
//! A loan of a plain type is its C struct preceded by the CDR_LE encapsulation header, so the
//! struct's bytes are the sample's CDR body and publishing it is writing those bytes as they
//! are. Loans are kept by address: rcl hands back only the pointer.

use std::collections::HashMap;
use std::ffi::c_void;

use libtracer_core::{Payload, Sample};
use parking_lot::Mutex;
use tracer_shm::{Pool, SlotMut};

use crate::boundary::{RmwError, RmwResult};

/// CDR_LE, no options: the header of every loaned sample.
pub const HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// The alignment a loan's struct gets (the largest of any ROS primitive).
pub const ALIGN: usize = 8;

/// One loan's memory: `HEADER` then the struct, the struct at an `ALIGN`-aligned address.
enum Memory {
    /// A slot of the context's pool, started 4 bytes in (slots are 64 KiB aligned).
    Slot(SlotMut),
    /// Ordinary memory (no pool, or the pool full): `buf[start..start + 4 + size]`.
    Heap { buf: Vec<u8>, start: usize },
}

impl Memory {
    /// `size` bytes for the struct, in the pool when it has room.
    fn new(size: usize, pool: Option<&Pool>) -> Memory {
        if let Some(mut slot) =
            pool.and_then(|p| libtracer_core::link::alloc_shared(p, ALIGN + size))
        {
            slot.skip_front(ALIGN - HEADER.len());
            slot.as_mut_slice()[..HEADER.len()].copy_from_slice(&HEADER);
            return Memory::Slot(slot);
        }
        let mut buf = vec![0u8; size + HEADER.len() + ALIGN];
        let start = aligned_start(buf.as_ptr() as usize);
        buf[start..start + HEADER.len()].copy_from_slice(&HEADER);
        Memory::Heap { buf, start }
    }

    /// The struct's address.
    fn message(&mut self) -> *mut c_void {
        match self {
            Memory::Slot(slot) => slot.as_mut_slice()[HEADER.len()..].as_mut_ptr().cast(),
            Memory::Heap { buf, start } => buf[*start + HEADER.len()..].as_mut_ptr().cast(),
        }
    }

    /// The sample: these bytes, not copied.
    fn into_payload(self, size: usize) -> Payload {
        match self {
            Memory::Slot(slot) => Payload::from_slot(slot.freeze()),
            Memory::Heap { buf, start } => {
                let at = buf[start..].as_ptr();
                let p = Payload::from_vec_range(buf, start..start + HEADER.len() + size);
                debug_assert_eq!(p.as_ref().as_ptr(), at, "Bytes keeps a Vec's buffer");
                p
            }
        }
    }
}

/// Where in a buffer at `base` the header goes so that the struct after it is aligned.
fn aligned_start(base: usize) -> usize {
    (ALIGN - (base + HEADER.len()) % ALIGN) % ALIGN
}

/// A publisher's outstanding loans.
pub struct PublisherLoans {
    size: usize,
    out: Mutex<HashMap<usize, Memory>>,
}

impl PublisherLoans {
    /// Loans of a plain type whose struct has `size` bytes.
    pub fn new(size: usize) -> PublisherLoans {
        PublisherLoans {
            size,
            out: Mutex::new(HashMap::new()),
        }
    }

    /// Memory for one message, uninitialized (an earlier sample's bytes, or zeros), as Fast
    /// DDS lends it: the caller fills every field.
    pub fn borrow(&self, pool: Option<&Pool>) -> *mut c_void {
        let mut mem = Memory::new(self.size, pool);
        let p = mem.message();
        self.out.lock().insert(p as usize, mem);
        p
    }

    /// The loan at `p` as a sample to write, no longer outstanding.
    pub fn publish(&self, p: *mut c_void) -> RmwResult<Payload> {
        Ok(self.take_back(p)?.into_payload(self.size))
    }

    /// Give the loan at `p` back unpublished.
    pub fn give_back(&self, p: *mut c_void) -> RmwResult<()> {
        self.take_back(p).map(drop)
    }

    fn take_back(&self, p: *mut c_void) -> RmwResult<Memory> {
        self.out.lock().remove(&(p as usize)).ok_or_else(|| {
            RmwError::invalid(format!(
                "{p:p} is not a message loaned by this publisher (or it was published or returned already)"
            ))
        })
    }

    #[cfg(test)]
    fn outstanding(&self) -> usize {
        self.out.lock().len()
    }
}

/// What a subscription's loan keeps alive (only dropped, never read).
enum Held {
    /// The sample itself: the loan is its bytes (a view of a peer's segment, or a sample of
    /// this process).
    Sample { _keep: Sample },
    /// A copy deserialized into a buffer of our own (bytes that cannot be lent as they are).
    Copy { _keep: Vec<u8> },
}

/// A subscription's outstanding loans.
/// The most loaned messages one subscription holds at once (docs/loans.md, "Bounds"): a take of
/// one more is `RMW_RET_BAD_ALLOC` and leaves the sample queued for a take after a return.
pub const MAX_HELD_LOANS: usize = 256;

pub struct SubscriptionLoans {
    size: usize,
    out: Mutex<HashMap<usize, Held>>,
}

impl SubscriptionLoans {
    pub fn new(size: usize) -> SubscriptionLoans {
        SubscriptionLoans {
            size,
            out: Mutex::new(HashMap::new()),
        }
    }

    /// Refuse a new loan while [`MAX_HELD_LOANS`] are held (before anything is taken).
    pub fn check_room(&self) -> RmwResult<()> {
        if self.out.lock().len() >= MAX_HELD_LOANS {
            return Err(RmwError::BadAlloc(
                "a loaned message: this subscription holds 256 loans (MAX_HELD_LOANS, \
                 docs/loans.md); return one with rmw_return_loaned_message_from_subscription \
                 (the message stays queued)",
            ));
        }
        Ok(())
    }

    /// Loans held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.out.lock().len()
    }

    /// The address of the struct inside the sample's bytes, when they can be lent as they are:
    /// CDR_LE, long enough for the whole struct, the struct aligned.
    pub fn in_place(&self, s: &Sample) -> Option<*mut c_void> {
        let b = s.payload.as_ref();
        if b.len() < HEADER.len() + self.size || b[..2] != HEADER[..2] {
            return None;
        }
        let p = b[HEADER.len()..].as_ptr();
        (p as usize)
            .is_multiple_of(ALIGN)
            .then_some(p as *mut c_void)
    }

    /// Lend the sample's own bytes at `p` (from [`in_place`](Self::in_place)).
    pub fn lend_sample(&self, p: *mut c_void, s: Sample) {
        self.out
            .lock()
            .insert(p as usize, Held::Sample { _keep: s });
    }

    /// A zeroed, aligned buffer for one struct, and the struct's address in it.
    pub fn copy_buffer(&self) -> (Vec<u8>, usize) {
        let buf = vec![0u8; self.size + ALIGN];
        let start = (ALIGN - buf.as_ptr() as usize % ALIGN) % ALIGN;
        (buf, start)
    }

    /// Lend `buf` (from [`copy_buffer`](Self::copy_buffer), filled) whose struct is at `p`.
    pub fn lend_copy(&self, p: *mut c_void, buf: Vec<u8>) {
        self.out
            .lock()
            .insert(p as usize, Held::Copy { _keep: buf });
    }

    /// The loan at `p` is over: its sample (and so the publisher's slot) or copy is dropped.
    /// An address that is not an outstanding loan is `RMW_RET_ERROR`, as Jazzy's
    /// test_rmw_implementation (test_subscription.cpp, "Returning a sample that was not
    /// loaned") expects and Fast DDS answers (docs/entry-points.md).
    pub fn give_back(&self, p: *mut c_void) -> RmwResult<()> {
        match self.out.lock().remove(&(p as usize)) {
            Some(_held) => Ok(()),
            None => Err(RmwError::failed(format!(
                "{p:p} is not a message loaned by this subscription (or it was returned already)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_holds_at_most_max_held_loans() {
        let loans = SubscriptionLoans::new(8);
        let mut held = Vec::new();
        for _ in 0..MAX_HELD_LOANS {
            loans.check_room().unwrap();
            let (mut buf, start) = loans.copy_buffer();
            let p = buf[start..].as_mut_ptr().cast();
            loans.lend_copy(p, buf);
            held.push(p);
        }
        let e = loans.check_room().unwrap_err();
        assert_eq!(e.code(), ffi::RMW_RET_BAD_ALLOC);
        let p = held.pop().unwrap();
        loans.give_back(p).unwrap();
        loans.check_room().unwrap();
        assert_eq!(loans.held(), MAX_HELD_LOANS - 1);
        // Once more, or an address never lent: RMW_RET_ERROR (test_rmw_implementation).
        assert_eq!(loans.give_back(p).unwrap_err().code(), ffi::RMW_RET_ERROR);
    }

    #[test]
    fn a_heap_loan_is_aligned_and_published_without_a_copy() {
        let loans = PublisherLoans::new(48);
        let p = loans.borrow(None);
        assert_eq!(p as usize % ALIGN, 0);
        assert_eq!(loans.outstanding(), 1);
        let payload = loans.publish(p).unwrap();
        assert_eq!(payload.len(), 4 + 48);
        assert_eq!(&payload.as_ref()[..4], &HEADER);
        assert_eq!(payload.as_ref()[4..].as_ptr() as usize, p as usize);
        assert!(loans.publish(p).is_err(), "published twice");
        assert!(loans.give_back(p).is_err());
        assert_eq!(loans.outstanding(), 0);
    }

    #[test]
    fn a_pool_loan_is_aligned_and_goes_back_to_the_pool() {
        let Ok(pool) = Pool::new(tracer_shm::PoolConfig {
            min_slot: 4096,
            max_slot: 1 << 20,
            max_bytes: 1 << 20,
            segment_bytes: 64 * 1024,
        }) else {
            return; // no memfd here: the heap test covers the rest
        };
        let loans = PublisherLoans::new(1000);
        let p = loans.borrow(Some(&pool));
        assert_eq!(p as usize % ALIGN, 0);
        assert_eq!(pool.stats().slots_in_use, 1);
        loans.give_back(p).unwrap();
        assert_eq!(pool.stats().slots_in_use, 0);
        let p = loans.borrow(Some(&pool));
        let payload = loans.publish(p).unwrap();
        assert!(payload.slot().is_some());
        assert_eq!(payload.len(), 4 + 1000);
        assert_eq!(payload.as_ref()[4..].as_ptr() as usize, p as usize);
        drop(payload);
        assert_eq!(pool.stats().slots_in_use, 0);
    }
}
