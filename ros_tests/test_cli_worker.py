"""The process side of the command-line tests (test_cli_*.py): rclpy programs under rmw_tracer.
Nothing here is collected by pytest: ROS is imported only when run as a program.

    publish
        publishes every test_msgs sample of test_cdr_worker (each type default-constructed and
        filled three ways) once, type T on /msgs/T, and prints one JSON line
        {"/msgs/T": [<message as plain JSON>, ...], ...} of what it published
    talk --type T [--topic NAME] [--count N] [--period S] [--reliability R] [--durability D]
         [--until FILE]
        publishes test_msgs sample(T, i) for i = 0, 1, .. every S seconds (N times, default
        without end) until FILE exists; prints {"published": i, "msg": <plain JSON>} after each
    chatter [--until FILE]
        publishes std_msgs/String "hello from rmw_tracer <i>" on /chatter every 50 ms until
        FILE exists, printing each string after publishing it
    services [--until FILE]
        a node /fox_node for `tracer serve`'s services, parameters and client publishing: a
        service /add_things (test_msgs/BasicTypes; the response is the request with int64_value
        doubled and " back" after string_value), parameters speed=1.5, label="robot", count=3,
        flags=[true, false], a /from_foxglove subscription (std_msgs/String) printing
        {"heard": data} per message, {"param": name, "value": v} per parameter set; prints
        "ready", spins until FILE exists
    qos_pairs [--until FILE]
        four nodes on /qos_topic (std_msgs/String): /qos_pub_be (best effort, volatile),
        /qos_pub_rel (reliable, volatile), /qos_sub_rel (reliable, volatile), /qos_sub_tl
        (reliable, transient local); prints "ready", then {"incompatible": sub node, "policy":
        rclpy's last_policy_kind name, "total": n} on each requested-incompatible-QoS event
    node --name N [--until FILE]
        a node with a /chatter publisher (std_msgs/String), a /chatter subscription and a
        /srv service (test_msgs/BasicTypes), prints "ready", spins until FILE exists
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def plain(v):
    """A ROS message (rclpy's or mcap-ros2-support's) as JSON-like data: messages as dicts in
    field order, arrays (numpy, array.array) as lists. rclpy holds a `byte` as a bytes object
    of length 1 (an int here); mcap-ros2-support a uint8/byte array as one bytes object."""
    if hasattr(v, "get_fields_and_field_types"):
        return {f: _byte(getattr(v, f)) for f in v.get_fields_and_field_types()}
    if hasattr(v, "__slots__") and not isinstance(v, (str, bytes)) and hasattr(v, "_type"):
        return {f: plain(getattr(v, f)) for f in v.__slots__}
    if isinstance(v, (bytes, bytearray)):
        return list(v)
    if hasattr(v, "tolist"):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)) or type(v).__name__ == "array":
        return [_byte(x) for x in v]
    if type(v).__module__ == "numpy":
        return v.item()
    return v


def _byte(x):
    return x[0] if isinstance(x, bytes) and len(x) == 1 else plain(x)


def _qos(a):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        depth=10,
        reliability=ReliabilityPolicy.BEST_EFFORT if a.reliability == "best_effort" else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if a.durability == "transient_local" else DurabilityPolicy.VOLATILE,
    )


def publish(_a) -> None:
    import rclpy
    from rclpy.node import Node

    from test_cdr_worker import TYPES, _msg_class, sample

    rclpy.init()
    node = Node("cli_publisher")
    out = {}
    for name in TYPES:
        cls = _msg_class("test_msgs", name)
        pub = node.create_publisher(cls, f"/msgs/{name}", 10)
        msgs = [cls()] + [sample(cls, k) for k in (0, 1, 2)]
        for m in msgs:
            pub.publish(m)
        out[f"/msgs/{name}"] = [plain(m) for m in msgs]
    node.destroy_node()
    rclpy.shutdown()
    print(json.dumps(out), flush=True)


def talk(a) -> None:
    import rclpy
    from rclpy.node import Node

    from test_cdr_worker import _msg_class, sample

    rclpy.init()
    node = Node("cli_talker")
    cls = _msg_class("test_msgs", a.type)
    pub = node.create_publisher(cls, a.topic or f"/msgs/{a.type}", _qos(a))
    i = 0
    while (a.count is None or i < a.count) and not (a.until and Path(a.until).exists()):
        m = sample(cls, i)
        pub.publish(m)
        print(json.dumps({"published": i, "msg": plain(m)}), flush=True)
        i += 1
        rclpy.spin_once(node, timeout_sec=a.period)
    while a.until and not Path(a.until).exists():
        rclpy.spin_once(node, timeout_sec=0.05)
    node.destroy_node()
    rclpy.shutdown()


def chatter(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import String

    rclpy.init()
    n = Node("cli_chatter")
    pub = n.create_publisher(String, "/chatter", 10)
    i = 0
    while not (a.until and Path(a.until).exists()):
        pub.publish(String(data=f"hello from rmw_tracer {i}"))
        print(f"hello from rmw_tracer {i}", flush=True)
        i += 1
        rclpy.spin_once(n, timeout_sec=0.05)
    n.destroy_node()
    rclpy.shutdown()


def services(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import String
    from test_msgs.srv import BasicTypes

    rclpy.init()
    n = Node("fox_node")
    n.declare_parameter("speed", 1.5)
    n.declare_parameter("label", "robot")
    n.declare_parameter("count", 3)
    n.declare_parameter("flags", [True, False])

    def add(req, resp):
        for f in req.get_fields_and_field_types():
            setattr(resp, f, getattr(req, f))
        resp.int64_value = req.int64_value * 2
        resp.string_value = req.string_value + " back"
        return resp

    def changed(params):
        from rcl_interfaces.msg import SetParametersResult

        for p in params:
            v = p.value
            print(json.dumps({"param": p.name, "value": list(v) if isinstance(v, (list, tuple)) else v}), flush=True)
        return SetParametersResult(successful=True)

    n.add_on_set_parameters_callback(changed)
    n.create_service(BasicTypes, "/add_things", add)
    n.create_subscription(String, "/from_foxglove", lambda m: print(json.dumps({"heard": m.data}), flush=True), 10)
    print("ready", flush=True)
    while not (a.until and Path(a.until).exists()):
        rclpy.spin_once(n, timeout_sec=0.05)
    n.destroy_node()
    rclpy.shutdown()


def qos_pairs(a) -> None:
    import rclpy
    from rclpy.event_handler import SubscriptionEventCallbacks
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    rclpy.init()
    be, rel = ReliabilityPolicy.BEST_EFFORT, ReliabilityPolicy.RELIABLE
    vol, tl = DurabilityPolicy.VOLATILE, DurabilityPolicy.TRANSIENT_LOCAL
    ex = SingleThreadedExecutor()
    nodes = []
    for name, kind, r, d in [("qos_pub_be", "pub", be, vol), ("qos_pub_rel", "pub", rel, vol),
                             ("qos_sub_rel", "sub", rel, vol), ("qos_sub_tl", "sub", rel, tl)]:
        n = Node(name)
        qos = QoSProfile(depth=5, reliability=r, durability=d)
        if kind == "pub":
            n.create_publisher(String, "/qos_topic", qos)
        else:
            def seen(info, name=name):
                print(json.dumps({"incompatible": f"/{name}", "policy": info.last_policy_kind.name,
                                  "total": info.total_count}), flush=True)
            n.create_subscription(String, "/qos_topic", lambda _m: None, qos,
                                  event_callbacks=SubscriptionEventCallbacks(incompatible_qos=seen))
        ex.add_node(n)
        nodes.append(n)
    print("ready", flush=True)
    while not (a.until and Path(a.until).exists()):
        ex.spin_once(timeout_sec=0.05)
    for n in nodes:
        n.destroy_node()
    rclpy.shutdown()


def node(a) -> None:
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import String
    from test_msgs.srv import BasicTypes

    rclpy.init()
    n = Node(a.name)
    n.create_publisher(String, "/chatter", 7)
    n.create_subscription(String, "/chatter", lambda _m: None, 5)
    n.create_service(BasicTypes, "/srv", lambda _req, resp: resp)
    print("ready", flush=True)
    while not (a.until and Path(a.until).exists()):
        rclpy.spin_once(n, timeout_sec=0.05)
    n.destroy_node()
    rclpy.shutdown()


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("publish")
    t = sub.add_parser("talk")
    t.add_argument("--type", required=True)
    t.add_argument("--topic")
    t.add_argument("--count", type=int)
    t.add_argument("--period", type=float, default=0.1)
    t.add_argument("--reliability", default="reliable")
    t.add_argument("--durability", default="volatile")
    t.add_argument("--until")
    c = sub.add_parser("chatter")
    c.add_argument("--until")
    v = sub.add_parser("services")
    v.add_argument("--until")
    q = sub.add_parser("qos_pairs")
    q.add_argument("--until")
    n = sub.add_parser("node")
    n.add_argument("--name", required=True)
    n.add_argument("--until")
    a = p.parse_args()
    {"publish": publish, "talk": talk, "chatter": chatter, "services": services, "qos_pairs": qos_pairs, "node": node}[a.cmd](a)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
