//! What the interop, QEMU and bench tests share: building the C side, a child process or a
//! socket as the wire (a reader thread per wire, so every wait has a timeout), and a host
//! session pumped over it, optionally through a lossy line.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tracer_serial::{Event, Session, SessionConfig};

pub mod qemu;

pub const INT32_HASH: &str =
    "RIHS01_b6578ded3c58c626cfe8d1a6fb6e04f706f97e9f03d2727c9ff4e74b1cef0deb";

pub fn mcu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcu")
}

/// A fresh directory for `name` under cargo's temp dir for integration tests (in the target
/// directory: nothing is left in /tmp, and a run starts from an empty one).
pub fn temp_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serial-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Builds mcu/host/loopback_main.c with the library using the system `cc`; None (and a
/// printed reason) when there is no `cc`.
pub fn build_loopback(dir: &Path) -> Option<PathBuf> {
    build_loopback_with(dir, "loopback_main", &["-O2"])
}

/// The same with AddressSanitizer and UBSan (any finding aborts the program), for the garbage
/// test; the plain build when `cc` has no sanitizers (printed).
pub fn build_loopback_sanitized(dir: &Path) -> Option<PathBuf> {
    let flags = [
        "-O1",
        "-g",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
    ];
    let probe = Command::new("cc")
        .args(flags)
        .args(["-x", "c", "-", "-o"])
        .arg(dir.join("probe"))
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .expect("stdin")
                .write_all(b"int main(void){return 0;}")?;
            c.wait()
        });
    if !probe.is_ok_and(|s| s.success()) {
        println!("note: cc cannot build with sanitizers; the garbage test runs without them");
        return build_loopback(dir);
    }
    build_loopback_with(dir, "loopback_asan", &flags)
}

