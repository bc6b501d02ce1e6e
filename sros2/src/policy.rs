//! SROS2 policies (`ros2 security create_permission <keystore> <enclave> policy.xml`): the
//! ROS-level rules of an enclave, translated into its DDS permissions document as sros2's
//! `permissions.xsl` does:
//!
//! ```text
//! <policy version="0.2.0"><enclaves><enclave path="/talker_listener/talker"><profiles>
//!   <profile ns="/" node="talker">
//!     <topics publish="ALLOW" subscribe="DENY"><topic>chatter</topic></topics>
//!     <services reply="ALLOW" request="ALLOW"><service>add_two_ints</service></services>
//!     <actions call="ALLOW" execute="ALLOW"><action>fibonacci</action></actions>
//!   </profile>
//! </profiles></enclave></enclaves></policy>
//! ```
//!
//! A name is resolved against the profile's namespace (`~x` against its node), then mangled:
//! topics `rt<name>`; a service's requests `rq<name>Request`, its replies `rr<name>Reply`
//! (request = publish requests, subscribe replies; reply = the other way); an action's three
//! services and its `feedback` and `status` topics. One grant for the enclave: every DENY in a
//! `<deny_rule>` first, then every ALLOW in an `<allow_rule>`, then `<default>DENY</default>`,
//! so a DENY wins (older `<contexts><context path>` policies are read too).

use std::collections::BTreeSet;

use crate::xml;
use crate::Error;

