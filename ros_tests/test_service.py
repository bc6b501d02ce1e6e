"""Services over rmw_tracer (R4): rclpy servers and clients, across processes and in one.

Rulings checked (docs/rmw-mapping.md, section Services): a request reaches every server the
registry knows, local or on a peer, carrying the client gid and its sequence number; the server
answers the request's origin; a node made with default options (parameter services and the type
description service on) works; responses arrive whole and in request order for one client.
"""

from __future__ import annotations

import json
from pathlib import Path

import harness
from worker_output import json_line

WORKER = Path(__file__).resolve().parent / "test_service_worker.py"


def _expected(n: int) -> list:
    return [[2 * i, f"re:req{i}", not (i % 2 == 0), i + 0.5] for i in range(n)]


# Ruling: request/response between two processes, each node with default options.
def test_service_between_two_processes(tracer_env):
    n = 20
    server = harness.spawn_python(WORKER, ["server", "--service", "/add", "--count", str(n)],
                                  env=tracer_env)
    assert server.wait_for_output("ready", 30), server.join(1).describe()
    client = harness.spawn_python(WORKER, ["client", "--service", "/add", "--count", str(n)],
                                  env=tracer_env)
    c = client.join(60)
    s = server.join(30)
    assert c.returncode == 0, c.describe() + s.describe()
    assert json_line(c.stdout)["results"] == _expected(n), c.describe()
    assert s.returncode == 0, s.describe()
    assert json_line(s.stdout)["served"] == list(range(n))


# Ruling: server and client in one process (two nodes of one context) talk through the graph.
def test_service_within_one_process(tracer_env):
    n = 10
    r = harness.spawn_python(WORKER, ["both", "--service", "/inproc", "--count", str(n)],
                             env=tracer_env).join(60)
    assert r.returncode == 0, r.describe()
    out = json_line(r.stdout)
    assert out["results"] == _expected(n), r.describe()
    assert out["served"] == list(range(n))


# Ruling: a client started before its server finds it when it appears (wait_for_service).
def test_client_waits_for_a_late_server(tracer_env):
    client = harness.spawn_python(WORKER, ["client", "--service", "/late", "--count", "3"],
                                  env=tracer_env)
    server = harness.spawn_python(WORKER, ["server", "--service", "/late", "--count", "3"],
                                  env=tracer_env)
    c = client.join(60)
    s = server.join(30)
    assert c.returncode == 0, c.describe() + s.describe()
    assert json_line(c.stdout)["results"] == _expected(3)


# Ruling: a node's parameter services answer another process (ros2 param's path).
def test_parameter_services_of_a_default_node(tracer_env):
    server = harness.spawn_python(WORKER, ["server", "--service", "/unused", "--count", "1",
                                           "--node", "param_node", "--timeout", "40"],
                                  env=tracer_env)
    assert server.wait_for_output("ready", 30), server.join(1).describe()
    script = r'''
import json, rclpy
from rclpy.node import Node
from rcl_interfaces.srv import ListParameters, GetParameters
rclpy.init()
n = Node("asker")
c = n.create_client(ListParameters, "/param_node/list_parameters")
assert c.wait_for_service(timeout_sec=20), "list_parameters not available"
f = c.call_async(ListParameters.Request())
rclpy.spin_until_future_complete(n, f, timeout_sec=20)
names = list(f.result().result.names)
g = n.create_client(GetParameters, "/param_node/get_parameters")
assert g.wait_for_service(timeout_sec=20)
f = g.call_async(GetParameters.Request(names=["use_sim_time"]))
rclpy.spin_until_future_complete(n, f, timeout_sec=20)
vals = [v.bool_value for v in f.result().values]
print(json.dumps({"names": names, "use_sim_time": vals}))
'''
    r = harness.spawn_python(script, env=tracer_env).join(60)
    server.kill()
    server.join(10)
    assert r.returncode == 0, r.describe()
    out = json_line(r.stdout)
    assert "use_sim_time" in out["names"]
    assert out["use_sim_time"] == [False]


# Ruling: a request goes to every server of the service (as with DDS, where every server's
# request reader matches); the client takes the first answer to each of its sequence numbers.
def test_every_server_gets_every_request(tracer_env):
    n = 8
    servers = [harness.spawn_python(WORKER, ["server", "--service", "/multi", "--count", str(n),
                                             "--node", f"server{i}"], env=tracer_env)
               for i in range(2)]
    for s in servers:
        assert s.wait_for_output("ready", 30), s.join(1).describe()
    c = harness.spawn_python(WORKER, ["client", "--service", "/multi", "--count", str(n),
                                      "--wait-servers", "2"], env=tracer_env).join(60)
    results = [s.join(30) for s in servers]
    assert c.returncode == 0, c.describe()
    assert json_line(c.stdout)["results"] == _expected(n)
    for r in results:
        assert r.returncode == 0, r.describe()
        assert json_line(r.stdout)["served"] == list(range(n))


# Ruling: a server answers each client at its own origin (the response path comes from the
# client gid in the request, the peer from the sample's origin): two client processes at once.
def test_one_server_two_client_processes(tracer_env):
    n = 10
    server = harness.spawn_python(WORKER, ["server", "--service", "/shared", "--count", str(2 * n)],
                                  env=tracer_env)
    assert server.wait_for_output("ready", 30), server.join(1).describe()
    clients = [harness.spawn_python(WORKER, ["client", "--service", "/shared", "--count", str(n)],
                                    env=tracer_env) for _ in range(2)]
    outs = [c.join(60) for c in clients]
    s = server.join(30)
    for c in outs:
        assert c.returncode == 0, c.describe()
        assert json_line(c.stdout)["results"] == _expected(n)
    assert s.returncode == 0, s.describe()
    assert sorted(json_line(s.stdout)["served"]) == sorted(list(range(n)) * 2)
