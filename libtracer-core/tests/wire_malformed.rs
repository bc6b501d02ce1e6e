//! Ruling 8 (wire protocol v1): malformed input gives a named error, never a panic; a frame that
//! announces more than the bound is rejected before anything is allocated for it.

use libtracer_core::wire::codec::{kind, tlv};
use libtracer_core::wire::*;
use libtracer_core::Meta;

/// A frame of `kind` with the given raw TLV bytes (length prefix computed).
fn raw(kind: u8, tlvs: &[u8]) -> Vec<u8> {
    let mut v = ((tlvs.len() + 2) as u32).to_le_bytes().to_vec();
    v.push(PROTOCOL_VERSION);
    v.push(kind);
    v.extend_from_slice(tlvs);
    v
}

fn t(ty: u8, value: &[u8]) -> Vec<u8> {
    assert!(value.len() < 128);
    let mut v = vec![ty, value.len() as u8];
    v.extend_from_slice(value);
    v
}

fn err(bytes: &[u8]) -> DecodeError {
    decode(bytes, MAX_FRAME).expect_err("malformed input must be rejected")
}

fn ping_tlvs() -> Vec<u8> {
    t(tlv::NONCE, &7u64.to_le_bytes())
}

#[test]
fn ruling8_malformed_inputs_each_give_an_error() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty input", vec![]),
        ("three bytes of prefix", vec![1, 0, 0]),
        ("body shorter than announced", {
            let mut v = raw(kind::PING, &ping_tlvs());
            v.pop();
            v
        }),
        ("length 0", vec![0, 0, 0, 0]),
        ("length 1", vec![1, 0, 0, 0, 1]),
        ("version 2", {
            let mut v = raw(kind::PING, &ping_tlvs());
            v[4] = 2;
            v
        }),
        ("unknown kind", raw(0x7f, &ping_tlvs())),
        ("kind 0", raw(0, &[])),
        ("missing mandatory TLV", raw(kind::PING, &[])),
        (
            "duplicate TLV",
            raw(kind::PING, &[ping_tlvs(), ping_tlvs()].concat()),
        ),
        (
            "unknown mandatory TLV",
            raw(kind::PING, &[ping_tlvs(), t(0xf0, b"x")].concat()),
        ),
        (
            "known TLV in the wrong frame",
            raw(kind::PING, &[ping_tlvs(), t(tlv::PATH, b"/a")].concat()),
        ),
        (
            "integer of the wrong width",
            raw(kind::PING, &t(tlv::NONCE, &[1, 2, 3])),
        ),
        (
            "TLV runs past the frame",
            raw(kind::PING, &[tlv::NONCE, 20, 1, 2]),
        ),
        (
            "TLV header cut after its type",
            raw(kind::PING, &[ping_tlvs(), vec![tlv::NONCE]].concat()),
        ),
        (
            "varint longer than 5 bytes",
            raw(
                kind::PING,
                &[tlv::NONCE, 0x88, 0x80, 0x80, 0x80, 0x80, 0x00],
            ),
        ),
        (
            "varint above u32",
            raw(kind::PING, &[tlv::NONCE, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        ),
        (
            "varint not shortest",
            raw(
                kind::PING,
                &[tlv::NONCE, 0x88, 0x00, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
        ),
        (
            "path not UTF-8",
            raw(
                kind::READ,
                &[
                    t(tlv::REQ, &1u64.to_le_bytes()),
                    t(tlv::PATH, &[0xff, 0xfe]),
                ]
                .concat(),
            ),
        ),
        ("path too long", {
            let mut tl = t(tlv::REQ, &1u64.to_le_bytes());
            tl.push(tlv::PATH);
            tl.extend_from_slice(&[0x81, 0x08]); // 1025
            tl.extend([b'a'; 1025]);
            raw(kind::READ, &tl)
        }),
        ("node name too long", {
            let mut tl = vec![tlv::NODE, 0x80, 0x02];
            tl.extend([b'n'; 256]);
            tl.extend(t(tlv::VERSION, &[1]));
            tl.extend(t(tlv::MAX_FRAME, &1024u32.to_le_bytes()));
            raw(kind::HELLO, &tl)
        }),
        (
            "bad role",
            raw(
                kind::READ_REPLY,
                &[t(tlv::REQ, &[0; 8]), t(tlv::ROLE, &[9])].concat(),
            ),
        ),
        (
            "read reply with meta but no payload",
            raw(
                kind::READ_REPLY,
                &[
                    t(tlv::REQ, &[0; 8]),
                    t(tlv::ROLE, &[1]),
                    t(tlv::META, &[0; 32]),
                ]
                .concat(),
            ),
        ),
        (
            "bad structural event code",
            raw(
                kind::STRUCTURE,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::EVENT, &[4]),
                    t(tlv::PATH, b"a"),
                ]
                .concat(),
            ),
        ),
        (
            "removed event with a role",
            raw(
                kind::STRUCTURE,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::EVENT, &[2]),
                    t(tlv::PATH, b"a"),
                    t(tlv::ROLE, &[1]),
                ]
                .concat(),
            ),
        ),
        (
            "schema set without schema",
            raw(
                kind::STRUCTURE,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::EVENT, &[3]),
                    t(tlv::PATH, b"a"),
                ]
                .concat(),
            ),
        ),
        (
            "schema with trailing bytes",
            raw(
                kind::STRUCTURE,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::EVENT, &[3]),
                    t(tlv::PATH, b"a"),
                    t(tlv::SCHEMA, &[0, 0, 0, 0, 9]),
                ]
                .concat(),
            ),
        ),
        (
            "schema part overruns",
            raw(
                kind::STRUCTURE,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::EVENT, &[3]),
                    t(tlv::PATH, b"a"),
                    t(tlv::SCHEMA, &[0, 0, 0, 5, 1]),
                ]
                .concat(),
            ),
        ),
        (
            "meta of 31 bytes",
            raw(
                kind::DELIVERY,
                &[
                    t(tlv::EDGE, &[0; 8]),
                    t(tlv::META, &[0; 31]),
                    t(tlv::PAYLOAD, b""),
                ]
                .concat(),
            ),
        ),
        (
            "delivery without payload",
            raw(
                kind::DELIVERY,
                &[t(tlv::EDGE, &[0; 8]), t(tlv::META, &[0; 32])].concat(),
            ),
        ),
    ];
    for (name, bytes) in cases {
        let e = err(&bytes);
        // Every error renders as a sentence naming the problem.
        assert!(!e.to_string().is_empty(), "{name}");
        // And the streaming decoder agrees: an error or (for a truncated input) no frame.
        let mut dec = FrameDecoder::new(MAX_FRAME);
        let mut input = &bytes[..];
        let streamed = loop {
            match dec.feed(&mut input) {
                Ok(Some(f)) => panic!("{name}: streaming decoded {f:?}"),
                Ok(None) if input.is_empty() => break None,
                Ok(None) => {}
                Err(e) => break Some(e),
            }
        };
        match streamed {
            Some(s) => assert_eq!(s, e, "{name}"),
            None => assert!(matches!(e, DecodeError::Incomplete { .. }), "{name}: {e}"),
        }
    }
}

