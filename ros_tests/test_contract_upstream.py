"""What Jazzy's test_rmw_implementation (2.15.4) and rclpy's test_qos_event.py expect where
rmw_tracer answered otherwise (issue 28: 119 of 132 upstream tests passed, 10 failed; rclpy 492
of 494). c/contract_upstream.c makes the calls of the failing upstream tests, on rmw_tracer and
on Fast DDS (the oracle); this file holds the upstream expectations on rmw_tracer and lists every
answer that differs from Fast DDS with its reason (docs/entry-points.md, docs/content-filter.md).
The rclpy part runs the calls of test_qos_event.py's "take with nothing pending" on both.
"""

from __future__ import annotations

import json
from pathlib import Path

import harness
from worker_output import oracle_cases

HERE = Path(__file__).resolve().parent

OK, ERROR, TIMEOUT, INVALID, UNSUPPORTED = "rc=0 err=0", "rc=1 err=1", "rc=2 err=0", "rc=11 err=1", "rc=3 err=1"


def _taken(fields: str) -> str:
    """A take of an event: RMW_RET_OK, taken, and the status fields."""
    return f"rc=0:taken:1:{fields} err=0"


# What the upstream suite expects (the test and line that checks it), on rmw_tracer.
EXPECTED = {
    # Cause 3: test_wait_set.cpp:387, test_client.cpp:356-366, test_subscription.cpp:1135.
    "destroy wait set null": ERROR,
    "server is available null node": ERROR,
    "server is available null client": ERROR,
    "server is available null result": ERROR,
    "server is available": OK,
    "return loan null subscription": INVALID,
    "return loan null message": INVALID,
    "return loan never loaned": ERROR,
    # Cause 4: test_serialize_deserialize.cpp:69 (EXPECT_NE(RMW_RET_OK, ...)); rmw.h documents
    # OK, BAD_ALLOC and ERROR for rmw_serialize, and Fast DDS answers ERROR.
    "serialize": OK,
    "serialize bad identifier": ERROR,
    "deserialize bad identifier": ERROR,
    "serialize restored": OK,
    "deserialize restored": OK,
    # Cause 5: test_event.cpp:146 and :237 (taken, zeroed status), test_qos_event.py :270, :335.
    "event publication matched: take with nothing pending": _taken("0,0,0,0"),
    "event subscription matched: take with nothing pending": _taken("0,0,0,0"),
    "event offered deadline missed: take with nothing pending": _taken("0,0"),
    "event requested deadline missed: take with nothing pending": _taken("0,0"),
    "event liveliness lost: take with nothing pending": _taken("0,0"),
    "event liveliness changed: take with nothing pending": _taken("0,0,0,0"),
    # last_policy_kind RMW_QOS_POLICY_INVALID (1), as rclpy's QoSPolicyKind.INVALID.
    "event offered qos incompatible: take with nothing pending": _taken("0,0,1"),
    "event requested qos incompatible: take with nothing pending": _taken("0,0,1"),
    "event message lost: take with nothing pending": _taken("0,0"),
    "matched: before any subscription": _taken("0,0,0,0"),
    "matched: one subscription": _taken("1,1,1,1"),
    # A second take reports the status as it stands, with no change.
    "matched: nothing new": _taken("1,0,1,0"),
    "matched: subscription gone": _taken("1,0,0,-1"),
    "matched: nothing new after it": _taken("1,0,0,0"),
    # Cause 1: test_subscription.cpp:984 (no filter: ready), :1476 (content_filter_get_later:
    # a refused sample leaves rmw_wait to time out), :1622 (content_filter_reset).
    "no filter: wait": OK,
    "no filter: take": "rc=taken:3.14 err=0",
    "filter 3.14159: set": OK,
    "filter 3.14159: wait for 3.14": TIMEOUT,
    "filter 3.14159: take after 3.14": "rc=none err=0",
    "filter 3.14159: wait for five others": TIMEOUT,
    # Cause 2: test_subscription.cpp:1352 (content_filter_get_begin): "float32_value=%0" with
    # "3.14159" matches 3.14159f.
    "filter 3.14159: wait for 3.14159": OK,
    "filter 3.14159: take after 3.14159": "rc=taken:3.14159 err=0",
    "filter reset": OK,
    "after reset: wait": OK,
    "after reset: take": "rc=taken:3.14 err=0",
    "after reset: take again": "rc=none err=0",
}
# Kilted's suite expects what rmw.h says for the null wait set (rmw_implementation#234), and
# Kilted's Fast DDS (9.3) answers INVALID_ARGUMENT to all four: so does rmw_tracer built for
# Kilted (docs/entry-points.md, "Header and suite").
if harness.DISTRO != "jazzy":
    EXPECTED.update({k: INVALID for k in ("destroy wait set null", "server is available null node",
                                           "server is available null client",
                                           "server is available null result")})

# Where rmw_tracer answers otherwise than Fast DDS, and why.
DEVIATIONS = {
    # Fast DDS answers RMW_RET_UNSUPPORTED for every type (its rmw_get_serialized_message_size
    # is not built); rmw_tracer builds it and refuses a type support it cannot use, as
    # rmw_serialize does (docs/entry-points.md).
    "serialized size bad identifier": ERROR,
}


