//! The threads of every QUIC link of a process, fixed in number: one tokio runtime (one
//! worker, at most two blocking threads for name lookups) drives the endpoints and
//! connections, and two dispatcher threads run the handler callbacks. A link is bound to one
//! dispatcher, so its callbacks run in order on one thread; a callback may block briefly and may
//! send, which it could not do on a runtime worker. A DELIVERY to a link with nothing queued
//! for its dispatcher is landed by its reader on the worker instead (`link::ToDispatcher`).

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};
use tokio::sync::mpsc;

use super::link::{dispatch, Event, ToDispatcher};

/// One worker, not two: with two, each packet's tasks (endpoint driver, connection driver,
/// stream reader) woke the idle worker to steal work, about two more thread wake-ups per
/// message each way (docs/network.md section 11: 64 B round trip 8.0 -> 5.6-6.5 context
/// switches per process). Links of a process share it; the cores go to the processes.
const WORKERS: usize = 1;
const DISPATCHERS: usize = 2;
/// Events waiting per dispatcher: when full, readers stop reading and QUIC flow control holds
/// the peers back.
const QUEUE: usize = 256;

struct Threads {
    rt: Runtime,
    dispatchers: Vec<mpsc::Sender<Event>>,
    next: AtomicUsize,
}

static THREADS: OnceLock<Result<Threads, String>> = OnceLock::new();

thread_local! {
    static ON_DISPATCHER: Cell<bool> = const { Cell::new(false) };
}

fn threads() -> Result<&'static Threads, String> {
    THREADS
        .get_or_init(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .max_blocking_threads(2)
                .thread_name("tracer-quic")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the QUIC runtime: {e}"))?;
            let mut dispatchers = Vec::new();
            for i in 0..DISPATCHERS {
                let (tx, mut rx) = mpsc::channel::<Event>(QUEUE);
                std::thread::Builder::new()
                    .name(format!("tracer-quic-cb{i}"))
                    .spawn(move || {
                        ON_DISPATCHER.with(|d| d.set(true));
                        while let Some(ev) = rx.blocking_recv() {
                            dispatch(ev);
                        }
                    })
                    .map_err(|e| format!("cannot start a QUIC dispatcher: {e}"))?;
                dispatchers.push(tx);
            }
            Ok(Threads {
                rt,
                dispatchers,
                next: AtomicUsize::new(0),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether the runtime (and its dispatchers) was started in this process: never, with every
/// transport on the engine and no SUBNET (docs/network.md section 4a, stage 3).
pub(crate) fn started() -> bool {
    THREADS.get().is_some()
}

/// The runtime's handle (starting the threads on first use).
pub(crate) fn handle() -> Result<Handle, String> {
    threads().map(|t| t.rt.handle().clone())
}

/// A dispatcher queue for a new link (round robin).
pub(crate) fn dispatcher() -> Result<ToDispatcher, String> {
    let t = threads()?;
    let i = t.next.fetch_add(1, Ordering::Relaxed) % t.dispatchers.len();
    Ok(ToDispatcher(t.dispatchers[i].clone()))
}

/// Whether the caller is a dispatcher thread (shutdown must not wait for its own callbacks).
pub(crate) fn on_dispatcher() -> bool {
    ON_DISPATCHER.with(|d| d.get())
}

/// Run `fut` to completion from a synchronous caller. Outside any tokio context this is a
/// plain `block_on`; inside one (a caller that runs its own runtime) the future runs on ours and
/// the caller waits on a channel, since tokio forbids nesting `block_on`.
/// `None` only if the runtime dropped the task (it never stops, so: never).
pub(crate) fn block_on<F>(rt: &Handle, fut: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if Handle::try_current().is_err() {
        return Some(rt.block_on(fut));
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}
