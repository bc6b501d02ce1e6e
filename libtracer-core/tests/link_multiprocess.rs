//! Ruling 9 across processes: graphs in separate processes link over Unix sockets in one
//! rendezvous directory with no configuration, exchange writes and deliveries, and when one is
//! killed with SIGKILL the others drop its mount, its edges and its structural entry, and are
//! told within one second.
//!
//! The children are this test binary re-executed (through `/proc/self/exe`, so a rebuild that
//! replaces the file mid-run does not matter) to run the ignored test `multiprocess_child`,
//! which drives a graph from commands on stdin and answers on stdout (lines starting `@@ `; the
//! test harness's own lines are skipped). Every wait on a child has a deadline.

mod common;
mod link_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use common::poll::eventually;
use libtracer_core::link::{HostTransport, Link, LinkHandler};
use libtracer_core::wire::{encode, Frame, FrameDecoder, MAX_FRAME};
use libtracer_core::{
    DeliveryPolicy, EdgeState, Graph, Meta, Payload, StreamOptions, StructEvent, Vertex,
};
use link_support::{Recorder, TempDir};

/// Deadline for an awaited event (a link up, a delivery): generous, since a miss is a failure
/// and the machine may be loaded; waits poll and return as soon as the event is seen.
const T: Duration = Duration::from_secs(20);

fn host_graph(dir: &std::path::Path, name: &str) -> Graph {
    Graph::new(common::host_config(dir, name, 0)).expect("graph with host discovery")
}

fn word(s: &str) -> Payload {
    Payload::copy_from_slice(s.as_bytes())
}

/// Payloads and origins popped from a stream, as "payload@origin".
fn drain(v: &Vertex) -> Vec<String> {
    std::iter::from_fn(|| v.pop())
        .map(|s| {
            let text = String::from_utf8_lossy(s.payload.as_ref()).into_owned();
            format!("{text}@{}", s.origin.as_deref().unwrap_or("local"))
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// The child side

/// Not a test of its own: the body of a child process (run with `--ignored`).
#[test]
#[ignore = "entry point of the child processes of the multi-process tests"]
fn multiprocess_child() {
    let dir = std::env::var("LT_MP_DIR").expect("run by the multi-process tests only");
    let name = std::env::var("LT_MP_NAME").expect("LT_MP_NAME");
    if std::env::var("LT_MP_ROLE").as_deref() == Ok("transport") {
        // A bare transport, no graph: linked until stdin closes.
        let _t = HostTransport::start(std::path::Path::new(&dir), &name, Recorder::new())
            .expect("transport");
        println!("@@ ready");
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut rest);
        return;
    }
    if std::env::var("LT_MP_ROLE").as_deref() == Ok("respawn") {
        // Our executable file is replaced (a rebuild of the shared target directory), then we
        // spawn a child of our own, as every multi-process test does.
        let me = std::env::current_exe().expect("own path");
        let fake = me.with_extension("rebuilt");
        std::fs::write(&fake, "#!/bin/false\n").expect("write the replacement");
        std::fs::rename(&fake, &me).expect("replace our executable");
        let mut t = Proc::spawn_as(std::path::Path::new(&dir), &name, "transport");
        t.expect_line("ready");
        // Wait for our child before we say we are done: the parent may kill us once it reads
        // that, and an orphan whose stdout pipe has no reader any more fails writing its test
        // summary ("io error when listing tests: ... BrokenPipe").
        t.exit();
        println!("@@ respawned");
        return;
    }
    if std::env::var("LT_MP_ROLE").as_deref() == Ok("copy") {
        // Writes a copy of this binary for the parent to run: see `copy_of_this_binary`.
        std::fs::copy("/proc/self/exe", std::path::Path::new(&dir).join(&name))
            .expect("copy the test binary");
        println!("@@ copied");
        return;
    }
    if std::env::var("LT_MP_ROLE").as_deref() == Ok("stall") {
        stalling_peer(std::path::Path::new(&dir), &name);
        return;
    }
    let g = host_graph(std::path::Path::new(&dir), &name);
    let mut edges = Vec::new();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let args: Vec<&str> = line.split_whitespace().collect();
        let reply = match args.as_slice() {
            ["stream", path] => g
                .create_stream(path, StreamOptions::default())
                .map(|_| "ok".to_owned()),
            ["write", path, w] => g
                .write(path, word(w), Meta::default())
                .map(|_| "ok".to_owned()),
            ["sub", source, target] => g
                .subscribe(source, target, DeliveryPolicy::RELIABLE)
                .and_then(|e| {
                    e.wait_established(T)?;
                    edges.push(e);
                    Ok("ok".to_owned())
                }),
            ["pop", path] => Ok(g
                .vertex(path)
                .map(|v| drain(&v).join(","))
                .unwrap_or_default()),
            ["subs", path] => Ok(g.subscriber_count(path).to_string()),
            ["await_peers", want] => {
                let want: Vec<&str> = want.split(',').collect();
                let start = Instant::now();
                while g.peers() != want && start.elapsed() < T {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(g.peers().join(","))
            }
            ["await_gone", peer] => {
                let start = Instant::now();
                while g.peers().iter().any(|p| p == peer) && start.elapsed() < T {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(format!("{}", start.elapsed().as_millis()))
            }
            _ => Ok(format!("unknown command {line}")),
        };
        let reply = reply.unwrap_or_else(|e| format!("err {e}"));
        writeln!(out, "@@ {reply}").expect("stdout");
        out.flush().expect("stdout");
    }
}

/// A fake peer made of a bare socket: binds `<name>.sock`, answers the first connection's HELLO,
/// sends OK{1}, says `@@ sent` and then waits, reading nothing, until stdin closes or it is
/// killed.
fn stalling_peer(dir: &std::path::Path, name: &str) {
    use std::io::Read;
    let listener =
        std::os::unix::net::UnixListener::bind(dir.join(format!("{name}.sock"))).expect("bind");
    println!("@@ ready");
    let (mut s, _) = listener.accept().expect("accept");
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).expect("read HELLO");
        assert!(n > 0, "EOF before HELLO");
        dec.push(&buf[..n]);
        if let Some(f) = dec.pop().expect("a frame") {
            assert!(matches!(f, Frame::Hello { .. }), "{f:?}");
            break;
        }
    }
    let hello = link_support::hello(name);
    s.write_all(&encode(&hello).unwrap()).expect("write HELLO");
    s.write_all(&encode(&Frame::Ok { req: 1 }).unwrap())
        .expect("write OK");
    println!("@@ sent");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut rest);
    drop(s);
}

