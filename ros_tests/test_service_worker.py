"""The process side of the service and graph tests (test_service.py, test_graph.py): rclpy
programs run with the venv's python under rmw_tracer (LD_PRELOAD). Nothing here is collected by
pytest: ROS is imported only when run as a program. Every node is made with rclpy's default
options, so the parameter services and the type description service exist as in any node.

    server  --service S --count N [--node NAME]  serve test_msgs/srv/BasicTypes on S (answer:
            int64 * 2, "re:" + string), print "ready", exit after N requests and a short linger
    client  --service S --count N [--wait-servers K]  wait for S (and until K servers are
            known), call it N times, print one JSON line
    both    --service S --count N               server and client in two nodes of one process
    talker  --topic T [--node NAME]             publish std_msgs/String on T until killed
    probe   --wait-node NAME --topic T --service S   wait until the node NAME, a publisher on T
            and the service S are visible, print one JSON line of graph queries
    matched --topic T                           publisher with a matched-event handler: print
            one JSON line when a subscription from another process has matched and gone
    listen  --topic T                           a subscription on T until killed
    bench   --service S --count N               (benchmark, not a test) a server node and a
            client node in this process, or --remote: only the client, against a `server`
            process; prints one JSON line of round-trip latencies (p50, p99, mean, in us)
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _init():
    import rclpy

    if not rclpy.ok():
        rclpy.init()


def _spin_until(node, pred, timeout: float) -> bool:
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        rclpy.spin_once(node, timeout_sec=0.05)
    return pred()


def _make_server(node, service: str, served: list):
    from test_msgs.srv import BasicTypes

    def handle(req, resp):
        served.append(req.int64_value)
        resp.int64_value = req.int64_value * 2
        resp.string_value = "re:" + req.string_value
        resp.bool_value = not req.bool_value
        resp.float64_value = req.float64_value + 0.5
        return resp

    return node.create_service(BasicTypes, service, handle)


def _call_all(node, client, count: int, spin_node=None) -> list:
    import rclpy
    from test_msgs.srv import BasicTypes

    results = []
    for i in range(count):
        req = BasicTypes.Request()
        req.int64_value = i
        req.string_value = f"req{i}"
        req.bool_value = i % 2 == 0
        req.float64_value = float(i)
        fut = client.call_async(req)
        deadline = time.monotonic() + 20
        while not fut.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
            if spin_node is not None:
                rclpy.spin_once(spin_node, timeout_sec=0)
        if not fut.done():
            results.append(None)
            continue
        r = fut.result()
        results.append([r.int64_value, r.string_value, r.bool_value, r.float64_value])
    return results


def cmd_server(a) -> int:
    import rclpy
    from rclpy.node import Node

    _init()
    node = Node(a.node)
    served: list = []
    _make_server(node, a.service, served)
    print("ready", flush=True)
    ok = _spin_until(node, lambda: len(served) >= a.count, a.timeout)
    # Let the last response leave before the context goes.
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps({"served": served}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0 if ok else 1


def cmd_client(a) -> int:
    import rclpy
    from rclpy.node import Node
    from test_msgs.srv import BasicTypes

    _init()
    node = Node("client")
    client = node.create_client(BasicTypes, a.service)
    if not client.wait_for_service(timeout_sec=a.timeout):
        print(json.dumps({"error": "service not available"}), flush=True)
        return 1
    if not _spin_until(node, lambda: node.count_services(a.service) >= a.wait_servers, a.timeout):
        print(json.dumps({"error": f"fewer than {a.wait_servers} servers"}), flush=True)
        return 1
    results = _call_all(node, client, a.count)
    print(json.dumps({"results": results}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


def cmd_both(a) -> int:
    import rclpy
    from rclpy.node import Node
    from test_msgs.srv import BasicTypes

    _init()
    server_node = Node("server")
    served: list = []
    _make_server(server_node, a.service, served)
    node = Node("client")
    client = node.create_client(BasicTypes, a.service)
    if not client.wait_for_service(timeout_sec=a.timeout):
        print(json.dumps({"error": "service not available"}), flush=True)
        return 1
    results = _call_all(node, client, a.count, spin_node=server_node)
    print(json.dumps({"results": results, "served": served}), flush=True)
    rclpy.shutdown()
    return 0


def cmd_talker(a) -> int:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import String

    _init()
    node = Node(a.node)
    pub = node.create_publisher(String, a.topic, 10)
    print("ready", flush=True)
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        pub.publish(String(data="hello"))
        rclpy.spin_once(node, timeout_sec=0.1)
    return 0


def cmd_listen(a) -> int:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import String

    _init()
    node = Node("listener")
    node.create_subscription(String, a.topic, lambda m: None, 10)
    print("ready", flush=True)
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    return 0


def cmd_probe(a) -> int:
    import rclpy
    from rclpy.node import Node

    _init()
    node = Node("probe")

    def visible():
        names = [n for n, _ in node.get_node_names_and_namespaces()]
        topics = dict(node.get_topic_names_and_types())
        services = dict(node.get_service_names_and_types())
        return a.wait_node in names and a.topic in topics and a.service in services

    ok = _spin_until(node, visible, a.timeout)
    out = {
        "ok": ok,
        "nodes": sorted([n, ns] for n, ns in node.get_node_names_and_namespaces()),
        "topics": {n: t for n, t in node.get_topic_names_and_types()},
        "services": {n: t for n, t in node.get_service_names_and_types()},
        "count_publishers": node.count_publishers(a.topic),
        "count_subscribers": node.count_subscribers(a.topic),
        "count_services": node.count_services(a.service),
        "publishers_info": [
            {"node": i.node_name, "ns": i.node_namespace, "type": i.topic_type,
             "gid_len": len(i.endpoint_gid), "reliability": int(i.qos_profile.reliability),
             "hash": str(i.topic_type_hash)}
            for i in node.get_publishers_info_by_topic(a.topic)
        ],
        "by_node_publishers": node.get_publisher_names_and_types_by_node(a.wait_node, "/"),
        "by_node_services": node.get_service_names_and_types_by_node(a.wait_node, "/"),
    }
    try:
        node.get_publisher_names_and_types_by_node("no_such_node", "/")
        out["missing_node"] = "no error"
    except Exception as e:  # rclpy raises NodeNameNonExistentError
        out["missing_node"] = type(e).__name__
    print(json.dumps(out), flush=True)
    return 0 if ok else 1


def cmd_matched(a) -> int:
    import rclpy
    from rclpy.event_handler import PublisherEventCallbacks
    from rclpy.node import Node
    from std_msgs.msg import String

    _init()
    node = Node("matched_pub")
    events: list = []
    cbs = PublisherEventCallbacks(
        matched=lambda info: events.append([info.total_count, info.total_count_change,
                                             info.current_count, info.current_count_change]))
    node.create_publisher(String, a.topic, 10, event_callbacks=cbs)
    print("ready", flush=True)
    saw_match = _spin_until(node, lambda: any(e[2] >= 1 for e in events), a.timeout)
    print("matched" if saw_match else "no match", flush=True)
    saw_gone = _spin_until(node, lambda: saw_match and events[-1][2] == 0, a.timeout)
    print(json.dumps({"events": events, "matched": saw_match, "unmatched": saw_gone}), flush=True)
    return 0 if saw_match and saw_gone else 1


def cmd_bench(a) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from test_msgs.srv import BasicTypes

    _init()
    ex = SingleThreadedExecutor()
    if not a.remote:
        server_node = Node("bench_server")
        _make_server(server_node, a.service, [])
        ex.add_node(server_node)
    node = Node("bench_client")
    ex.add_node(node)
    client = node.create_client(BasicTypes, a.service)
    if not client.wait_for_service(timeout_sec=a.timeout):
        return 1
    lat = []
    req = BasicTypes.Request()
    for i in range(a.count + 20):
        req.int64_value = i
        t0 = time.perf_counter()
        fut = client.call_async(req)
        ex.spin_until_future_complete(fut, timeout_sec=10)
        if not fut.done():
            return 1
        if i >= 20:
            lat.append((time.perf_counter() - t0) * 1e6)
    lat.sort()
    print(json.dumps({"n": len(lat), "p50_us": lat[len(lat) // 2], "p99_us": lat[int(len(lat) * 0.99)],
                      "mean_us": sum(lat) / len(lat)}), flush=True)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("cmd")
    p.add_argument("--service", default="/svc")
    p.add_argument("--topic", default="/chatter")
    p.add_argument("--node", default="server")
    p.add_argument("--wait-node", default="talker")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--remote", action="store_true")
    p.add_argument("--wait-servers", type=int, default=1)
    a = p.parse_args(argv)
    cmds = {"server": cmd_server, "client": cmd_client, "both": cmd_both, "talker": cmd_talker,
            "listen": cmd_listen, "probe": cmd_probe, "matched": cmd_matched,
            "bench": cmd_bench}
    return cmds[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
