//! Microcontrollers on serial ports (issue 27, docs/serial.md section 9): `RMW_TRACER_SERIAL`
//! names the ports (`/dev/ttyACM0:115200`, several comma separated) on the ROS processes of a
//! host; exactly one process holds each port and makes the MCU's node appear in the graph.
//!
//! **Election.** Each process that names a port runs one thread for it, which tries to take
//! an exclusive `flock` on `<rendezvous base>/serial-<port>.lock` every 250 ms. The kernel
//! drops the lock when its holder dies, however it dies, so another process that named the
//! port holds it within 250 ms, and the MCU (asked to declare again by the new session's SYNC)
//! is back in the graph within about 300 ms more. The lock is per port, not per domain: a
//! port is one device whatever domain a process is in.
//!
//! **The holder** drives one `tracer_serial::Session` for the port from that thread
//! (`driver`), and runs the MCU's node as a graph of its own (`proxy`): every process of the
//! host (and of linked hosts) finds it in the rendezvous directory like any other, so nothing
//! is forwarded a second hop.

mod driver;
mod port;
mod proxy;

use std::fs::File;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use libtracer_core::{Discovery, GraphConfig};
use nix::fcntl::{Flock, FlockArg};

use crate::log::log;
use port::PortSpec;

/// The variable that names the ports.
pub const SERIAL_ENV: &str = "RMW_TRACER_SERIAL";
/// How often a process that does not hold a port tries to take it.
const ELECTION: Duration = Duration::from_millis(250);

/// One process runs the ports, whatever number of contexts it has: the first context that
/// starts them; they stop with it.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// The ports of this process; dropping it stops their threads (the MCUs' nodes leave the graph
/// and the locks are released).
pub struct SerialLinks {
    stop: Arc<AtomicBool>,
    threads: Vec<(Arc<UnixStream>, JoinHandle<()>)>,
}

/// The ports `RMW_TRACER_SERIAL` names (entries that do not parse are logged and left out).
fn ports_from_env() -> Vec<PortSpec> {
    let Ok(v) = std::env::var(SERIAL_ENV) else {
        return Vec::new();
    };
    let mut out: Vec<PortSpec> = Vec::new();
    for entry in v.split(',').filter(|e| !e.trim().is_empty()) {
        match PortSpec::parse(entry) {
            Ok(p) if out.iter().all(|o| o.path != p.path) => out.push(p),
            Ok(_) => {}
            Err(e) => log!(RMW_LOG_SEVERITY_WARN, "{SERIAL_ENV}: {e}; left out"),
        }
    }
    out
}

/// Where the lock files live: the base of the rendezvous directories (the parent of the
/// domain's directory), private to the user as they are.
fn lock_dir(template: &GraphConfig) -> PathBuf {
    let domain_dir = template
        .rendezvous_dir
        .clone()
        .unwrap_or_else(|| libtracer_core::link::default_rendezvous_dir(template.domain_id));
    domain_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or(domain_dir)
}

fn lock_path(dir: &Path, port: &str) -> PathBuf {
    let name: String = port
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("serial-{name}.lock"))
}

/// Start the ports `RMW_TRACER_SERIAL` names, for a context whose graph is configured as
/// `template` (the MCU's graph joins the same domain, directory and network). `None` when the
/// variable is unset, another context of this process runs them already, or discovery is off
/// (the MCU's node would be seen by no one).
pub fn start(template: &GraphConfig) -> Option<SerialLinks> {
    let ports = ports_from_env();
    if ports.is_empty() {
        return None;
    }
    if template.discovery != Discovery::Host {
        log!(
            RMW_LOG_SEVERITY_WARN,
            "{SERIAL_ENV} is ignored with ROS_AUTOMATIC_DISCOVERY_RANGE=OFF"
        );
        return None;
    }
    if RUNNING.swap(true, Ordering::AcqRel) {
        return None;
    }
    let dir = lock_dir(template);
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for spec in ports {
        let Ok((rx, tx)) = UnixStream::pair() else {
            continue;
        };
        if rx.set_nonblocking(true).is_err() || tx.set_nonblocking(true).is_err() {
            continue;
        }
        let tx = Arc::new(tx);
        let (stop2, tx2, template) = (stop.clone(), tx.clone(), template.clone());
        let lock = lock_path(&dir, &spec.path);
        let made = std::thread::Builder::new()
            .name("rmw_tracer-serial".into())
            .spawn(move || port_thread(spec, lock, template, rx, tx2, &stop2));
        match made {
            Ok(h) => threads.push((tx, h)),
            Err(e) => log!(RMW_LOG_SEVERITY_WARN, "cannot start a serial thread: {e}"),
        }
    }
    Some(SerialLinks { stop, threads })
}

/// Stand for election until elected, then hold the port until stopped.
fn port_thread(
    spec: PortSpec,
    lock: PathBuf,
    template: GraphConfig,
    wake_rx: UnixStream,
    wake_tx: Arc<UnixStream>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Acquire) {
        if let Some(held) = try_lock(&lock) {
            let mut d = driver::Driver::new(spec, template, wake_rx, wake_tx);
            d.run(stop);
            drop(d);
            drop(held);
            return;
        }
        let _ = port::wait(None, &wake_rx, ELECTION);
        port::drain_wake(&wake_rx);
    }
}

/// The port's lock, if no other process holds it.
fn try_lock(path: &Path) -> Option<Flock<File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()
}

impl Drop for SerialLinks {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for (wake, _) in &self.threads {
            let _ = std::io::Write::write(&mut &**wake, &[1]);
        }
        for (_, t) in self.threads.drain(..) {
            let _ = t.join();
        }
        RUNNING.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_file_per_port() {
        let dir = Path::new("/run/user/1/rmw_tracer");
        assert_eq!(
            lock_path(dir, "/dev/ttyACM0"),
            dir.join("serial-_dev_ttyACM0.lock")
        );
    }

    #[test]
    fn the_lock_is_exclusive() {
        let dir = std::env::temp_dir().join(format!("rmw_tracer-serial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = lock_path(&dir, "/dev/pts/99");
        let held = try_lock(&path).expect("first");
        assert!(try_lock(&path).is_none(), "a second holder");
        drop(held);
        assert!(try_lock(&path).is_some(), "free again");
        let _ = std::fs::remove_dir_all(dir);
    }
}