def test_upstream_rmw_expectations_match_fastdds(tmp_path, tracer_env, oracle_netns):
    exe = harness.compile_c(HERE / "c" / "contract_upstream.c", tmp_path / "contract_upstream",
                            msgs=("test_msgs",))
    r = harness.run([exe], tracer_env, timeout=90).check()
    ours = oracle_cases(r.stdout, r.describe())
    f = harness.run_oracle([exe], harness.fastdds_env(tmp_path), "\ndone\n", netns=oracle_netns,
                           timeout=90)
    theirs = oracle_cases(f.stdout, f.describe())
    assert ours.keys() == theirs.keys() and len(ours) >= 70, sorted(set(ours) ^ set(theirs))
    wrong = {k: (ours.get(k), v) for k, v in EXPECTED.items() if ours.get(k) != v}
    assert wrong == {}, "rmw_tracer (left) differs from test_rmw_implementation (right)"
    # The same upstream expectations hold on Fast DDS (the oracle is the suite's reference).
    assert {k: theirs[k] for k in EXPECTED} == EXPECTED
    differ = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
    undocumented = {k: v for k, v in differ.items() if DEVIATIONS.get(k) != v[0]}
    assert undocumented == {}, "rmw_tracer (left) differs from Fast DDS (right) without a reason"
    assert sorted(differ) == sorted(DEVIATIONS), sorted(set(DEVIATIONS) - set(differ))


# rclpy's test_qos_event.py (test_call_publisher_rclpy_event_apis,
# test_call_subscription_rclpy_event_apis): "Calling take data even though not ready should
# provide me an empty initialized message".
RCLPY_EVENTS = r"""
import json
import rclpy
from rclpy import event_handler
from rclpy.event_handler import QoSPublisherEventType as P, QoSSubscriptionEventType as S
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from test_msgs.msg import Empty

rclpy.init()
node = rclpy.create_node("upstream_events")
pub = node.create_publisher(Empty, "/upstream/rclpy_events", 10)
sub = node.create_subscription(Empty, "/upstream/rclpy_events_other", lambda m: None, 10)
out = {}
for parent, kinds in ((pub, (P.RCL_PUBLISHER_OFFERED_DEADLINE_MISSED,
                             P.RCL_PUBLISHER_LIVELINESS_LOST,
                             P.RCL_PUBLISHER_OFFERED_INCOMPATIBLE_QOS,
                             P.RCL_PUBLISHER_MATCHED)),
                      (sub, (S.RCL_SUBSCRIPTION_REQUESTED_DEADLINE_MISSED,
                             S.RCL_SUBSCRIPTION_LIVELINESS_CHANGED,
                             S.RCL_SUBSCRIPTION_REQUESTED_INCOMPATIBLE_QOS,
                             S.RCL_SUBSCRIPTION_MATCHED))):
    for kind in kinds:
        with parent.handle:
            handle = _rclpy.EventHandle(parent.handle, kind)
        with node.context.handle:
            ws = _rclpy.WaitSet(0, 0, 0, 0, 0, 1, node.context.handle)
        with handle:
            i = ws.add_event(handle)
        ws.wait(0)
        ready = ws.is_ready("event", i)
        with handle:
            data = handle.take_event()
        fields = None if data is None else {
            k: int(getattr(data, k)) for k in dir(data)
            if not k.startswith("_") and hasattr(getattr(data, k), "__index__")}
        # The classes of rclpy.event_handler named as in test_qos_event.py (aliases of _rclpy's).
        types = [n for n in dir(event_handler) if n.startswith("QoS") and n.endswith("Info")
                 and isinstance(data, getattr(event_handler, n))]
        out[kind.name] = {"ready": ready, "types": types, "fields": fields}
        handle.destroy_when_not_in_use()
print(json.dumps(out))
node.destroy_node()
rclpy.shutdown()
"""

RCLPY_WANT = {
    "RCL_PUBLISHER_OFFERED_DEADLINE_MISSED": ("QoSOfferedDeadlineMissedInfo",
                                              {"total_count": 0, "total_count_change": 0}),
    "RCL_PUBLISHER_LIVELINESS_LOST": ("QoSLivelinessLostInfo",
                                      {"total_count": 0, "total_count_change": 0}),
    "RCL_PUBLISHER_OFFERED_INCOMPATIBLE_QOS": ("QoSOfferedIncompatibleQoSInfo",
                                               {"total_count": 0, "total_count_change": 0,
                                                "last_policy_kind": 1}),
    "RCL_PUBLISHER_MATCHED": ("QoSPublisherMatchedInfo",
                              {"total_count": 0, "total_count_change": 0, "current_count": 0,
                               "current_count_change": 0}),
    "RCL_SUBSCRIPTION_REQUESTED_DEADLINE_MISSED": ("QoSRequestedDeadlineMissedInfo",
                                                   {"total_count": 0, "total_count_change": 0}),
    "RCL_SUBSCRIPTION_LIVELINESS_CHANGED": ("QoSLivelinessChangedInfo",
                                            {"alive_count": 0, "alive_count_change": 0,
                                             "not_alive_count": 0, "not_alive_count_change": 0}),
    "RCL_SUBSCRIPTION_REQUESTED_INCOMPATIBLE_QOS": ("QoSRequestedIncompatibleQoSInfo",
                                                    {"total_count": 0, "total_count_change": 0,
                                                     "last_policy_kind": 1}),
    "RCL_SUBSCRIPTION_MATCHED": ("QoSSubscriptionMatchedInfo",
                                 {"total_count": 0, "total_count_change": 0, "current_count": 0,
                                  "current_count_change": 0}),
}


def test_rclpy_take_event_with_nothing_pending(rmw):
    env, ns = rmw
    r = harness.spawn_python(RCLPY_EVENTS, env=env, netns=ns, timeout=60).join().check()
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(got) == set(RCLPY_WANT)
    for kind, (type_name, fields) in RCLPY_WANT.items():
        assert got[kind]["ready"] is False, kind  # nothing to wait for ...
        assert type_name in got[kind]["types"], (kind, got[kind])  # ... yet a take answers
        assert {k: got[kind]["fields"].get(k) for k in fields} == fields, (kind, got[kind])
