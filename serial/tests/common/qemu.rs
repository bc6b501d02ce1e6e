//! Building the firmware (mcu/Makefile) and running it under qemu-system-arm with its UART on
//! a Unix socket (no network: `-nic none`, the socket is a file in a temp dir).

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{have, mcu_dir, Wire};

/// Builds the firmware into `dir/build`; None (and a printed reason) without the toolchain.
pub fn build_firmware(dir: &Path) -> Option<PathBuf> {
    for tool in ["arm-none-eabi-gcc", "arm-none-eabi-size", "make"] {
        if !have(tool) {
            println!("skipped: `{tool}` not found (mcu/setup-deps installs the toolchain)");
            return None;
        }
    }
    let build = dir.join("build");
    let out = Command::new("make")
        .arg("-C")
        .arg(mcu_dir())
        .arg(format!("BUILD={}", build.display()))
        .output()
        .expect("run make");
    assert!(
        out.status.success(),
        "firmware build failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(build.join("firmware.elf"))
}

/// QEMU, killed (and reaped) when dropped, whatever happened in the test.
pub struct Qemu {
    child: Child,
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts QEMU on `elf` with its serial port connected to a socket we listen on; returns it
/// and the wire. None (printed) without qemu-system-arm.
pub fn start(elf: &Path, dir: &Path) -> Option<(Qemu, Wire)> {
    if !have("qemu-system-arm") {
        println!("skipped: qemu-system-arm not found (mcu/setup-deps installs it)");
        return None;
    }
    let sock = dir.join("uart0.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).expect("bind the UART socket");
    listener.set_nonblocking(true).expect("nonblocking");
    let log = std::fs::File::create(dir.join("qemu.log")).expect("log file");
    let child = Command::new("qemu-system-arm")
        .args([
            "-M",
            "lm3s6965evb",
            "-nographic",
            "-monitor",
            "none",
            "-nic",
            "none",
        ])
        .arg("-chardev")
        .arg(format!("socket,id=uart0,path={}", sock.display()))
        .args(["-serial", "chardev:uart0", "-kernel"])
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("spawn qemu-system-arm");
    let mut qemu = Qemu { child };
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).expect("blocking");
                let reader = stream.try_clone().expect("clone");
                return Some((qemu, Wire::from_reader_writer(reader, stream)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < end => {
                if let Ok(Some(status)) = qemu.child.try_wait() {
                    let log = std::fs::read_to_string(dir.join("qemu.log")).unwrap_or_default();
                    panic!("qemu exited ({status}) before connecting:\n{log}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                let _ = qemu.child.kill();
                panic!("qemu did not connect to {}: {e}", sock.display());
            }
        }
    }
}
