//! The priority class of a subscription's edges (docs/rmw-mapping.md, "Priority classes").
//!
//! ROS QoS has no priority, so the class comes from the topic's name, by a table the user sets
//! in `RMW_TRACER_PRIORITY`: `;`-separated `topic=class` entries, a topic either a full name
//! (`/cmd_vel`) or a prefix ending in `*` (`/camera/*`), a class 0 (lowest) to 7 (highest); the
//! first entry that matches wins. Topics no entry names get [`DEFAULT_TOPIC_CLASS`], in the
//! middle, so a user can both raise a topic above the rest and push bulk data below it. The
//! class is the subscription's (the seed's per-edge delivery policy): the subscribing process's
//! table decides, and the publisher's link carries the edge on that class's stream
//! (docs/network.md section 7). Only the QUIC transport acts on it.

use std::sync::OnceLock;

use crate::log::log;

/// The variable that holds the table.
pub const PRIORITY_ENV: &str = "RMW_TRACER_PRIORITY";
/// The class of a topic no entry names: the core's middle class, which service calls and
/// replies also travel in between hosts (so an action's feedback stays ahead of its result).
pub const DEFAULT_TOPIC_CLASS: u8 = libtracer_core::edge::DeliveryPolicy::DEFAULT_CLASS;
/// The class of the graph's own records (the endpoint registry): above user topics by default,
/// so that discovery across hosts is never queued behind bulk data; below 7, which is the
/// user's.
pub const REGISTRY_CLASS: u8 = 6;

#[derive(Debug, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    Prefix(String),
}

/// The parsed table.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PriorityMap {
    rules: Vec<(Pattern, u8)>,
}

impl PriorityMap {
    /// Parse a table; entries that do not parse are returned as errors and left out.
    pub fn parse(text: &str) -> (PriorityMap, Vec<String>) {
        let mut map = PriorityMap::default();
        let mut errors = Vec::new();
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let parsed = entry.rsplit_once('=').and_then(|(topic, class)| {
                let class: u8 = class.trim().parse().ok().filter(|c| *c <= 7)?;
                let topic = topic.trim();
                let pattern = match topic.strip_suffix('*') {
                    Some(prefix) => Pattern::Prefix(prefix.to_owned()),
                    None if !topic.is_empty() => Pattern::Exact(topic.to_owned()),
                    None => return None,
                };
                Some((pattern, class))
            });
            match parsed {
                Some(rule) => map.rules.push(rule),
                None => errors.push(format!(
                    "{PRIORITY_ENV}: entry {entry:?} is not topic=class (class 0..7); ignored"
                )),
            }
        }
        (map, errors)
    }

    /// The class of `topic`.
    pub fn class_of(&self, topic: &str) -> u8 {
        self.rules
            .iter()
            .find(|(p, _)| match p {
                Pattern::Exact(t) => t == topic,
                Pattern::Prefix(pre) => topic.starts_with(pre.as_str()),
            })
            .map_or(DEFAULT_TOPIC_CLASS, |(_, c)| *c)
    }
}

/// The class of `topic` by this process's table (read once, its errors logged once).
pub fn topic_class(topic: &str) -> u8 {
    static MAP: OnceLock<PriorityMap> = OnceLock::new();
    MAP.get_or_init(|| {
        let (map, errors) = PriorityMap::parse(&std::env::var(PRIORITY_ENV).unwrap_or_default());
        for e in errors {
            log!(RMW_LOG_SEVERITY_WARN, "{e}");
        }
        map
    })
    .class_of(topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_entry_wins_and_the_rest_get_the_default() {
        let (m, errors) = PriorityMap::parse(" /cmd_vel=7; /camera/* = 1 ;/camera/info=5;;");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(m.class_of("/cmd_vel"), 7);
        assert_eq!(m.class_of("/cmd_vel2"), DEFAULT_TOPIC_CLASS);
        assert_eq!(m.class_of("/camera/image"), 1);
        assert_eq!(m.class_of("/camera/info"), 1, "the prefix came first");
        assert_eq!(m.class_of("/chatter"), DEFAULT_TOPIC_CLASS);
        let (all, _) = PriorityMap::parse("*=0");
        assert_eq!(all.class_of("/anything"), 0);
    }

    #[test]
    fn bad_entries_are_reported_and_left_out() {
        let (m, errors) = PriorityMap::parse("/a=8;/b;=3;/c=x;/d=2");
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert_eq!(m.class_of("/d"), 2);
        assert_eq!(m.class_of("/a"), DEFAULT_TOPIC_CLASS);
    }
}
