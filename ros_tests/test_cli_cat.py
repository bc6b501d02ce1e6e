"""`tracer cat` decodes any type from the channel's ros2msg schema alone (issue 11, "Any type
decoded").

An rclpy process on rmw_tracer publishes every test_msgs type (default-constructed and filled
three ways: every primitive at its extremes, fixed arrays, bounded and unbounded sequences,
nested messages, unicode strings and wstrings with a surrogate pair) and records its
publications (``RMW_TRACER_RECORD``). ``tracer cat`` prints each message's fields by name; they
must equal what was published and what ``mcap-ros2-support`` decodes from the same file (it
cannot decode wstrings, reads builtin_interfaces Time/Duration ``sec`` as uint32 and ``char``
as int8 (ROS 1's char; ROS 2's is uint8, as rclpy and we have it): each noted where compared). Bad input: an unknown schema encoding, a truncated payload, a broken
schema text, a corrupt file, a closed stdout.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import harness
from worker_output import json_line

WORKER = Path(__file__).resolve().parent / "test_cli_worker.py"


def tracer() -> Path:
    exe = harness.target_dir() / "release" / "tracer"
    if not exe.is_file():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tracer-cli"], cwd=harness.REPO, check=True)
    return exe


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_cat")
    path = tmp / "all.mcap"
    env = harness.tracer_env(tmp, extra={"RMW_TRACER_RECORD": str(path), "RMW_TRACER_RECORD_TOPICS": "/msgs/*"})
    res = harness.spawn_python(WORKER, ["publish"], env=env, timeout=120).join()
    assert res.returncode == 0, res.describe()
    return path, json_line(res.stdout, res.describe())


def cat(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tracer(), "cat", str(path), *args], capture_output=True, text=True, timeout=60)


def by_topic(stdout: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for line in stdout.splitlines():
        row = json.loads(line)
        out.setdefault(row["topic"], []).append(row)
    return out


def same(a, b, path="", mcap_ros2_quirks=False) -> list[str]:
    """Differences between two plain values; floats compare exactly (both are the wire bits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: fields {list(a)} != {list(b)}"]
        return [d for k in a for d in same(a[k], b[k], f"{path}.{k}", mcap_ros2_quirks)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]", mcap_ros2_quirks)]
    if mcap_ros2_quirks and path.endswith(".sec") and isinstance(a, int) and isinstance(b, int):
        return [] if a % 2**32 == b % 2**32 else [f"{path}: {a!r} != {b!r}"]
    if mcap_ros2_quirks and "char_value" in path and isinstance(a, int) and isinstance(b, int):
        return [] if a % 256 == b % 256 else [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, bool) or isinstance(b, bool):
        return [] if a is b else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b and type(a) in (type(b), int, float) else [f"{path}: {a!r} != {b!r}"]


def mcap_ros2_decoded(path: Path) -> dict[str, list]:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    from test_cli_worker import plain

    out: dict[str, list] = {}
    with open(path, "rb") as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message in r.iter_messages():
            if schema.name == "test_msgs/msg/WStrings":
                continue  # mcap-ros2-support: "wstring parsing is not implemented"
            ros = DecoderFactory().decoder_for("cdr", schema)(message.data)
            out.setdefault(channel.topic, []).append(plain(ros))
    return out


def test_every_test_msgs_type_decodes_to_what_was_published(recording):
    path, published = recording
    res = cat(path)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr
    got = by_topic(res.stdout)
    assert sorted(got) == sorted(published)
    for topic, msgs in published.items():
        data = [row["data"] for row in got[topic]]
        assert "payload_base64" not in got[topic][0]
        diffs = same(data, msgs, topic)
        assert not diffs, diffs[:10]
    # 13 types x 4 samples, every field by name.
    assert sum(len(v) for v in got.values()) == 13 * 4
    assert got["/msgs/BasicTypes"][1]["data"]["int64_value"] == -2**63


def test_cat_agrees_with_mcap_ros2_support(recording):
    path, _published = recording
    ours = {t: [r["data"] for r in rows] for t, rows in by_topic(cat(path).stdout).items()}
    theirs = mcap_ros2_decoded(path)
    assert len(theirs) == 12  # every type but WStrings
    for topic, msgs in theirs.items():
        diffs = same(ours[topic], msgs, topic, mcap_ros2_quirks=True)
        assert not diffs, diffs[:10]


def test_filters_and_raw_payloads_still_work(recording):
    path, published = recording
    res = cat(path, "-t", "/msgs/Strings", "--payload", "hex")
    assert res.returncode == 0, res.stderr
    rows = by_topic(res.stdout)
    assert list(rows) == ["/msgs/Strings"] and len(rows["/msgs/Strings"]) == 4
    assert all("data" not in r and r["payload_hex"].startswith("00010000") for r in rows["/msgs/Strings"])
    res = cat(path, "-t", "/msgs/Nested", "--field", "sequence", "--min", "2", "--max", "3")
    assert res.returncode == 0, res.stderr
    rows = by_topic(res.stdout)["/msgs/Nested"]
    assert [r["fields"]["sequence"] for r in rows] == [2, 3]
    assert [r["data"] for r in rows] == published["/msgs/Nested"][1:3]


def _rewrite(src: Path, dst: Path, *, schema_encoding=None, schema_text=None, cut_payload=None):
    """A copy of ``src`` (plain MCAP, no fields) through the PyPI writer, with one thing broken."""
    from mcap.reader import make_reader
    from mcap.writer import Writer

    with open(src, "rb") as f, open(dst, "wb") as out:
        r = make_reader(f)
        w = Writer(out)
        w.start(profile="ros2")
        ids = {}
        for schema, channel, message in r.iter_messages():
            if channel.id not in ids:
                sid = w.register_schema(
                    schema.name,
                    schema_encoding or schema.encoding,
                    schema_text if schema_text is not None else schema.data,
                )
                ids[channel.id] = w.register_channel(channel.topic, channel.message_encoding, sid)
            data = message.data[:cut_payload] if cut_payload and "Nested" in channel.topic else message.data
            w.add_message(ids[channel.id], message.log_time, data, message.log_time)
        w.finish()


def test_unknown_schema_encoding_is_said_once_per_channel_and_printed_raw(recording, tmp_path):
    path, _ = recording
    bad = tmp_path / "proto.mcap"
    _rewrite(path, bad, schema_encoding="protobuf")
    res = cat(bad, "-t", "/msgs/Strings", "-t", "/msgs/Empty")
    assert res.returncode == 0, res.stderr
    warnings = [l for l in res.stderr.splitlines() if "warning" in l]
    assert len(warnings) == 2, res.stderr
    assert all('schema encoding "protobuf"' in w and "is not ros2msg" in w for w in warnings), warnings
    assert any("/msgs/Strings" in w for w in warnings)
    rows = [json.loads(l) for l in res.stdout.splitlines()]
    assert len(rows) == 8 and all("payload_base64" in r and "data" not in r for r in rows)


def test_truncated_payload_names_topic_field_and_offset(recording, tmp_path):
    path, _ = recording
    bad = tmp_path / "cut.mcap"
    _rewrite(path, bad, cut_payload=9)
    res = cat(bad, "-t", "/msgs/Nested", "-t", "/msgs/Strings")
    assert res.returncode == 1, res.stderr
    assert "4 of 8 messages could not be decoded" in res.stderr, res.stderr
    assert "/msgs/Nested: message at log time" in res.stderr
    assert "test_msgs/Nested.basic_types_value" in res.stderr and "truncated" in res.stderr, res.stderr
    rows = by_topic(res.stdout)
    assert all("payload_base64" in r for r in rows["/msgs/Nested"])
    assert all("data" in r for r in rows["/msgs/Strings"])


def test_broken_schema_text_is_named(recording, tmp_path):
    path, _ = recording
    bad = tmp_path / "schema.mcap"
    _rewrite(path, bad, schema_text=b"int32 a\nNoSuchType b\n")
    res = cat(bad, "-t", "/msgs/Empty")
    assert res.returncode == 0
    assert "test_msgs/NoSuchType has no definition" in res.stderr, res.stderr


def test_corrupt_file_and_closed_stdout(recording, tmp_path):
    path, _ = recording
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file at all")
    res = cat(junk)
    assert res.returncode == 1 and "junk.mcap" in res.stderr and "panick" not in res.stderr, res.stderr
    missing = cat(tmp_path / "missing.mcap")
    assert missing.returncode == 1 and "missing.mcap" in missing.stderr
    # Half a file: the summary is gone, the data section is read as far as it goes.
    data = path.read_bytes()
    half = tmp_path / "half.mcap"
    half.write_bytes(data[: len(data) // 2])
    res = cat(half)
    assert "panick" not in res.stderr and res.returncode in (0, 1), res.stderr
    assert "half.mcap" in res.stderr
    # stdout closed after the first line (like `| head -1`): no error, no panic.
    p = subprocess.Popen([tracer(), "cat", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=30) == 0
    assert json.loads(first)["topic"].startswith("/msgs/")
    assert b"panick" not in p.stderr.read()
