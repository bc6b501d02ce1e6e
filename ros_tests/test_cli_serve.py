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


PAGE = CLIENT_DIR / "page.html"


class _Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages ending in NUL, commands on its fd 3, answers on its fd 4), so no debugging port
    is opened. A private temporary profile; every name but loopback resolves to nothing and the
    background services are off, so nothing leaves the machine. Its whole process group is
    killed by ``close``."""

    def __init__(self, profile: Path, url: str):
        import os

        self._to_r, self._to_w = os.pipe()
        self._from_r, self._from_w = os.pipe()
        argv = [
            shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", f"--user-data-dir={profile}", "--remote-debugging-pipe",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--disable-background-networking",
            "--disable-component-update", "--disable-domain-reliability", "--disable-sync", "--no-pings",
            "--disable-extensions", "--disable-default-apps", "--metrics-recording-only",
            "--disable-features=OptimizationHints,MediaRouter,Translate", url,
        ]

        def fds():
            # Above 10 first, so neither dup2 overwrites the other's source.
            import fcntl

            r, w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (self._to_r, self._from_w))
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open(profile / "chromium.log", "wb"), preexec_fn=fds,
                                      start_new_session=True, pass_fds=(3, 4))  # kept open: fds() made them
        os.close(self._to_r)
        os.close(self._from_w)
        self._buf = b""
        self._next = 0

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict:
        import os
        import select

        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    assert "error" not in reply, (method, reply)
                    return reply["result"]
            left = deadline - time.monotonic()
            assert left > 0, f"no DevTools answer to {method}"
            ready, _, _ = select.select([self._from_r], [], [], left)
            if ready:
                chunk = os.read(self._from_r, 1 << 16)
                assert chunk, "chromium closed its DevTools pipe"
                self._buf += chunk

    def close(self) -> None:
        import os

        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)
        os.close(self._to_w)
        os.close(self._from_r)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is needed (tools/setup)")
def test_page_in_headless_chromium_shows_a_received_message(tmp_path):
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    port = _free_port()
    chatter = harness.spawn_python(WORKER, ["chatter", "--until", str(until)], env=env, timeout=120)
    server = harness.spawn([tracer(), "serve", "--port", str(port)], env, timeout=120)
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    browser = None
    try:
        deadline = time.monotonic() + 20
        while "listening on ws://127.0.0.1:" not in "".join(server._err) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"listening on ws://127.0.0.1:{port}" in "".join(server._err), "".join(server._err)
        browser = _Chromium(profile, f"{PAGE.as_uri()}#ws://127.0.0.1:{port}|/chatter")
        page = next(t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = browser.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        state, deadline = "", time.monotonic() + 30
        while time.monotonic() < deadline:
            state = browser.call("Runtime.evaluate", {"expression": "document.getElementById('state').textContent",
                                                      "returnByValue": True}, session)["result"].get("value", "")
            if state == "received" or state.startswith("error"):
                break
            time.sleep(0.1)
        assert state == "received", (state, "".join(server._err))
        # The DOM as the page shows it, read back over DevTools.
        root = browser.call("DOM.getDocument", {}, session)["root"]
        html = browser.call("DOM.getOuterHTML", {"nodeId": root["nodeId"]}, session)["outerHTML"]
        import re

        shown = re.search(r'<pre id="data">([^<]*)</pre>', html).group(1)
        assert '<p id="channel">/chatter std_msgs/msg/String</p>' in html, html
        # Exactly one of the strings the talker published (it prints each before the next).
        assert re.fullmatch(r"hello from rmw_tracer \d+", shown), html
        assert shown in chatter.output_so_far().splitlines(), (shown, chatter.output_so_far()[-500:])
    finally:
        if browser is not None:
            browser.close()
        until.touch()
        server.popen.send_signal(signal.SIGINT)
        r = server.join(30)
        assert chatter.join(30).returncode == 0
    assert r.returncode == 0, r.describe()
    assert "panick" not in r.stderr
