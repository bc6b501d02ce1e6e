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
        assert events[0] == {"event": "serverInfo", "name": "rmw_tracer",
                             "capabilities": ["clientPublish", "services", "parameters"]}
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


class _Driver:
    """ros_tests/foxglove/driver.js: the @foxglove/ws-protocol client, one JSON command per line
    in, one JSON event per line out (collected by a thread). Its process group is killed by
    ``close``."""

    def __init__(self, port: int):
        import threading

        self.popen = subprocess.Popen(["node", CLIENT_DIR / "driver.js", f"ws://127.0.0.1:{port}", "120"],
                                      cwd=CLIENT_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def send(self, **cmd) -> None:
        self.popen.stdin.write(json.dumps(cmd) + "\n")
        self.popen.stdin.flush()

    def wait(self, pred, timeout: float = 20, after: int = 0) -> dict:
        """The first event (from index ``after``) for which ``pred`` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for e in self.events[after:]:
                    if pred(e):
                        return e
            time.sleep(0.02)
        with self._lock:
            raise AssertionError(f"no such event in {self.events[after:]}")

    def mark(self) -> int:
        with self._lock:
            return len(self.events)

    def close(self) -> None:
        import os

        try:
            self.send(cmd="close")
            self.popen.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(10)


class _Session:
    """The services worker (/fox_node), `tracer serve` and a driver connected to it."""

    def __init__(self, tmp_path: Path):
        self.env = harness.tracer_env(tmp_path)
        self.until = tmp_path / "until"
        self.port = _free_port()
        self.node = harness.spawn_python(WORKER, ["services", "--until", str(self.until)], env=self.env, timeout=120)
        self.server = harness.spawn([tracer(), "serve", "--port", str(self.port)], self.env, timeout=120)
        self.driver = None
        assert self.node.wait_for_output("ready", 30), self.node.output_so_far()
        deadline = time.monotonic() + 20
        while "listening on ws://127.0.0.1:" not in "".join(self.server._err) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"listening on ws://127.0.0.1:{self.port}" in "".join(self.server._err), "".join(self.server._err)
        self.driver = _Driver(self.port)

    def service(self, name: str) -> dict:
        e = self.driver.wait(lambda e: e["event"] == "advertiseServices" and any(s["name"] == name for s in e["services"]))
        return next(s for s in e["services"] if s["name"] == name)

    def status_after(self, mark: int, text: str) -> dict:
        return self.driver.wait(lambda e: e["event"] == "status" and text in e["message"], after=mark)

    def close(self) -> harness.Result:
        if self.driver is not None:
            self.driver.close()
        self.until.touch()
        self.server.popen.send_signal(signal.SIGINT)
        r = self.server.join(30)
        assert self.node.join(30).returncode == 0
        assert r.returncode == 0, r.describe()
        assert "panick" not in r.stderr
        return r


@pytest.fixture
def session(tmp_path):
    s = _Session(tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_service_calls_reach_the_ros_server(session):
    from mcap_ros2._dynamic import generate_dynamic, serialize_dynamic

    info = session.driver.wait(lambda e: e["event"] == "serverInfo")
    assert info["capabilities"] == ["clientPublish", "services", "parameters"] and info["supportedEncodings"] == ["cdr"]
    svc = session.service("/add_things")
    assert svc["type"] == "test_msgs/srv/BasicTypes"
    req, resp = svc["request"], svc["response"]
    assert (req["encoding"], req["schemaName"], req["schemaEncoding"]) == ("cdr", "test_msgs/srv/BasicTypes_Request", "ros2msg")
    assert resp["schemaName"] == "test_msgs/srv/BasicTypes_Response" and "int64 int64_value" in resp["schema"]
    assert svc["requestSchema"] == req["schema"]
    # The node's parameter services are advertised too, with rcl_interfaces' schemas.
    get = session.service("/fox_node/get_parameters")
    assert get["type"] == "rcl_interfaces/srv/GetParameters" and "MSG: rcl_interfaces/msg/ParameterValue" in get["response"]["schema"]

    # A real call, encoded and decoded by mcap-ros2-support from the advertised schemas.
    encode = serialize_dynamic(req["schemaName"], req["schema"])[req["schemaName"]]
    decode = generate_dynamic(resp["schemaName"], resp["schema"])[resp["schemaName"]]
    for call_id, (n, text) in enumerate([(21, "hi"), (-4, "zweite Frage")], start=1):
        data = encode({"int64_value": n, "string_value": text, "float64_value": 0.5, "bool_value": True})
        m = session.driver.mark()
        session.driver.send(cmd="call", serviceId=svc["id"], callId=call_id, encoding="cdr", hex=bytes(data).hex())
        r = session.driver.wait(lambda e: e["event"] == "serviceCallResponse" and e["callId"] == call_id, after=m)
        assert (r["serviceId"], r["encoding"]) == (svc["id"], "cdr")
        got = decode(bytes.fromhex(r["hex"]))
        assert (got.int64_value, got.string_value, got.float64_value, got.bool_value) == (2 * n, text + " back", 0.5, True)

    # Bad calls: a status error and a serviceCallFailure for the call, and the server goes on.
    cases = [
        (dict(serviceId=9999, callId=10, encoding="cdr", hex="00010000"), "no service 9999"),
        (dict(serviceId=svc["id"], callId=11, encoding="json", hex="7b7d"), "encoding \"json\" is not supported"),
        (dict(serviceId=svc["id"], callId=12, encoding="cdr", hex="0001000001"), "the request does not decode"),
    ]
    for cmd, text in cases:
        m = session.driver.mark()
        session.driver.send(cmd="call", **cmd)
        f = session.driver.wait(lambda e: e["event"] == "serviceCallFailure" and e["callId"] == cmd["callId"], after=m)
        assert text in f["message"], f
        session.status_after(m, text)
    for frame, text in [("02010000", "shorter than its 13-byte header"), ("020100000002000000ff000000", "encoding length 255"),
                        ("07", "binary opcode 7"), ("01", "shorter than its 5-byte header")]:
        m = session.driver.mark()
        session.driver.send(cmd="rawbin", hex=frame)
        assert session.status_after(m, text)["level"] == 2
    # Still answering.
    m = session.driver.mark()
    session.driver.send(cmd="call", serviceId=svc["id"], callId=20, encoding="cdr", hex=bytes(encode({"int64_value": 5})).hex())
    r = session.driver.wait(lambda e: e["event"] == "serviceCallResponse" and e["callId"] == 20, after=m)
    assert decode(bytes.fromhex(r["hex"])).int64_value == 10


def _param_events(node) -> list[dict]:
    return [json.loads(l) for l in node.output_so_far().splitlines() if l.startswith('{"param"')]


def test_parameters_get_and_set_on_the_ros_node(session):
    d = session.driver
    session.service("/fox_node/set_parameters")
    session.service("/fox_node/list_parameters")
    m = d.mark()
    d.send(cmd="get", names=["/fox_node.speed", "/fox_node.label", "/fox_node.count", "/fox_node.flags"], id="g1")
    got = d.wait(lambda e: e["event"] == "parameterValues" and e.get("id") == "g1", after=m)["parameters"]
    assert got == [
        {"name": "/fox_node.speed", "value": 1.5, "type": "float64"},
        {"name": "/fox_node.label", "value": "robot"},
        {"name": "/fox_node.count", "value": 3},
        {"name": "/fox_node.flags", "value": [True, False]},
    ]
    # No names: every node's parameters, listed through list_parameters.
    m = d.mark()
    d.send(cmd="get", names=[], id="all")
    every = {p["name"]: p["value"] for p in d.wait(lambda e: e["event"] == "parameterValues" and e.get("id") == "all", after=m)["parameters"]}
    assert every["/fox_node.use_sim_time"] is False and every["/fox_node.label"] == "robot" and every["/fox_node.speed"] == 1.5

    # Set: the node's own callback sees the new values; the answer reads them back.
    m = d.mark()
    d.send(cmd="set", id="s1", parameters=[{"name": "/fox_node.speed", "value": 2, "type": "float64"},
                                           {"name": "/fox_node.label", "value": "rover"},
                                           {"name": "/fox_node.flags", "value": [False]}])
    after = d.wait(lambda e: e["event"] == "parameterValues" and e.get("id") == "s1", after=m)["parameters"]
    assert after == [
        {"name": "/fox_node.speed", "value": 2.0, "type": "float64"},
        {"name": "/fox_node.label", "value": "rover"},
        {"name": "/fox_node.flags", "value": [False]},
    ]
    deadline = time.monotonic() + 10
    while len(_param_events(session.node)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(map(json.dumps, _param_events(session.node))) == sorted(map(json.dumps, [
        {"param": "speed", "value": 2.0}, {"param": "label", "value": "rover"}, {"param": "flags", "value": [False]}]))

    # Refused by the node (a declared integer set to a string), a name without a node, a value
    # without a ROS type: status errors naming each.
    m = d.mark()
    d.send(cmd="set", id="s2", parameters=[{"name": "/fox_node.count", "value": "three"}, {"name": "nodot", "value": 1},
                                           {"name": "/fox_node.x", "value": {"a": 1}}])
    st = session.status_after(m, "setParameters")["message"]
    assert "/fox_node.count: refused" in st and '"nodot" is not /node.parameter' in st and "/fox_node.x" in st, st
    m = d.mark()
    d.send(cmd="get", names=["/fox_node.count", "/no_node.p"], id="g2")
    got = d.wait(lambda e: e["event"] == "parameterValues" and e.get("id") == "g2", after=m)["parameters"]
    assert got == [{"name": "/fox_node.count", "value": 3}]
    assert "no service /no_node/get_parameters" in session.status_after(m, "getParameters")["message"]


def _string_cdr(text: str) -> str:
    b = text.encode()
    return (bytes([0, 1, 0, 0]) + (len(b) + 1).to_bytes(4, "little") + b + b"\0").hex()


def test_client_publishes_onto_a_ros_topic(session):
    d = session.driver
    d.wait(lambda e: e["event"] == "serverInfo")
    m = d.mark()
    d.send(cmd="advertise", topic="/from_foxglove", schemaName="std_msgs/msg/String", encoding="cdr")
    ch = d.wait(lambda e: e["event"] == "advertised", after=m)["channelId"]
    sent = []
    heard = lambda: [json.loads(l)["heard"] for l in session.node.output_so_far().splitlines() if l.startswith('{"heard"')]
    # Until the subscription is wired to serve's publisher (bounded: 100 messages, 10 s).
    for i in range(100):
        text = f"from foxglove {i}"
        d.send(cmd="publish", channelId=ch, hex=_string_cdr(text))
        sent.append(text)
        time.sleep(0.1)
        if heard():
            break
    # Three more once wired, each heard exactly.
    for i in range(100, 103):
        d.send(cmd="publish", channelId=ch, hex=_string_cdr(f"from foxglove {i}"))
        sent.append(f"from foxglove {i}")
    deadline = time.monotonic() + 10
    while heard()[-1:] != [sent[-1]] and time.monotonic() < deadline:
        time.sleep(0.05)
    got = heard()
    assert got[-3:] == sent[-3:] and got == sent[sent.index(got[0]):], got

    # Bad input: status errors, nothing published, the connection goes on.
    for cmd, text in [
        (dict(cmd="publish", channelId=77, hex=_string_cdr("x")), "no client channel 77"),
        (dict(cmd="publish", channelId=ch, hex="ffff0000"), "not plain CDR"),
        (dict(cmd="advertise", topic="/j", schemaName="std_msgs/msg/String", encoding="json"), "encoding \"json\" is not supported"),
        (dict(cmd="advertise", topic="/k", schemaName="String", encoding="cdr"), "is not a ROS message type"),
        (dict(cmd="raw", text="{\"op\": \"unadvertise\", \"channelIds\": [55]}"), "no client channel 55"),
        (dict(cmd="raw", text="[1, 2"), "not JSON"),
        (dict(cmd="raw", text="{\"op\": \"fly\"}"), "operation \"fly\" is not supported"),
    ]:
        m = d.mark()
        d.send(**cmd)
        assert session.status_after(m, text)["level"] == 2
    assert heard() == got
    # Unadvertised: the channel is gone; its data is refused.
    m = d.mark()
    d.send(cmd="unadvertise", channelId=ch)
    d.send(cmd="publish", channelId=ch, hex=_string_cdr("after unadvertise"))
    session.status_after(m, f"message data: no client channel {ch}")
    assert heard() == got
