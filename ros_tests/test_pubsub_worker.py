"""The process side of the pub/sub tests (test_pubsub.py): rclpy programs run with the venv's
python under rmw_tracer (LD_PRELOAD), one per OS process. Nothing here is collected by pytest:
ROS is imported only when run as a program.

    talk    --topic T --count N [--pre P] [--wait-subs K] [--tag X] [--pad B] [--qos ...]
            publish P messages at once, print "pre-done", wait until K subscriptions match,
            print "matched", publish N more ("<tag> <i>", i continuing after the P; with --pad,
            B bytes of "x" after the tag), then stay
            until no subscription is left (or --linger seconds pass)
    listen  --topic T --count N [--until U] [--subs K] [--expect-matched M] [--qos ...]
            K subscriptions, print "ready", collect until each has N messages (or --timeout;
            with --until, until each has "<tag> U" and every number 0..U is received or
            reported lost), (wait up to 5 s for M matched publishers), print one JSON line
            {"received": [[...], ...], "matched": [...], "lost": [[[total, change], ...], ...]}
            (the message_lost events of each subscription)
    selfpub --topic T --count N     one node publishing to itself
    intra   --topic T --count N     two nodes of one context: publisher in one, subscription
                                    in the other
    rt-talk / rt-listen             every test_msgs sample on /rt/<Type> (field-for-field test)
    big-talk / big-listen           --count N messages of --size bytes (std_msgs/UInt8MultiArray);
                                    big-talk --wait-subs 0 --hold S publishes first, then waits
                                    up to S s for a (late, transient-local) subscription
    mixed-types                     String and UInt8MultiArray publishers and subscriptions on one
                                    topic in one node
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import shm_maps


def _qos(args):
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    q = QoSProfile(depth=args.depth)
    q.reliability = ReliabilityPolicy.BEST_EFFORT if args.best_effort else ReliabilityPolicy.RELIABLE
    q.durability = DurabilityPolicy.TRANSIENT_LOCAL if args.transient else DurabilityPolicy.VOLATILE
    if args.keep_all:
        q.history = HistoryPolicy.KEEP_ALL
    return q


def _node(name: str):
    import rclpy
    from rclpy.node import Node

    if not rclpy.ok():
        rclpy.init()
    # An unchanged rclpy node: /rosout, /parameter_events, the parameter services and the type
    # description service come with it.
    return Node(name)


def _wait_for(pred, timeout: float, spin_node=None) -> bool:
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        if spin_node is not None:
            rclpy.spin_once(spin_node, timeout_sec=0.05)
        else:
            time.sleep(0.01)
    return pred()


def _linger(pub, seconds: float) -> None:
    # Stay until every subscription is gone: a listener that exits takes its edge with it.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and pub.get_subscription_count() > 0:
        time.sleep(0.05)


def cmd_talk(args) -> None:
    from std_msgs.msg import String

    node = _node(f"talker_{args.tag}")
    pub = node.create_publisher(String, args.topic, _qos(args))
    tag = args.tag + "x" * args.pad
    i = 0
    for _ in range(args.pre):
        pub.publish(String(data=f"{tag} {i}"))
        i += 1
    print("pre-done", flush=True)
    if not _wait_for(lambda: pub.get_subscription_count() >= args.wait_subs, args.timeout):
        print(f"only {pub.get_subscription_count()} of {args.wait_subs} subscriptions matched", flush=True)
        sys.exit(2)
    print("matched", flush=True)
    for _ in range(args.count):
        pub.publish(String(data=f"{tag} {i}"))
        i += 1
        if args.period:
            time.sleep(args.period)
    print("published", flush=True)
    if args.hold:
        # The publisher goes while the process stays: subscriptions learn it from its registry
        # record's retraction, not from a link that drops.
        _wait_for(lambda: False, 0.5)
        node.destroy_publisher(pub)
        print("destroyed", flush=True)
        time.sleep(args.hold)
    else:
        _linger(pub, args.linger)
    node.destroy_node()


def cmd_listen(args) -> None:
    from std_msgs.msg import String

    from rclpy.event_handler import SubscriptionEventCallbacks

    node = _node("listener")
    got: list[list[str]] = [[] for _ in range(args.subs)]
    # The message_lost events of each subscription: (total_count, total_count_change).
    lost: list[list[tuple[int, int]]] = [[] for _ in range(args.subs)]
    subs = [
        node.create_subscription(
            String, args.topic, lambda m, k=k: got[k].append(m.data), _qos(args),
            event_callbacks=SubscriptionEventCallbacks(
                message_lost=lambda e, k=k: lost[k].append((e.total_count, e.total_count_change))))
        for k in range(args.subs)
    ]
    print("ready", flush=True)

    def done(g: list[str]) -> bool:
        # --until: the message "<tag> <until>" came (what was lost before it is then known).
        if args.until is not None:
            return bool(g) and g[-1] == f"{args.tag} {args.until}"
        return len(g) >= args.count

    _wait_for(lambda: all(done(g) for g in got), args.timeout, spin_node=node)
    if args.until is not None:
        # The lost-message events may follow the sample that revealed the gap by a spin.
        _wait_for(lambda: all(len(g) + sum(c for _, c in l) >= args.until + 1
                              for g, l in zip(got, lost)), 5, spin_node=node)
    # A short grace period shows extra (duplicate) deliveries, which must not exist.
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        import rclpy

        rclpy.spin_once(node, timeout_sec=0.05)
    if args.expect_matched is not None:
        # Publishers that left are unmatched once their link is gone (within about a second).
        _wait_for(lambda: all(s.get_publisher_count() == args.expect_matched for s in subs), 5, spin_node=node)
    print(json.dumps({"received": got, "matched": [s.get_publisher_count() for s in subs],
                      "lost": lost}), flush=True)
    node.destroy_node()


def cmd_selfpub(args) -> None:
    from std_msgs.msg import String

    node = _node("self")
    got: list[str] = []
    node.create_subscription(String, args.topic, lambda m: got.append(m.data), _qos(args))
    pub = node.create_publisher(String, args.topic, _qos(args))
    matched = pub.get_subscription_count()
    for i in range(args.count):
        pub.publish(String(data=f"self {i}"))
    _wait_for(lambda: len(got) >= args.count, args.timeout, spin_node=node)
    print(json.dumps({"received": [got], "matched": [matched]}), flush=True)
    node.destroy_node()


def cmd_intra(args) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    a = _node("intra_pub")
    b = _node("intra_sub")
    got: list[str] = []
    sub = b.create_subscription(String, args.topic, lambda m: got.append(m.data), _qos(args))
    pub = a.create_publisher(String, args.topic, _qos(args))
    ex = SingleThreadedExecutor()
    ex.add_node(a)
    ex.add_node(b)
    matched = (pub.get_subscription_count(), sub.get_publisher_count())
    for i in range(args.count):
        pub.publish(String(data=f"intra {i}"))
    deadline = time.monotonic() + args.timeout
    while len(got) < args.count and time.monotonic() < deadline:
        ex.spin_once(timeout_sec=0.05)
    print(json.dumps({"received": [got], "matched": list(matched)}), flush=True)
    a.destroy_node()
    b.destroy_node()
    rclpy.shutdown()


def cmd_mixed_types(args) -> None:
    # One topic, two types in one process: a subscription only takes its own type.
    from std_msgs.msg import String, UInt8MultiArray

    node = _node("mixed")
    strings: list[str] = []
    arrays: list[bytes] = []
    node.create_subscription(String, args.topic, lambda m: strings.append(m.data), _qos(args))
    node.create_subscription(UInt8MultiArray, args.topic, lambda m: arrays.append(bytes(m.data)), _qos(args))
    pub_s = node.create_publisher(String, args.topic, _qos(args))
    pub_a = node.create_publisher(UInt8MultiArray, args.topic, _qos(args))
    for i in range(args.count):
        pub_s.publish(String(data=f"s {i}"))
        pub_a.publish(UInt8MultiArray(data=bytes([i % 256] * 3)))
    _wait_for(lambda: len(strings) >= args.count and len(arrays) >= args.count, args.timeout, spin_node=node)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        import rclpy

        rclpy.spin_once(node, timeout_sec=0.05)
    matched = [pub_s.get_subscription_count(), pub_a.get_subscription_count()]
    print(json.dumps({"strings": strings, "arrays": [a.hex() for a in arrays], "matched": matched}), flush=True)
    node.destroy_node()


def _rt_types():
    import test_cdr_worker

    return test_cdr_worker.TYPES


def _rt_samples(name: str):
    # The CDR tests' samples: every field non-default, three lengths, and the default message.
    import test_cdr_worker

    return [m for key, m in test_cdr_worker.samples().items() if key.split("/")[0] == name]


def _msg_class(name: str):
    import importlib

    return getattr(importlib.import_module("test_msgs.msg"), name)


def _differences(a, b, path="") -> list[str]:
    if hasattr(a, "get_fields_and_field_types") and type(a) is type(b):
        out = []
        for f in a.get_fields_and_field_types():
            out += _differences(getattr(a, f), getattr(b, f), f"{path}.{f}")
        return out
    if hasattr(a, "__len__") and not isinstance(a, (str, bytes)):
        la, lb = list(a), list(b)
        if len(la) != len(lb):
            return [f"{path}: length {len(la)} != {len(lb)}"]
        out = []
        for i, (x, y) in enumerate(zip(la, lb)):
            out += _differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def cmd_rt_talk(args) -> None:
    node = _node("rt_talker")
    pubs = {n: node.create_publisher(_msg_class(n), f"/rt/{n}", _qos(args)) for n in _rt_types()}
    if not _wait_for(lambda: all(p.get_subscription_count() >= 1 for p in pubs.values()), args.timeout):
        print("not every type matched: " + json.dumps({n: p.get_subscription_count() for n, p in pubs.items()}))
        sys.exit(2)
    print("matched", flush=True)
    for n, p in pubs.items():
        for m in _rt_samples(n):
            p.publish(m)
    print("published", flush=True)
    deadline = time.monotonic() + args.linger
    while time.monotonic() < deadline and any(p.get_subscription_count() > 0 for p in pubs.values()):
        time.sleep(0.05)
    node.destroy_node()


def cmd_rt_listen(args) -> None:
    node = _node("rt_listener")
    got: dict[str, list] = {n: [] for n in _rt_types()}
    for n in _rt_types():
        node.create_subscription(_msg_class(n), f"/rt/{n}", lambda m, n=n: got[n].append(m), _qos(args))
    print("ready", flush=True)
    want = {n: _rt_samples(n) for n in _rt_types()}
    _wait_for(lambda: all(len(got[n]) >= len(want[n]) for n in want), args.timeout, spin_node=node)
    report = {}
    for n, expected in want.items():
        if len(got[n]) != len(expected):
            report[n] = [f"received {len(got[n])} of {len(expected)}"]
            continue
        report[n] = []
        for e, g in zip(expected, got[n]):
            d = _differences(e, g)
            report[n].append("ok" if not d and e == g else "; ".join(d[:5]) or "__eq__ false")
    print(json.dumps({"report": report}), flush=True)
    node.destroy_node()


def _big_payload(i: int, size: int) -> bytes:
    # Not a constant fill: a shifted or truncated delivery changes the digest.
    seed = hashlib.sha256(str(i).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def cmd_big_talk(args) -> None:
    from std_msgs.msg import UInt8MultiArray

    node = _node("big_talker")
    pub = node.create_publisher(UInt8MultiArray, args.topic, _qos(args))
    if not _wait_for(lambda: pub.get_subscription_count() >= args.wait_subs, args.timeout):
        sys.exit(2)
    print("matched", flush=True)
    for i in range(args.count):
        m = UInt8MultiArray()
        m.data = _big_payload(i, args.size)
        pub.publish(m)
    print("published", flush=True)
    print(json.dumps({"shm_maps": shm_maps.permissions()}), flush=True)
    if args.hold:
        # A late subscription (transient local): wait for it before lingering.
        _wait_for(lambda: pub.get_subscription_count() > 0, args.hold)
    _linger(pub, args.linger)
    node.destroy_node()


def cmd_big_listen(args) -> None:
    from std_msgs.msg import UInt8MultiArray

    node = _node("big_listener")
    got: list[str] = []

    def on(m):
        data = bytes(m.data)
        got.append(f"{len(data)}:{hashlib.sha256(data).hexdigest()}")

    node.create_subscription(UInt8MultiArray, args.topic, on, _qos(args))
    print("ready", flush=True)
    _wait_for(lambda: len(got) >= args.count, args.timeout, spin_node=node)
    expected = [f"{args.size}:{hashlib.sha256(_big_payload(i, args.size)).hexdigest()}" for i in range(args.count)]
    print(json.dumps({"received": got, "expected": expected, "shm_maps": shm_maps.permissions()}), flush=True)
    node.destroy_node()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("cmd")
    p.add_argument("--topic", default="/chatter")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--until", type=int, default=None)
    p.add_argument("--pre", type=int, default=0)
    p.add_argument("--wait-subs", type=int, default=1)
    p.add_argument("--subs", type=int, default=1)
    p.add_argument("--tag", default="hello")
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--best-effort", action="store_true")
    p.add_argument("--transient", action="store_true")
    p.add_argument("--keep-all", action="store_true")
    p.add_argument("--period", type=float, default=0.0)
    p.add_argument("--size", type=int, default=4 * 1024 * 1024)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--linger", type=float, default=30.0)
    p.add_argument("--expect-matched", type=int, default=None)
    p.add_argument("--hold", type=float, default=0.0)
    args = p.parse_args()
    cmds = {
        "talk": cmd_talk, "listen": cmd_listen, "selfpub": cmd_selfpub, "intra": cmd_intra,
        "rt-talk": cmd_rt_talk, "rt-listen": cmd_rt_listen,
        "big-talk": cmd_big_talk, "big-listen": cmd_big_listen, "mixed-types": cmd_mixed_types,
    }
    cmds[args.cmd](args)
    import rclpy

    if rclpy.ok():
        rclpy.shutdown()


if __name__ == "__main__":
    main()
