"""Recording straight from the middleware and with `tracer record` (issue 4, items 3, 4 and 6;
"How it is shown": the end-to-end test and the counted drops).

A talker and a listener (rclpy, rmw_tracer) each run with ``RMW_TRACER_RECORD``, and
``tracer record`` records the same topics beside them. Then:

* every file holds every message: the talker's its publications, the listener's its receptions
  (once, though two of its subscriptions take each /chatter message), tracer record's what it
  received from the talker;
* the Python ``mcap`` reader with ``mcap-ros2-support`` decodes each message to the published
  values (the schema is the type support's ros2msg text);
* every message has the fields publish_time, publisher_gid, sequence, route, and the
  std_msgs/Header messages sensor_time = header.stamp (``tracer cat``);
* ``tracer info`` counts match, and the channel metadata carries offered_qos_profiles, which
  ``rosbags`` parses (it also lists the topics and counts);
* a recorder queue too small for the load drops messages, counts them, says so on the rmw log
  and in the file's ``tracer.recorder`` metadata, and written + dropped = published.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

import harness

WORKER = Path(__file__).resolve().parent / "test_record_worker.py"
N = 50


def _tracer() -> Path:
    exe = harness.target_dir() / "release" / "tracer"
    if not exe.is_file():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "tracer-cli"], cwd=harness.REPO, check=True)
    return exe


def _worker(cmd: str, *args: str, env, timeout: float = 90.0) -> harness.Proc:
    return harness.spawn_python(WORKER, [cmd, *args], env=env, timeout=timeout)


def _json_line(out: str) -> dict:
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in {out!r}")


def _decoded(path: Path) -> dict[str, list]:
    """topic -> decoded ROS messages, through mcap + mcap-ros2-support."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out: dict[str, list] = {}
    with open(path, "rb") as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
        for _schema, channel, _message, ros in r.iter_decoded_messages():
            out.setdefault(channel.topic, []).append(ros)
    return out


def _channels_and_metadata(path: Path):
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        r = make_reader(f)
        summary = r.get_summary()
        meta = {m.name: dict(m.metadata) for m in r.iter_metadata()}
    return summary, meta


