//! The benchmark probe's shapes on quinn itself (`ProbeMode::Task` and `ProbeMode::Thread`,
//! `probe.rs`), built only with the `quinn-probe` feature (tools/bench builds `bench_quic` with
//! it): the links no longer run on quinn's tasks, but the benchmark keeps quinn's own floor
//! beside the engine's for comparison (docs/network.md section 11). quinn and its tokio
//! runtime are in no other build of the library.
//!
//! The runtime is the one the links had: one worker (a second woke per packet to steal work it
//! never found: docs/network.md section 11), started at first use.

use std::future::Future;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, Runtime};

use super::probe::{answered, body_len, client, client_bind, echoed, Round, IDLE};
use super::{tls, tuning};

/// The probe's runtime (started on first use).
fn handle() -> Result<Handle, String> {
    static RT: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tracer-quic")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the probe's runtime: {e}"))
    })
    .as_ref()
    .map(|rt| rt.handle().clone())
    .map_err(Clone::clone)
}

/// Run `fut` to completion on the runtime from a synchronous caller; `None` only if the
/// runtime dropped the task (it never stops, so: never).
fn block_on<F>(rt: &Handle, fut: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if Handle::try_current().is_err() {
        return Some(rt.block_on(fut));
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}

/// quinn's endpoint on `sock`, on the runtime.
fn new_endpoint(
    rt: &Handle,
    server: Option<quinn::ServerConfig>,
    sock: UdpSocket,
) -> Result<quinn::Endpoint, String> {
    let _guard = rt.enter();
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        sock,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(|e| e.to_string())
}

/// The echo on the runtime; with `threaded`, each connection served by a plain thread.
pub(super) fn echo_on_runtime(
    addr: SocketAddr,
    server: quinn::ServerConfig,
    threaded: bool,
) -> Result<(), String> {
    let rt = handle()?;
    let sock = tuning::bind(addr).map_err(|e| e.to_string())?;
    let ep = new_endpoint(&rt, Some(server), sock)?;
    let mut last = Instant::now();
    while last.elapsed() < IDLE || ep.open_connections() > 0 {
        let wait = IDLE
            .saturating_sub(last.elapsed())
            .max(Duration::from_secs(1));
        let ep2 = ep.clone();
        let accepted = block_on(&rt, async move {
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

/// `run` on the runtime: the loop a task on its worker, or with `threaded` this thread.
pub(super) fn run_on_runtime(
    addr: SocketAddr,
    plan: Round,
    warm: usize,
    measured: usize,
    threaded: bool,
) -> Result<Vec<Duration>, String> {
    let rt = handle()?;
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
    let _ = block_on(&rt, async move {
        tokio::time::timeout(Duration::from_secs(1), ep.wait_idle()).await
    });
    Ok(times[warm..].to_vec())
}

fn write(r: Result<(), quinn::WriteError>) -> Result<(), String> {
    r.map_err(|e| format!("write: {e}"))
}

type Opened = (
    quinn::Endpoint,
    quinn::Connection,
    quinn::SendStream,
    quinn::RecvStream,
);

/// A connection to the echo at `addr` and its stream.
fn connect(rt: &Handle, addr: SocketAddr) -> Result<Opened, String> {
    let client = client()?;
    let sock = tuning::bind(client_bind(addr)).map_err(|e| e.to_string())?;
    let ep = new_endpoint(rt, None, sock)?;
    let ep2 = ep.clone();
    let (conn, send, recv) = block_on(rt, async move {
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