/// The allow-all policy `ros2 security create_enclave` uses for a new enclave.
pub const DEFAULT_POLICY: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<policy version="0.2.0">
  <enclaves>
    <enclave path="/">
      <profiles>
        <profile ns="/" node="default">
          <topics publish="ALLOW" subscribe="ALLOW"><topic>/*</topic></topics>
          <services reply="ALLOW" request="ALLOW"><service>/*</service></services>
          <actions call="ALLOW" execute="ALLOW"><action>/*</action></actions>
        </profile>
      </profiles>
    </enclave>
  </enclaves>
</policy>
"#;

#[derive(Default)]
struct Rules {
    publish: BTreeSet<String>,
    subscribe: BTreeSet<String>,
}

fn resolve(name: &str, ns: &str, node: &str) -> String {
    let ns = if ns.ends_with('/') {
        ns.to_owned()
    } else {
        format!("{ns}/")
    };
    if name.starts_with('/') {
        name.to_owned()
    } else if let Some(rest) = name.strip_prefix('~') {
        format!("{ns}{node}{rest}")
    } else {
        format!("{ns}{name}")
    }
}

/// The permissions document for `enclave` from the policy text, `domain` in every rule and the
/// validity `(not_before, not_after)`. A policy whose only enclave is `/` (the default
/// policy) serves any enclave.
pub fn permissions_xml(
    policy: &str,
    enclave: &str,
    domain: u32,
    validity: (&str, &str),
) -> Result<String, Error> {
    let doc = xml::parse(policy)?;
    let root = doc.root_element();
    let list = xml::child(root, "enclaves")
        .map(|e| xml::children(e, "enclave").collect::<Vec<_>>())
        .or_else(|| xml::child(root, "contexts").map(|c| xml::children(c, "context").collect()))
        .ok_or_else(|| Error::Invalid("policy has no <enclaves>".into()))?;
    let chosen = list
        .iter()
        .find(|e| e.attribute("path") == Some(enclave))
        .or(match list.as_slice() {
            [only] if only.attribute("path") == Some("/") => Some(only),
            _ => None,
        })
        .ok_or_else(|| Error::Invalid(format!("policy has no enclave {enclave}")))?;
    let (mut allow, mut deny) = (Rules::default(), Rules::default());
    for profiles in xml::children(*chosen, "profiles") {
        for p in xml::children(profiles, "profile") {
            let ns = p.attribute("ns").unwrap_or("/");
            let node = p.attribute("node").unwrap_or("");
            for set in p.children().filter(|c| c.is_element()) {
                let kind = set.tag_name().name();
                let item = match kind {
                    "topics" => "topic",
                    "services" => "service",
                    "actions" => "action",
                    _ => continue,
                };
                for n in xml::children(set, item) {
                    let fqn = resolve(&xml::text(n), ns, node);
                    for (attr, value) in set.attributes().map(|a| (a.name(), a.value())) {
                        let into = match value {
                            "ALLOW" => &mut allow,
                            "DENY" => &mut deny,
                            _ => continue,
                        };
                        add(into, kind, attr, &fqn);
                    }
                }
            }
        }
    }
    let rule = |tag: &str, r: &Rules| -> String {
        if r.publish.is_empty() && r.subscribe.is_empty() {
            return String::new();
        }
        let mut s = format!(
            "      <{tag}>\n        <domains>\n          <id>{domain}</id>\n        </domains>\n"
        );
        for (what, set) in [("publish", &r.publish), ("subscribe", &r.subscribe)] {
            if set.is_empty() {
                continue;
            }
            s.push_str(&format!("        <{what}>\n          <topics>\n"));
            for t in set {
                s.push_str(&format!("            <topic>{}</topic>\n", xml::escape(t)));
            }
            s.push_str(&format!("          </topics>\n        </{what}>\n"));
        }
        s.push_str(&format!("      </{tag}>\n"));
        s
    };
    let e = xml::escape(enclave);
    Ok(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="{e}">
      <subject_name>CN={e}</subject_name>
      <validity>
        <not_before>{}</not_before>
        <not_after>{}</not_after>
      </validity>
{}{}      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"#,
        xml::escape(validity.0),
        xml::escape(validity.1),
        rule("deny_rule", &deny),
        rule("allow_rule", &allow)
    ))
}

fn add(r: &mut Rules, kind: &str, attr: &str, fqn: &str) {
    let pubs = &mut r.publish;
    match (kind, attr) {
        ("topics", "publish") => {
            pubs.insert(format!("rt{fqn}"));
        }
        ("topics", "subscribe") => {
            r.subscribe.insert(format!("rt{fqn}"));
        }
        ("services", "request") => {
            r.publish.insert(format!("rq{fqn}Request"));
            r.subscribe.insert(format!("rr{fqn}Reply"));
        }
        ("services", "reply") => {
            r.publish.insert(format!("rr{fqn}Reply"));
            r.subscribe.insert(format!("rq{fqn}Request"));
        }
        ("actions", "call") => {
            for s in ["cancel_goal", "get_result", "send_goal"] {
                r.publish.insert(format!("rq{fqn}/_action/{s}Request"));
                r.subscribe.insert(format!("rr{fqn}/_action/{s}Reply"));
            }
            for t in ["feedback", "status"] {
                r.subscribe.insert(format!("rt{fqn}/_action/{t}"));
            }
        }
        ("actions", "execute") => {
            for s in ["cancel_goal", "get_result", "send_goal"] {
                r.publish.insert(format!("rr{fqn}/_action/{s}Reply"));
                r.subscribe.insert(format!("rq{fqn}/_action/{s}Request"));
            }
            for t in ["feedback", "status"] {
                r.publish.insert(format!("rt{fqn}/_action/{t}"));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, Permissions};

    #[test]
    fn a_policy_becomes_one_grant_where_deny_wins() {
        let policy = r#"<policy version="0.2.0"><enclaves><enclave path="/robot/talker"><profiles>
          <profile ns="/" node="talker">
            <topics publish="ALLOW" subscribe="ALLOW"><topic>chatter</topic><topic>rosout</topic></topics>
            <topics publish="DENY"><topic>secret</topic></topics>
            <topics subscribe="ALLOW"><topic>~/private</topic></topics>
            <services reply="ALLOW"><service>add_two_ints</service></services>
          </profile></profiles></enclave></enclaves></policy>"#;
        let xml = permissions_xml(
            policy,
            "/robot/talker",
            7,
            ("2020-01-01T00:00:00", "2099-01-01T00:00:00"),
        )
        .unwrap();
        let p = Permissions::parse(&xml).unwrap();
        let g = p.grant_for("CN=/robot/talker").unwrap();
        assert!(g.decide(7, Action::Publish, "rt/chatter"));
        assert!(!g.decide(7, Action::Publish, "rt/secret"));
        assert!(!g.decide(7, Action::Publish, "rt/other"));
        assert!(g.decide(7, Action::Subscribe, "rt/talker/private"));
        assert!(g.decide(7, Action::Publish, "rr/add_two_intsReply"));
        assert!(g.decide(7, Action::Subscribe, "rq/add_two_intsRequest"));
        assert!(!g.decide(7, Action::Publish, "rq/add_two_intsRequest"));
        assert!(!g.decide(0, Action::Publish, "rt/chatter"));
        let all = permissions_xml(DEFAULT_POLICY, "/x", 0, ("a", "b")).unwrap();
        let p = Permissions::parse(&all).unwrap();
        let g = p.grant_for("CN=/x").unwrap();
        assert!(g.decide(0, Action::Publish, "rt/any/topic"));
        assert!(g.decide(0, Action::Subscribe, "rr/x/_action/get_resultReply"));
        assert!(permissions_xml(policy, "/other", 0, ("a", "b")).is_err());
    }
}
