//! The rules of `Access` and `WriterCheck` on a governance and grants made here.

use super::*;
use libtracer_core::Credentials;
use tracer_sros2::governance::Governance;
use tracer_sros2::permissions::Permissions;

/// A governance for domain 0: `rt/open` uncontrolled both ways, `rt/ro` uncontrolled for
/// reading only, everything else controlled.
fn governance(allow: bool, join: bool) -> String {
    let rule = |expr: &str, read: bool, write: bool| {
        format!(
            "<topic_rule><topic_expression>{expr}</topic_expression>\
             <enable_read_access_control>{read}</enable_read_access_control>\
             <enable_write_access_control>{write}</enable_write_access_control></topic_rule>"
        )
    };
    format!(
        "<dds><domain_access_rules><domain_rule><domains><id>0</id></domains>\
         <allow_unauthenticated_participants>{allow}</allow_unauthenticated_participants>\
         <enable_join_access_control>{join}</enable_join_access_control>\
         <topic_access_rules>{}{}{}</topic_access_rules></domain_rule></domain_access_rules></dds>",
        rule("rt/open", false, false),
        rule("rt/ro", false, true),
        rule("*", true, true),
    )
}

fn access(allow: bool, join: bool) -> Arc<Access> {
    let grant = |enclave: &str| {
        let xml = tracer_sros2::policy::permissions_xml(
            tracer_sros2::policy::DEFAULT_POLICY,
            enclave,
            0,
            ("2020-01-01T00:00:00", "2099-12-31T00:00:00"),
        )
        .unwrap();
        Permissions::parse(&xml).unwrap().grants.remove(0)
    };
    let gov = Governance::parse(&governance(allow, join)).unwrap();
    Arc::new(Access {
        domain: 0,
        loaded: tracer_sros2::keystore::Loaded {
            subject: "CN=/a".into(),
            domain: gov.for_domain(0).unwrap().clone(),
            own: grant("/a"),
        },
        ca: String::new(),
        // As if /b had sent its grant in its HELLO.
        learned: parking_lot::RwLock::new(HashMap::from([("CN=/b".to_owned(), Ok(grant("/b")))])),
        log: Arc::new(|_: &str| {}),
    })
}

const ANON: Credentials = Credentials::Remote(Subject::Anonymous);

fn b() -> Credentials {
    Credentials::Remote(Subject::Authenticated("CN=/b".into()))
}

fn lets(acl: &Acl, who: &Credentials, right: Rights) -> bool {
    libtracer_core::acl::permits(Some(acl), 1000, who, right)
}

#[test]
fn anonymous_peers_get_only_uncontrolled_topics_and_only_when_allowed() {
    let a = access(true, true);
    let sub = |t: &str| a.acl_for(Action::Subscribe, t, Rights::SUBSCRIBE);
    let write = |t: &str| a.acl_for(Action::Publish, t, Rights::WRITE);
    assert!(lets(&sub("rt/open"), &ANON, Rights::SUBSCRIBE));
    assert!(lets(&sub("rt/ro"), &ANON, Rights::SUBSCRIBE));
    assert!(!lets(&sub("rt/secret"), &ANON, Rights::SUBSCRIBE));
    assert!(lets(&write("rt/open"), &ANON, Rights::WRITE));
    assert!(!lets(&write("rt/ro"), &ANON, Rights::WRITE));
    assert!(!lets(&write("rt/secret"), &ANON, Rights::WRITE));
    // Never more than the right asked for; never CREATE or ADMIN.
    for r in [Rights::CREATE, Rights::ADMIN, Rights::READ] {
        assert!(!lets(&sub("rt/open"), &ANON, r), "{}", r.name());
    }
    // An authenticated peer is treated as without the setting: its grant decides.
    assert!(lets(&sub("rt/secret"), &b(), Rights::SUBSCRIBE));
    assert!(lets(&sub("rt/open"), &b(), Rights::SUBSCRIBE));
    // Join access control on: the registry is the grants', so no anonymous peer joins.
    assert!(!lets(&a.registry_acl(), &ANON, Rights::SUBSCRIBE));
    assert!(lets(
        &a.registry_acl(),
        &b(),
        Rights::SUBSCRIBE | Rights::READ
    ));
    let open = access(true, false);
    assert!(lets(&open.registry_acl(), &ANON, Rights::SUBSCRIBE));
    assert!(lets(&open.registry_acl(), &ANON, Rights::READ));
    assert!(!lets(&open.registry_acl(), &ANON, Rights::CREATE));
    // Not allowed: nothing for an anonymous peer, uncontrolled or not.
    let closed = access(false, false);
    assert!(!lets(&closed.registry_acl(), &ANON, Rights::SUBSCRIBE));
    let acl = closed.acl_for(Action::Subscribe, "rt/open", Rights::SUBSCRIBE);
    assert!(!lets(&acl, &ANON, Rights::SUBSCRIBE));
    assert!(lets(&acl, &b(), Rights::SUBSCRIBE));
    assert!(!closed.anonymous_may(Action::Publish, "rt/open"));
    assert!(a.anonymous_may(Action::Publish, "rt/open"));
    assert!(!a.anonymous_may(Action::Publish, "rt/ro"));
}

