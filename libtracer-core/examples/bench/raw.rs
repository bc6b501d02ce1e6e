//! The baseline: a raw Unix-socket ping-pong of the same payloads, no framing at all.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Instant;

use crate::child;

/// Child: per connection, read the size (u32 LE), then echo messages of that size until EOF.
/// Size 0 ends the child.
pub fn child(path: &Path) {
    let l = UnixListener::bind(path).expect("bind");
    for conn in l.incoming() {
        let Ok(mut s) = conn else { break };
        let mut hdr = [0u8; 4];
        if s.read_exact(&mut hdr).is_err() {
            break;
        }
        let size = u32::from_le_bytes(hdr) as usize;
        if size == 0 {
            break;
        }
        let mut buf = vec![0u8; size];
        while s.read_exact(&mut buf).is_ok() {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    }
}

/// The raw echo child, listening on `raw.sock` in the bench directory.
pub struct RawChild {
    child: Child,
    path: PathBuf,
}

impl RawChild {
    pub fn start(dir: &Path) -> RawChild {
        let path = dir.join("raw.sock");
        let child = child::spawn("raw", &path);
        child::wait_for_file(&path);
        RawChild { child, path }
    }

    /// A new connection for messages of `size` bytes.
    pub fn connect(&self, size: usize) -> RawPing {
        let mut s = child::connect_retry(&self.path);
        s.write_all(&(size as u32).to_le_bytes()).unwrap();
        RawPing {
            s,
            msg: vec![0x5au8; size],
            back: vec![0u8; size],
        }
    }

    pub fn stop(mut self) {
        let mut s = child::connect_retry(&self.path);
        let _ = s.write_all(&0u32.to_le_bytes());
        let _ = self.child.wait();
    }
}

/// One raw ping-pong connection to the raw child, for one message size.
pub struct RawPing {
    s: UnixStream,
    msg: Vec<u8>,
    back: Vec<u8>,
}

impl RawPing {
    pub fn run(&mut self, n: usize, samples: &mut Vec<u64>) {
        for _ in 0..n {
            let t0 = Instant::now();
            self.s.write_all(&self.msg).unwrap();
            self.s.read_exact(&mut self.back).unwrap();
            samples.push(t0.elapsed().as_nanos() as u64);
        }
    }
}
