//! Rulings: path validation, value vs stream roles, write-creates.

use libtracer_core::{
    Acl, Credentials, Error, Graph, GraphConfig, Meta, Path, Payload, Principal, Rights, Role,
    StreamOptions,
};

fn graph() -> Graph {
    Graph::new(GraphConfig {
        name: Some("test".into()),
        ..GraphConfig::default()
    })
    .unwrap()
}

fn p(b: &[u8]) -> Payload {
    Payload::copy_from_slice(b)
}

fn m(seq: u64) -> Meta {
    Meta {
        sequence: seq,
        ..Meta::default()
    }
}

fn reason(s: &str) -> &'static str {
    match Path::parse(s) {
        Err(Error::InvalidPath { reason, .. }) => reason,
        other => panic!("{s:?} should be invalid, got {other:?}"),
    }
}

#[test]
fn ruling_path_validation_names_the_problem() {
    assert_eq!(reason(""), "empty path");
    assert_eq!(reason("a/b"), "not absolute (must start with '/')");
    assert_eq!(reason("/a//b"), "empty segment");
    assert_eq!(reason("/a/"), "trailing '/' (empty segment)");
    assert!(reason("/a b").starts_with("bad character"));
    assert!(reason("/ä").starts_with("bad character"));
    assert_eq!(reason("/a/.."), "'.' and '..' are not segments");
    assert_eq!(reason("/a/:bogus"), "unknown meta segment");
    assert_eq!(reason("/a/:acl/b"), "meta segment must be the last");
    assert_eq!(
        reason(&format!("/{}", "x".repeat(256))),
        "segment longer than 255 bytes"
    );
    assert_eq!(reason(&"/x".repeat(65)), "deeper than 64 segments");
    assert_eq!(
        reason(&format!("/{}", "y/".repeat(600))),
        "longer than 1024 bytes"
    );
    for ok in [
        "/",
        "/a",
        "/.ros/x-1/y_2~.z",
        "/a/:children[]",
        "/a/:subscribers[]",
    ] {
        Path::parse(ok).unwrap();
    }
    // Every API entry validates the same way.
    let g = graph();
    assert!(matches!(
        g.write("/a//b", p(b"x"), m(0)),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        g.create_stream("no-slash", StreamOptions::default()),
        Err(Error::InvalidPath { .. })
    ));
}

#[test]
fn ruling_value_overwrites_stream_appends() {
    let g = graph();
    let v = g.create_value("/v").unwrap();
    let s = g.create_stream("/s", StreamOptions::default()).unwrap();
    for i in 0..3 {
        v.write(p(&[i]), m(i as u64)).unwrap();
        s.write(p(&[i]), m(i as u64)).unwrap();
    }
    assert_eq!(v.role(), Role::Value);
    assert_eq!(v.len(), 1);
    assert_eq!(v.value().unwrap().payload.as_ref(), &[2]);
    assert_eq!(s.role(), Role::Stream);
    assert_eq!(s.len(), 3);
    let got: Vec<u8> = std::iter::from_fn(|| s.pop())
        .map(|x| x.payload.as_ref()[0])
        .collect();
    assert_eq!(got, vec![0, 1, 2]);
    // A role is fixed once given; asking for the other one is an error, the same one is not.
    assert!(matches!(
        g.create_stream("/v", StreamOptions::default()),
        Err(Error::WrongRole { .. })
    ));
    assert!(matches!(g.create_value("/s"), Err(Error::WrongRole { .. })));
    g.create_stream("/s", StreamOptions::default()).unwrap();
}

#[test]
fn ruling_write_creates_mkdir_p_gated_by_create_on_nearest_ancestor() {
    let g = graph();
    g.write("/a/b/c", p(b"1"), m(1)).unwrap();
    assert_eq!(g.vertex("/a").unwrap().role(), Role::Inner);
    assert_eq!(g.vertex("/a/b").unwrap().role(), Role::Inner);
    let c = g.vertex("/a/b/c").unwrap();
    assert_eq!(c.role(), Role::Value);
    assert_eq!(c.value().unwrap().payload.as_ref(), b"1");

    // Another user needs CREATE on the nearest existing ancestor (/a/b here).
    let other = Credentials::local(g.owner().uid().unwrap().wrapping_add(1), 4242);
    assert!(matches!(
        g.write_as(&other, "/a/b/d/e", p(b"x"), m(0)),
        Err(Error::PermissionDenied {
            right: "CREATE",
            ..
        })
    ));
    assert!(g.vertex("/a/b/d").is_none());
    g.set_acl("/a", Acl::new().allow(Principal::Gid(4242), Rights::CREATE))
        .unwrap();
    g.write_as(&other, "/a/b/d/e", p(b"x"), m(0)).unwrap();
    assert!(g.vertex("/a/b/d/e").is_some());
    // CREATE is not WRITE: the existing /a/b/c stays closed to that user.
    assert!(matches!(
        g.write_as(&other, "/a/b/c", p(b"x"), m(0)),
        Err(Error::PermissionDenied { right: "WRITE", .. })
    ));
    // The owner can deny itself CREATE below a vertex.
    g.set_acl("/locked", Acl::new()).unwrap_err();
    g.create_value("/locked").unwrap();
    g.set_acl("/locked", Acl::new().deny(Principal::Any, Rights::CREATE))
        .unwrap();
    assert!(matches!(
        g.write("/locked/x", p(b"x"), m(0)),
        Err(Error::PermissionDenied { .. })
    ));
}

#[test]
fn ruling_write_racing_create_stream_lands_and_never_fails() {
    for round in 0..50 {
        let g = graph();
        let path = format!("/race/{round}");
        let g2 = g.clone();
        let p2 = path.clone();
        let w = std::thread::spawn(move || {
            for i in 0..20 {
                g2.write(&p2, p(b"x"), m(i)).unwrap();
            }
        });
        let made = g.create_stream(&path, StreamOptions::default());
        w.join().unwrap();
        let v = g.vertex(&path).unwrap();
        match made {
            Ok(_) => assert_eq!(v.role(), Role::Stream),
            Err(Error::WrongRole { .. }) => assert_eq!(v.role(), Role::Value),
            Err(e) => panic!("{e}"),
        }
    }
}
