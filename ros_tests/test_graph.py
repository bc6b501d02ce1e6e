"""Graph queries over rmw_tracer (R3), answered from the endpoint registry of every peer.

Rulings checked (docs/rmw-mapping.md, section Graph): a node, its topics, its services and its
endpoints' details in another process are visible through rclpy's graph API; a node name that
does not exist is reported as such (RMW_RET_NODE_NAME_NON_EXISTENT); matched events follow a
subscription of another process as it comes and goes.
"""

from __future__ import annotations

from pathlib import Path

import harness
from worker_output import json_line

WORKER = Path(__file__).resolve().parent / "test_service_worker.py"


# Ruling: node names, topic names and types, service names, counts and endpoint info of a
# node in another process.
def test_graph_of_another_process(tracer_env):
    talker = harness.spawn_python(WORKER, ["talker", "--topic", "/chatter", "--node", "talker",
                                           "--timeout", "60"], env=tracer_env)
    assert talker.wait_for_output("ready", 30), talker.join(1).describe()
    probe = harness.spawn_python(WORKER, ["probe", "--wait-node", "talker", "--topic", "/chatter",
                                          "--service", "/talker/get_parameters"],
                                 env=tracer_env).join(60)
    talker.kill()
    talker.join(10)
    assert probe.returncode == 0, probe.describe()
    out = json_line(probe.stdout)
    assert ["talker", "/"] in out["nodes"] and ["probe", "/"] in out["nodes"]
    assert out["topics"]["/chatter"] == ["std_msgs/msg/String"]
    assert "/rosout" in out["topics"] and "/parameter_events" in out["topics"]
    assert out["services"]["/talker/get_parameters"] == ["rcl_interfaces/srv/GetParameters"]
    assert "/talker/get_type_description" in out["services"]
    assert out["count_publishers"] == 1
    assert out["count_subscribers"] == 0
    assert out["count_services"] == 1
    [info] = out["publishers_info"]
    assert (info["node"], info["ns"], info["type"]) == ("talker", "/", "std_msgs/msg/String")
    assert info["gid_len"] == 16
    # The RIHS01 hash of std_msgs/msg/String travels from the publisher's type support.
    assert info["hash"].startswith("RIHS01_") and len(info["hash"]) == len("RIHS01_") + 64
    pubs = dict((n, t) for n, t in out["by_node_publishers"])
    assert pubs["/chatter"] == ["std_msgs/msg/String"]
    srvs = dict((n, t) for n, t in out["by_node_services"])
    assert "/talker/set_parameters" in srvs
    assert out["missing_node"] == "NodeNameNonExistentError"


# Ruling (R3 events): PUBLICATION_MATCHED follows a subscription of another process as it
# appears and goes; rclpy's default event handlers (incompatible QoS) do not stand in the way.
def test_matched_event_across_processes(tracer_env):
    pub = harness.spawn_python(WORKER, ["matched", "--topic", "/matched", "--timeout", "30"],
                               env=tracer_env)
    assert pub.wait_for_output("ready", 30), pub.join(1).describe()
    listener = harness.spawn_python(WORKER, ["listen", "--topic", "/matched", "--timeout", "60"],
                                    env=tracer_env)
    assert listener.wait_for_output("ready", 30), listener.join(1).describe()
    assert pub.wait_for_output("matched", 30), pub.join(1).describe()
    listener.terminate()
    listener.join(20)
    r = pub.join(40)
    assert r.returncode == 0, r.describe()
    out = json_line(r.stdout)
    assert out["matched"] and out["unmatched"], out
    first, last = out["events"][0], out["events"][-1]
    # [total_count, total_count_change, current_count, current_count_change]
    assert first == [1, 1, 1, 1], out
    assert last[0] == 1 and last[2] == 0 and last[3] == -1, out
