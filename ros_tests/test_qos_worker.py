"""One rclpy publisher or subscription with a chosen QoS, recording every QoS event it gets
(test_qos.py runs two or more of these against each other, on rmw_tracer and on Fast DDS).

    test_qos_worker.py pub|sub [--reliability reliable|best_effort] [--durability volatile|transient_local]
        [--deadline-ms N] [--lease-ms N] [--liveliness automatic|manual] [--lifespan-ms N]
        [--depth N] [--type string|int32] [--topic T] [--count N] [--period-ms N]
        [--publish-for-s S] [--assert-ms N] [--assert-for-s S] [--duration-s S]
        [--wait-acked-ms N] [--default-handlers] [--stop-on EVENT] [--wait-match] [--stop-unmatched N]

A publisher publishes ``--count`` messages every ``--period-ms`` (all at once with 0; or
for ``--publish-for-s`` seconds), then, with ``--assert-ms``, asserts its liveliness that often for ``--assert-for-s``,
and spins until ``--duration-s`` has passed since it printed "ready". A subscription spins that
long and records what it takes. The result is one JSON line: received messages, every event
with its fields, the matched count and the actual QoS. Nothing here is collected by pytest:
ROS is imported only when run as a program.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def profile(a):
    from rclpy.duration import Duration
    from rclpy.qos import DurabilityPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy
    q = QoSProfile(depth=a.depth)
    q.reliability = {
        "reliable": ReliabilityPolicy.RELIABLE,
        "best_effort": ReliabilityPolicy.BEST_EFFORT,
    }[a.reliability]
    q.durability = {
        "volatile": DurabilityPolicy.VOLATILE,
        "transient_local": DurabilityPolicy.TRANSIENT_LOCAL,
    }[a.durability]
    q.liveliness = {
        "automatic": LivelinessPolicy.AUTOMATIC,
        "manual": LivelinessPolicy.MANUAL_BY_TOPIC,
    }[a.liveliness]
    if a.deadline_ms:
        q.deadline = Duration(nanoseconds=a.deadline_ms * 1_000_000)
    if a.lease_ms:
        q.liveliness_lease_duration = Duration(nanoseconds=a.lease_ms * 1_000_000)
    if a.lifespan_ms:
        q.lifespan = Duration(nanoseconds=a.lifespan_ms * 1_000_000)
    return q


def fields(ev) -> dict:
    out = {}
    for name in dir(ev):
        if name.startswith("_"):
            continue
        v = getattr(ev, name)
        if isinstance(v, (int, bool)):
            out[name] = int(v)
        elif isinstance(getattr(v, "value", None), int):
            out[name] = int(v.value)
    return out


def qos_dict(q) -> dict:
    def ns(d):
        return d.nanoseconds if hasattr(d, "nanoseconds") else int(d)
    return {
        "reliability": int(q.reliability),
        "durability": int(q.durability),
        "liveliness": int(q.liveliness),
        "deadline_ns": ns(q.deadline),
        "lifespan_ns": ns(q.lifespan),
        "lease_ns": ns(q.liveliness_lease_duration),
    }


def main() -> int:
    import rclpy
    from rclpy.duration import Duration
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Int32, String

    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["pub", "sub"])
    ap.add_argument("--topic", default="/qos_topic")
    ap.add_argument("--type", default="string", choices=["string", "int32"])
    ap.add_argument("--reliability", default="reliable")
    ap.add_argument("--durability", default="volatile")
    ap.add_argument("--liveliness", default="automatic")
    ap.add_argument("--deadline-ms", type=int, default=0)
    ap.add_argument("--lease-ms", type=int, default=0)
    ap.add_argument("--lifespan-ms", type=int, default=0)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--period-ms", type=int, default=50)
    ap.add_argument("--publish-for-s", type=float, default=0.0)
    ap.add_argument("--assert-ms", type=int, default=0)
    ap.add_argument("--assert-for-s", type=float, default=0.0)
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--wait-acked-ms", type=int, default=0)
    ap.add_argument("--default-handlers", action="store_true")
    ap.add_argument("--stop-on", default="", help="end 1 s after the first event of this name")
    ap.add_argument("--wait-match", action="store_true", help="publish only once matched (10 s at most)")
    ap.add_argument("--stop-unmatched", type=int, default=0, metavar="N",
                    help="end 0.5 s after a matched event that leaves no match, once N matched")
    a = ap.parse_args()

    rclpy.init()
    node = rclpy.create_node(f"qos_{a.role}")
    msg_type = String if a.type == "string" else Int32
    events: dict[str, list] = {}

    def record(name):
        def cb(ev):
            events.setdefault(name, []).append({"t": round(time.monotonic() - t0, 3), **fields(ev)})
        return cb

    received = []
    t0 = time.monotonic()
    if a.role == "pub":
        cbs = None if a.default_handlers else PublisherEventCallbacks(
            deadline=record("deadline"), liveliness=record("liveliness"),
            incompatible_qos=record("incompatible_qos"), incompatible_type=record("incompatible_type"),
            matched=record("matched"))
        endpoint = node.create_publisher(msg_type, a.topic, profile(a), event_callbacks=cbs)
    else:
        cbs = None if a.default_handlers else SubscriptionEventCallbacks(
            deadline=record("deadline"), liveliness=record("liveliness"),
            incompatible_qos=record("incompatible_qos"), incompatible_type=record("incompatible_type"),
            matched=record("matched"), message_lost=record("message_lost"))
        endpoint = node.create_subscription(
            msg_type, a.topic, lambda m: received.append(m.data), profile(a), event_callbacks=cbs)

    ex = SingleThreadedExecutor()
    ex.add_node(node)
    print("ready", flush=True)
    if a.wait_match:
        end = time.monotonic() + 10
        while endpoint.get_subscription_count() == 0 and time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
    t0 = time.monotonic()
    published = 0
    acked = None
    next_pub = t0
    next_assert = None

    def publishing(now) -> bool:
        if a.publish_for_s:
            return now - t0 < a.publish_for_s
        return published < a.count

    while time.monotonic() - t0 < a.duration_s:
        now = time.monotonic()
        unmatched = [e for e in events.get("matched", [])
                     if e["current_count"] == 0 and e["total_count"] >= a.stop_unmatched]
        if a.stop_unmatched and unmatched and now - t0 > unmatched[-1]["t"] + 0.5:
            break
        if a.stop_on and events.get(a.stop_on):
            if now - t0 > events[a.stop_on][0]["t"] + 1.0:
                break
        if a.role == "pub" and publishing(now) and now >= next_pub:
            # --period-ms 0: every message at once (a burst), else one per period.
            for _ in range(a.count - published if a.period_ms == 0 and a.count else 1):
                m = msg_type()
                m.data = f"m {published}" if a.type == "string" else published
                endpoint.publish(m)
                published += 1
            next_pub += a.period_ms / 1000
            if not publishing(now) and a.wait_acked_ms:
                acked = endpoint.wait_for_all_acked(Duration(nanoseconds=a.wait_acked_ms * 1_000_000))
        if a.role == "pub" and a.assert_ms and not publishing(now):
            if next_assert is None:
                next_assert = now
            if now >= next_assert and now - t0 < a.publish_for_s + a.assert_for_s:
                endpoint.assert_liveliness()
                next_assert += a.assert_ms / 1000
        ex.spin_once(timeout_sec=0.005)

    out = {
        "received": received,
        "published": published,
        "events": events,
        "acked": acked,
        "qos": qos_dict(endpoint.qos_profile),
    }
    if a.role == "pub":
        out["matched"] = endpoint.get_subscription_count()
        infos = node.get_publishers_info_by_topic(a.topic)
    else:
        out["matched"] = endpoint.get_publisher_count()
        infos = node.get_subscriptions_info_by_topic(a.topic)
    out["info_qos"] = [qos_dict(i.qos_profile) for i in infos if i.node_name == node.get_name()]
    print(json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