#[test]
fn a_peer_that_sent_no_or_a_bad_document_has_no_grant_and_a_vertex_follows_what_is_learned() {
    let a = access(false, true);
    let acl = a.acl_for(Action::Subscribe, "rt/secret", Rights::SUBSCRIBE);
    let c = Credentials::Remote(Subject::Authenticated("CN=/c".into()));
    assert!(!lets(&acl, &c, Rights::SUBSCRIBE));
    a.learn("CN=/c", None);
    assert!(!lets(&acl, &c, Rights::SUBSCRIBE));
    a.learn("CN=/c", Some(b"not a signed document"));
    assert!(!lets(&acl, &c, Rights::SUBSCRIBE));
    assert!(matches!(a.learned.read().get("CN=/c"), Some(Err(w)) if w.contains("refused")));
    // A grant learned after the ACL was made counts at once (what a verified document
    // records).
    let g = a.learned.read().get("CN=/b").cloned().unwrap().unwrap();
    a.learned.write().insert("CN=/c".into(), Ok(g));
    assert!(lets(&acl, &c, Rights::SUBSCRIBE));
    assert!(lets(&a.registry_acl(), &c, Rights::READ));
}

#[test]
fn a_grant_that_expires_while_its_peer_is_linked_is_refused_from_then_on() {
    let a = access(false, true);
    let acl = a.acl_for(Action::Subscribe, "rt/secret", Rights::SUBSCRIBE);
    assert!(lets(&acl, &b(), Rights::SUBSCRIBE));
    // The grant /b sent ran out (as if the clock had passed its not_after).
    if let Some(Ok(g)) = a.learned.write().get_mut("CN=/b") {
        g.not_after = "2021-01-01T00:00:00".into();
    }
    assert!(!lets(&acl, &b(), Rights::SUBSCRIBE));
    assert!(!lets(&a.registry_acl(), &b(), Rights::READ));
    assert!(!a.peer_may("CN=/b", Action::Subscribe, "rt/secret"));
    // Recorded once, with its reason: later checks find no grant.
    assert!(matches!(a.learned.read().get("CN=/b"), Some(Err(w)) if w.contains("2021-01-01")));
    // Uncontrolled topics stay open to it, as to any authenticated peer.
    assert!(a.peer_may("CN=/b", Action::Subscribe, "rt/open"));
}

