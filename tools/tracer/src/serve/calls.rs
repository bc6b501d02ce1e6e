//! `tracer serve` as a ROS service client: requests written to the servers' request vertices,
//! responses taken from its own response inbox, as rmw_tracer's clients do
//! (docs/rmw-mapping.md, Services).
//!
//! The serve process has one client gid and one sink `/.ros/clients/<gid>/_response`; a
//! request is written to `/net/<peer>/.ros/services<name>/_request/<server gid>` of every
//! server of the service, with `Meta.writer` = that gid and `Meta.sequence` = a number of its
//! own, and the server answers the sample's origin, which is this graph. The first response
//! to a number is the answer (every server answers; rcl's clients drop the rest too). A call
//! that gets no answer in time fails.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{Graph, Meta, Payload, Sample};
use parking_lot::Mutex;
use serde_json::json;
use tracer_recording::Gid;
use tungstenite::Message;

use crate::participant::topic_path;

/// How long a call waits for its response.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Where an answer goes.
enum Reply {
    /// A Foxglove `serviceCallRequest`: a `Service Call Response` frame or a
    /// `serviceCallFailure` to the client's queue.
    Client {
        out: mpsc::SyncSender<Message>,
        service: u32,
        call: u32,
    },
    /// A call made by serve itself (parameters): the response's payload.
    Wait(mpsc::Sender<Payload>),
}

struct Pending {
    reply: Reply,
    deadline: Instant,
}

/// A server's request vertex: (peer, server gid).
pub type Server = (String, [u8; 16]);

pub struct Caller {
    graph: Graph,
    gid: Gid,
    sequence: AtomicU64,
    pending: Arc<Mutex<HashMap<u64, Pending>>>,
}

/// The request vertex of server `gid` of service `name` on `peer`, as seen from this graph.
fn request_path(peer: &str, name: &str, gid: &[u8; 16]) -> String {
    format!(
        "/net/{peer}/.ros/services{}/_request/{}",
        topic_path(name),
        Gid(*gid).hex()
    )
}

/// Frame opcode 3 of the protocol: u32 service id, u32 call id, u32 encoding length, the
/// encoding, the payload.
pub fn response_frame(service: u32, call: u32, encoding: &str, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(13 + encoding.len() + payload.len());
    f.push(3u8);
    f.extend_from_slice(&service.to_le_bytes());
    f.extend_from_slice(&call.to_le_bytes());
    f.extend_from_slice(&(encoding.len() as u32).to_le_bytes());
    f.extend_from_slice(encoding.as_bytes());
    f.extend_from_slice(payload);
    f
}

pub fn failure(service: u32, call: u32, message: &str) -> Message {
    Message::text(
        json!({"op": "serviceCallFailure", "serviceId": service, "callId": call, "message": message})
            .to_string(),
    )
}

impl Caller {
    /// Makes the response inbox of client `gid`.
    pub fn new(graph: &Graph, gid: Gid) -> Result<Caller, String> {
        let pending: Arc<Mutex<HashMap<u64, Pending>>> = Arc::default();
        let inbox = format!("/.ros/clients/{}/_response", gid.hex());
        let p = pending.clone();
        graph
            .create_sink(
                &inbox,
                Arc::new(move |s: &Sample| {
                    let Some(done) = p.lock().remove(&s.meta.sequence) else {
                        return; // a second server's answer, or one after the timeout
                    };
                    match done.reply {
                        Reply::Client { out, service, call } => {
                            let frame = response_frame(service, call, "cdr", s.payload.as_ref());
                            let _ = out.try_send(Message::binary(frame));
                        }
                        Reply::Wait(tx) => {
                            let _ = tx.send(s.payload.clone());
                        }
                    }
                }),
            )
            .map_err(|e| format!("cannot make {inbox}: {e}"))?;
        Ok(Caller {
            graph: graph.clone(),
            gid,
            sequence: AtomicU64::new(0),
            pending,
        })
    }

    /// Writes the request to every server; the answer goes to `reply`. Err when no write
    /// succeeded (the call is then not pending).
    fn send(
        &self,
        name: &str,
        servers: &[Server],
        request: Vec<u8>,
        reply: Reply,
    ) -> Result<(), String> {
        if servers.is_empty() {
            return Err(format!("{name}: no server"));
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        self.pending.lock().insert(
            sequence,
            Pending {
                reply,
                deadline: Instant::now() + CALL_TIMEOUT,
            },
        );
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence,
            writer: self.gid.0,
        };
        let payload = Payload::from(request);
        let mut errors = Vec::new();
        for (peer, gid) in servers {
            let path = request_path(peer, name, gid);
            if let Err(e) = self.graph.write(&path, payload.clone(), meta) {
                errors.push(format!("{path}: {e}"));
            }
        }
        if errors.len() == servers.len() {
            self.pending.lock().remove(&sequence);
            return Err(format!("{name}: {}", errors.join("; ")));
        }
        Ok(())
    }

    /// A Foxglove client's call: the response frame (or a failure) goes to `out`.
    pub fn call_for_client(
        &self,
        name: &str,
        servers: &[Server],
        request: Vec<u8>,
        out: mpsc::SyncSender<Message>,
        (service, call): (u32, u32),
    ) {
        let reply = Reply::Client {
            out: out.clone(),
            service,
            call,
        };
        if let Err(e) = self.send(name, servers, request, reply) {
            let _ = out.try_send(failure(service, call, &e));
        }
    }

    /// A call of serve's own: waits for the response payload.
    pub fn call(
        &self,
        name: &str,
        servers: &[Server],
        request: Vec<u8>,
    ) -> Result<Payload, String> {
        let (tx, rx) = mpsc::channel();
        self.send(name, servers, request, Reply::Wait(tx))?;
        rx.recv_timeout(CALL_TIMEOUT + Duration::from_millis(500))
            .map_err(|_| format!("{name}: no response within {CALL_TIMEOUT:?}"))
    }

    /// Fails the calls past their deadline.
    pub fn expire(&self) {
        let now = Instant::now();
        let gone: Vec<Pending> = {
            let mut pending = self.pending.lock();
            let late: Vec<u64> = pending
                .iter()
                .filter(|(_, p)| p.deadline <= now)
                .map(|(k, _)| *k)
                .collect();
            late.iter().filter_map(|k| pending.remove(k)).collect()
        };
        for p in gone {
            if let Reply::Client { out, service, call } = p.reply {
                let msg = format!("no response within {CALL_TIMEOUT:?}");
                let _ = out.try_send(failure(service, call, &msg));
            }
        }
    }
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A gid of this process's own (serve's client, node and publishers): the pid and start time
/// in the first half, so two serve processes never share one, a counter in the second.
pub fn new_gid() -> Gid {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| now_ns() as u64);
    let mut g = [0u8; 16];
    g[..4].copy_from_slice(&std::process::id().to_le_bytes());
    g[4..8].copy_from_slice(&(start as u32).to_le_bytes());
    g[8..].copy_from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    Gid(g)
}
