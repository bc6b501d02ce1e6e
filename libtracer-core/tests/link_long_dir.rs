//! A rendezvous directory whose path is too long for a Unix socket address (`sun_path` holds
//! 107 bytes): graphs there bind, find each other, take over a stale socket and still refuse a
//! directory that is not private (issue 28: `rmw_init` failed with "path must be shorter than
//! SUN_LEN" for such a directory).

mod common;

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use libtracer_core::{DeliveryPolicy, Graph, StreamOptions};

use common::poll::eventually;

const T: Duration = Duration::from_secs(10);

/// A directory (removed on drop) whose path is exactly `len` bytes, made with `mode`.
struct LongDir(PathBuf);

impl LongDir {
    fn new(tag: &str, len: usize, mode: u32) -> LongDir {
        let head = std::env::temp_dir().join(format!("ld-{tag}-{}-", std::process::id()));
        let fill = len - head.as_os_str().len();
        let p = PathBuf::from(format!("{}{}", head.display(), "x".repeat(fill)));
        assert_eq!(p.as_os_str().len(), len);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::DirBuilder::new().mode(mode).create(&p).unwrap();
        // The umask may have taken bits off a wider mode.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        LongDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for LongDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn host_graph(dir: &Path, name: &str) -> Graph {
    Graph::new(common::host_config(dir, name, 0)).expect("graph in a long directory")
}

#[test]
fn graphs_in_a_200_character_directory_find_each_other() {
    let dir = LongDir::new("pair", 200, 0o700);
    assert!(dir.path().join("long-a.sock").as_os_str().len() > 107);
    let a = host_graph(dir.path(), "long-a");
    let b = host_graph(dir.path(), "long-b");
    eventually(T, || a.peers() == ["long-b"] && b.peers() == ["long-a"]).expect("a and b linked");
    assert!(dir.path().join("long-a.sock").exists() && dir.path().join("long-b.sock").exists());

    // A sample over the link, both ways of the connection being through descriptors.
    let t = a.create_stream("/t", StreamOptions::keep_last(4)).unwrap();
    let inbox = b.create_stream("/in", StreamOptions::keep_last(4)).unwrap();
    let e = b
        .subscribe("/net/long-a/t", "/in", DeliveryPolicy::default())
        .unwrap();
    e.wait_established(T).unwrap();
    t.write(common::p(b"over a long path"), common::m(1))
        .unwrap();
    let mut got = None;
    eventually(T, || {
        got = inbox.pop();
        got.is_some()
    })
    .expect("the sample arrived");
    assert_eq!(got.unwrap().payload.as_ref(), b"over a long path");

    // A third graph with a long name of its own finds both.
    let name_c = format!("long-c-{}", "n".repeat(60));
    let c = host_graph(dir.path(), &name_c);
    eventually(T, || c.peers() == ["long-a", "long-b"]).expect("c linked to a and b");
    eventually(T, || a.peers().contains(&name_c)).expect("a sees c");

    // A name held by a live graph is still refused there.
    assert!(Graph::new(common::host_config(dir.path(), "long-a", 0)).is_err());

    // Gone graphs leave no socket behind.
    drop((e, t, inbox, a, b, c));
    let socks = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".sock")
            })
            .count()
    };
    eventually(T, || socks() == 0).expect("every socket removed");
}

#[test]
fn a_stale_socket_in_a_long_directory_is_taken_over() {
    let dir = LongDir::new("stale", 200, 0o700);
    // A socket left by a dead graph: bound (through the directory's descriptor, as a graph
    // binds) and closed, so that it refuses connections.
    let d = std::fs::File::open(dir.path()).unwrap();
    let short = format!(
        "/proc/self/fd/{}/long-s.sock",
        std::os::fd::AsRawFd::as_raw_fd(&d)
    );
    drop(UnixListener::bind(&short).unwrap());
    assert!(dir.path().join("long-s.sock").exists());
    let s = host_graph(dir.path(), "long-s");
    let other = host_graph(dir.path(), "long-t");
    eventually(T, || s.peers() == ["long-t"] && other.peers() == ["long-s"]).expect("linked");
}

#[test]
fn a_long_directory_keeps_the_permission_checks() {
    // Readable by others: refused, long path or not.
    let open = LongDir::new("open", 200, 0o755);
    let Err(err) = Graph::new(common::host_config(open.path(), "long-p", 0)) else {
        panic!("a directory with group / world bits is refused");
    };
    assert!(err.to_string().contains("0700"), "{err}");
    // A symlink to a private long directory: refused too.
    let private = LongDir::new("target", 200, 0o700);
    let link = PathBuf::from(format!("{}-link", private.path().display()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(private.path(), &link).unwrap();
    let refused = Graph::new(common::host_config(&link, "long-q", 0));
    let _ = std::fs::remove_file(&link);
    let Err(err) = refused else {
        panic!("a symlinked directory is refused");
    };
    assert!(err.to_string().contains("symlink"), "{err}");
}
