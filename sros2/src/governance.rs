//! The DDS Security governance document (`governance.xml`, signed as `governance.p7s`): per
//! domain, whether unauthenticated participants may join, whether joining needs permissions,
//! and per topic expression whether reading and writing are access controlled. What rmw_tracer
//! applies of it is in docs/network.md section 5; encryption kinds are not read (QUIC always
//! encrypts everything).

use crate::fnmatch::fnmatch;
use crate::xml;
use crate::Error;

/// One `<topic_rule>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicRule {
    pub expression: String,
    pub read_access_control: bool,
    pub write_access_control: bool,
}

/// One `<domain_rule>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainRule {
    pub domains: Vec<(u32, u32)>,
    pub allow_unauthenticated_participants: bool,
    pub enable_join_access_control: bool,
    pub topic_rules: Vec<TopicRule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Governance {
    pub rules: Vec<DomainRule>,
}

impl Governance {
    pub fn parse(text: &str) -> Result<Governance, Error> {
        let doc = xml::parse(text)?;
        let root = doc.root_element();
        let dar = xml::child(root, "domain_access_rules")
            .ok_or_else(|| Error::Invalid("no <domain_access_rules>".into()))?;
        let mut rules = Vec::new();
        for r in xml::children(dar, "domain_rule") {
            let domains = xml::child(r, "domains")
                .map(xml::domains)
                .transpose()?
                .unwrap_or_default();
            let mut topic_rules = Vec::new();
            if let Some(tar) = xml::child(r, "topic_access_rules") {
                for t in xml::children(tar, "topic_rule") {
                    topic_rules.push(TopicRule {
                        expression: xml::child_text(t, "topic_expression").unwrap_or_default(),
                        read_access_control: xml::boolean(t, "enable_read_access_control", true)?,
                        write_access_control: xml::boolean(t, "enable_write_access_control", true)?,
                    });
                }
            }
            rules.push(DomainRule {
                domains,
                allow_unauthenticated_participants: xml::boolean(
                    r,
                    "allow_unauthenticated_participants",
                    false,
                )?,
                enable_join_access_control: xml::boolean(r, "enable_join_access_control", true)?,
                topic_rules,
            });
        }
        Ok(Governance { rules })
    }

    /// The first domain rule that covers `domain` (DDS: the first match decides).
    pub fn for_domain(&self, domain: u32) -> Option<&DomainRule> {
        self.rules.iter().find(|r| {
            r.domains
                .iter()
                .any(|(lo, hi)| *lo <= domain && domain <= *hi)
        })
    }
}

impl DomainRule {
    /// The first topic rule whose expression matches the DDS topic name (`rt/chatter`).
    pub fn topic(&self, topic: &str) -> Option<&TopicRule> {
        self.topic_rules
            .iter()
            .find(|t| fnmatch(&t.expression, topic))
    }

    /// Whether reading (`read`) or writing the topic needs a permission. A topic no rule
    /// covers is access controlled (**choice**: the safe side).
    pub fn controlled(&self, topic: &str, read: bool) -> bool {
        self.topic(topic).is_none_or(|t| {
            if read {
                t.read_access_control
            } else {
                t.write_access_control
            }
        })
    }
}

/// The governance `ros2 security create_keystore` writes (sros2's default), for `domain`:
/// no unauthenticated participants, join access control, every topic read and write
/// controlled and encrypted.
pub fn default_xml(domain: u32) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
    <domain_access_rules>
        <domain_rule>
            <domains>
              <id>{domain}</id>
            </domains>
            <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
            <enable_join_access_control>true</enable_join_access_control>
            <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
            <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
            <rtps_protection_kind>ENCRYPT</rtps_protection_kind>
            <topic_access_rules>
                <topic_rule>
                    <topic_expression>*</topic_expression>
                    <enable_discovery_protection>true</enable_discovery_protection>
                    <enable_liveliness_protection>true</enable_liveliness_protection>
                    <enable_read_access_control>true</enable_read_access_control>
                    <enable_write_access_control>true</enable_write_access_control>
                    <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
                    <data_protection_kind>ENCRYPT</data_protection_kind>
                </topic_rule>
            </topic_access_rules>
        </domain_rule>
    </domain_access_rules>
</dds>
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_governance_controls_every_topic_of_its_domain() {
        let g = Governance::parse(&default_xml(3)).unwrap();
        assert!(g.for_domain(0).is_none());
        let r = g.for_domain(3).unwrap();
        assert!(!r.allow_unauthenticated_participants);
        assert!(r.enable_join_access_control);
        assert!(r.controlled("rt/chatter", true) && r.controlled("rq/xRequest", false));
        let open = default_xml(0).replace(
            "<topic_expression>*</topic_expression>",
            "<topic_expression>rt/open*</topic_expression>",
        );
        let open = open.replacen(
            "<enable_read_access_control>true",
            "<enable_read_access_control>false",
            1,
        );
        let r = Governance::parse(&open).unwrap();
        let r = r.for_domain(0).unwrap();
        assert!(!r.controlled("rt/open_data", true));
        assert!(r.controlled("rt/open_data", false));
        assert!(r.controlled("rt/other", true));
        assert!(Governance::parse("<dds/>").is_err());
    }
}
