"""Independent readers on the MCAP files tracer-mcap writes (issue 4, "How it is shown").

The fixture generator (mcap/examples/write_fixtures.rs) writes one file per compression and
chunking (zstd, lz4, none, one chunk, unchunked), every file with the message-fields
extension records, attachments (one with Attachment Fields) and metadata, and a JSON file of
what it wrote. Then:

* the Python ``mcap`` package reads every message, attachment and metadata record, skipping the
  extension opcodes (0x10-0x14), with CRC validation on;
* ``mcap-ros2-support`` decodes every std_msgs/String (CDR written by hand in the generator)
  with the real ros2msg schema, to the text that was written;
* ``rosbags`` opens each file and lists its topics and message counts;
* ``tracer info`` prints the same counts, and ``tracer cat`` the same payloads.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import harness

SENTINEL = 2**64 - 1
CASES = ["zstd", "lz4", "none", "one_chunk", "unchunked"]


def _cargo(*args: str) -> None:
    subprocess.run(["cargo", *args], cwd=harness.REPO, check=True)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mcap_fixtures")
    _cargo("build", "--release", "-q", "-p", "tracer-mcap", "--example", "write_fixtures")
    _cargo("build", "--release", "-q", "-p", "tracer-cli")
    exe = harness.target_dir() / "release" / "examples" / "write_fixtures"
    subprocess.run([exe, out], check=True, capture_output=True)
    return out


def _expected(fixtures: Path, case: str) -> list[dict]:
    return json.loads((fixtures / f"{case}.json").read_text())


def _text(cdr: bytes) -> str:
    # The layout the generator wrote by hand: 00 01 00 00, uint32 length with NUL, bytes, NUL.
    assert cdr[:4] == b"\x00\x01\x00\x00"
    n = int.from_bytes(cdr[4:8], "little")
    assert cdr[8 + n - 1] == 0
    return cdr[8 : 8 + n - 1].decode()


@pytest.mark.parametrize("case", CASES)
def test_mcap_package_reads_every_record_and_skips_the_extension(fixtures, case):
    """Issue 4: the Python mcap package reads every file we write (skips extension records)."""
    from mcap.reader import make_reader

    want = _expected(fixtures, case)
    with open(fixtures / f"{case}.mcap", "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        header = reader.get_header()
        assert header.profile == "ros2"
        got = list(reader.iter_messages())
        assert len(got) == len(want) == 200
        for (schema, channel, message), w in zip(got, want):
            assert schema.name == "std_msgs/msg/String" and schema.encoding == "ros2msg"
            assert channel.message_encoding == "cdr"
            assert "offered_qos_profiles" in channel.metadata
            assert channel.topic == w["topic"]
            assert message.log_time == w["log_time"]
            # Spec 2.6: a message with fields has the sentinel; one without keeps its time.
            assert message.publish_time == (SENTINEL if w["fields"] else w["publish_time"])
            assert _text(message.data) == w["data"]
        summary = reader.get_summary()
        assert summary.statistics.message_count == 200
        assert sum(summary.statistics.channel_message_counts.values()) == 200
        if case != "unchunked":
            assert summary.chunk_indexes
        attachments = list(reader.iter_attachments())
        assert [a.name for a in attachments] == ["calibration.yaml", "notes.txt"]
        assert attachments[0].data == b"fx: 525.0\n"
        assert attachments[1].create_time == SENTINEL
        metadata = list(reader.iter_metadata())
        assert [(m.name, m.metadata) for m in metadata] == [("session", {"robot": "fixture-bot"})]


@pytest.mark.parametrize("case", CASES)
def test_mcap_stream_reader_walks_all_records(fixtures, case):
    """The non-indexed stream reader also passes over the extension opcodes."""
    from mcap.records import Message
    from mcap.stream_reader import StreamReader

    with open(fixtures / f"{case}.mcap", "rb") as f:
        records = list(StreamReader(f, validate_crcs=True).records)
    assert sum(isinstance(r, Message) for r in records) == 200


@pytest.mark.parametrize("case", CASES)
def test_mcap_ros2_support_decodes_std_msgs_string(fixtures, case):
    """Issue 4: mcap-ros2-support decodes the CDR we wrote, with the real ros2msg schema."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    want = _expected(fixtures, case)
    with open(fixtures / f"{case}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        got = [(c.topic, d.data) for _, c, _, d in reader.iter_decoded_messages()]
    assert got == [(w["topic"], w["data"]) for w in want]


@pytest.mark.parametrize("case", CASES)
def test_rosbags_opens_and_lists_topics_and_counts(fixtures, case):
    """Issue 4: rosbags opens the file and lists its topics and counts."""
    from rosbags.rosbag2 import Reader

    want = _expected(fixtures, case)
    with Reader(fixtures / f"{case}.mcap") as r:
        topics = {t: info.msgtype for t, info in r.topics.items()}
        assert topics == {"/chatter": "std_msgs/msg/String", "/other": "std_msgs/msg/String"}
        counts: dict[str, int] = {}
        for conn, ts, data in r.messages():
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
        assert r.message_count == 200
        qos = {c.topic: c.ext.offered_qos_profiles for c in r.connections}
        assert all(len(q) == 1 for q in qos.values())
        # The Jazzy string form written by tracer_mcap::ros2 is parsed to the policies we set.
        other = qos["/other"][0]
        assert (other.reliability.name, other.history.name, other.depth) == ("BEST_EFFORT", "KEEP_LAST", 5)
        assert qos["/chatter"][0].reliability.name == "RELIABLE"
    assert counts == {"/chatter": sum(w["topic"] == "/chatter" for w in want), "/other": sum(w["topic"] == "/other" for w in want)}


def _tracer(*args) -> str:
    exe = harness.target_dir() / "release" / "tracer"
    return subprocess.run([exe, *map(str, args)], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("case", CASES)
def test_tracer_info_and_cat_agree_with_the_independent_readers(fixtures, case):
    """tracer info (summary only) shows the counts; tracer cat the payloads and fields."""
    want = _expected(fixtures, case)
    info = _tracer("info", fixtures / f"{case}.mcap")
    n_chatter = sum(w["topic"] == "/chatter" for w in want)
    assert "messages:     200" in info
    assert f"/chatter {n_chatter:>8} msgs" in info
    assert "sensor_time : timestamp, indexed" in info
    assert "notes.txt" in info and "with fields" in info
    lines = [json.loads(x) for x in _tracer("cat", fixtures / f"{case}.mcap").splitlines()]
    assert [(x["topic"], x["data"]["data"], x["publish_time"]) for x in lines] == [
        (w["topic"], w["data"], w["publish_time"]) for w in want
    ]
    assert sum("sensor_time" in x["fields"] for x in lines) == sum(w["fields"] for w in want)
