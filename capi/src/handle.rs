//! The pointer module: the only place a C handle becomes a Rust object.
//!
//! A handle given to C is a token, never an address: a number (its type's tag in the low four
//! bits) looked up in its type's table. A destroyed handle is no longer in the table, so using
//! it is `TRACER_ERR_INVALID_HANDLE`, never a use after free (numbers are not reused), and a
//! handle of another type is refused the same way. Lookups clone an `Arc`: a call in flight
//! keeps its object alive even when another thread destroys the handle meanwhile.
//!
//! Ownership is in the names: `*_create` / `*_borrow` / `*_take_*` hand out a handle the caller
//! owns; `*_destroy` / `*_return` / `*_publish_loan` take it back (the handle is dead after the
//! call, whatever its result).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{CapiError, CapiResult};

/// Handles of every type draw from one counter: two live handles never share a number.
static NEXT: AtomicUsize = AtomicUsize::new(1);

/// The live handles of one type.
pub struct Table<T> {
    what: &'static str,
    tag: usize,
    live: Mutex<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Table<T> {
    pub const fn new(what: &'static str, tag: usize) -> Table<T> {
        Table {
            what,
            tag,
            live: Mutex::new(None),
        }
    }

    /// A new handle for `v`, as the C pointer type `H`.
    pub fn insert<H>(&self, v: Arc<T>) -> *mut H {
        let key = (NEXT.fetch_add(1, Ordering::Relaxed) << 4) | self.tag;
        self.live
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, v);
        key as *mut H
    }

    /// The object behind a live handle.
    pub fn get<H>(&self, h: *const H) -> CapiResult<Arc<T>> {
        if h.is_null() {
            return Err(CapiError::Null(self.what));
        }
        self.live
            .lock()
            .as_ref()
            .and_then(|m| m.get(&(h as usize)))
            .cloned()
            .ok_or(CapiError::Handle(self.what))
    }

    /// Take the object out: the handle is dead from here on.
    pub fn remove<H>(&self, h: *const H) -> CapiResult<Arc<T>> {
        if h.is_null() {
            return Err(CapiError::Null(self.what));
        }
        self.live
            .lock()
            .as_mut()
            .and_then(|m| m.remove(&(h as usize)))
            .ok_or(CapiError::Handle(self.what))
    }
}

/// Write `v` through an out-pointer the caller gave (checked for NULL first).
pub fn out<T>(p: *mut T, what: &'static str) -> CapiResult<OutPtr<T>> {
    if p.is_null() {
        Err(CapiError::Null(what))
    } else {
        Ok(OutPtr(p))
    }
}

/// A checked, non-null out-pointer.
pub struct OutPtr<T>(*mut T);

impl<T> OutPtr<T> {
    pub fn set(self, v: T) {
        // SAFETY: not null (checked by `out`); the C API documents every out-pointer as
        // pointing at writable memory for one `T`, which the caller owns for the call.
        unsafe { self.0.write(v) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct H;

    #[test]
    fn destroyed_and_foreign_handles_are_refused() {
        let a: Table<u32> = Table::new("a", 1);
        let b: Table<u32> = Table::new("b", 2);
        let h: *mut H = a.insert(Arc::new(7));
        assert_eq!(*a.get(h).unwrap(), 7);
        assert!(matches!(b.get(h), Err(CapiError::Handle("b"))));
        a.remove(h).unwrap();
        assert!(matches!(a.get(h), Err(CapiError::Handle("a"))));
        assert!(matches!(
            a.get(std::ptr::null::<H>()),
            Err(CapiError::Null("a"))
        ));
    }
}
