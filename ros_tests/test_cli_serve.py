"""`tracer serve`: the live graph over the Foxglove WebSocket protocol (issue 11, "A live view in
the browser"), tested with the npm ``@foxglove/ws-protocol`` client under node (the protocol
library Foxglove Studio uses; installed by tools/setup into ros_tests/foxglove/node_modules).

An rclpy talker publishes test_msgs/Nested; the client sees serverInfo, the channel advertised
with encoding cdr and the ros2msg schema, subscribes, and gets binary message frames whose
payloads, decoded with the advertised schema by ``mcap-ros2-support``, are what rclpy
published. A client without the subprotocol is refused; a bad request gets a status message;
the server binds loopback by default.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import harness
from test_cli_cat import same, tracer

WORKER = Path(__file__).resolve().parent / "test_cli_worker.py"
CLIENT_DIR = Path(__file__).resolve().parent / "foxglove"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENT_DIR / "node_modules" / "@foxglove" / "ws-protocol").is_dir(),
    reason="node and ros_tests/foxglove/node_modules (tools/setup) are needed",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _published(proc) -> list[dict]:
    return [json.loads(l)["msg"] for l in proc.output_so_far().splitlines() if l.startswith('{"published"')]


def test_foxglove_client_gets_advertised_channels_and_messages(tmp_path):
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    port = _free_port()
    talker = harness.spawn_python(WORKER, ["talk", "--type", "Nested", "--period", "0.05", "--until", str(until)],
                                  env=env, timeout=120)
    server = harness.spawn([tracer(), "serve", "--port", str(port)], env, timeout=120)
    try:
        deadline = time.monotonic() + 20
        while "listening on ws://127.0.0.1:" not in "".join(server._err) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"listening on ws://127.0.0.1:{port}" in "".join(server._err), "".join(server._err)
        res = subprocess.run(["node", CLIENT_DIR / "client.js", f"ws://127.0.0.1:{port}", "/msgs/Nested", "5", "30"],
                             cwd=CLIENT_DIR, capture_output=True, text=True, timeout=60)
        events = [json.loads(l) for l in res.stdout.splitlines()]
        assert res.returncode == 0, (res.stdout, res.stderr, "".join(server._err))
        assert events[0] == {"event": "serverInfo", "name": "rmw_tracer", "capabilities": []}
        channels = [c for e in events if e["event"] == "advertise" for c in e["channels"]]
        ch = next(c for c in channels if c["topic"] == "/msgs/Nested")
        assert (ch["encoding"], ch["schemaName"], ch["schemaEncoding"]) == ("cdr", "test_msgs/msg/Nested", "ros2msg")
        assert "BasicTypes basic_types_value" in ch["schema"] and "MSG: test_msgs/msg/BasicTypes" in ch["schema"]
        msgs = [e for e in events if e["event"] == "message"]
        assert len(msgs) == 5
        sub = next(e for e in events if e["event"] == "subscribe")["subscriptionId"]
        assert all(m["subscriptionId"] == sub and int(m["timestamp"]) > 0 for m in msgs)

        from mcap_ros2._dynamic import generate_dynamic

        from test_cli_worker import plain

        decode = generate_dynamic(ch["schemaName"], ch["schema"])[ch["schemaName"]]
        got = [plain(decode(bytes.fromhex(m["hex"]))) for m in msgs]

        def was_published(g) -> bool:
            # mcap-ros2-support reads char as int8: compared modulo 256 (test_cli_cat.same).
            return any(not same(g, p, mcap_ros2_quirks=True) for p in _published(talker))

        deadline = time.monotonic() + 10
        while not all(was_published(g) for g in got) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(was_published(g) for g in got), got
    finally:
        until.touch()
        server.popen.send_signal(signal.SIGINT)
        r = server.join(30)
        assert talker.join(30).returncode == 0
    assert r.returncode == 0, r.describe()
    assert "panick" not in r.stderr


def test_bad_clients_are_refused_or_told(tmp_path):
    env = harness.tracer_env(tmp_path)
    port = _free_port()
    server = harness.spawn([tracer(), "serve", "--port", str(port)], env, timeout=120)
    try:
        deadline = time.monotonic() + 20
        while "listening on" not in "".join(server._err) and time.monotonic() < deadline:
            time.sleep(0.1)
        # Without the subprotocol: HTTP 400 with the reason.
        script = """
const WebSocket = require("ws");
const ws = new WebSocket(process.argv[1]);
ws.on("unexpected-response", (req, res) => { console.log("status " + res.statusCode); process.exit(0); });
ws.on("open", () => { console.log("opened"); process.exit(1); });
ws.on("error", (e) => { console.log("error " + e.message); process.exit(0); });
"""
        res = subprocess.run(["node", "-e", script, f"ws://127.0.0.1:{port}"], cwd=CLIENT_DIR, capture_output=True,
                             text=True, timeout=30)
        assert res.stdout.strip() == "status 400", (res.stdout, res.stderr)
        # With it: a request that is not JSON, and one for an unknown channel, get status errors.
        script = """
const WebSocket = require("ws");
const ws = new WebSocket(process.argv[1], ["foxglove.websocket.v1"]);
const seen = [];
ws.on("open", () => { ws.send("not json"); ws.send(JSON.stringify({op: "subscribe", subscriptions: [{id: 1, channelId: 999}]})); });
ws.on("message", (data, binary) => {
  const m = JSON.parse(data.toString());
  seen.push(m.op);
  if (m.op === "status") console.log(m.level + " " + m.message);
  if (seen.filter((o) => o === "status").length === 2) { ws.close(); process.exit(0); }
});
setTimeout(() => process.exit(1), 10000);
"""
        res = subprocess.run(["node", "-e", script, f"ws://127.0.0.1:{port}"], cwd=CLIENT_DIR, capture_output=True,
                             text=True, timeout=30)
        assert res.returncode == 0, (res.stdout, res.stderr)
        lines = res.stdout.splitlines()
        assert lines[0].startswith("2 not JSON") and lines[1] == "2 subscribe: no channel 999", lines
        # Loopback only by default: not reachable on another address of this host.
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.2", port)) != 0
    finally:
        server.popen.send_signal(signal.SIGINT)
        r = server.join(30)
    assert r.returncode == 0, r.describe()
    assert "panick" not in r.stderr


def test_port_in_use_is_a_clear_error(tmp_path):
    env = harness.tracer_env(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = harness.run([tracer(), "serve", "--port", str(port)], env, timeout=30)
    assert res.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in res.stderr, res.describe()