// ------------------------------------------------------------------------------------------
// The parent side

/// How long a child may take to answer one command. Generous: a missed deadline means a hang,
/// and the machine may be busy with other builds.
const REPLY: Duration = Duration::from_secs(60);

/// The executable children run: always this very test binary. Not `current_exe()`'s path,
/// which another build of the shared target directory may replace mid-run (and then names a
/// different binary, or none): exec of `/proc/self/exe` resolves, in the forked child, to the
/// file the parent is running, even if it has been replaced or deleted.
const SELF_EXE: &str = "/proc/self/exe";

struct Proc {
    /// Its stdin is open until `exit`: every role reads stdin to its end, then returns.
    child: Child,
    /// The child's `@@ ` lines, read by a thread of their own so every wait has a deadline;
    /// disconnected when the child's stdout closes (it exited).
    lines: Receiver<String>,
}

impl Proc {
    fn spawn(dir: &std::path::Path, name: &str) -> Proc {
        Self::spawn_as(dir, name, "graph")
    }

    fn spawn_as(dir: &std::path::Path, name: &str, role: &str) -> Proc {
        Self::spawn_from(std::path::Path::new(SELF_EXE), dir, name, role)
    }

    fn spawn_from(exe: &std::path::Path, dir: &std::path::Path, name: &str, role: &str) -> Proc {
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "multiprocess_child",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env("LT_MP_DIR", dir)
            .env("LT_MP_NAME", name)
            .env("LT_MP_ROLE", role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {} as {role} child {name}: {e}", exe.display()));
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            // The test harness's own lines are skipped.
            for l in stdout.lines().map_while(Result::ok) {
                if let Some(said) = l.strip_prefix("@@ ") {
                    if tx.send(said.to_owned()).is_err() {
                        return;
                    }
                }
            }
        });
        Proc { child, lines }
    }

    /// The child's next `@@ ` line.
    fn next_line(&mut self, during: &str) -> String {
        match self.lines.recv_timeout(REPLY) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("child silent for {REPLY:?} during {during}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("child exited during {during}: {:?}", self.child.try_wait())
            }
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("child stdin open");
        writeln!(stdin, "{line}").expect("child stdin");
        stdin.flush().expect("child stdin");
    }

    fn cmd(&mut self, line: &str) -> String {
        self.send(line);
        self.next_line(line)
    }

    /// Wait for the child to say `@@ <want>` of its own accord.
    fn expect_line(&mut self, want: &str) {
        assert_eq!(self.next_line(&format!("waiting for {want:?}")), want);
    }

    fn ok(&mut self, line: &str) {
        assert_eq!(self.cmd(line), "ok", "{line}");
    }

    /// Close the child's stdin, which makes it drop what it holds and return, and wait for it
    /// to exit successfully.
    fn exit(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + REPLY;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(Instant::now() < deadline, "child did not exit in {REPLY:?}");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "child exited with {status}");
    }

    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ruling9_two_processes_link_and_exchange_writes_and_deliveries() {
    let dir = TempDir::new("mp2");
    let a = host_graph(dir.path(), "a");
    let mut b = Proc::spawn(dir.path(), "b");
    assert_eq!(b.cmd("await_peers a"), "a");
    eventually(T, || a.peers() == ["b"]).expect("b mounted on a");

    // a subscribes to b's topic across the process boundary.
    b.ok("stream /topic");
    let inbox = a.create_stream("/inbox", StreamOptions::default()).unwrap();
    let edge = a
        .subscribe("/net/b/topic", "/inbox", DeliveryPolicy::RELIABLE)
        .unwrap();
    edge.wait_established(T).unwrap();
    for w in ["one", "two", "three"] {
        b.ok(&format!("write /topic {w}"));
    }
    eventually(T, || inbox.len() == 3).expect("three deliveries");
    assert_eq!(drain(&inbox), ["one@b", "two@b", "three@b"]);

    // b subscribes to a's topic; a's writes reach b, and a forwarded write lands on b.
    a.create_stream("/atopic", StreamOptions::default())
        .unwrap();
    b.ok("stream /binbox");
    b.ok("sub /net/a/atopic /binbox");
    assert_eq!(a.subscriber_count("/atopic"), 1);
    a.write("/atopic", word("hello"), Meta::default()).unwrap();
    a.write("/net/b/binbox", word("direct"), Meta::default())
        .unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < 2 && start.elapsed() < T {
        let r = b.cmd("pop /binbox");
        got.extend(r.split(',').filter(|s| !s.is_empty()).map(str::to_owned));
    }
    assert_eq!(got, ["hello@a", "direct@a"]);
    // A forwarded write to a missing path on the peer creates nothing there.
    a.write("/net/b/missing", word("x"), Meta::default())
        .unwrap();
    eventually(T, || a.remote_write_errors().0 == 1).expect("not_found came back");
    assert_eq!(b.cmd("pop /missing"), "");
    b.exit();
}

