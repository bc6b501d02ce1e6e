//! One Foxglove client's connection: the handshake, its JSON requests and binary frames in, its
//! queued frames out (`docs/cli.md`, `tracer serve`).

use std::collections::{HashMap, HashSet};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::Message;

use super::publish::ClientChannel;
use super::{calls, params, Client, Shared, CLIENT_QUEUE, SUBPROTOCOL};

/// One client: the handshake (the subprotocol is required), then requests in, frames out.
pub fn client(
    stream: TcpStream,
    id: u64,
    shared: &Arc<Shared>,
    stop: &AtomicBool,
) -> Result<(), String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;
    // The signature is tungstenite's `Callback`; its error type is the HTTP response itself.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
        let offered = req
            .headers()
            .get_all("Sec-WebSocket-Protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(',').map(str::trim))
            .any(|p| p == SUBPROTOCOL);
        if !offered {
            let mut e = ErrorResponse::new(Some(format!("subprotocol {SUBPROTOCOL} required")));
            *e.status_mut() = tungstenite::http::StatusCode::BAD_REQUEST;
            return Err(e);
        }
        resp.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            tungstenite::http::HeaderValue::from_static(SUBPROTOCOL),
        );
        Ok(resp)
    };
    let mut ws =
        tungstenite::accept_hdr(stream, callback).map_err(|e| format!("handshake: {e}"))?;
    let (tx, rx) = mpsc::sync_channel::<Message>(CLIENT_QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    {
        let mut h = shared.hub.lock();
        let info = json!({"op": "serverInfo", "name": "rmw_tracer",
                          "capabilities": ["clientPublish", "services", "parameters"],
                          "supportedEncodings": ["cdr"], "metadata": {},
                          "sessionId": format!("{id}")});
        let _ = tx.try_send(Message::text(info.to_string()));
        let chans: Vec<Value> = h
            .channels
            .iter()
            .map(|(id, c)| c.advertisement(*id))
            .collect();
        let _ = tx.try_send(Message::text(
            json!({"op": "advertise", "channels": chans}).to_string(),
        ));
        let svcs: Vec<Value> = h
            .services
            .iter()
            .map(|(id, s)| s.advertisement(*id))
            .collect();
        let _ = tx.try_send(Message::text(
            json!({"op": "advertiseServices", "services": svcs}).to_string(),
        ));
        h.clients.insert(
            id,
            Client {
                out: tx.clone(),
                subs: HashMap::new(),
                dropped: dropped.clone(),
            },
        );
    }
    while !stop.load(Ordering::SeqCst) {
        let reply = match ws.read() {
            Ok(Message::Text(t)) => request(shared, id, &tx, t.as_str()),
            Ok(Message::Binary(b)) => binary(shared, id, &tx, &b),
            Ok(Message::Close(_)) => break,
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => break,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(reply) = reply {
            ws.send(Message::text(reply.to_string()))
                .map_err(|e| e.to_string())?;
        }
        while let Ok(m) = rx.try_recv() {
            if let Err(e) = ws.write(m) {
                return Err(e.to_string());
            }
        }
        match ws.flush() {
            Ok(()) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let n = dropped.load(Ordering::Relaxed);
    if n > 0 {
        eprintln!("tracer serve: client {id}: {n} frames dropped (the client read too slowly)");
    }
    Ok(())
}

/// A `status` message of level error, the protocol's answer to bad input.
fn status(message: String) -> Option<Value> {
    Some(json!({"op": "status", "level": 2, "message": message}))
}

/// A client's JSON request; a `status` reply for a bad one. Parameter requests are answered
/// from a thread of their own (they are service calls), through the client's queue.
fn request(
    shared: &Arc<Shared>,
    id: u64,
    out: &mpsc::SyncSender<Message>,
    text: &str,
) -> Option<Value> {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return status(format!("not JSON: {e}")),
    };
    let list = |key: &str| v[key].as_array().cloned().unwrap_or_default();
    match v["op"].as_str() {
        Some("subscribe") => {
            let mut h = shared.hub.lock();
            let known: HashSet<u32> = h.channels.keys().copied().collect();
            let c = h.clients.get_mut(&id)?;
            for s in list("subscriptions") {
                let (Some(sub), Some(ch)) = (s["id"].as_u64(), s["channelId"].as_u64()) else {
                    return status(format!("subscribe: bad subscription {s}"));
                };
                let (sub, ch) = (sub as u32, ch as u32);
                if !known.contains(&ch) {
                    return status(format!("subscribe: no channel {ch}"));
                }
                c.subs.insert(sub, ch);
            }
            None
        }
        Some("unsubscribe") => {
            let mut h = shared.hub.lock();
            let c = h.clients.get_mut(&id)?;
            for s in list("subscriptionIds") {
                if let Some(sub) = s.as_u64() {
                    c.subs.remove(&(sub as u32));
                }
            }
            None
        }
        Some("advertise") => {
            let mut errors = Vec::new();
            for c in list("channels") {
                if let Err(e) =
                    client_channel(shared, &c).and_then(|ch| shared.publishing.advertise(id, ch))
                {
                    errors.push(format!("advertise: {e}"));
                }
            }
            (!errors.is_empty()).then(|| status(errors.join("; ")))?
        }
        Some("unadvertise") => {
            let errors: Vec<String> = list("channelIds")
                .iter()
                .filter_map(|c| match c.as_u64() {
                    Some(c) => shared.publishing.unadvertise(id, c as u32).err(),
                    None => Some(format!("unadvertise: bad channel id {c}")),
                })
                .collect();
            (!errors.is_empty()).then(|| status(errors.join("; ")))?
        }
        Some(op @ ("getParameters" | "setParameters")) => {
            let (shared, out, op) = (shared.clone(), out.clone(), op.to_owned());
            std::thread::spawn(move || parameters(&shared, &out, &op, &v));
            None
        }
        Some(op) => status(format!("operation {op:?} is not supported by this server")),
        None => status("a request without \"op\"".into()),
    }
}

/// `getParameters` / `setParameters`, answered with `parameterValues` (when the request has an
/// `id`, as the protocol says, or when it is a get) and a `status` for what failed.
fn parameters(shared: &Shared, out: &mpsc::SyncSender<Message>, op: &str, v: &Value) {
    let (values, errors) = if op == "getParameters" {
        let names: Vec<String> = v["parameterNames"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        params::get(shared, &names)
    } else {
        let ps = v["parameters"].as_array().cloned().unwrap_or_default();
        let (done, mut errors) = params::set(shared, &ps);
        if v["id"].is_null() {
            (Vec::new(), errors)
        } else {
            let (values, more) = params::get(shared, &done);
            errors.extend(more);
            (values, errors)
        }
    };
    if !errors.is_empty() {
        let msg = format!("{op}: {}", errors.join("; "));
        let _ = out.try_send(Message::text(
            json!({"op": "status", "level": 2, "message": msg}).to_string(),
        ));
    }
    if op == "getParameters" || !v["id"].is_null() {
        let mut reply = json!({"op": "parameterValues", "parameters": values});
        if let Some(rid) = v["id"].as_str() {
            reply["id"] = json!(rid);
        }
        let _ = out.try_send(Message::text(reply.to_string()));
    }
}

/// A client's channel advertisement, checked: CDR only, a ROS type name, a `ros2msg` schema
/// from the client or else from a publisher of the type in the graph.
fn client_channel(shared: &Shared, c: &Value) -> Result<ClientChannel, String> {
    let (Some(id), Some(topic), Some(encoding), Some(schema_name)) = (
        c["id"].as_u64(),
        c["topic"].as_str(),
        c["encoding"].as_str(),
        c["schemaName"].as_str(),
    ) else {
        return Err(format!(
            "a channel needs id, topic, encoding and schemaName: {c}"
        ));
    };
    if encoding != "cdr" {
        return Err(format!(
            "channel {id} ({topic}): encoding {encoding:?} is not supported (only cdr)"
        ));
    }
    if !topic.starts_with('/') {
        return Err(format!(
            "channel {id}: topic {topic:?} is not a full ROS name"
        ));
    }
    let parts: Vec<&str> = schema_name.split('/').collect();
    let type_name = match parts[..] {
        [pkg, "msg", t] if !pkg.is_empty() && !t.is_empty() => schema_name.to_owned(),
        [pkg, t] if !pkg.is_empty() && !t.is_empty() => format!("{pkg}/msg/{t}"),
        _ => {
            return Err(format!(
                "channel {id}: schemaName {schema_name:?} is not a ROS message type (pkg/msg/Type)"
            ))
        }
    };
    let known = {
        let h = shared.hub.lock();
        h.channels
            .values()
            .find(|k| k.type_name == type_name && !k.schema.is_empty())
            .map(|k| (k.schema.clone(), k.type_hash.clone()))
    };
    let given = match (c["schema"].as_str(), c["schemaEncoding"].as_str()) {
        (Some(s), Some(ros2msg::ROS2MSG)) if !s.is_empty() => Some(s.to_owned()),
        (Some(s), Some(e)) if !s.is_empty() => {
            return Err(format!(
                "channel {id}: schemaEncoding {e:?} is not supported (only ros2msg)"
            ))
        }
        _ => None,
    };
    let (definition, type_hash) = match (given, known) {
        (Some(d), known) => (Some(d), known.map(|k| k.1).unwrap_or_default()),
        (None, Some((d, h))) => (Some(d), h),
        (None, None) => (None, String::new()),
    };
    Ok(ClientChannel {
        id: id as u32,
        topic: topic.to_owned(),
        type_name,
        definition,
        type_hash,
    })
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A client's binary frame: `Client Message Data` (opcode 1: u32 channel id, payload) or
/// `Service Call Request` (opcode 2: u32 service id, u32 call id, u32 encoding length, the
/// encoding, payload).
fn binary(
    shared: &Arc<Shared>,
    id: u64,
    out: &mpsc::SyncSender<Message>,
    b: &[u8],
) -> Option<Value> {
    match b.first() {
        Some(1) => {
            let Some(ch) = le_u32(b, 1) else {
                return status(format!(
                    "message data: a frame of {} bytes, shorter than its 5-byte header",
                    b.len()
                ));
            };
            shared
                .publishing
                .publish(id, ch, &b[5..])
                .err()
                .and_then(status)
        }
        Some(2) => {
            let (Some(service), Some(call), Some(n)) = (le_u32(b, 1), le_u32(b, 5), le_u32(b, 9))
            else {
                return status(format!(
                    "service call request: a frame of {} bytes, shorter than its 13-byte header",
                    b.len()
                ));
            };
            let Some(encoding) = b
                .get(13..13 + n as usize)
                .and_then(|e| std::str::from_utf8(e).ok())
            else {
                let _ = out.try_send(calls::failure(service, call, "malformed request frame"));
                return status(format!(
                    "service call request {call}: encoding length {n} past the frame or not UTF-8"
                ));
            };
            let payload = &b[13 + n as usize..];
            let fail = |msg: String| {
                let _ = out.try_send(calls::failure(service, call, &msg));
                status(format!("service call request {call}: {msg}"))
            };
            if encoding != "cdr" {
                return fail(format!("encoding {encoding:?} is not supported (only cdr)"));
            }
            let found = {
                let h = shared.hub.lock();
                h.services
                    .get(&service)
                    .map(|s| (s.name.clone(), s.server_list(), s.request.clone()))
            };
            let Some((name, servers, schema)) = found else {
                return fail(format!("no service {service}"));
            };
            if let Err(e) = ros2msg::decode(&schema, payload) {
                return fail(format!("{name}: the request does not decode: {e}"));
            }
            shared.caller.call_for_client(
                &name,
                &servers,
                payload.to_vec(),
                out.clone(),
                (service, call),
            );
            None
        }
        Some(op) => status(format!("binary opcode {op} is not a client operation")),
        None => status("an empty binary frame".into()),
    }
}