#[test]
fn learn_answers_when_the_grant_ends_or_when_one_not_valid_yet_starts() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let cert = p.self_signed(&key).unwrap();
    let (pem, der) = (cert.pem(), key.serialize_der());
    let mut a = Arc::into_inner(access(false, true)).unwrap();
    a.ca = pem.clone();
    let doc = |from: &str, to: &str| {
        let policy = tracer_sros2::policy::DEFAULT_POLICY;
        let xml = tracer_sros2::policy::permissions_xml(policy, "/c", 0, (from, to)).unwrap();
        tracer_sros2::smime::sign(&xml, &pem, &der)
            .unwrap()
            .into_bytes()
    };
    let utc = tracer_sros2::permissions::utc;
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let may = |a: &Access| a.peer_may("CN=/c", Action::Subscribe, "rt/secret");
    // Valid now: taken, and it ends the second after its not_after.
    let valid = doc("2020-01-01T00:00:00", &utc(now + 100));
    assert_eq!(
        a.learn("CN=/c", Some(&valid)),
        Some(GrantTurn::Ends(at(now + 101)))
    );
    assert!(may(&a));
    // Not valid yet: no grant meanwhile, and the answer is when it starts.
    let later = doc(&utc(now + 100), &utc(now + 200));
    assert_eq!(
        a.learn("CN=/c", Some(&later)),
        Some(GrantTurn::Starts(at(now + 100)))
    );
    assert!(!may(&a));
    assert!(matches!(a.learned.read().get("CN=/c"), Some(Err(w)) if w.contains("not now")));
    // Ran out, or none sent: no grant, nothing to wait for.
    let old = doc("2020-01-01T00:00:00", "2021-01-01T00:00:00");
    assert_eq!(a.learn("CN=/c", Some(&old)), None);
    assert_eq!(a.learn("CN=/c", None), None);
    assert!(!may(&a));
}

#[test]
fn an_own_grant_that_ran_out_allows_nothing_access_control_covers() {
    let mut a = Arc::into_inner(access(false, true)).unwrap();
    assert!(a.check_own(Action::Subscribe, "rt/secret").is_ok());
    a.loaded.own.not_after = "2021-01-01T00:00:00".into();
    let e = a.check_own(Action::Subscribe, "rt/secret").unwrap_err();
    let why = e.to_string();
    assert!(
        why.contains("permission denied")
            && why.contains("2021-01-01T00:00:00")
            && why.contains("rt/secret"),
        "{why}"
    );
    assert!(a.check_own(Action::Publish, "rt/secret").is_err());
    // What access control does not cover stays open, as to a peer with no grant.
    assert!(a.check_own(Action::Publish, "rt/open").is_ok());
    assert!(a.check_own(Action::Subscribe, "rt/ro").is_ok());
}

#[test]
fn a_subscription_takes_an_anonymous_peers_data_only_without_write_access_control() {
    let check = |allow: bool, dds: &str| WriterCheck::new(access(allow, false), "/t", dds.into());
    let anon = Subject::Anonymous;
    assert_eq!(check(true, "rt/open").refuses(Some(&anon)), None);
    let why = check(true, "rt/ro").refuses(Some(&anon)).unwrap();
    assert!(
        why.contains("not authenticated") && why.contains("rt/ro"),
        "{why}"
    );
    assert!(check(true, "rt/secret").refuses(Some(&anon)).is_some());
    assert_eq!(
        check(false, "rt/open").refuses(Some(&anon)).as_deref(),
        Some("it is not authenticated")
    );
    let b = Subject::Authenticated("CN=/b".into());
    assert_eq!(check(true, "rt/secret").refuses(Some(&b)), None);
    assert_eq!(check(true, "rt/open").refuses(None), None);
}

#[test]
fn a_refused_writer_is_told_once_per_peer() {
    let check = WriterCheck::new(access(false, false), "/ro", "rt/ro".into());
    let told = std::cell::RefCell::new(Vec::new());
    let log = |line: &str| told.borrow_mut().push(line.to_owned());
    let anon = Subject::Anonymous;
    assert!(!check.allows("p1", Some(&anon), log));
    assert!(!check.allows("p1", Some(&anon), log));
    assert!(!check.allows("p2", Some(&anon), log));
    assert!(check.allows("local", None, log));
    let told = told.into_inner();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[0].starts_with("security: not taking /ro from p1: "),
        "{told:?}"
    );
    assert!(
        told[1].starts_with("security: not taking /ro from p2: "),
        "{told:?}"
    );
}