#[test]
fn ruling4_peer_identity_comes_from_the_kernel() {
    let dir = TempDir::new("cred");
    let r = Recorder::new();
    let _p = HostTransport::start(dir.path(), "p", r.clone()).unwrap();
    let mut t = Proc::spawn_as(dir.path(), "t", "transport");
    t.expect_line("ready");
    let link = r.wait_up("t", T);
    let id = link.peer();
    // SO_PEERCRED: the pid is the child's, which the child never told us.
    assert_eq!(id.pid, t.child.id());
    assert_ne!(id.pid, std::process::id());
    assert_eq!(id.uid, nix::unistd::geteuid().as_raw());
    assert_eq!(id.gid, nix::unistd::getegid().as_raw());
    drop(t);
    assert!(r.wait_down("t", T));
}

#[test]
fn ruling9_sigkilled_peer_is_cleaned_up_within_a_second() {
    let dir = TempDir::new("mp3");
    let a = host_graph(dir.path(), "a");
    let mut b = Proc::spawn(dir.path(), "b");
    let mut c = Proc::spawn(dir.path(), "c");
    assert_eq!(b.cmd("await_peers a,c"), "a,c");
    assert_eq!(c.cmd("await_peers a,b"), "a,b");
    eventually(T, || a.peers() == ["b", "c"]).expect("a sees b and c");

    // Edges both ways between a and b, and from c to b; a watches /net/:children[].
    let feed = a.create_stream("/feed", StreamOptions::default()).unwrap();
    a.subscribe("/net/:children[]", "/feed", DeliveryPolicy::RELIABLE)
        .unwrap();
    b.ok("stream /topic");
    let inbox = a.create_stream("/inbox", StreamOptions::default()).unwrap();
    let a_from_b = a
        .subscribe("/net/b/topic", "/inbox", DeliveryPolicy::RELIABLE)
        .unwrap();
    a_from_b.wait_established(T).unwrap();
    a.create_stream("/atopic", StreamOptions::default())
        .unwrap();
    b.ok("stream /binbox");
    b.ok("sub /net/a/atopic /binbox");
    c.ok("stream /cin");
    c.ok("sub /net/b/topic /cin");
    assert_eq!(b.cmd("subs /topic"), "2");
    assert_eq!(a.subscriber_count("/atopic"), 1);
    b.ok("write /topic before");
    eventually(T, || inbox.len() == 1).expect("a got b's write");
    let _ = feed_events(&feed);

    // c measures on its side from the moment it is told to watch.
    c.send("await_gone b");
    let killed = Instant::now();
    b.kill();
    let unmounted = eventually(T, || a.peers() == ["c"]).expect("b unmounted on a");
    let edges_gone =
        eventually(T, || a.subscriber_count("/atopic") == 0).expect("b's edge on a's vertex gone");
    let consumer_failed = eventually(T, || !matches!(a_from_b.state(), EdgeState::Established))
        .expect("a's edge from b failed");
    let seen = std::sync::Mutex::new(Vec::new());
    let structural = eventually(T, || {
        let mut seen = seen.lock().unwrap();
        seen.extend(feed_events(&feed));
        seen.contains(&StructEvent::Removed { path: "b".into() })
    })
    .expect("Removed b on /net/:children[]");
    let on_a = killed.elapsed();
    let c_ms: u64 = c.next_line("await_gone b").parse().expect("elapsed ms");
    eprintln!(
        "after SIGKILL: a unmounted in {unmounted:?}, edges gone +{edges_gone:?}, consumer edge failed \
         +{consumer_failed:?}, Removed event +{structural:?} (all within {on_a:?}); c unmounted in {c_ms} ms"
    );
    assert!(on_a < Duration::from_secs(1), "a cleaned up in {on_a:?}");
    assert!(c_ms < 1000, "c cleaned up in {c_ms} ms");
    assert_eq!(c.cmd("await_peers a"), "a");
    // The survivors still talk.
    a.create_stream("/after", StreamOptions::default()).unwrap();
    c.ok("stream /cafter");
    c.ok("sub /net/a/after /cafter");
    a.write("/after", word("still"), Meta::default()).unwrap();
    let start = Instant::now();
    let mut got = String::new();
    while got.is_empty() && start.elapsed() < T {
        got = c.cmd("pop /cafter");
    }
    assert_eq!(got, "still@a");
    // b's socket file is stale now; the next graph to start removes it.
    assert!(dir.path().join("b.sock").exists());
    let d = host_graph(dir.path(), "d");
    eventually(T, || d.peers() == ["a", "c"]).expect("d linked to a and c");
    assert!(!dir.path().join("b.sock").exists(), "stale socket removed");
    c.exit();
}

