"""`tracer graph` and `tracer echo` against running rclpy nodes on rmw_tracer (issue 11).

graph: two rclpy node processes (a /chatter publisher, subscription and a /srv service each)
and a best-effort talker of test_msgs/Nested; ``tracer graph --json`` lists the nodes, topics
with types, endpoints with their QoS, the services, and the edges with the peers they cross;
text and DOT show the same; ``--watch`` prints a new graph when a node comes and goes.

echo: ``tracer echo`` prints a talker's test_msgs messages decoded from the topic vertex's
``:schema`` (no message package involved), as JSON equal to what was published, as YAML-like
text, one field; transient local replays history; a topic without a publisher is waited for
with a message on stderr; a closed stdout ends it quietly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

import harness
from test_cli_cat import tracer

WORKER = Path(__file__).resolve().parent / "test_cli_worker.py"


def _worker(env, *args, timeout=120) -> harness.Proc:
    return harness.spawn_python(WORKER, list(args), env=env, timeout=timeout)


def _published(proc: harness.Proc) -> list[dict]:
    return [json.loads(l)["msg"] for l in proc.output_so_far().splitlines() if l.startswith('{"published"')]


def _was_published(proc: harness.Proc, pred, timeout: float = 10.0) -> bool:
    """Whether the talker printed a message matching ``pred``; its line may reach us after
    the message reached tracer echo, so wait for it a while."""
    deadline = time.monotonic() + timeout
    while True:
        if any(pred(m) for m in _published(proc)):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _graph(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([tracer(), "graph", *args], env=env, capture_output=True, text=True, timeout=60)


def _wait_graph(env, pred, timeout=30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        res = _graph(env, "--json")
        assert res.returncode == 0, res.stderr
        g = json.loads(res.stdout)
        if pred(g) or time.monotonic() > deadline:
            return g
        time.sleep(0.3)


@pytest.fixture
def nodes(tmp_path):
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    procs = [_worker(env, "node", "--name", n, "--until", str(until)) for n in ("alpha", "beta")]
    procs.append(_worker(env, "talk", "--type", "Nested", "--period", "0.2", "--reliability", "best_effort",
                         "--until", str(until)))
    for p in procs[:2]:
        assert p.wait_for_output("ready", 60), p.join(1).describe()
    yield env, until, procs
    until.touch()
    for r in harness.join_all(procs, 30):
        assert r.returncode == 0, r.describe()


def test_graph_lists_nodes_topics_qos_services_and_edges(nodes):
    env, _until, _procs = nodes
    g = _wait_graph(env, lambda g: len(g["nodes"]) >= 3 and any(t["name"] == "/msgs/Nested" for t in g["topics"]))
    names = sorted(n["name"] for n in g["nodes"])
    assert names == ["/alpha", "/beta", "/cli_talker"], g["nodes"]
    assert len(g["peers"]) == 3
    chatter = next(t for t in g["topics"] if t["name"] == "/chatter")
    assert chatter["types"] == ["std_msgs/msg/String"]
    assert sorted(e["node"] for e in chatter["publishers"]) == ["/alpha", "/beta"]
    assert all(e["qos"] == "keep_last(7), reliable, volatile, automatic" for e in chatter["publishers"]), chatter
    assert all(e["qos"].startswith("keep_last(5), reliable") for e in chatter["subscriptions"]), chatter
    nested = next(t for t in g["topics"] if t["name"] == "/msgs/Nested")
    assert nested["types"] == ["test_msgs/msg/Nested"]
    assert nested["publishers"][0]["qos"] == "keep_last(10), best_effort, volatile, automatic"
    # The topic vertex's :schema layout: Nested is plain (loanable, its 48-byte C struct is its
    # CDR body; docs/loans.md); a String is not.
    assert nested["publishers"][0]["layout"] == "plain 48", nested
    assert all(e["layout"] is None for e in chatter["publishers"] + chatter["subscriptions"]), chatter
    srv = next(s for s in g["services"] if s["name"] == "/srv")
    assert srv["types"] == ["test_msgs/srv/BasicTypes"] and len(srv["services"]) == 2
    # Every /chatter publisher reaches every /chatter subscription: 2 x 2, two of them local.
    edges = [e for e in g["edges"] if e["name"] == "/chatter"]
    assert len(edges) == 4, edges
    local = [e for e in edges if e["crosses"] is None]
    assert sorted(e["from"]["node"] for e in local) == ["/alpha", "/beta"]
    for e in edges:
        if e["crosses"] is not None:
            assert e["crosses"] == [e["from"]["peer"], e["to"]["peer"]] and e["from"]["peer"] != e["to"]["peer"]
    # Every node has /rosout and the parameter services; --hide-ros leaves them out.
    assert any(t["name"] == "/rosout" for t in g["topics"])
    hidden = json.loads(_graph(env, "--json", "--hide-ros").stdout)
    assert {t["name"] for t in hidden["topics"]} == {"/chatter", "/msgs/Nested"}
    assert {s["name"] for s in hidden["services"]} == {"/srv"}
    text = _graph(env, "--hide-ros").stdout
    assert "nodes (3):" in text and "/chatter [std_msgs/msg/String]" in text, text
    assert "/msgs/Nested [test_msgs/msg/Nested]  layout plain 48\n" in text, text
    assert "/chatter [std_msgs/msg/String]\n" in text, text
    assert "(link " in text and "(local in " in text, text
    dot = _graph(env, "--dot", "--hide-ros").stdout
    assert dot.startswith("digraph ros {") and dot.rstrip().endswith("}")
    assert dot.count("subgraph cluster_") == 3 and '"topics:/chatter"' in dot, dot


def test_graph_watch_redraws_when_a_node_comes_and_goes(nodes, tmp_path):
    env, _until, _procs = nodes
    watch = harness.spawn([tracer(), "graph", "--watch", "--json", "--hide-ros"], env, timeout=120)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "/cli_talker" not in watch.output_so_far():
            time.sleep(0.1)
        assert "/cli_talker" in watch.output_so_far(), watch.output_so_far()
        until2 = tmp_path / "until2"
        gamma = _worker(env, "node", "--name", "gamma", "--until", str(until2))
        assert gamma.wait_for_output("ready", 60)

        def docs():
            return [json.loads(l) for l in watch.output_so_far().splitlines() if l.strip()]

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("/gamma" in [n["name"] for n in d["nodes"]] for d in docs()):
            time.sleep(0.1)
        assert any("/gamma" in [n["name"] for n in d["nodes"]] for d in docs()), docs()[-1]
        until2.touch()
        assert gamma.join(30).returncode == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "/gamma" in [n["name"] for n in docs()[-1]["nodes"]]:
            time.sleep(0.1)
        assert "/gamma" not in [n["name"] for n in docs()[-1]["nodes"]], docs()[-1]
    finally:
        watch.popen.send_signal(signal.SIGINT)
        res = watch.join(30)
    assert res.returncode == 0, res.describe()
    assert "panick" not in res.stderr


def _echo(env, *args, timeout=60) -> harness.Proc:
    return harness.spawn([tracer(), "echo", *args], env, timeout=timeout)


def test_echo_prints_a_live_topic_decoded_from_its_schema(tmp_path):
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    talker = _worker(env, "talk", "--type", "MultiNested", "--period", "0.1", "--until", str(until))
    try:
        res = _echo(env, "/msgs/MultiNested", "--once", "--json").join()
        assert res.returncode == 0, res.describe()
        got = json.loads(res.stdout.strip())
        assert _was_published(talker, lambda m: m == got), got
        res = _echo(env, "msgs/MultiNested", "--once").join()
        assert res.returncode == 0, res.describe()
        assert res.stdout.rstrip().endswith("---") and "array_of_arrays:\n- bool_values: [" in res.stdout, res.stdout
        res = _echo(env, "/msgs/MultiNested", "--once", "--json",
                    "--field", "array_of_arrays.1.int32_values").join()
        assert res.returncode == 0, res.describe()
        ints = json.loads(res.stdout)
        assert _was_published(talker, lambda m: m["array_of_arrays"][1]["int32_values"] == ints), ints
        res = _echo(env, "/msgs/MultiNested", "--once", "--field", "no.such").join()
        assert res.returncode == 1 and 'no field "no.such" in test_msgs/MultiNested' in res.stderr, res.describe()
        # A closed stdout (`| head -1`) ends it quietly.
        p = subprocess.Popen([tracer(), "echo", "/msgs/MultiNested", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert json.loads(p.stdout.readline()) is not None
        p.stdout.close()
        assert p.wait(timeout=30) == 0
        assert b"panick" not in p.stderr.read()
    finally:
        until.touch()
        assert talker.join(30).returncode == 0


def test_echo_transient_local_replays_history(tmp_path):
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    talker = _worker(env, "talk", "--type", "Strings", "--count", "3", "--period", "0.01",
                     "--durability", "transient_local", "--until", str(until))
    try:
        deadline = time.monotonic() + 30
        while len(_published(talker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_published(talker)) == 3
        res = _echo(env, "/msgs/Strings", "--json", "--qos-durability", "transient_local", "--once").join()
        assert res.returncode == 0, res.describe()
        assert json.loads(res.stdout) == _published(talker)[0]
        # Volatile: the history is not replayed, nothing new comes.
        p = _echo(env, "/msgs/Strings", "--json", "--qos-durability", "volatile")
        deadline = time.monotonic() + 20
        while "subscribed to /msgs/Strings" not in p.output_so_far() + "".join(p._err) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        p.popen.send_signal(signal.SIGINT)
        r = p.join(30)
        assert r.returncode == 0 and r.stdout == "", r.describe()
    finally:
        until.touch()
        assert talker.join(30).returncode == 0


def test_echo_of_a_topic_without_publisher_waits_and_says_so(tmp_path):
    env = harness.tracer_env(tmp_path)
    p = _echo(env, "/nobody/here")
    deadline = time.monotonic() + 20
    while "no publisher of /nobody/here yet" not in "".join(p._err) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "waiting for one (Ctrl-C to stop)" in "".join(p._err), "".join(p._err)
    assert p.popen.poll() is None  # still waiting
    p.popen.send_signal(signal.SIGINT)
    r = p.join(30)
    assert r.returncode == 0 and r.stdout == "", r.describe()


def test_graph_marks_pairs_of_incompatible_qos(tmp_path):
    """rclpy endpoints on one topic whose QoS do not all match: every pair is an edge, and the
    ones rmw_tracer does not wire carry the policy, the same rmw_tracer's own incompatible-QoS
    events report to rclpy."""
    env = harness.tracer_env(tmp_path)
    until = tmp_path / "until"
    proc = _worker(env, "qos_pairs", "--until", str(until))
    try:
        assert proc.wait_for_output("ready", 60), proc.join(1).describe()
        g = _wait_graph(env, lambda g: sum(e["name"] == "/qos_topic" for e in g["edges"]) == 4)
        marks = sorted((e["from"]["node"], e["to"]["node"], e["incompatible_qos"])
                       for e in g["edges"] if e["name"] == "/qos_topic")
        assert marks == [
            ("/qos_pub_be", "/qos_sub_rel", "RELIABILITY"),
            ("/qos_pub_be", "/qos_sub_tl", "RELIABILITY"),
            ("/qos_pub_rel", "/qos_sub_rel", None),
            ("/qos_pub_rel", "/qos_sub_tl", "DURABILITY"),
        ], marks
        # rclpy heard the same from rmw_tracer: /qos_sub_rel one incompatible publisher
        # (reliability), /qos_sub_tl two (events may coalesce: the last total counts).
        events = lambda: [json.loads(l) for l in proc.output_so_far().splitlines() if l.startswith('{"incompatible"')]
        totals = lambda: {e["incompatible"]: e["total"] for e in events()}
        deadline = time.monotonic() + 10
        while totals() != {"/qos_sub_rel": 1, "/qos_sub_tl": 2} and time.monotonic() < deadline:
            time.sleep(0.1)
        ev = events()
        assert totals() == {"/qos_sub_rel": 1, "/qos_sub_tl": 2}, ev
        policies = lambda sub: {e["policy"].removeprefix("RMW_QOS_POLICY_") for e in ev if e["incompatible"] == sub}
        assert policies("/qos_sub_rel") == {"RELIABILITY"}, ev
        assert policies("/qos_sub_tl") <= {"RELIABILITY", "DURABILITY"}, ev
        text = _graph(env).stdout
        assert "/qos_topic: /qos_pub_be -> /qos_sub_rel  (local in " in text
        for a, b, p in marks:
            line = next(l for l in text.splitlines() if l.strip().startswith(f"/qos_topic: {a} -> {b} "))
            assert line.endswith(f"INCOMPATIBLE QoS: {p} (no data flows)") if p else "INCOMPATIBLE" not in line, line
        dot = _graph(env, "--dot").stdout
        assert dot.count("QoS incompatible: ") == 3, dot
        assert "QoS incompatible: DURABILITY" in dot and "QoS incompatible: RELIABILITY" in dot, dot
    finally:
        until.touch()
        r = proc.join(30)
    assert r.returncode == 0, r.describe()