def _cat(path: Path) -> list[dict]:
    res = subprocess.run([_tracer(), "cat", str(path), "--payload", "none"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return [json.loads(l) for l in res.stdout.splitlines() if l.strip()]


def _info_counts(path: Path) -> dict[str, int]:
    res = subprocess.run([_tracer(), "info", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    counts = {}
    for topic in ("/chatter", "/stamps"):
        m = re.search(re.escape(topic) + r"\s.*?(\d+)\s+msgs?", res.stdout)
        if m:
            counts[topic] = int(m.group(1))
    return counts, res.stdout


def _check_rosbags(path: Path) -> None:
    """rosbags opens the file, lists its topics and counts, and parses the offered QoS."""
    from rosbags.rosbag2 import Reader

    with Reader(path) as r:
        assert {t: i.msgtype for t, i in r.topics.items()} == {
            "/chatter": "std_msgs/msg/String", "/stamps": "std_msgs/msg/Header"}
        counts: dict[str, int] = {}
        for conn, _ts, _data in r.messages():
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
        assert counts == {"/chatter": N, "/stamps": N}
        for c in r.connections:
            q = c.ext.offered_qos_profiles
            assert q and all((p.reliability.name, p.depth) == ("RELIABLE", 100) for p in q), q


def _check_fields(rows: list[dict], route_re: str) -> None:
    for row in rows:
        f = row["fields"]
        assert f["publish_time"] == row["publish_time"] and f["publish_time"] > 0
        assert len(base64.b64decode(f["publisher_gid"]["base64"])) == 16
        assert f["sequence"] >= 1 and row["sequence"] == f["sequence"]
        assert re.fullmatch(route_re, f["route"]), f["route"]
        if row["topic"] == "/stamps":
            assert "sensor_time" in f
        else:
            assert "sensor_time" not in f
    for topic in ("/chatter", "/stamps"):
        seqs = [r["fields"]["sequence"] for r in rows if r["topic"] == topic]
        assert seqs == list(range(1, N + 1)), (topic, seqs)
    stamps = sorted(r["fields"]["sensor_time"] for r in rows if r["topic"] == "/stamps")
    assert stamps == [(1000 + i) * 10**9 + i * 1000 for i in range(N)]


def _check_decoded(path: Path) -> None:
    d = _decoded(path)
    assert [m.data for m in d["/chatter"]] == [f"hello {i}" for i in range(N)]
    assert [(m.stamp.sec, m.stamp.nanosec, m.frame_id) for m in d["/stamps"]] == [
        (1000 + i, i * 1000, f"f{i}") for i in range(N)
    ]


@pytest.mark.parametrize("mode", ["topics", "subtree"])
def test_talker_listener_and_tracer_record_hold_every_message_with_fields(tmp_path, mode):
    """Issue 4 items 3+4, "How it is shown": end-to-end recording, fields, independent readers.
    ``tracer record`` with one edge per (peer, topic), or one subtree edge per peer."""
    env = harness.tracer_env(tmp_path)
    talker_file, listener_file, rec_file = tmp_path / "talker.mcap", tmp_path / "listener.mcap", tmp_path / "rec.mcap"
    done = tmp_path / "done"
    extra = ["--subtree"] if mode == "subtree" else []
    rec = harness.spawn([_tracer(), "record", "-o", rec_file, "/chatter", "/stamps", *extra], env, timeout=120)
    listener = _worker("listen", "--count", str(N), env={**env, "RMW_TRACER_RECORD": str(listener_file),
                                                        "RMW_TRACER_RECORD_TOPICS": "/chat*,stamps"})
    assert listener.wait_for_output("ready", 60), listener.join(1).describe()
    go = tmp_path / "go"
    # Subscription counts are edges on the topic vertex: each listener subscription's and, per
    # topic, tracer record's; its subtree edge sits on the talker's root and counts on none, so
    # then the talker also waits for "go": tracer record's edges on both peers are established.
    subs = ["--wait-subs", "2", "--extra-chatter-subs", "1"] if mode == "topics" else ["--wait-subs", "1", "--extra-chatter-subs", "1"]
    talker = _worker(
        "talk", "--count", str(N), *subs, "--go", str(go), "--until", str(done),
        env={**env, "RMW_TRACER_RECORD": str(talker_file), "RMW_TRACER_RECORD_TOPICS": "/chatter,/stamps"},
    )
    if mode == "subtree":
        deadline = time.monotonic() + 30
        established: list[str] = []
        while rec.popen.poll() is None and time.monotonic() < deadline:
            established = [l for l in "".join(rec._err).splitlines() if "established /net/" in l and "/." not in l and ":children" not in l]
            if len(established) >= 2:
                break
            time.sleep(0.05)
        assert len(established) >= 2, "".join(rec._err)
    go.touch()
    lres = listener.join()
    assert lres.returncode == 0, lres.describe()
    got = _json_line(lres.stdout)
    assert got["chatter"] == [[f"hello {i}" for i in range(N)]] * 2
    # tracer record has its messages once they were delivered; stop it, then the talker.
    rec.terminate()
    rres = rec.join(30)
    done.touch()
    tres = talker.join()
    assert tres.returncode == 0, tres.describe()
    assert _json_line(tres.stdout) == {"published": N}
    assert rres.returncode == 0, rres.describe()
    assert re.search(r"/chatter: 50 messages", rres.stdout), rres.stdout
    assert "0 dropped" in rres.stdout

    for path in (talker_file, listener_file, rec_file):
        _check_decoded(path)
        _check_rosbags(path)
        counts, text = _info_counts(path)
        assert counts == {"/chatter": N, "/stamps": N}, text
        summary, meta = _channels_and_metadata(path)
        assert summary.statistics.message_count == 2 * N
        assert meta["tracer.recorder"] == {"written": str(2 * N), "dropped": "0"}
        for ch in summary.channels.values():
            assert ch.message_encoding == "cdr"
            assert "reliability: reliable" in ch.metadata["offered_qos_profiles"]
            assert "depth: 100" in ch.metadata["offered_qos_profiles"]
        names = {s.name for s in summary.schemas.values()}
        assert names == {"std_msgs/msg/String", "std_msgs/msg/Header"}
        assert all(s.encoding == "ros2msg" for s in summary.schemas.values())

    talker_rows = _cat(talker_file)
    _check_fields(talker_rows, r"/chatter|/stamps")
    peer = r"/net/[A-Za-z0-9_.~-]+"
    _check_fields(_cat(listener_file), peer + r"(/chatter|/stamps)")
    rec_rows = _cat(rec_file)
    _check_fields(rec_rows, peer + r"(/chatter|/stamps)")
    # The same publications: gids and publish times agree across the three files.
    key = lambda r: (r["topic"], r["fields"]["sequence"])
    pub = {key(r): (r["fields"]["publisher_gid"]["base64"], r["publish_time"]) for r in talker_rows}
    for rows in (_cat(listener_file), rec_rows):
        assert {key(r): (r["fields"]["publisher_gid"]["base64"], r["publish_time"]) for r in rows} == pub
    # The listener's route names the talker's graph, which tracer record's route names too.
    assert {r["fields"]["route"] for r in rec_rows} == {r["fields"]["route"] for r in _cat(listener_file)}


@pytest.mark.parametrize("queue", [{"RMW_TRACER_RECORD_QUEUE_BYTES": "16"}, {"RMW_TRACER_RECORD_QUEUE": "1"}])
def test_overwhelmed_queue_drops_are_counted_and_reported(tmp_path, queue):
    """Issue 4 item 3: publishing never blocks on the disk; drops are counted and reported."""
    out = tmp_path / "flood.mcap"
    n = 2000
    env = harness.tracer_env(tmp_path, extra={"RMW_TRACER_RECORD": str(out), "RMW_TRACER_RECORD_TOPICS": "/flood", **queue})
    res = _worker("flood", "--count", str(n), "--size", "65536", env=env).join()
    assert res.returncode == 0, res.describe()
    assert _json_line(res.stdout) == {"published": n}
    _summary, meta = _channels_and_metadata(out)
    written, dropped = int(meta["tracer.recorder"]["written"]), int(meta["tracer.recorder"]["dropped"])
    assert written + dropped == n
    if "RMW_TRACER_RECORD_QUEUE_BYTES" in queue:
        # Every 64 KiB message is larger than the whole queue: each one is dropped.
        assert (written, dropped) == (0, n)
    m = re.search(r"recorded (\d+) messages to .*?; (\d+) dropped", res.stderr)
    if dropped:
        assert m, res.stderr
        assert (int(m.group(1)), int(m.group(2))) == (written, dropped)
    counts = _decoded(out).get("/flood", [])
    assert len(counts) == written


def test_exit_without_shutdown_finishes_the_file(tmp_path):
    """Issue 4 item 3: the file is finished at process exit even without rmw_shutdown."""
    out = tmp_path / "exit.mcap"
    env = harness.tracer_env(tmp_path, extra={"RMW_TRACER_RECORD": str(out), "RMW_TRACER_RECORD_TOPICS": "/flood"})
    res = _worker("flood", "--count", "100", "--no-shutdown", env=env).join()
    assert res.returncode == 0, res.describe()
    summary, meta = _channels_and_metadata(out)  # the summary is there: the file was finished
    assert summary.statistics.message_count == 100
    assert meta["tracer.recorder"] == {"written": "100", "dropped": "0"}


def test_killed_process_leaves_a_readable_data_section(tmp_path):
    """Issue 4 item 3: a crash still leaves the chunks written so far; tracer recover finishes it."""
    out = tmp_path / "killed.mcap"
    env = harness.tracer_env(tmp_path, extra={"RMW_TRACER_RECORD": str(out), "RMW_TRACER_RECORD_TOPICS": "/flood"})
    p = _worker("flood", "--count", "100", "--hold", env=env)
    assert p.wait_for_output('"published"', 60)
    time.sleep(2.5)  # past the recorder's 1 s idle flush
    p.kill()
    p.join(10)
    fixed = tmp_path / "fixed.mcap"
    res = subprocess.run([_tracer(), "recover", str(out), str(fixed)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert len(_decoded(fixed)["/flood"]) == 100
