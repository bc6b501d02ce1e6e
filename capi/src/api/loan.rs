//! Loans: borrow memory for one message (a shared-memory slot), write it in place, publish it
//! without a copy (docs/loans.md).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::call::call;
use crate::error::{tracer_result_t, CapiError};
use crate::handle::{out, Table};
use crate::publisher::{Loan, Publisher};

use super::publisher::{tracer_publisher_t, PUBLISHERS};

/// Memory lent for one message of a publisher. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_loan_t {
    _private: [u8; 0],
}

/// A loan and the publisher it is for (kept alive by it).
pub struct Lent {
    publisher: Arc<Publisher>,
    loan: Mutex<Option<Loan>>,
}

pub static LOANS: Table<Lent> = Table::new("loan", 4);

/// Borrow memory for one message of up to `len` bytes: `*out_data` points at `len` writable
/// bytes (a slot of the context's shared-memory pool; where shared memory is not available,
/// a block of the buffer pool), valid until the loan is published or returned. Write the CDR
/// there (encapsulation header first) and `tracer_loan_publish` it: subscribers in other
/// processes of this host receive a reference to the slot, not the bytes. The caller owns the
/// new loan handle.
///
/// Thread-safe.
///
/// # Safety
/// `out_loan` and `out_data` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_loan_borrow(
    publisher: *mut tracer_publisher_t,
    len: usize,
    out_loan: *mut *mut tracer_loan_t,
    out_data: *mut *mut u8,
) -> tracer_result_t {
    call("tracer_loan_borrow", || {
        let ol = out(out_loan, "out_loan")?;
        let od = out(out_data, "out_data")?;
        let p = PUBLISHERS.get(publisher)?;
        let mut loan = p.borrow(len)?;
        let data = loan.as_mut_ptr();
        if loan.capacity() < len {
            return Err(CapiError::NoMemory(len));
        }
        od.set(data);
        ol.set(LOANS.insert(Arc::new(Lent {
            publisher: p,
            loan: Mutex::new(Some(loan)),
        })));
        Ok(())
    })
}

/// Publish the first `len` bytes of a loan as they are. The loan is consumed (the handle and
/// its memory are the library's again), whatever the result.
///
/// Thread-safe. `loan` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_loan_publish(loan: *mut tracer_loan_t, len: usize) -> tracer_result_t {
    call("tracer_loan_publish", || {
        let l = LOANS.remove(loan)?;
        let taken = l.loan.lock().take();
        let lent = taken.ok_or(CapiError::Handle("loan"))?;
        l.publisher.publish_loan(lent, len)
    })
}

/// Give a loan back unpublished. The handle is dead after the call, whatever its result.
///
/// Thread-safe. `loan` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_loan_return(loan: *mut tracer_loan_t) -> tracer_result_t {
    call("tracer_loan_return", || LOANS.remove(loan).map(drop))
}
