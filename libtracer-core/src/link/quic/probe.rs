//! A bare QUIC ping-pong for the benchmarks (`examples/bench_quic.rs`, tools/bench/net): the
//! same quinn, TLS, transport settings, socket buffers and runtime as a link, but none of
//! libtracer above them (no frames, no codec, no graph, no rmw). It bounds what the QUIC
//! engine itself costs a round trip on a link, so that the benchmark can say how much of
//! rmw_tracer's figure is quinn's and how much is ours (docs/network.md section 11).
//!
//! Messages on one bidirectional stream: a 4-byte length (little endian), then that many
//! bytes; the echo sends each back as it came, but for one whose length has the top bit set
//! (`NO_ECHO`: a burst's messages, [`probe_burst`], whose end is an empty message echoed).
//! Three ways to drive it:
//! - [`ProbeMode::Task`]: the loop is a task on the runtime's worker, as quinn's own examples
//!   run: no thread hand-off at all (quinn's floor on this machine);
//! - [`ProbeMode::Thread`]: the loop is a plain thread that waits on the runtime for each
//!   write and read, as an rcl thread does with a link: each message crosses between that
//!   thread and the worker once per side and direction;
//! - [`ProbeMode::Inline`]: quinn-proto without quinn's runtime, driven by the thread that
//!   uses it (`probe_inline.rs`): the floor of a design that sends and receives inline;
//! - [`ProbeMode::Engine`]: quinn-proto on the runtime-free engine (`probe_engine.rs`): the
//!   thread sends inline, the engine loop receives and hands each message to it (the shape of
//!   a link on the engine, docs/network.md section 4a).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use super::{new_endpoint, runtime, tls, tuning};

/// How the probe's loop is driven (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeMode {
    /// A task on the runtime's worker.
    Task,
    /// A plain thread blocking on the runtime per operation.
    Thread,
    /// quinn-proto alone, driven by the calling thread: no runtime at all (`probe_inline.rs`).
    Inline,
    /// quinn-proto on the engine: sent inline, received by the engine loop (`probe_engine.rs`).
    Engine,
}

impl ProbeMode {
    /// `task`, `thread`, `inline` or `engine`.
    pub fn parse(s: &str) -> Option<ProbeMode> {
        match s {
            "task" => Some(ProbeMode::Task),
            "thread" => Some(ProbeMode::Thread),
            "inline" => Some(ProbeMode::Inline),
            "engine" => Some(ProbeMode::Engine),
            _ => None,
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            ProbeMode::Task => "task",
            ProbeMode::Thread => "thread",
            ProbeMode::Inline => "inline",
            ProbeMode::Engine => "engine",
        }
    }
}

/// The echo ends when it has had no connection for this long.
pub(super) const IDLE: Duration = Duration::from_secs(120);
/// The largest message either side takes.
pub(super) const MAX_MESSAGE: usize = 64 << 20;
/// In a message's length: do not echo this one.
pub(super) const NO_ECHO: u32 = 1 << 31;

fn transport() -> std::sync::Arc<quinn::TransportConfig> {
    tls::transport(Duration::from_secs(10), Duration::from_secs(1))
}

/// Serve the echo at `addr`, each connection on its own, until none is open and none came for
/// two minutes.
pub fn probe_echo(addr: SocketAddr, mode: ProbeMode) -> Result<(), String> {
    let id = tls::Identity::self_signed()?;
    let server = tls::server_config(&id, tls::ALPN_LINK, transport())?;
    match mode {
        ProbeMode::Inline => super::probe_inline::echo(addr, server),
        ProbeMode::Engine => super::probe_engine::echo(addr, server),
        ProbeMode::Task => echo_on_runtime(addr, server, false),
        ProbeMode::Thread => echo_on_runtime(addr, server, true),
    }
}

/// The echo on the runtime; with `threaded`, each connection served by a plain thread.
fn echo_on_runtime(
    addr: SocketAddr,
    server: quinn::ServerConfig,
    threaded: bool,
) -> Result<(), String> {
    let rt = runtime::handle()?;
    let sock = tuning::bind(addr).map_err(|e| e.to_string())?;
    let ep = new_endpoint(&rt, Some(server), sock).map_err(|e| e.to_string())?;
    let mut last = Instant::now();
    while last.elapsed() < IDLE || ep.open_connections() > 0 {
        let wait = IDLE
            .saturating_sub(last.elapsed())
            .max(Duration::from_secs(1));
        let ep2 = ep.clone();
        let accepted = runtime::block_on(&rt, async move {
            let incoming = tokio::time::timeout(wait, ep2.accept()).await.ok()??;
            let conn = incoming.await.ok()?;
            let (send, recv) = conn.accept_bi().await.ok()?;
            Some((conn, send, recv))
        })
        .flatten();
        // Nothing within the wait, or a connection that failed before its stream.
        let Some((conn, send, recv)) = accepted else {
            continue;
        };
        last = Instant::now();
        // Each connection served on its own, so that one whose peer vanished without closing
        // (until the idle timeout) does not hold up the next.
        let done = |served: Result<(), String>, conn: quinn::Connection| {
            if let Err(e) = served {
                eprintln!("bench_quic: echo: {e}");
            }
            conn.close(0u32.into(), b"done");
        };
        if threaded {
            let rt = rt.clone();
            std::thread::spawn(move || done(echo_thread(&rt, send, recv), conn));
        } else {
            rt.spawn(async move { done(echo_task(send, recv).await, conn) });
        }
    }
    Ok(())
}