#[test]
fn ruling8_errors_name_the_fault() {
    assert_eq!(
        err(&raw(kind::PING, &[])),
        DecodeError::MissingTlv {
            frame: "PING",
            tlv: "NONCE"
        }
    );
    assert_eq!(
        err(&raw(kind::PING, &[ping_tlvs(), t(0xf0, b"x")].concat())),
        DecodeError::UnknownMandatoryTlv {
            frame: "PING",
            tlv: 0xf0
        }
    );
    assert_eq!(err(&raw(0x7f, &[])), DecodeError::UnknownKind(0x7f));
    assert_eq!(
        err(&raw(kind::PING, &t(tlv::NONCE, &[1, 2, 3]))),
        DecodeError::BadLength {
            tlv: "NONCE",
            len: 3,
            expected: 8
        }
    );
}

#[test]
fn ruling8_oversized_frame_is_rejected_before_allocation() {
    // A 4-byte prefix announcing 4 GiB: the decoder must refuse at once, holding nothing.
    let mut dec = FrameDecoder::new(MAX_FRAME);
    assert_eq!(dec.push(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]), 4);
    assert_eq!(
        dec.pop(),
        Err(DecodeError::FrameTooLarge {
            len: u32::MAX as u64,
            max: MAX_FRAME
        })
    );
    // Poisoned: the framing is lost, nothing more is taken.
    assert_eq!(dec.push(&[0; 16]), 0);
    assert!(dec.pop().is_err());
    // A smaller bound (a peer's HELLO) is enforced the same way.
    let f = encode(&Frame::Write {
        req: 0,
        path: "/a".into(),
        meta: Meta::default(),
        payload: vec![0; 2000].into(),
    })
    .unwrap();
    let mut small = FrameDecoder::new(1000);
    small.push(&f);
    assert!(matches!(
        small.pop(),
        Err(DecodeError::FrameTooLarge { max: 1000, .. })
    ));
}

