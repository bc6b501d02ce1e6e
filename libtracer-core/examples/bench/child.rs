//! The child processes (this binary re-executed with `--child <role> <path>`) and the private
//! directory their sockets live in.

use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub fn bench_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("libtracer-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&d)
        .expect("bench dir");
    d
}

/// The command that runs this binary as the child `role`, given `path`.
pub fn command(role: &str, path: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("own path"));
    c.args(["--child", role]).arg(path);
    c
}

pub fn spawn(role: &str, path: &Path) -> Child {
    command(role, path).spawn().expect("spawn child")
}

pub fn wait_for_file(p: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.exists() {
        assert!(
            Instant::now() < deadline,
            "child did not bind {}",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn connect_retry(p: &Path) -> UnixStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match UnixStream::connect(p) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "connect {}: {e}", p.display());
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