/// Run `fut` as a task on the runtime's worker (`Handle::block_on` would poll it on the
/// calling thread, which is `ProbeMode::Thread`'s shape) and wait for it.
fn on_worker<T: Send + 'static>(
    rt: &Handle,
    fut: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    rt.block_on(rt.spawn(fut)).map_err(|e| e.to_string())?
}

async fn read_message(recv: &mut quinn::RecvStream, buf: &mut Vec<u8>) -> Result<bool, String> {
    let mut len = [0u8; 4];
    match recv.read_exact(&mut len).await {
        Ok(()) => {}
        // The peer is done: it finished the stream or closed the connection between messages.
        Err(quinn::ReadExactError::FinishedEarly(0))
        | Err(quinn::ReadExactError::ReadError(quinn::ReadError::ConnectionLost(_))) => {
            return Ok(false)
        }
        Err(e) => return Err(e.to_string()),
    }
    let n = body_len(len)?;
    buf.resize(4 + n, 0);
    buf[..4].copy_from_slice(&len);
    recv.read_exact(&mut buf[4..])
        .await
        .map_err(|e| e.to_string())?;
    Ok(true)
}

/// The body length a message's 4-byte prefix says (without the `NO_ECHO` bit), if it is one
/// either side takes.
pub(super) fn body_len(prefix: [u8; 4]) -> Result<usize, String> {
    let n = (u32::from_le_bytes(prefix) & !NO_ECHO) as usize;
    if n > MAX_MESSAGE {
        return Err(format!("a message of {n} bytes (at most {MAX_MESSAGE})"));
    }
    Ok(n)
}

/// Whether a whole message (length first) is to be sent back.
pub(super) fn echoed(message: &[u8]) -> bool {
    message[3] & 0x80 == 0
}