#[test]
fn ruling8_a_stalled_large_frame_holds_only_what_arrived() {
    // Announce 60 MiB, send 10 bytes: what is reserved is bounded by EAGER_RESERVE, not 60 MiB,
    // and the decoder reports being mid-frame rather than inventing a frame.
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut bytes = (60u32 << 20).to_le_bytes().to_vec();
    bytes.extend_from_slice(&[1, 2, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(dec.push(&bytes), bytes.len());
    assert_eq!(dec.pop(), Ok(None));
    assert!(dec.is_mid_frame());
    let w = dec.body_window().expect("a large body is missing");
    assert!(
        w.len() <= libtracer_core::wire::stream::EAGER_RESERVE,
        "first window {} bytes",
        w.len()
    );
}

#[test]
fn ruling8_body_errors_leave_the_stream_usable() {
    let good = encode(&Frame::Ping { nonce: 1 }).unwrap();
    let bad = raw(kind::PING, &[]);
    let stream = [bad, good].concat();
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut input = &stream[..];
    assert!(dec.feed(&mut input).is_err());
    assert_eq!(dec.feed(&mut input), Ok(Some(Frame::Ping { nonce: 1 })));
}

#[test]
fn ruling8_struct_event_payload_errors() {
    assert!(decode_struct_event(&[]).is_err());
    assert_eq!(
        decode_struct_event(&[2]),
        Err(DecodeError::UnsupportedVersion(2))
    );
    assert!(matches!(
        decode_struct_event(&[1]),
        Err(DecodeError::MissingTlv { .. })
    ));
    let long = StructEvent::Removed {
        path: "a".repeat(2000),
    };
    assert!(matches!(
        decode_struct_event(&encode_struct_event(&long)),
        Err(DecodeError::StringTooLong { .. })
    ));
}

#[test]
fn ruling8_unknown_error_codes_read_as_internal() {
    let f = raw(
        kind::ERROR,
        &[
            t(tlv::REQ, &5u64.to_le_bytes()),
            t(tlv::CODE, &999u16.to_le_bytes()),
        ]
        .concat(),
    );
    assert_eq!(
        decode(&f, MAX_FRAME).unwrap().0,
        Frame::Error {
            req: 5,
            code: ErrorCode::Internal,
            message: String::new()
        }
    );
}

/// The shared-memory frames (docs/wire.md, SEGMENT / SHM_DELIVERY / RELEASE) and HELLO's SHM.
#[test]
fn ruling8_shared_memory_frames_malformed() {
    let edge = t(tlv::EDGE, &1u64.to_le_bytes());
    let meta = t(tlv::META, &[0u8; 32]);
    let shm_ref = t(tlv::SHM_REF, &[0u8; 24]);
    let cases: Vec<(&str, Vec<u8>, DecodeError)> = vec![
        (
            "SEGMENT without its TLV",
            raw(kind::SEGMENT, &[]),
            DecodeError::MissingTlv {
                frame: "SEGMENT",
                tlv: "SEGMENT",
            },
        ),
        (
            "SEGMENT of 11 bytes",
            raw(kind::SEGMENT, &t(tlv::SEGMENT, &[0u8; 11])),
            DecodeError::BadLength {
                tlv: "SEGMENT",
                len: 11,
                expected: 12,
            },
        ),
        (
            "SHM_DELIVERY without a reference",
            raw(kind::SHM_DELIVERY, &[edge.clone(), meta.clone()].concat()),
            DecodeError::MissingTlv {
                frame: "SHM_DELIVERY",
                tlv: "SHM_REF",
            },
        ),
        (
            "SHM_DELIVERY with a PAYLOAD too",
            raw(
                kind::SHM_DELIVERY,
                &[
                    edge.clone(),
                    meta.clone(),
                    shm_ref.clone(),
                    t(tlv::PAYLOAD, b"x"),
                ]
                .concat(),
            ),
            DecodeError::UnexpectedTlv {
                frame: "SHM_DELIVERY",
                tlv: "PAYLOAD",
            },
        ),
        (
            "SHM_REF of 23 bytes",
            raw(
                kind::SHM_DELIVERY,
                &[edge.clone(), meta.clone(), t(tlv::SHM_REF, &[0u8; 23])].concat(),
            ),
            DecodeError::BadLength {
                tlv: "SHM_REF",
                len: 23,
                expected: 24,
            },
        ),
        (
            "SHM_REF in a DELIVERY",
            raw(
                kind::DELIVERY,
                &[edge.clone(), meta.clone(), shm_ref].concat(),
            ),
            DecodeError::UnexpectedTlv {
                frame: "DELIVERY",
                tlv: "SHM_REF",
            },
        ),
        (
            "RELEASE of no tokens",
            raw(kind::RELEASE, &t(tlv::TOKENS, &[])),
            DecodeError::BadLength {
                tlv: "TOKENS",
                len: 0,
                expected: 8,
            },
        ),
        (
            "RELEASE of 12 bytes",
            raw(kind::RELEASE, &t(tlv::TOKENS, &[0u8; 12])),
            DecodeError::BadLength {
                tlv: "TOKENS",
                len: 12,
                expected: 8,
            },
        ),
        (
            "HELLO with a 2-byte SHM",
            raw(
                kind::HELLO,
                &[
                    t(tlv::VERSION, &[1]),
                    t(tlv::NODE, b"a"),
                    t(tlv::MAX_FRAME, &MAX_FRAME.to_le_bytes()),
                    t(tlv::SHM, &[1, 0]),
                ]
                .concat(),
            ),
            DecodeError::BadLength {
                tlv: "SHM",
                len: 2,
                expected: 1,
            },
        ),
    ];
    for (what, bytes, want) in cases {
        assert_eq!(err(&bytes), want, "{what}");
    }
    // More than 1024 tokens (a longer TLV than `t` builds).
    let mut tokens = vec![tlv::TOKENS, 0x88, 0x40];
    tokens.extend(std::iter::repeat_n(0u8, 8 * 1025));
    assert!(matches!(
        err(&raw(kind::RELEASE, &tokens)),
        DecodeError::BadLength { tlv: "TOKENS", .. }
    ));
    // HELLO's SHM flags: bits other than 0 are ignored, absent is false.
    let hello = |flags: Option<u8>| {
        let mut v = [
            t(tlv::VERSION, &[1]),
            t(tlv::NODE, b"a"),
            t(tlv::MAX_FRAME, &MAX_FRAME.to_le_bytes()),
        ]
        .concat();
        if let Some(f) = flags {
            v.extend(t(tlv::SHM, &[f]));
        }
        match decode(&raw(kind::HELLO, &v), MAX_FRAME).unwrap().0 {
            Frame::Hello { shm, .. } => shm,
            f => panic!("{f:?}"),
        }
    };
    assert_eq!(hello(None), ShmCaps::NONE);
    assert_eq!(hello(Some(0xfc)), ShmCaps::NONE, "unknown bits are ignored");
    assert_eq!(
        hello(Some(0xfd)),
        ShmCaps {
            maps: true,
            retire: false
        }
    );
    assert_eq!(hello(Some(0x03)), ShmCaps::ALL);
    // The encoder refuses RELEASE of no tokens or of too many.
    for n in [0, 1025] {
        assert!(encode(&Frame::Release {
            tokens: vec![0; n].into(),
        })
        .is_err());
    }
}

/// HELLO's PERMISSIONS (docs/wire.md section 2, spec change 2026-12-03): opaque bytes up to
/// 64 KiB round-trip; one byte more is refused by the encoder and, built by hand, malformed for
/// the decoder; a HELLO without it decodes as before.
#[test]
fn hello_permissions_are_bounded_at_64_kib() {
    let hello = |p: Option<Vec<u8>>| Frame::Hello {
        version: PROTOCOL_VERSION,
        node: "robot-1".into(),
        max_frame: MAX_FRAME,
        shm: ShmCaps::NONE,
        permissions: p.map(bytes::Bytes::from),
        directory: None,
    };
    for n in [0, 1, 4096, MAX_PERMISSIONS] {
        let f = hello(Some(vec![b'p'; n]));
        let bytes = encode(&f).unwrap();
        assert_eq!(decode(&bytes, MAX_FRAME).unwrap().0, f, "{n} bytes");
    }
    assert!(matches!(
        encode(&hello(Some(vec![b'p'; MAX_PERMISSIONS + 1]))),
        Err(EncodeError::StringTooLong {
            field: "PERMISSIONS",
            ..
        })
    ));
    // By hand: a HELLO without PERMISSIONS, then the TLV 0x03 with 64 KiB + 1 bytes.
    let mut bytes = encode(&hello(None)).unwrap();
    let n = MAX_PERMISSIONS + 1;
    bytes.push(0x03);
    let mut v = n as u32;
    while v >= 0x80 {
        bytes.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
    bytes.extend(std::iter::repeat_n(b'p', n));
    let body = (bytes.len() - 4) as u32;
    bytes[..4].copy_from_slice(&body.to_le_bytes());
    assert_eq!(
        decode(&bytes, MAX_FRAME).unwrap_err(),
        DecodeError::StringTooLong {
            field: "PERMISSIONS",
            len: n,
            max: MAX_PERMISSIONS
        }
    );
    assert_eq!(
        decode(&encode(&hello(None)).unwrap(), MAX_FRAME).unwrap().0,
        hello(None)
    );
}

/// HELLO's DIRECTORY (docs/wire.md section 2, spec change 2026-12-04): a u16 port that
/// round-trips; a value of another length, or 0, is malformed; a HELLO without it decodes as
/// before (an older node's).
#[test]
fn hello_directory_is_a_port_of_two_bytes_never_0() {
    let hello = |directory: Option<u16>| Frame::Hello {
        version: PROTOCOL_VERSION,
        node: "robot-1".into(),
        max_frame: MAX_FRAME,
        shm: ShmCaps::NONE,
        permissions: None,
        directory,
    };
    for d in [None, Some(1), Some(24650), Some(u16::MAX)] {
        let f = hello(d);
        assert_eq!(decode(&encode(&f).unwrap(), MAX_FRAME).unwrap().0, f);
    }
    // By hand: a HELLO without DIRECTORY, then the TLV 0x04 with `value`.
    let with = |value: &[u8]| {
        let mut bytes = encode(&hello(None)).unwrap();
        bytes.push(0x04);
        bytes.push(value.len() as u8);
        bytes.extend_from_slice(value);
        let body = (bytes.len() - 4) as u32;
        bytes[..4].copy_from_slice(&body.to_le_bytes());
        decode(&bytes, MAX_FRAME).map(|(f, _)| f)
    };
    assert_eq!(with(&24650u16.to_le_bytes()).unwrap(), hello(Some(24650)));
    for bad in [&[][..], &[1][..], &[1, 2, 3][..]] {
        assert!(
            matches!(
                with(bad),
                Err(DecodeError::BadLength {
                    tlv: "DIRECTORY",
                    expected: 2,
                    ..
                })
            ),
            "{bad:?}: {:?}",
            with(bad)
        );
    }
    assert_eq!(
        with(&[0, 0]).unwrap_err(),
        DecodeError::BadValue {
            field: "DIRECTORY",
            value: 0
        }
    );
}

/// SUBSCRIBE's TAG (docs/wire.md SUBSCRIBE, spec change 2026-12-05): opaque bytes up to 64
/// round-trip; one byte more is refused by the encoder and, built by hand, malformed for the
/// decoder; a SUBSCRIBE without it (an older node's) decodes as before.
#[test]
fn subscribe_tag_is_bounded_at_64_bytes() {
    let subscribe = |tag: Option<Vec<u8>>| Frame::Subscribe {
        req: 1,
        source: "/camera/image".into(),
        edge: 9,
        policy: 0b10_0001,
        tag: tag.map(bytes::Bytes::from),
        window: None,
    };
    for n in [0, 1, 16, MAX_TAG] {
        let f = subscribe(Some(vec![7; n]));
        assert_eq!(decode(&encode(&f).unwrap(), MAX_FRAME).unwrap().0, f, "{n}");
    }
    assert!(matches!(
        encode(&subscribe(Some(vec![7; MAX_TAG + 1]))),
        Err(EncodeError::StringTooLong { field: "TAG", .. })
    ));
    let mut tlvs = t(tlv::REQ, &1u64.to_le_bytes());
    tlvs.extend(t(tlv::PATH, b"/t"));
    tlvs.extend(t(tlv::EDGE, &9u64.to_le_bytes()));
    tlvs.extend(t(tlv::POLICY, &1u16.to_le_bytes()));
    tlvs.extend(t(tlv::TAG, &[7; MAX_TAG + 1]));
    assert_eq!(
        err(&raw(kind::SUBSCRIBE, &tlvs)),
        DecodeError::StringTooLong {
            field: "TAG",
            len: MAX_TAG + 1,
            max: MAX_TAG
        }
    );
    assert_eq!(
        decode(&encode(&subscribe(None)).unwrap(), MAX_FRAME)
            .unwrap()
            .0,
        subscribe(None)
    );
}

/// Paced edges (docs/wire.md section 2, "Flow control"): WINDOW is 12 bytes exactly, in
/// SUBSCRIBE (optional) and CREDIT (mandatory); a CREDIT without it, or with another length,
/// is malformed; the policy's paced bit survives the trip.
#[test]
fn window_and_credit_are_checked() {
    let mut sub = t(tlv::REQ, &1u64.to_le_bytes());
    sub.extend(t(tlv::PATH, b"/t"));
    sub.extend(t(tlv::EDGE, &9u64.to_le_bytes()));
    sub.extend(t(tlv::POLICY, &0b110_0001u16.to_le_bytes()));
    let mut short = sub.clone();
    short.extend(t(tlv::WINDOW, &[0; 11]));
    assert!(matches!(
        err(&raw(kind::SUBSCRIBE, &short)),
        DecodeError::BadLength { tlv: "WINDOW", .. }
    ));
    let mut whole = sub.clone();
    let mut w = 128u32.to_le_bytes().to_vec();
    w.extend((4u64 << 20).to_le_bytes());
    whole.extend(t(tlv::WINDOW, &w));
    match decode(&raw(kind::SUBSCRIBE, &whole), MAX_FRAME).unwrap().0 {
        Frame::Subscribe { policy, window, .. } => {
            assert!(libtracer_core::DeliveryPolicy::from_bits(policy).is_paced());
            assert_eq!(
                window,
                Some(libtracer_core::Window {
                    messages: 128,
                    bytes: 4 << 20
                })
            );
        }
        other => panic!("{other:?}"),
    }
    let edge = t(tlv::EDGE, &9u64.to_le_bytes());
    assert!(matches!(
        err(&raw(kind::CREDIT, &edge)),
        DecodeError::MissingTlv { .. }
    ));
    let mut long = edge.clone();
    long.extend(t(tlv::WINDOW, &[0; 13]));
    assert!(matches!(
        err(&raw(kind::CREDIT, &long)),
        DecodeError::BadLength { tlv: "WINDOW", .. }
    ));
}
