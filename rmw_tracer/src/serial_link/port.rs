//! A serial port opened raw, and waiting on it (docs/serial.md section 9, step 1): 8N1, no
//! echo, no line editing, no flow control, `VMIN=1`, non-blocking, so the serial thread reads
//! what is there and otherwise sleeps in `poll` until a byte comes, a message waits to go to
//! the MCU (the wake socket) or the session's next timer.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg, SpecialCharacterIndices};

/// One `RMW_TRACER_SERIAL` entry: `<path>[:<baud>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub path: String,
    pub baud: u32,
}

pub const DEFAULT_BAUD: u32 = 115_200;

/// Why an `RMW_TRACER_SERIAL` entry was left out (logged once, with the entry).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{0}: a port is an absolute path (/dev/ttyACM0:115200)")]
    NotAbsolute(String),
    #[error("{0}: no such baud rate")]
    Baud(String),
}

impl PortSpec {
    /// `/dev/ttyACM0:115200`, or a path alone (115200). A path may hold `:` itself: only a
    /// number after the last one is a baud rate.
    pub fn parse(s: &str) -> Result<PortSpec, SpecError> {
        let s = s.trim();
        let (path, baud) = match s.rsplit_once(':') {
            Some((p, b)) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) => {
                let baud: u32 = b.parse().map_err(|_| SpecError::Baud(s.to_owned()))?;
                (p, baud)
            }
            _ => (s, DEFAULT_BAUD),
        };
        if !path.starts_with('/') {
            return Err(SpecError::NotAbsolute(s.to_owned()));
        }
        baud_rate(baud).ok_or_else(|| SpecError::Baud(s.to_owned()))?;
        Ok(PortSpec {
            path: path.to_owned(),
            baud,
        })
    }
}

fn baud_rate(baud: u32) -> Option<BaudRate> {
    use BaudRate::*;
    Some(match baud {
        9_600 => B9600,
        19_200 => B19200,
        38_400 => B38400,
        57_600 => B57600,
        115_200 => B115200,
        230_400 => B230400,
        460_800 => B460800,
        500_000 => B500000,
        921_600 => B921600,
        1_000_000 => B1000000,
        1_500_000 => B1500000,
        2_000_000 => B2000000,
        3_000_000 => B3000000,
        4_000_000 => B4000000,
        _ => return None,
    })
}

/// An open port in raw mode.
pub struct Port {
    file: File,
}

/// What a wait ended with.
pub struct Woken {
    pub readable: bool,
    /// The port hung up or failed (a pty whose other end closed, a USB port unplugged): it is
    /// to be closed and opened again.
    pub broken: bool,
}

impl Port {
    pub fn open(spec: &PortSpec) -> std::io::Result<Port> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(&spec.path)?;
        let mut t = termios::tcgetattr(&file)?;
        termios::cfmakeraw(&mut t);
        let baud = baud_rate(spec.baud).unwrap_or(BaudRate::B115200);
        termios::cfsetspeed(&mut t, baud)?;
        // 8N1, receiver on, modem lines ignored, no hardware flow control.
        t.control_flags &= !(ControlFlags::PARENB | ControlFlags::CSTOPB | ControlFlags::CRTSCTS);
        t.control_flags |= ControlFlags::CS8 | ControlFlags::CREAD | ControlFlags::CLOCAL;
        t.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        termios::tcsetattr(&file, SetArg::TCSANOW, &t)?;
        Ok(Port { file })
    }

    /// What is there (`Ok(0)` when nothing is).
    pub fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.file.read(buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                Ok(0)
            }
            r => r,
        }
    }

    /// Writes `bytes`, waiting at most `patience` for room each time the kernel's buffer is
    /// full; what cannot go by then is dropped, as on a line nobody reads (reliable streams
    /// send it again, docs/serial.md section 5).
    pub fn write(&mut self, mut bytes: &[u8], patience: Duration) -> std::io::Result<()> {
        while !bytes.is_empty() {
            match self.file.write(bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let ms = u16::try_from(patience.as_millis()).unwrap_or(u16::MAX);
                    let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLOUT)];
                    if poll(&mut fds, PollTimeout::from(ms)).unwrap_or(0) == 0 {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Sleeps until `port` (if open) has bytes, `wake` was written to, or `timeout` passed.
pub fn wait(port: Option<&Port>, wake: &UnixStream, timeout: Duration) -> std::io::Result<Woken> {
    let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    let mut fds = vec![PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
    if let Some(p) = port {
        fds.push(PollFd::new(p.file.as_fd(), PollFlags::POLLIN));
    }
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => {}
        Err(e) => return Err(e.into()),
    }
    let ev = fds
        .get(1)
        .and_then(|f| f.revents())
        .unwrap_or(PollFlags::empty());
    Ok(Woken {
        readable: ev.contains(PollFlags::POLLIN),
        broken: ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL),
    })
}

/// Drains the wake socket (its bytes only say "look at the inboxes").
pub fn drain_wake(mut wake: &UnixStream) {
    let mut buf = [0u8; 64];
    while matches!(wake.read(&mut buf), Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_specs() {
        assert_eq!(
            PortSpec::parse("/dev/ttyACM0:115200"),
            Ok(PortSpec {
                path: "/dev/ttyACM0".into(),
                baud: 115_200
            })
        );
        assert_eq!(PortSpec::parse(" /dev/pts/3 ").map(|p| p.baud), Ok(115_200));
        assert_eq!(
            PortSpec::parse("/dev/serial/by-path/pci-0:1.0:921600").map(|p| p.path),
            Ok("/dev/serial/by-path/pci-0:1.0".into())
        );
        assert_eq!(
            PortSpec::parse("ttyACM0"),
            Err(SpecError::NotAbsolute("ttyACM0".into()))
        );
        assert_eq!(
            PortSpec::parse("/dev/ttyACM0:12345"),
            Err(SpecError::Baud("/dev/ttyACM0:12345".into()))
        );
    }
}
