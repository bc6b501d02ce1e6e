//! Ruling: bad input from a peer gets a clear error reply, never a crash, and never creates
//! anything. Arbitrary frames (random paths, edge ids, policies) are fed to a graph through a
//! scripted link; every request must be answered exactly once.

mod common;
use common::{graph, scripted};

use libtracer_core::wire::frame::{ErrorCode, Frame};
use libtracer_core::{Meta, Payload, StreamOptions};
use proptest::prelude::*;

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/s".to_string()),
        Just("/s/deeper".to_string()),
        Just("/".to_string()),
        Just("/net".to_string()),
        Just("/net/x/y".to_string()),
        Just("/s/:children[]".to_string()),
        Just("/s/:acl".to_string()),
        "[/a-z:.\\[\\]]{0,12}",
        any::<String>(),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    let req = 1..u64::MAX;
    prop_oneof![
        (req.clone(), path(), any::<Vec<u8>>()).prop_map(|(req, path, b)| Frame::Write {
            req,
            path,
            meta: Meta::default(),
            payload: Payload::from(b),
        }),
        (
            req.clone(),
            path(),
            any::<u64>(),
            any::<u16>(),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80))
        )
            .prop_map(|(req, source, edge, policy, tag)| {
                Frame::Subscribe {
                    req,
                    source,
                    edge,
                    policy,
                    tag: tag.map(Into::into),
                    window: None,
                }
            }),
        (req.clone(), path()).prop_map(|(req, path)| Frame::Read { req, path }),
        any::<u64>().prop_map(|edge| Frame::Unsubscribe { edge }),
        (any::<u64>(), any::<Vec<u8>>()).prop_map(|(edge, b)| Frame::Delivery {
            edge,
            meta: Meta::default(),
            suffix: None,
            payload: Payload::from(b),
        }),
        any::<u64>().prop_map(|req| Frame::Ok { req }),
        any::<u64>().prop_map(|nonce| Frame::Ping { nonce }),
    ]
}

fn req_of(f: &Frame) -> Option<u64> {
    match f {
        Frame::Write { req, .. } | Frame::Subscribe { req, .. } | Frame::Read { req, .. } => {
            Some(*req)
        }
        _ => None,
    }
}

fn answered(f: &Frame) -> Option<u64> {
    match f {
        Frame::Ok { req } | Frame::Error { req, .. } | Frame::ReadReply { req, .. } => Some(*req),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn ruling_peer_input_is_answered_never_crashes_never_creates(
        frames in proptest::collection::vec(frame(), 1..40),
        owner in any::<bool>(),
    ) {
        let g = graph("g");
        g.create_stream("/s", StreamOptions::keep_last(4)).unwrap();
        let uid = if owner { g.owner().uid().unwrap() } else { g.owner().uid().unwrap().wrapping_add(1) };
        let (l, id) = scripted(&g, "fuzz", uid, uid);
        for f in frames {
            let want = req_of(&f);
            let before = l.sent.lock().unwrap().len();
            g.link_frame(id, f);
            if let Some(req) = want {
                let sent = l.sent.lock().unwrap();
                let replies: Vec<&Frame> = sent[before..]
                    .iter()
                    .filter(|x| answered(x) == Some(req))
                    .collect();
                prop_assert_eq!(replies.len(), 1, "request {} answered once", req);
                if !owner {
                    // A stranger is refused everything here (no ACL lets it in), or the
                    // request was malformed / addressed nowhere.
                    if let Frame::Error { code, .. } = replies[0] {
                        prop_assert!(matches!(
                            code,
                            ErrorCode::PermissionDenied | ErrorCode::NotFound
                                | ErrorCode::Malformed | ErrorCode::Unsupported
                                | ErrorCode::SchemaNotFound | ErrorCode::WrongRole
                        ));
                    } else {
                        prop_assert!(false, "stranger got {:?}", replies[0]);
                    }
                }
            }
        }
        // Nothing new below the root but what the test made.
        prop_assert!(g.vertex("/s/deeper").is_none());
        let feed = g.create_stream("/feed", StreamOptions::default()).unwrap();
        g.subscribe("/:children[]", "/feed", Default::default()).unwrap();
        // /net, /net/fuzz, /s, /feed.
        prop_assert_eq!(feed.len(), 4);
        g.link_down(id);
        prop_assert_eq!(g.subscriber_count("/s"), 0);
    }
}
