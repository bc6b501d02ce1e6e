//! A bare QUIC ping-pong for the benchmarks (`examples/bench_quic.rs`, tools/bench/net): the
//! same quinn, TLS, transport settings, socket buffers and runtime as a link, but none of
//! libtracer above them (no frames, no codec, no graph, no rmw). It bounds what the QUIC
//! engine itself costs a round trip on a link, so that the benchmark can say how much of
//! rmw_tracer's figure is quinn's and how much is ours (docs/network.md section 11).
//!
//! Messages on one bidirectional stream: a 4-byte length (little endian), then that many
//! bytes; the echo sends each back as it came, but for one whose length has the top bit set
//! (`NO_ECHO`: a burst's messages, [`probe_burst`], whose end is an empty message echoed).
//! Four ways to drive it:
//! - [`ProbeMode::Task`]: quinn itself, the loop a task on its runtime's worker, as quinn's own
//!   examples run: no thread hand-off at all (quinn's floor on this machine). Built with the
//!   `quinn-probe` feature only (`probe_quinn.rs`), as the next;
//! - [`ProbeMode::Thread`]: quinn, the loop a plain thread that waits on the runtime for each
//!   write and read, as an rcl thread did with a link on quinn's tasks: each message crosses
//!   between that thread and the worker once per side and direction;
//! - [`ProbeMode::Inline`]: quinn-proto without quinn's runtime, driven by the thread that
//!   uses it (`probe_inline.rs`): the floor of a design that sends and receives inline;
//! - [`ProbeMode::Engine`]: quinn-proto on the runtime-free engine (`probe_engine.rs`): the
//!   thread sends inline, the engine loop receives and hands each message to it (the shape of
//!   a link on the engine, docs/network.md section 4a).

use std::net::SocketAddr;
use std::time::Duration;

use super::tls;

/// How the probe's loop is driven (module docs). `Task` and `Thread` need the `quinn-probe`
/// feature; without it they are an error.
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

fn transport() -> std::sync::Arc<quinn_proto::TransportConfig> {
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
        #[cfg(feature = "quinn-probe")]
        ProbeMode::Task => super::probe_quinn::echo_on_runtime(addr, server, false),
        #[cfg(feature = "quinn-probe")]
        ProbeMode::Thread => super::probe_quinn::echo_on_runtime(addr, server, true),
        #[cfg(not(feature = "quinn-probe"))]
        ProbeMode::Task | ProbeMode::Thread => Err(without_quinn(mode)),
    }
}

/// Why a quinn shape cannot run in this build.
#[cfg(not(feature = "quinn-probe"))]
fn without_quinn(mode: ProbeMode) -> String {
    format!(
        "the probe's {} shape is quinn's: build with the `quinn-probe` feature",
        mode.name()
    )
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
    pub(super) fn new(size: usize, count: usize, echoed: bool) -> Result<Round, String> {
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
        #[cfg(feature = "quinn-probe")]
        ProbeMode::Task => super::probe_quinn::run_on_runtime(addr, plan, warm, measured, false),
        #[cfg(feature = "quinn-probe")]
        ProbeMode::Thread => super::probe_quinn::run_on_runtime(addr, plan, warm, measured, true),
        #[cfg(not(feature = "quinn-probe"))]
        ProbeMode::Task | ProbeMode::Thread => Err(without_quinn(mode)),
    }
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

/// The ping's TLS: a self-signed identity, as a link without SROS2 has.
pub(super) fn client() -> Result<quinn_proto::ClientConfig, String> {
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