fn build_loopback_with(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    if !have("cc") {
        println!("skipped: no C compiler `cc` on PATH");
        return None;
    }
    let mcu = mcu_dir();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .args(flags)
        .arg("-DTRACER_MCU_MAX_MSG=1100")
        .arg(mcu.join("tracer_mcu.c"))
        .arg(mcu.join("host/loopback_main.c"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("run cc");
    assert!(
        status.success(),
        "cc failed to build the host loopback program"
    );
    Some(out)
}

/// The byte stream to the MCU: what arrives comes through a channel fed by a reader thread.
pub struct Wire {
    tx: Box<dyn Write + Send>,
    rx: Receiver<Vec<u8>>,
    child: Option<Child>,
    /// The child's stdin when the wire is not stdin (pty mode): closing it stops the child.
    stdin: Option<std::process::ChildStdin>,
}

impl Wire {
    pub fn from_reader_writer(
        r: impl Read + Send + 'static,
        w: impl Write + Send + 'static,
    ) -> Wire {
        let (send, rx) = channel();
        std::thread::spawn(move || {
            let mut r = r;
            let mut buf = [0u8; 4096];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 || send.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Wire {
            tx: Box::new(w),
            rx,
            child: None,
            stdin: None,
        }
    }

    /// Runs `program args` with its stdin and stdout as the wire; killed when dropped.
    pub fn spawn(program: &Path, args: &[String]) -> Wire {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the MCU program");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut w = Wire::from_reader_writer(stdout, stdin);
        w.child = Some(child);
        w
    }

    /// Runs `program args pty`: the program opens a pseudo-terminal, prints `pty <path>`, and
    /// speaks on it; the wire is that path opened as a serial port would be.
    pub fn spawn_pty(program: &Path, args: &[String]) -> Wire {
        let mut child = Command::new(program)
            .args(args)
            .arg("pty")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the MCU program");
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        std::io::BufRead::read_line(&mut out, &mut line).expect("pty line");
        let path = line.trim().strip_prefix("pty ").unwrap_or_else(|| {
            let _ = child.kill();
            panic!("no pty path from the program: {line:?}")
        });
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open the pty");
        let mut w = Wire::from_reader_writer(tty.try_clone().expect("clone"), tty);
        w.stdin = child.stdin.take();
        w.child = Some(child);
        w
    }

    pub fn write(&mut self, bytes: &[u8]) {
        // A peer that died is noticed by the session's liveness, not here.
        let _ = self.tx.write_all(bytes).and_then(|_| self.tx.flush());
    }

    /// What arrives within `d`, with no session reading it.
    pub fn read_for(&mut self, d: Duration) -> Vec<u8> {
        let end = Instant::now() + d;
        let mut out = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(bytes) => out.extend_from_slice(&bytes),
                Err(_) => break,
            }
        }
        out
    }

    /// True while the child runs.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Closes the child's stdin (it exits at EOF) and waits up to `limit` for its status.
    pub fn close_and_wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        self.tx = Box::new(std::io::sink());
        self.stdin = None;
        let end = Instant::now() + limit;
        let child = self.child.as_mut()?;
        while Instant::now() < end {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.kill();
    }
}

#[path = "../../../libtracer-core/tests/common/corpus.rs"]
mod corpus;
pub use corpus::Rng;

/// A host session over a wire; `loss_per_mille` of the bytes each way are dropped or
/// corrupted (half each) between the two ends.
pub struct Host {
    pub session: Session,
    pub events: Vec<Event>,
    pub loss_per_mille: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    start: Instant,
    rng: Rng,
}

impl Host {
    pub fn new(loss_per_mille: u64) -> Host {
        Host {
            session: Session::new(SessionConfig::default(), 0),
            events: Vec::new(),
            loss_per_mille,
            bytes_in: 0,
            bytes_out: 0,
            start: Instant::now(),
            rng: Rng(0x1234_5678_9ABC_DEF1),
        }
    }

    pub fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn lossy(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        if self.loss_per_mille == 0 {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len());
        for b in bytes {
            if self.rng.next() % 1000 < self.loss_per_mille {
                if self.rng.next() & 1 == 0 {
                    continue;
                }
                out.push(b ^ (1 + (self.rng.next() % 255) as u8));
            } else {
                out.push(b);
            }
        }
        out
    }

    /// One round: waits up to 5 ms for bytes, runs the timers, writes what the session has.
    pub fn step(&mut self, wire: &mut Wire) {
        let now = self.now();
        let wait = self.session.poll_timeout().saturating_sub(now).min(5);
        match wire.rx.recv_timeout(Duration::from_millis(wait)) {
            Ok(bytes) => {
                self.bytes_in += bytes.len() as u64;
                let b = self.lossy(bytes);
                let now = self.now();
                self.session.handle_bytes(now, &b);
                // Take what else is already there, so a fast sender does not queue up.
                while let Ok(more) = wire.rx.try_recv() {
                    self.bytes_in += more.len() as u64;
                    let b = self.lossy(more);
                    self.session.handle_bytes(now, &b);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(Duration::from_millis(wait)),
        }
        let now = self.now();
        if self.session.poll_timeout() <= now {
            self.session.handle_timeout(now);
        }
        self.flush(wire);
        while let Some(e) = self.session.poll_event() {
            self.events.push(e);
        }
    }

    pub fn flush(&mut self, wire: &mut Wire) {
        if let Some(out) = self.session.poll_transmit() {
            self.bytes_out += out.len() as u64;
            let b = self.lossy(out);
            wire.write(&b);
        }
    }

    /// Steps until `done` says so or `limit` passes; returns whether `done` was reached.
    pub fn run_until(
        &mut self,
        wire: &mut Wire,
        limit: Duration,
        mut done: impl FnMut(&mut Host) -> bool,
    ) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if done(self) {
                return true;
            }
            self.step(wire);
        }
        done(self)
    }

    /// (sequence, first 4 payload bytes after the CDR header as i32) of `topic`'s Data events.
    pub fn values(&self, topic: &str) -> Vec<(u64, i32)> {
        let data = self.events.iter().filter_map(|e| match e {
            Event::Data {
                endpoint,
                sequence,
                payload,
            } if endpoint.topic == topic => Some((
                *sequence,
                i32::from_le_bytes(payload[4..8].try_into().unwrap()),
            )),
            _ => None,
        });
        data.collect()
    }

    pub fn alias(&self, topic: &str) -> Option<u8> {
        (0..64).find(|&a| self.session.endpoint(a).is_some_and(|e| e.topic == topic))
    }

    pub fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }
}

pub fn int32(v: i32) -> Vec<u8> {
    let mut c = vec![0, 1, 0, 0];
    c.extend_from_slice(&v.to_le_bytes());
    c
}
