//! The context's teardown thread: what `rmw_shutdown` must not do itself.
//!
//! rcl marks a context invalid only after `rmw_shutdown` returns, and rclpy calls `rcl_shutdown`
//! from its signal thread while the main thread, which still sees a valid context, shuts down
//! too (`try_shutdown`: "if ok(), shutdown()", which fails if the signal thread's shutdown ends
//! in between). The longer `rmw_shutdown` takes, the wider that window; Fast DDS only sets a
//! flag. So `rmw_shutdown` only sets a flag, as Fast DDS does. It does not even wake a thread:
//! on a loaded machine the woken thread takes the CPU from the one in `rmw_shutdown`, which then
//! sits between our return and rcl's invalidation for as long as the teardown runs (measured:
//! a condition-variable wake here still failed 1 in 20 demo nodes' Ctrl-C). This thread, made
//! with the context, looks at the flag every [`POLL`] and then closes the links (peers see us
//! go) and finishes the recorder's file; `rmw_context_fini` wakes it and waits for it.
//!
//! Nothing promised is lost by doing it later: a link write is a synchronous socket write, so a
//! sample whose publish returned is in the peer's socket already, and closing keeps it there.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use libtracer_core::Graph;
use parking_lot::Mutex;

/// How often the idle thread looks at the flag. A process that exits closes its sockets itself
/// (peers see that at once), so this only delays the goodbye of a process that lives on after
/// `rmw_shutdown`.
const POLL: Duration = Duration::from_millis(100);

const NOTHING: u8 = 0;
/// `rmw_shutdown`: close the links and finish the recording.
const SHUTDOWN: u8 = 1;
/// The context went without `rmw_shutdown`: close the links only.
const DROPPED: u8 = 2;

pub struct Teardown {
    ask: Arc<AtomicU8>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// For the inline fallback when no thread could be made.
    graph: Graph,
}

fn run(graph: &Graph, ask: u8) {
    graph.shutdown();
    if ask == SHUTDOWN {
        crate::record::context_shutdown();
    }
}

impl Teardown {
    pub fn start(graph: Graph) -> Teardown {
        let ask = Arc::new(AtomicU8::new(NOTHING));
        let (a, g) = (ask.clone(), graph.clone());
        let thread = std::thread::Builder::new()
            .name("rmw_tracer-teardown".into())
            .spawn(move || loop {
                match a.load(Ordering::Acquire) {
                    NOTHING => std::thread::park_timeout(POLL),
                    what => return run(&g, what),
                }
            })
            .ok();
        Teardown {
            ask,
            thread: Mutex::new(thread),
            graph,
        }
    }

    /// Set `what` if nothing was asked yet; true if this call set it.
    fn ask(&self, what: u8) -> bool {
        self.ask
            .compare_exchange(NOTHING, what, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// `rmw_shutdown`: one atomic store (the thread sees it within [`POLL`]).
    pub fn request(&self) {
        if self.ask(SHUTDOWN) && self.thread.lock().is_none() {
            run(&self.graph, SHUTDOWN); // no thread to be had: late rather than never
        }
    }

    /// `rmw_context_fini`: wake the thread and wait until the teardown is done.
    pub fn finish(&self) {
        self.request();
        let h = self.thread.lock().take();
        if let Some(h) = h {
            if h.thread().id() != std::thread::current().id() {
                h.thread().unpark();
                let _ = h.join();
            }
        }
    }
}

impl Drop for Teardown {
    /// Never joins: the last reference to a context can go on a link's reader thread, which the
    /// teardown itself joins.
    fn drop(&mut self) {
        if self.ask(DROPPED) {
            match self.thread.lock().as_ref() {
                Some(h) => h.thread().unpark(),
                None => run(&self.graph, DROPPED),
            }
        }
    }
}