fn feed_events(v: &Vertex) -> Vec<StructEvent> {
    std::iter::from_fn(|| v.pop())
        .map(|s| StructEvent::decode(s.payload.as_ref()).unwrap())
        .collect()
}

/// Holds the link's reader inside `on_frame` for OK{1} until released, so the reader cannot see
/// the peer's EOF and close the link before the test writes into it.
struct Gate {
    rec: std::sync::Arc<Recorder>,
    entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl LinkHandler for Gate {
    fn on_up(&self, link: std::sync::Arc<dyn Link>) {
        self.rec.on_up(link)
    }
    fn on_frame(&self, link: &std::sync::Arc<dyn Link>, frame: Frame) {
        if frame == (Frame::Ok { req: 1 }) {
            let _ = self.entered.lock().unwrap().send(());
            let _ = self.release.lock().unwrap().recv_timeout(T);
        }
        self.rec.on_frame(link, frame)
    }
    fn on_down(&self, link: &std::sync::Arc<dyn Link>) {
        self.rec.on_down(link)
    }
}

/// Ruling 9 (a killed peer is cleaned up, the others go on): a write into a link whose peer was
/// killed mid-stream is an error, never SIGPIPE. A C or C++ program leaves SIGPIPE at its default
/// action, which kills the process, so a middleware must write with MSG_NOSIGNAL rather than
/// change the program's signal dispositions.
///
/// Every Rust program ignores SIGPIPE (std's runtime does it before `main`), so this process
/// cannot simply die of it. Instead the test blocks SIGPIPE on its thread: Linux never discards a
/// blocked signal, even an ignored one, so a SIGPIPE the kernel raises for a write stays pending
/// on the writing thread, and a signalfd shows it. Pending here is death for a C program.
///
/// The write must meet the dead socket before the link knows the peer is gone (after that the
/// link refuses to write at all), as a publisher streaming into a killed subscriber does: the
/// peer makes our reader busy in a callback, so it cannot see the EOF, and is killed there.
#[test]
fn ruling9_a_write_into_a_killed_peer_is_an_error_not_sigpipe() {
    use nix::sys::signal::{SigSet, Signal};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let mut pipe = SigSet::empty();
    pipe.add(Signal::SIGPIPE);
    pipe.thread_block().expect("block SIGPIPE");
    let pending = || {
        SignalFd::with_flags(&pipe, SfdFlags::SFD_NONBLOCK)
            .expect("signalfd")
            .read_signal()
            .expect("read signalfd")
            .map(|s| s.ssi_signo)
    };
    assert_eq!(pending(), None);
    let dir = TempDir::new("sigpipe");
    let mut p = Proc::spawn_as(dir.path(), "p", "stall");
    p.expect_line("ready");
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    let rec = Recorder::new();
    let gate = std::sync::Arc::new(Gate {
        rec: rec.clone(),
        entered: std::sync::Mutex::new(entered_tx),
        release: std::sync::Mutex::new(release_rx),
    });
    let _t = HostTransport::start(dir.path(), "a", gate).unwrap();
    let link = rec.wait_up("p", T);
    let frame = |i: u8| Frame::Write {
        req: 0,
        path: "/x".into(),
        meta: Meta::default(),
        payload: Payload::from(vec![i; 100]),
    };
    // Mid-stream: frames go out (head and payload in one vectored write each).
    for i in 0..10 {
        link.send(&frame(i)).expect("write while the peer lives");
    }
    p.expect_line("sent");
    entered.recv_timeout(T).expect("reader inside on_frame");
    p.kill();
    // A send may still be gathered behind the unread frames (docs/wire.md, "Gathered writes")
    // and return before the write that finds the peer gone: the error comes to a later send.
    let mut failed = None;
    let deadline = std::time::Instant::now() + T;
    for i in 0.. {
        if let Err(e) = link.send(&frame(i as u8)) {
            failed = Some(e);
            break;
        }
        if std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let raised = pending();
    release.send(()).unwrap();
    assert_eq!(raised, None, "a write into the dead peer raised SIGPIPE");
    let failed = failed.expect("a write into the dead peer failed");
    assert!(
        matches!(failed, libtracer_core::link::LinkError::Closed(_)),
        "{failed}"
    );
    assert!(rec.wait_down("p", T));
}

/// The multi-process tests themselves: a child spawned after the test binary's file was replaced
/// (another build of the shared target directory finishing mid-run) still runs this binary's
/// code, not whatever is at the path now.
#[test]
fn children_run_this_binary_even_when_its_file_is_replaced() {
    let dir = TempDir::new("respawn");
    // The child runs from a copy, which it replaces under itself: the real binary stays intact.
    let copy = copy_of_this_binary(dir.path(), "copy-of-test-binary");
    let mut p = Proc::spawn_from(&copy, dir.path(), "r", "respawn");
    p.expect_line("respawned");
    p.exit();
}

/// A copy of this test binary at `dir/name`, written by a child process and not by this one.
///
/// Executing a file fails with ETXTBSY while any process holds it open for writing. Had this
/// process written the copy, a child forked meanwhile by a test on another thread would inherit
/// the write descriptor (O_CLOEXEC closes it only at that child's exec, after the fork), and
/// our exec of the copy could land in that window. The copier is a process of its own that
/// forks nothing; once it has exited no descriptor of the copy is open anywhere.
fn copy_of_this_binary(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut copier = Proc::spawn_as(dir, name, "copy");
    copier.expect_line("copied");
    copier.exit();
    dir.join(name)
}
