//! `tracer graph`: the ROS graph as the endpoint registries of the peers tell it (nodes,
//! topics with types, publishers and subscriptions, services and clients, QoS per endpoint)
//! and the edges rmw_tracer makes from them: every publisher reaches every subscription of
//! its topic and type (docs/rmw-mapping.md), locally or over the link between two peers,
//! unless their QoS does not match: such a pair is listed, marked with the policy, as
//! rmw_tracer decides it (`tracer_recording::qos_match`, the one copy of the rules). A topic
//! endpoint also shows the `layout` of its peer's topic vertex `:schema` (`plain <n>`: the type
//! is loanable, its n-byte struct is its CDR body; docs/loans.md).
//!
//! Here: the command (its arguments, collecting the registries, drawing and redrawing) and the
//! [`Model`] it keeps. `view` turns the model into the shown graph, one JSON value; `text` and
//! `dot` draw that value.

mod dot;
#[cfg(test)]
mod tests;
mod text;
mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracer_recording::{Announcement, Gid, Record};

use crate::participant::{Event, Participant, Schemas};
use dot::dot;
use text::text;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Dot,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Graphviz DOT (nodes as ellipses, topics as boxes, an edge per publisher / subscription).
    #[arg(long, conflicts_with = "json")]
    dot: bool,
    /// One JSON object (with --watch: one per line, per change).
    #[arg(long)]
    json: bool,
    /// Keep running and redraw whenever the graph changes (Ctrl-C to stop).
    #[arg(long)]
    watch: bool,
    /// Leave out /rosout, /parameter_events and the parameter and type-description services
    /// every node has.
    #[arg(long)]
    hide_ros: bool,
    /// How long to wait for the peers' registries before printing (seconds); printing is
    /// earlier when every peer's registry has arrived and nothing changed for 0.3 s.
    #[arg(long, default_value_t = 2.0)]
    wait: f64,
}

/// What the registries say, per peer.
#[derive(Default)]
struct Model {
    peers: BTreeSet<String>,
    /// The uid of each peer of this host run by another user (the kernel's word, docs/host.md).
    other_users: BTreeMap<String, u32>,
    entities: BTreeMap<(String, Gid), Record>,
    /// The peers' vertex `:schema`s (the participant's structural feeds): topic layouts.
    schemas: Schemas,
}

impl Model {
    /// True when the event changed what is shown.
    fn apply(&mut self, ev: Event) -> bool {
        match ev {
            Event::PeerUp(p) => self.peers.insert(p),
            Event::PeerDown(p) => {
                self.entities.retain(|(q, _), _| *q != p);
                self.other_users.remove(&p);
                self.peers.remove(&p)
            }
            Event::Endpoint(p, Announcement::Present(r)) => {
                let key = (p, r.gid);
                let changed = self.entities.get(&key) != Some(&*r);
                self.entities.insert(key, *r);
                changed
            }
            Event::Endpoint(p, Announcement::Gone(g)) => self.entities.remove(&(p, g)).is_some(),
        }
    }
}

fn render(v: &Value, format: Format) -> String {
    match format {
        Format::Text => text(v),
        Format::Dot => dot(v),
        Format::Json => format!("{v}\n"),
    }
}

pub fn run(a: Args) -> Result<(), String> {
    let format = if a.dot {
        Format::Dot
    } else if a.json {
        Format::Json
    } else {
        Format::Text
    };
    let stop = Arc::new(AtomicBool::new(false));
    if a.watch {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let mut part = Participant::join("graph")?;
    let me = part.graph.owner().uid();
    let graph = part.graph.clone();
    // A peer's user, when it is not ours: asked of its link as the peer comes up.
    let user_of = move |ev: &Event| match ev {
        Event::PeerUp(p) => graph
            .peer_identity(p)
            .filter(|id| id.remote.is_none() && Some(id.uid) != me)
            .map(|id| (p.clone(), id.uid)),
        _ => None,
    };
    let mut model = Model {
        schemas: part.schemas.clone(),
        ..Model::default()
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.wait.max(0.0));
    let mut last_change = Instant::now();
    // Until the registries have arrived (or --wait passed): collect.
    while Instant::now() < deadline {
        if let Some(ev) = part.next(Duration::from_millis(50)) {
            if let Some((p, uid)) = user_of(&ev) {
                model.other_users.insert(p, uid);
            }
            if model.apply(ev) {
                last_change = Instant::now();
            }
        }
        let quiet = last_change.elapsed() >= Duration::from_millis(300);
        if quiet && part.settled() && started.elapsed() >= Duration::from_millis(300) {
            break;
        }
    }
    let tty = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut shown = model.view(a.hide_ros);
    let mut draw = |v: &Value| -> bool {
        let clear = if a.watch && tty && format != Format::Json {
            "\x1b[2J\x1b[H"
        } else {
            ""
        };
        let sep = if a.watch && !tty && format != Format::Json {
            "\n"
        } else {
            ""
        };
        write!(out, "{clear}{}{sep}", render(v, format)).is_ok() && out.flush().is_ok()
    };
    if !draw(&shown) || !a.watch {
        part.shutdown();
        return Ok(());
    }
    let mut dirty = false;
    while !stop.load(Ordering::SeqCst) {
        if let Some(ev) = part.next(Duration::from_millis(100)) {
            if let Some((p, uid)) = user_of(&ev) {
                model.other_users.insert(p, uid);
            }
            if model.apply(ev) {
                dirty = true;
                last_change = Instant::now();
            }
        }
        // Redraw once a burst of changes is over (a node start is a dozen records).
        if dirty && last_change.elapsed() >= Duration::from_millis(200) {
            dirty = false;
            let v = model.view(a.hide_ros);
            if v != shown {
                shown = v;
                if !draw(&shown) {
                    break; // stdout closed
                }
            }
        }
    }
    part.shutdown();
    Ok(())
}
