"""Plain MCAP for every tool (issue 11, "MCAP for every tool"): ``tracer convert --plain`` and
the plain recording options (``RMW_TRACER_RECORD_FIELDS=off``, ``tracer record --plain``).

A recording by ``tracer record`` (log time = when it arrived, publish time = when the talker
sent it: they differ) becomes a file without the extension records: the PyPI ``mcap`` reader
(CRCs on, stream and indexed) sees no record it does not know and every message's true
publish time; ``rosbags`` reads every message; ``mcap-ros2-support`` decodes them. Bad input:
a broken file, the same path twice, an invalid switch value.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import harness
from test_cli_cat import tracer
from worker_output import json_line

WORKER = Path(__file__).resolve().parent / "test_cli_worker.py"
SENTINEL = 2**64 - 1


def _record_with_fields(tmp: Path) -> Path:
    """tracer record of a live talker: messages with fields, publish time != log time."""
    env = harness.tracer_env(tmp)
    out = tmp / "fields.mcap"
    until = tmp / "until"
    rec = harness.spawn([tracer(), "record", "-o", out, "/msgs/Strings"], env, timeout=120)
    talker = harness.spawn_python(WORKER, ["talk", "--type", "Strings", "--period", "0.02", "--until", str(until)],
                                  env=env, timeout=120)
    deadline = time.monotonic() + 30
    while "established /net/" not in "".join(rec._err) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    rec.popen.send_signal(signal.SIGINT)
    r = rec.join(30)
    until.touch()
    assert talker.join(30).returncode == 0
    assert r.returncode == 0, r.describe()
    return out


def _pypi_messages(path: Path):
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        r = make_reader(f, validate_crcs=True)
        return [(c.topic, m.log_time, m.publish_time, m.sequence) for _s, c, m in r.iter_messages()]


def _opcodes(path: Path) -> set[int]:
    """Every record opcode of the file, inside chunks too (the PyPI reader skips unknown ones
    silently, so it cannot tell)."""
    import struct

    def walk(buf: bytes, out: set[int]) -> None:
        i = 0
        while i + 9 <= len(buf):
            op, n = buf[i], struct.unpack_from("<Q", buf, i + 1)[0]
            body = buf[i + 9 : i + 9 + n]
            out.add(op)
            if op == 0x06:  # Chunk: start, end, uncompressed size, crc, compression, records
                clen = struct.unpack_from("<I", body, 28)[0]
                comp = body[32 : 32 + clen].decode()
                rlen = struct.unpack_from("<Q", body, 32 + clen)[0]
                data = body[40 + clen : 40 + clen + rlen]
                if comp == "zstd":
                    import zstandard

                    data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30)
                elif comp == "lz4":
                    import lz4.frame

                    data = lz4.frame.decompress(data)
                walk(data, out)
            i += 9 + n

    out: set[int] = set()
    data = path.read_bytes()
    walk(data[8:-8], out)
    return out


EXTENSION = {0x10, 0x11, 0x12, 0x13, 0x14}


def _standard_records_only(path: Path) -> bool:
    return not (_opcodes(path) & EXTENSION)


def test_convert_plain_gives_true_publish_times_to_every_reader(tmp_path):
    src = _record_with_fields(tmp_path)
    rows = [json.loads(l) for l in subprocess.run([tracer(), "cat", src, "--payload", "none"], capture_output=True,
                                                   text=True, check=True).stdout.splitlines()]
    assert len(rows) >= 10
    assert all(r["fields"]["publish_time"] < r["log_time"] for r in rows)
    # The extension as generic readers see it: the sentinel, and records they do not know.
    assert {p for _t, _l, p, _s in _pypi_messages(src)} == {SENTINEL}
    assert {0x10, 0x11} <= _opcodes(src)

    out = tmp_path / "plain.mcap"
    res = subprocess.run([tracer(), "convert", src, out, "--plain"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"converted {len(rows)} messages" in res.stdout, res.stdout
    assert "dropped fields: publisher_gid" in res.stdout and "route" in res.stdout, res.stdout
    msgs = _pypi_messages(out)
    assert [(t, l, p) for t, l, p, _s in msgs] == [(r["topic"], r["log_time"], r["fields"]["publish_time"]) for r in rows]
    assert all(p < l for _t, l, p, _s in msgs)
    assert _standard_records_only(out), _opcodes(out)
    # tracer's own reader: no fields left, the same publish times, and what was dropped.
    plain_rows = [json.loads(l) for l in subprocess.run([tracer(), "cat", out], capture_output=True, text=True,
                                                         check=True).stdout.splitlines()]
    assert all(r["fields"] == {} for r in plain_rows)
    assert [r["publish_time"] for r in plain_rows] == [r["fields"]["publish_time"] for r in rows]
    assert [r["data"] for r in plain_rows][:3] == [r for r in _decoded(out)][:3]
    info = subprocess.run([tracer(), "info", out], capture_output=True, text=True, check=True).stdout
    assert "tracer.convert" in info, info
    # rosbags reads every message and the offered QoS kept on the channel.
    from rosbags.rosbag2 import Reader

    with Reader(out) as r:
        assert sum(1 for _ in r.messages()) == len(rows)
        assert all(c.ext.offered_qos_profiles for c in r.connections)
    # Without --plain: the fields are kept.
    kept = tmp_path / "kept.mcap"
    res = subprocess.run([tracer(), "convert", src, kept, "--compression", "lz4"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    kept_rows = [json.loads(l) for l in subprocess.run([tracer(), "cat", kept, "--payload", "none"],
                                                        capture_output=True, text=True, check=True).stdout.splitlines()]
    assert kept_rows == [{**r, "channel_id": kr["channel_id"]} for r, kr in zip(rows, kept_rows)]


def _decoded(path: Path) -> list:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    from test_cli_worker import plain

    with open(path, "rb") as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()])
        return [plain(ros) for _s, _c, _m, ros in r.iter_decoded_messages()]


def test_convert_bad_input(tmp_path):
    src = _record_with_fields(tmp_path)
    res = subprocess.run([tracer(), "convert", src, src, "--plain"], capture_output=True, text=True)
    assert res.returncode == 1 and "must differ from the input" in res.stderr
    broken = tmp_path / "broken.mcap"
    broken.write_bytes(src.read_bytes()[:-100])
    res = subprocess.run([tracer(), "convert", broken, tmp_path / "o.mcap", "--plain"], capture_output=True, text=True)
    assert res.returncode == 1 and "broken.mcap" in res.stderr and "tracer recover" in res.stderr, res.stderr
    res = subprocess.run([tracer(), "convert", tmp_path / "none.mcap", tmp_path / "o.mcap"], capture_output=True, text=True)
    assert res.returncode == 1 and "none.mcap" in res.stderr


def test_plain_recording_from_the_start(tmp_path):
    path = tmp_path / "plain.mcap"
    env = harness.tracer_env(tmp_path, extra={"RMW_TRACER_RECORD": str(path), "RMW_TRACER_RECORD_TOPICS": "/msgs/*",
                                              "RMW_TRACER_RECORD_FIELDS": "off"})
    res = harness.spawn_python(WORKER, ["publish"], env=env, timeout=120).join()
    assert res.returncode == 0, res.describe()
    msgs = _pypi_messages(path)
    assert len(msgs) == 13 * 4
    assert all(0 < p < SENTINEL for _t, _l, p, _s in msgs)
    assert _standard_records_only(path), _opcodes(path)
    published = json_line(res.stdout)
    rows = [json.loads(l) for l in subprocess.run([tracer(), "cat", path, "-t", "/msgs/Nested"], capture_output=True,
                                                   text=True, check=True).stdout.splitlines()]
    assert [r["data"] for r in rows] == published["/msgs/Nested"] and all(r["fields"] == {} for r in rows)
    # An invalid value: nothing recorded, said on the rmw log.
    bad = tmp_path / "bad.mcap"
    env2 = {**env, "RMW_TRACER_RECORD": str(bad), "RMW_TRACER_RECORD_FIELDS": "maybe"}
    res = harness.spawn_python(WORKER, ["publish"], env=env2, timeout=120).join()
    assert res.returncode == 0, res.describe()
    assert not bad.exists()
    assert "RMW_TRACER_RECORD_FIELDS=\"maybe\": expected on or off" in res.stderr, res.stderr


def test_tracer_record_plain(tmp_path):
    env = harness.tracer_env(tmp_path)
    out = tmp_path / "rec.mcap"
    until = tmp_path / "until"
    rec = harness.spawn([tracer(), "record", "--plain", "-o", out, "/msgs/Strings"], env, timeout=120)
    talker = harness.spawn_python(WORKER, ["talk", "--type", "Strings", "--period", "0.02", "--until", str(until)],
                                  env=env, timeout=120)
    deadline = time.monotonic() + 30
    while "established /net/" not in "".join(rec._err) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    rec.popen.send_signal(signal.SIGINT)
    r = rec.join(30)
    until.touch()
    assert talker.join(30).returncode == 0
    assert r.returncode == 0, r.describe()
    msgs = _pypi_messages(out)
    assert msgs and all(p < l for _t, l, p, _s in msgs)
    assert _standard_records_only(out), _opcodes(out)


def test_tracer_record_status_line_on_a_terminal_only(tmp_path):
    """Issue 11, "Progress and status": a live status line on a TTY, nothing when not one."""
    import os
    import pty
    import select

    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    talker = harness.spawn_python(WORKER, ["talk", "--type", "Strings", "--period", "0.02", "--until", str(until)],
                                  env=env, timeout=120)
    master, slave = pty.openpty()
    rec = subprocess.Popen([tracer(), "record", "-o", tmp_path / "tty.mcap", "--duration", "4", "/msgs/Strings"],
                           env=env, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif rec.poll() is not None:
            break
    os.close(master)
    assert rec.wait(timeout=30) == 0
    until.touch()
    assert talker.join(30).returncode == 0
    text = seen.decode(errors="replace")
    assert "1 topics, " in text and " messages (" in text and "/s), " in text and " dropped" in text, text
    # Not a terminal (the other tests' pipes): no status line at all.
    out = tmp_path / "pipe.mcap"
    res = harness.run([tracer(), "record", "-o", out, "--duration", "0.5", "/msgs/Strings"], env, timeout=60)
    assert res.returncode == 0 and " messages (" not in res.stderr, res.describe()
