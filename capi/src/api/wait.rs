//! `tracer_wait`: one wait over several subscriptions, servers and clients, in the shape of
//! `rmw_wait` (and poll(2)): the entities in, which of them are ready out.

use super::service::{tracer_client_t, tracer_server_t, CLIENTS, SERVERS};
use super::subscription::{tracer_subscription_t, SUBSCRIPTIONS};
use super::{arg_slice, timeout};
use crate::call::call;
use crate::error::{tracer_result_t, CapiError};

/// Wait until at least one of the given subscriptions, servers and clients has something to
/// take (a sample, a request, a response), at most `timeout_ns` (negative: forever). On
/// `TRACER_OK` `ready[i]` is 1 for each entity with something to take and 0 for the others, in
/// the order: the `n_subscriptions` subscriptions, then the `n_servers` servers, then the
/// `n_clients` clients; on `TRACER_ERR_TIMEOUT` every entry is 0. Nothing is taken: take from
/// the ready ones as after `tracer_subscription_wait`.
///
/// Thread-safe. The handles are checked like any other (NULL and dead ones are refused, and
/// nothing is written to `ready`); a handle destroyed by another thread during the wait stays
/// valid until the wait returns. Waiting on nothing (all three counts 0) is
/// `TRACER_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// Each array is NULL (only when its count is 0) or holds its count of handles; `ready` is
/// NULL or writable for the three counts together.
#[no_mangle]
pub unsafe extern "C" fn tracer_wait(
    subscriptions: *const *const tracer_subscription_t,
    n_subscriptions: usize,
    servers: *const *const tracer_server_t,
    n_servers: usize,
    clients: *const *const tracer_client_t,
    n_clients: usize,
    timeout_ns: i64,
    ready: *mut u8,
) -> tracer_result_t {
    call("tracer_wait", || {
        // SAFETY: arrays readable for their counts (this function's contract).
        let (subs, srvs, clis) = unsafe {
            (
                arg_slice(subscriptions, n_subscriptions, "subscriptions")?,
                arg_slice(servers, n_servers, "servers")?,
                arg_slice(clients, n_clients, "clients")?,
            )
        };
        let total = subs.len() + srvs.len() + clis.len();
        if total == 0 {
            return Err(CapiError::invalid("nothing to wait on: every count is 0"));
        }
        if ready.is_null() {
            return Err(CapiError::Null("ready"));
        }
        // Every handle checked, and held, before anything is written or waited on.
        let subs = subs
            .iter()
            .map(|h| SUBSCRIPTIONS.get(*h))
            .collect::<Result<Vec<_>, _>>()?;
        let srvs = srvs
            .iter()
            .map(|h| SERVERS.get(*h))
            .collect::<Result<Vec<_>, _>>()?;
        let clis = clis
            .iter()
            .map(|h| CLIENTS.get(*h))
            .collect::<Result<Vec<_>, _>>()?;
        let mut rings = Vec::with_capacity(total);
        let mut pending = Vec::with_capacity(total);
        for s in &subs {
            rings.push(s.sub.ring());
            pending.push(s.has_held());
        }
        for s in &srvs {
            rings.push(s.inner.ring());
            pending.push(s.has_held());
        }
        for c in &clis {
            rings.push(c.inner.ring());
            pending.push(c.has_held());
        }
        // SAFETY: not null, writable for `total` bytes (this function's contract).
        let out = unsafe { std::slice::from_raw_parts_mut(ready, total) };
        out.fill(0);
        let got = crate::wait::any_ready(&rings, &pending, timeout(timeout_ns))?;
        for (o, r) in out.iter_mut().zip(got) {
            *o = u8::from(r);
        }
        Ok(())
    })
}