async fn echo_task(mut send: quinn::SendStream, mut recv: quinn::RecvStream) -> Result<(), String> {
    let mut buf = Vec::new();
    while read_message(&mut recv, &mut buf).await? {
        if echoed(&buf) {
            send.write_all(&buf).await.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn echo_thread(
    rt: &Handle,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
) -> Result<(), String> {
    let mut buf = Vec::new();
    while rt.block_on(read_message(&mut recv, &mut buf))? {
        if echoed(&buf) {
            rt.block_on(send.write_all(&buf))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Round trips of `size`-byte messages to the echo at `addr`: `iters / 10 + 1` unmeasured,
/// then `iters` measured, each one message in flight. Returns the measured ones.
pub fn probe_ping(
    addr: SocketAddr,
    size: usize,
    iters: usize,
    mode: ProbeMode,
) -> Result<Vec<Duration>, String> {
    run(
        addr,
        Round::new(size, 1, true)?,
        iters / 10 + 1,
        iters,
        mode,
    )
}

/// Rounds of `burst` messages of `size` bytes sent back to back to the echo at `addr`, each
/// round timed from its first write to the echo of the empty message that ends it (one RTT
/// more than the transfer, a few µs against tens of ms at 1 MiB): one unmeasured, then
/// `rounds` measured. Returns the measured ones (throughput = burst x size / time).
pub fn probe_burst(
    addr: SocketAddr,
    size: usize,
    burst: usize,
    rounds: usize,
    mode: ProbeMode,
) -> Result<Vec<Duration>, String> {
    run(addr, Round::new(size, burst, false)?, 1, rounds, mode)
}

/// What one round writes (`count` times `body`, then `tail`) and the length of the one
/// message it waits for.
pub(super) struct Round {
    pub(super) body: Vec<u8>,
    pub(super) count: usize,
    pub(super) tail: Vec<u8>,
    pub(super) reply: usize,
}

impl Round {
    /// `count` messages of `size` bytes, each echoed, or (`echoed` false) none but the empty
    /// message that ends the round.
    fn new(size: usize, count: usize, echoed: bool) -> Result<Round, String> {
        if size > MAX_MESSAGE || count == 0 {
            return Err(format!(
                "size {size} (at most {MAX_MESSAGE}) and messages per round {count} (at least 1)"
            ));
        }
        let flags = if echoed { 0 } else { NO_ECHO };
        let mut body = vec![0x5au8; 4 + size];
        body[..4].copy_from_slice(&(size as u32 | flags).to_le_bytes());
        let (tail, reply) = if echoed {
            (Vec::new(), body.len())
        } else {
            (vec![0; 4], 4)
        };
        Ok(Round {
            body,
            count,
            tail,
            reply,
        })
    }
}

fn run(
    addr: SocketAddr,
    plan: Round,
    warm: usize,
    measured: usize,
    mode: ProbeMode,
) -> Result<Vec<Duration>, String> {
    if measured == 0 {
        return Err("no rounds to measure".into());
    }
    match mode {
        ProbeMode::Inline => {
            super::probe_inline::ping(addr, client()?, tls::SERVER_NAME, &plan, warm, measured)
        }
        ProbeMode::Engine => {
            super::probe_engine::ping(addr, client()?, tls::SERVER_NAME, &plan, warm, measured)
        }
        ProbeMode::Task => run_on_runtime(addr, plan, warm, measured, false),
        ProbeMode::Thread => run_on_runtime(addr, plan, warm, measured, true),
    }
}

/// `run` on the runtime: the loop a task on its worker, or with `threaded` this thread.
fn run_on_runtime(
    addr: SocketAddr,
    plan: Round,
    warm: usize,
    measured: usize,
    threaded: bool,
) -> Result<Vec<Duration>, String> {
    let rt = runtime::handle()?;
    let (ep, conn, mut send, mut recv) = connect(&rt, addr)?;
    let rounds = warm + measured;
    let times = if !threaded {
        on_worker(&rt, async move {
            let (mut buf, mut times) = (Vec::new(), Vec::with_capacity(rounds));
            for _ in 0..rounds {
                let t0 = Instant::now();
                for _ in 0..plan.count {
                    write(send.write_all(&plan.body).await)?;
                }
                write(send.write_all(&plan.tail).await)?;
                answered(read_message(&mut recv, &mut buf).await?, &buf, plan.reply)?;
                times.push(t0.elapsed());
            }
            Ok(times)
        })
    } else {
        // The same steps, each waited for on this thread as an rcl caller would.
        (|| {
            let (mut buf, mut times) = (Vec::new(), Vec::with_capacity(rounds));
            for _ in 0..rounds {
                let t0 = Instant::now();
                for _ in 0..plan.count {
                    write(rt.block_on(send.write_all(&plan.body)))?;
                }
                write(rt.block_on(send.write_all(&plan.tail)))?;
                let more = rt.block_on(read_message(&mut recv, &mut buf))?;
                answered(more, &buf, plan.reply)?;
                times.push(t0.elapsed());
            }
            Ok(times)
        })()
    }?;
    conn.close(0u32.into(), b"done");
    // Let the close reach the echo before the process exits.
    let _ = runtime::block_on(&rt, async move {
        tokio::time::timeout(Duration::from_secs(1), ep.wait_idle()).await
    });
    Ok(times[warm..].to_vec())
}

fn write(r: Result<(), quinn::WriteError>) -> Result<(), String> {
    r.map_err(|e| format!("write: {e}"))
}

/// The round's answer (`more`: one came, in `buf`) is the `reply` bytes it waits for.
pub(super) fn answered(more: bool, buf: &[u8], reply: usize) -> Result<(), String> {
    if more && buf.len() == reply {
        Ok(())
    } else {
        Err(format!(
            "the echo answered {} bytes, not {reply}",
            if more { buf.len() } else { 0 }
        ))
    }
}

type Opened = (
    quinn::Endpoint,
    quinn::Connection,
    quinn::SendStream,
    quinn::RecvStream,
);

/// The ping's TLS: a self-signed identity, as a link without SROS2 has.
fn client() -> Result<quinn::ClientConfig, String> {
    let id = tls::Identity::self_signed()?;
    tls::client_config(&id, tls::ALPN_LINK, transport())
}

/// Where the ping binds: any address of `to`'s family, an ephemeral port.
pub(super) fn client_bind(to: SocketAddr) -> SocketAddr {
    if to.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    }
}

/// A connection to the echo at `addr` and its stream.
fn connect(rt: &Handle, addr: SocketAddr) -> Result<Opened, String> {
    let client = client()?;
    let sock = tuning::bind(client_bind(addr)).map_err(|e| e.to_string())?;
    let ep = new_endpoint(rt, None, sock).map_err(|e| e.to_string())?;
    let ep2 = ep.clone();
    let (conn, send, recv) = runtime::block_on(rt, async move {
        let connecting = ep2
            .connect_with(client, addr, tls::SERVER_NAME)
            .map_err(|e| e.to_string())?;
        let conn = tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .map_err(|_| "no QUIC handshake within 10 s".to_string())?
            .map_err(|e| e.to_string())?;
        let (send, recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((conn, send, recv))
    })
    .ok_or("the runtime dropped the connect")??;
    Ok((ep, conn, send, recv))
}
