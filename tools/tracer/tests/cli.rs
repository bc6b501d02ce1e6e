//! The `tracer` binary end to end on files written by tracer-mcap (issue 4 item 4): --help on
//! every verb, info from the summary, cat filters, attachments, recover, `record --duration`, and the verbs that
//! wait for libtracer exiting 2.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use tracer_mcap::*;

fn tracer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

/// 3 topics x 40 messages with an indexed `sensor_time`, an attachment, metadata.
fn write(path: &Path) -> Vec<u8> {
    let mut w = Writer::new(
        Vec::new(),
        WriteOptions {
            chunk_size: Some(1024),
            ..Default::default()
        },
    )
    .unwrap();
    let s = w
        .add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        .unwrap();
    let md = ros2::channel_metadata(&[ros2::OfferedQos::default()]);
    let chans: Vec<u16> = ["/a", "/b", "/c"]
        .iter()
        .map(|t| w.add_channel(s, t, "cdr", &md).unwrap())
        .collect();
    let f = w
        .add_field("sensor_time", FieldEncoding::Timestamp, true)
        .unwrap();
    for i in 0..40u64 {
        for (k, ch) in chans.iter().enumerate() {
            let t = 1_000_000_000 + i * 1_000_000 + k as u64;
            let h = MessageHeader {
                channel_id: *ch,
                sequence: i as u32,
                log_time: t,
                publish_time: t,
            };
            w.write_message(
                &h,
                &cdr_string(&format!("m{i}")),
                &[(f, FieldValue::Timestamp(i * 10))],
            )
            .unwrap();
        }
    }
    let a = Attachment {
        log_time: 1,
        create_time: 0,
        name: "map.txt".into(),
        media_type: "text/plain".into(),
        data: b"the map".to_vec(),
    };
    w.attach(&a, &[]).unwrap();
    w.write_metadata(
        "session",
        &BTreeMap::from([("k".to_string(), "v".to_string())]),
    )
    .unwrap();
    let bytes = w.into_inner().unwrap();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

#[test]
fn help_on_every_verb() {
    for verb in [
        "info",
        "cat",
        "attachments",
        "recover",
        "record",
        "graph",
        "echo",
        "serve",
        "convert",
    ] {
        let o = tracer(&[verb, "--help"]);
        assert!(o.status.success(), "{verb} --help");
        assert!(stdout(&o).contains("Usage"), "{verb}");
    }
    for sub in ["list", "extract"] {
        assert!(tracer(&["attachments", sub, "--help"]).status.success());
    }
}

/// `graph` with nobody else on the graph: an empty graph, printed at once, in each format.
#[test]
fn graph_of_an_empty_host_is_empty_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_tracer"))
            .arg("graph")
            .args(args)
            .env("RMW_TRACER_RENDEZVOUS_DIR", dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    assert_eq!(json["nodes"], serde_json::json!([]));
    assert_eq!(json["edges"], serde_json::json!([]));
    assert!(run(&[]).contains("nodes (0):"));
    assert!(run(&["--dot"]).starts_with("digraph ros {"));
}

#[test]
fn bench_is_not_a_verb() {
    let o = tracer(&["bench"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unrecognized subcommand"));
}

/// `record` is a real participant now: with `--duration` it stops by itself and finishes a
/// file that the reader opens (with nobody to record, it holds no message).
#[test]
fn record_with_duration_stops_and_finishes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("empty.mcap");
    let o = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["record", "--all", "--duration", "0.5", "-o"])
        .arg(&out)
        // A private base (a tempdir is mode 0700); the domain's directory is made below it.
        .env("RMW_TRACER_RENDEZVOUS_DIR", dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = stdout(&tracer(&["info", out.to_str().unwrap()]));
    assert!(info.contains("messages:     0"), "{info}");
}

#[test]
fn info_cat_attachments_recover() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.mcap");
    let bytes = write(&p);
    let ps = p.to_str().unwrap();

    let info = stdout(&tracer(&["info", "--io-stats", ps]));
    assert!(info.contains("messages:     120"), "{info}");
    assert!(
        info.contains("/a       40 msgs : std_msgs/msg/String [cdr]"),
        "{info}"
    );
    assert!(info.contains("sensor_time : timestamp, indexed"), "{info}");
    assert!(info.contains("map.txt : text/plain"), "{info}");
    assert!(info.contains("metadata:     session"), "{info}");

    let lines = |args: &[&str]| -> Vec<serde_json::Value> {
        let o = tracer(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(lines(&["cat", ps]).len(), 120);
    let b = lines(&[
        "cat",
        ps,
        "-t",
        "/b",
        "--start",
        "1.005",
        "--end",
        "1010000000",
    ]);
    assert_eq!(b.len(), 5);
    assert!(b.iter().all(|m| m["topic"] == "/b"));
    assert_eq!(b[0]["data"]["data"], "m5", "std_msgs/String decoded");
    let f = lines(&[
        "cat",
        ps,
        "--field",
        "sensor_time",
        "--min",
        "100",
        "--max",
        "129",
        "--payload",
        "hex",
    ]);
    assert_eq!(f.len(), 9, "i = 10, 11, 12 on three topics");
    assert!(f
        .iter()
        .all(|m| m["payload_hex"].as_str().unwrap().starts_with("00010000")));
    assert!(!tracer(&["cat", ps, "--field", "nope"]).status.success());

    let list = stdout(&tracer(&["attachments", "list", ps]));
    assert!(list.contains("map.txt"));
    let out = dir.path().join("x.txt");
    assert!(tracer(&[
        "attachments",
        "extract",
        ps,
        "-n",
        "map.txt",
        "-o",
        out.to_str().unwrap()
    ])
    .status
    .success());
    assert_eq!(std::fs::read(&out).unwrap(), b"the map");

    // A file cut in the middle (writer died): info fails naming the offset, cat reads what
    // is there, recover makes it whole again.
    let cut = dir.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cs = cut.to_str().unwrap();
    let o = tracer(&["info", cs]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("offset"));
    let partial = stdout(&tracer(&["cat", cs])).lines().count();
    assert!(partial > 10 && partial < 120, "{partial}");
    let fixed = dir.path().join("fixed.mcap");
    let o = tracer(&["recover", cs, fixed.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains(&format!("recovered {partial} messages")));
    let info = stdout(&tracer(&["info", fixed.to_str().unwrap()]));
    assert!(info.contains(&format!("messages:     {partial}")), "{info}");
}
