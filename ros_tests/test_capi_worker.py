"""The rclpy side of the libtracer C API tests (test_capi.py): programs run with the venv's
python under rmw_tracer (LD_PRELOAD), one per OS process. Nothing here is collected by pytest:
ROS is imported only when run as a program.

    image-listen --topic T --count N     sensor_msgs/Image subscription; one JSON line
                                         {"frames": [[sec, h, w, encoding, step, ok], ...],
                                          "shm_maps": [...]}
    image-talk   --topic T --count N --width W --height H
                                         waits for a subscription, publishes N rgba8 frames
                                         (row r of frame i is the byte (i + r) & 0xff)
    ns-talk      --topics A,B,.. --count N --period S
                                         a std_msgs/String publisher per topic, publishing
                                         "<topic> <i>" on each every S seconds, N rounds
    srv-serve    --service S --count N   a test_msgs/srv/BasicTypes server answering N requests
                                         with int64_value + 1 and string_value + "!"
    srv-call     --service S --count N   waits for the server, N calls (int64_value = i,
                                         string_value "py <i>"); one JSON line {"replies": [...]}
    graph        --node NAME --topic T   waits until the node and a publisher of T from it are
                                         in the ROS graph; one JSON line with what rcl says
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import shm_maps


def _node(name: str):
    import rclpy
    from rclpy.node import Node

    if not rclpy.ok():
        rclpy.init()
    return Node(name)


def _spin_until(node, pred, timeout: float) -> bool:
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        rclpy.spin_once(node, timeout_sec=0.05)
    return pred()


def cmd_image_listen(args) -> None:
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    node = _node("py_image_listener")
    frames: list[list] = []

    def on(m: Image) -> None:
        data = bytes(m.data)
        ok = len(data) == m.step * m.height and all(
            data[r * m.step] == (m.header.stamp.sec + r) & 0xFF
            and data[r * m.step + m.step - 1] == (m.header.stamp.sec + r) & 0xFF
            for r in range(m.height))
        frames.append([m.header.stamp.sec, m.height, m.width, m.encoding, m.step, ok])

    node.create_subscription(Image, args.topic, on, QoSProfile(depth=4))
    print("ready", flush=True)
    _spin_until(node, lambda: len(frames) >= args.count, args.timeout)
    print(json.dumps({"frames": frames, "shm_maps": shm_maps.permissions()}), flush=True)
    node.destroy_node()


def cmd_image_talk(args) -> None:
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    node = _node("py_camera")
    pub = node.create_publisher(Image, args.topic, QoSProfile(depth=4))
    if not _spin_until(node, lambda: pub.get_subscription_count() >= 1, args.timeout):
        sys.exit(2)
    print("matched", flush=True)
    step = args.width * 4
    for i in range(args.count):
        m = Image()
        m.header.stamp.sec = i
        m.header.frame_id = "camera"
        m.height, m.width, m.encoding, m.step = args.height, args.width, "rgba8", step
        m.data = b"".join(bytes([(i + r) & 0xFF]) * step for r in range(args.height))
        pub.publish(m)
        time.sleep(0.05)
    print("published", flush=True)
    _spin_until(node, lambda: False, args.linger)
    node.destroy_node()


def cmd_ns_talk(args) -> None:
    from std_msgs.msg import String

    node = _node("py_ns_talker")
    topics = args.topics.split(",")
    pubs = {t: node.create_publisher(String, t, 10) for t in topics}
    print("ready", flush=True)
    for i in range(args.count):
        for t, p in pubs.items():
            p.publish(String(data=f"{t} {i}"))
        time.sleep(args.period)
    print("published", flush=True)
    node.destroy_node()


def cmd_srv_serve(args) -> None:
    from test_msgs.srv import BasicTypes

    node = _node("py_server")
    served = [0]

    def answer(req, resp):
        resp.int64_value = req.int64_value + 1
        resp.string_value = req.string_value + "!"
        resp.bool_value = req.bool_value
        served[0] += 1
        return resp

    node.create_service(BasicTypes, args.service, answer)
    print("ready", flush=True)
    _spin_until(node, lambda: served[0] >= args.count, args.timeout)
    _spin_until(node, lambda: False, args.linger)
    print(json.dumps({"served": served[0]}), flush=True)
    node.destroy_node()


def cmd_srv_call(args) -> None:
    from test_msgs.srv import BasicTypes

    node = _node("py_client")
    cli = node.create_client(BasicTypes, args.service)
    if not cli.wait_for_service(timeout_sec=args.timeout):
        sys.exit(2)
    replies = []
    for i in range(args.count):
        req = BasicTypes.Request(int64_value=i, string_value=f"py {i}", bool_value=True)
        fut = cli.call_async(req)
        _spin_until(node, fut.done, args.timeout)
        r = fut.result()
        replies.append([r.int64_value, r.string_value, r.bool_value])
    print(json.dumps({"replies": replies}), flush=True)
    node.destroy_node()


def cmd_graph(args) -> None:
    node = _node("py_graph_watcher")

    def pubs():
        return [i for i in node.get_publishers_info_by_topic(args.topic) if i.node_name == args.node]

    def present() -> bool:
        return args.node in node.get_node_names() and bool(pubs())

    found = _spin_until(node, present, args.timeout)
    infos = [{
        "node_name": i.node_name, "node_namespace": i.node_namespace, "topic_type": i.topic_type,
        "type_hash": str(i.topic_type_hash), "reliability": int(i.qos_profile.reliability),
        "durability": int(i.qos_profile.durability), "history": int(i.qos_profile.history),
        "depth": int(i.qos_profile.depth),
    } for i in pubs()]
    print(json.dumps({"found": found, "nodes": node.get_node_names_and_namespaces(),
                      "topics": node.get_topic_names_and_types(), "publishers": infos}), flush=True)
    node.destroy_node()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("cmd")
    p.add_argument("--topic", default="/camera/image")
    p.add_argument("--topics", default="/robot/a,/robot/b/c")
    p.add_argument("--node", default="c_talker")
    p.add_argument("--service", default="/capi_srv")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--height", type=int, default=1024)
    p.add_argument("--period", type=float, default=0.1)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--linger", type=float, default=1.0)
    args = p.parse_args()
    {"image-listen": cmd_image_listen, "image-talk": cmd_image_talk, "ns-talk": cmd_ns_talk,
     "srv-serve": cmd_srv_serve, "srv-call": cmd_srv_call, "graph": cmd_graph}[args.cmd](args)


if __name__ == "__main__":
    main()
