//! Ruling 8: any byte string yields frames or errors, never a panic or a hang. The fuzz target
//! (fuzz/fuzz_targets/decode.rs) runs `exercise_decode` under libFuzzer; this runs the same
//! function over a seeded random corpus, including mutations of valid frames, in a normal test.

#[path = "common/corpus.rs"]
mod corpus;

use corpus::Rng;
use libtracer_core::wire::*;
use libtracer_core::Meta;

fn seeds() -> Vec<Vec<u8>> {
    let frames = [
        Frame::Hello {
            version: 1,
            node: "n".into(),
            max_frame: 4096,
            shm: ShmCaps::NONE,
            permissions: None,
            directory: None,
        },
        Frame::Write {
            req: 1,
            path: "/a".into(),
            meta: Meta::default(),
            payload: vec![1; 40].into(),
        },
        Frame::Subscribe {
            req: 2,
            source: "/a".into(),
            edge: 3,
            policy: 1,
            tag: Some(b"who".to_vec().into()),
            window: None,
        },
        Frame::Delivery {
            edge: 3,
            meta: Meta::default(),
            suffix: Some("x".into()),
            payload: vec![2; 10].into(),
        },
        Frame::Structure {
            edge: 3,
            event: StructEvent::Created {
                path: "b".into(),
                role: Role::Stream,
                schema: Some(SchemaInfo::default()),
            },
        },
        Frame::ReadReply {
            req: 4,
            role: Role::Value,
            schema: None,
            value: Some((Meta::default(), vec![3].into())),
        },
        Frame::Error {
            req: 0,
            code: ErrorCode::NotFound,
            message: "m".into(),
        },
        Frame::Ping { nonce: 9 },
    ];
    let mut s: Vec<Vec<u8>> = frames.iter().map(|f| encode(f).unwrap()).collect();
    s.push(encode_struct_event(&StructEvent::SchemaSet {
        path: "c".into(),
        schema: SchemaInfo::default(),
    }));
    s.push(s.concat());
    s
}

#[test]
fn ruling8_any_bytes_give_frames_or_errors() {
    let seeds = seeds();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut totals = ExerciseReport::default();
    for i in 0..20_000 {
        let input = corpus::input(&mut rng, i, &seeds, 200, corpus::FEW);
        let r = exercise_decode(&input);
        totals.frames += r.frames;
        totals.errors += r.errors;
    }
    // The corpus reaches both outcomes, so the check above was not vacuous.
    assert!(totals.frames > 1000 && totals.errors > 1000, "{totals:?}");
}
