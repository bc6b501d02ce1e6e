//! Rulings: ACL entries and inheritance, subscribe gated by the source ACL, fan-in gated by
//! the target's write ACL.

mod common;
use common::{graph, m, p};

use libtracer_core::{Acl, Credentials, DeliveryPolicy, Error, Principal, Rights, StreamOptions};

fn other(g: &libtracer_core::Graph) -> Credentials {
    Credentials::local(g.owner().uid().unwrap().wrapping_add(1000), 5000)
}

#[test]
fn ruling_owner_has_all_rights_others_none_without_an_acl() {
    let g = graph("g");
    g.create_stream("/s", StreamOptions::default()).unwrap();
    g.create_stream("/t", StreamOptions::default()).unwrap();
    let o = other(&g);
    assert!(matches!(
        g.write_as(&o, "/s", p(b"x"), m(0)),
        Err(Error::PermissionDenied { right: "WRITE", .. })
    ));
    assert!(matches!(
        g.subscribe_as(&o, "/s", "/t", DeliveryPolicy::default()),
        Err(Error::PermissionDenied { .. })
    ));
    g.write("/s", p(b"x"), m(0)).unwrap();
    g.subscribe("/s", "/t", DeliveryPolicy::default()).unwrap();
}

#[test]
fn ruling_subscribe_gated_by_source_acl() {
    let g = graph("g");
    g.create_stream("/s", StreamOptions::default()).unwrap();
    g.create_stream("/t", StreamOptions::default()).unwrap();
    let o = other(&g);
    // Let the other user write the target, so only the source's SUBSCRIBE right is at stake.
    g.set_acl(
        "/t",
        Acl::new().allow(Principal::Uid(o.uid().unwrap()), Rights::WRITE),
    )
    .unwrap();
    g.set_acl("/s", Acl::new().allow(Principal::Any, Rights::READ))
        .unwrap();
    match g.subscribe_as(&o, "/s", "/t", DeliveryPolicy::default()) {
        Err(Error::PermissionDenied { path, right, .. }) => {
            assert_eq!(path, "/s");
            assert_eq!(right, "SUBSCRIBE");
        }
        other => panic!("expected PermissionDenied, got {other:?}"),
    }
    assert_eq!(g.subscriber_count("/s"), 0);
    g.set_acl(
        "/s",
        Acl::new().allow(Principal::Gid(5000), Rights::SUBSCRIBE),
    )
    .unwrap();
    g.subscribe_as(&o, "/s", "/t", DeliveryPolicy::default())
        .unwrap();
    assert_eq!(g.subscriber_count("/s"), 1);
    // The owner can refuse itself SUBSCRIBE too (deny wins).
    g.set_acl("/s", Acl::new().deny(Principal::Any, Rights::SUBSCRIBE))
        .unwrap();
    assert!(matches!(
        g.subscribe("/s", "/t", DeliveryPolicy::default()),
        Err(Error::PermissionDenied { .. })
    ));
}

#[test]
fn ruling_acl_nearest_ancestor_governs_and_deny_wins() {
    let g = graph("g");
    g.create_value("/a/b/c").unwrap();
    g.create_value("/a/x").unwrap();
    let o = other(&g);
    g.set_acl("/a", Acl::new().allow(Principal::Any, Rights::WRITE))
        .unwrap();
    // Inherited by every descendant without an ACL of its own.
    g.write_as(&o, "/a/b/c", p(b"1"), m(0)).unwrap();
    g.write_as(&o, "/a/x", p(b"1"), m(0)).unwrap();
    // A nearer ACL replaces (does not merge with) the one above.
    g.set_acl(
        "/a/b",
        Acl::new().allow(Principal::Uid(o.uid().unwrap()), Rights::READ),
    )
    .unwrap();
    assert!(matches!(
        g.write_as(&o, "/a/b/c", p(b"1"), m(0)),
        Err(Error::PermissionDenied { .. })
    ));
    g.write_as(&o, "/a/x", p(b"1"), m(0)).unwrap();
    // Deny beats allow within one ACL, whatever the order.
    g.set_acl(
        "/a/b",
        Acl::new()
            .deny(Principal::Gid(o.gid().unwrap()), Rights::WRITE)
            .allow(Principal::Uid(o.uid().unwrap()), Rights::WRITE),
    )
    .unwrap();
    assert!(matches!(
        g.write_as(&o, "/a/b/c", p(b"1"), m(0)),
        Err(Error::PermissionDenied { .. })
    ));
    // Clearing the nearer ACL lets the one above govern again.
    g.clear_acl("/a/b").unwrap();
    g.write_as(&o, "/a/b/c", p(b"1"), m(0)).unwrap();
    // The owner keeps ADMIN even under a deny-all, so it can never lock itself out.
    g.set_acl("/a", Acl::new().deny(Principal::Any, Rights::ALL))
        .unwrap();
    assert!(matches!(
        g.write("/a/x", p(b"1"), m(0)),
        Err(Error::PermissionDenied { .. })
    ));
    assert!(matches!(
        g.vertex("/a/x").unwrap().write(p(b"1"), m(0)),
        Err(Error::PermissionDenied { .. })
    ));
    g.set_acl("/a", Acl::new()).unwrap();
    g.write("/a/x", p(b"1"), m(0)).unwrap();
    assert_eq!(g.acl("/a"), Some(Acl::new()));
}

#[test]
fn ruling_fan_in_gated_by_target_write_acl() {
    let g = graph("g");
    g.create_stream("/s1", StreamOptions::default()).unwrap();
    g.create_stream("/s2", StreamOptions::default()).unwrap();
    let t = g.create_stream("/t", StreamOptions::default()).unwrap();
    let o = other(&g);
    g.set_acl(
        "/s2",
        Acl::new().allow(Principal::Any, Rights::SUBSCRIBE | Rights::WRITE),
    )
    .unwrap();
    // Two edges fan into /t: fine for its owner.
    g.subscribe("/s1", "/t", DeliveryPolicy::default()).unwrap();
    g.subscribe("/s2", "/t", DeliveryPolicy::default()).unwrap();
    g.write("/s1", p(b"1"), m(1)).unwrap();
    g.write("/s2", p(b"2"), m(2)).unwrap();
    assert_eq!(t.len(), 2);
    // Another principal may subscribe /s2 but may not aim a delivery at /t.
    match g.subscribe_as(&o, "/s2", "/t", DeliveryPolicy::default()) {
        Err(Error::PermissionDenied { path, right, .. }) => {
            assert_eq!((path.as_str(), right), ("/t", "WRITE"));
        }
        other => panic!("expected PermissionDenied, got {other:?}"),
    }
    g.set_acl(
        "/t",
        Acl::new().allow(Principal::Uid(o.uid().unwrap()), Rights::WRITE),
    )
    .unwrap();
    g.subscribe_as(&o, "/s2", "/t", DeliveryPolicy::default())
        .unwrap();
    assert_eq!(g.subscriber_count("/s2"), 2);
}
