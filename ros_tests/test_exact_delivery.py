"""A ROS subscription receives its topic and nothing else (issue 26), in real processes.

image_transport's layout: one node publishes ``/camera/image`` and, right after each image,
larger frames on ``/camera/image/compressed``; another subscribes to ``/camera/image`` with
KEEP_LAST(1), reliable. Before exact edges every compressed frame landed in the image
subscription's ring, evicted the image there and counted as lost, and crossed the link to the
subscriber. Now: 100 of 100, no message-lost event, and the subscriber's links carry the images
only (one host: what its process receives on its sockets, counted with strace; across hosts:
the bytes received on host b's interface), where the nested topic streams 50 MB. Fast DDS runs
the same programs as the oracle. Then a topic whose node has a writer the subscription must not
match beside one it does (another type; an incompatible QoS): the subscriber gets the matching
writer's messages only, and the other writer's bytes never reach it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import harness
from two_hosts import hosts, tracer_envs  # noqa: F401  (hosts: fixture)
from worker_output import json_line

WORKER = Path(__file__).resolve().parent / "exact_worker.py"

IMAGES = 100
NESTED_PER_IMAGE = 10
NESTED_BYTES = 50_000
# What the nested topic streams in one run: 50 MB.
NESTED_TOTAL = IMAGES * NESTED_PER_IMAGE * NESTED_BYTES
# What may reach the subscriber besides: its images with their frames, the endpoint
# registry, liveness. Well below what a writer it must not hear sends (5 MB and more).
OTHER_BYTES = 1_000_000
# Every sample through the sockets (no shared memory), so that counting socket reads counts them.
NO_SHM = {"TRACER_SHM": "off", "RMW_TRACER_SHM_THRESHOLD": "off"}


def spawn(procs, env, ns, *args: str, trace: Path | None = None) -> harness.Proc:
    """The worker; with ``trace``, under strace writing its recvmsg calls there."""
    argv = [str(harness.venv_python()), str(WORKER), *args]
    if trace is not None:
        argv = ["strace", "-f", "-qq", "-e", "trace=recvmsg", "-e", "signal=none", "-o",
                str(trace), *argv]
    p = harness.spawn(argv, env, netns=ns, timeout=120)
    procs.append(p)
    return p


def received_on_sockets(trace: Path) -> int:
    """Bytes the traced process received with recvmsg: its Unix-socket links (``rchar`` in
    ``/proc/<pid>/io`` does not count socket reads)."""
    total = 0
    for line in trace.read_text().splitlines():
        m = re.search(r"recvmsg\(.*\) = (\d+)$", line)
        if m:
            total += int(m.group(1))
    return total


def rx_bytes(ns: str) -> int:
    """Bytes received on every interface of namespace ``ns`` but loopback."""
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show"], check=True,
                         capture_output=True, text=True, timeout=20).stdout
    return sum(i["stats64"]["rx"]["bytes"] for i in json.loads(out) if i["ifname"] != "lo")


def camera_run(procs, env_sub, ns_sub, env_cam, ns_cam, trace: Path | None = None) -> dict:
    sub = spawn(procs, env_sub, ns_sub, "sub", "--topic", "/camera/image", "--count", str(IMAGES),
                "--timeout", "60", trace=trace)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    cam = spawn(procs, env_cam, ns_cam, "cam", "--topic", "/camera/image", "--images",
                str(IMAGES), "--nested-per-image", str(NESTED_PER_IMAGE), "--nested-bytes",
                str(NESTED_BYTES), "--period-ms", "50")
    r = sub.join(90)
    c = cam.join(90)
    assert c.returncode == 0, c.describe()
    assert r.returncode == 0, r.describe()
    got = json_line(r.stdout, r.describe())
    assert got["received"] == [i % 256 for i in range(IMAGES)], got["received"]
    assert got["lost"] == 0
    return got


def test_image_transport_layout_one_host(rmw, procs):
    env, ns = rmw
    camera_run(procs, env, ns, env, ns)


def test_nothing_of_a_nested_topic_reaches_the_subscriber_one_host(tracer_env, procs, tmp_path):
    trace = tmp_path / "sub.strace"
    camera_run(procs, {**tracer_env, **NO_SHM}, None, {**tracer_env, **NO_SHM}, None, trace)
    received = received_on_sockets(trace)
    assert received < OTHER_BYTES, f"the subscriber received {received} B; nested {NESTED_TOTAL}"


def test_image_transport_layout_across_hosts(tmp_path, hosts, procs):
    envs = tracer_envs(tmp_path)
    before = rx_bytes(hosts.ns["b"])
    camera_run(procs, envs["b"], hosts.host("b"), envs["a"], hosts.host("a"))
    received = rx_bytes(hosts.ns["b"]) - before
    assert received < OTHER_BYTES, f"host b received {received} B; nested {NESTED_TOTAL}"


MIXED = 100
OTHER_MSG_BYTES = 50_000


def mixed_run(procs, env_sub, ns_sub, env_pub, ns_pub, other: str,
              trace: Path | None = None) -> dict:
    sub = spawn(procs, env_sub, ns_sub, "sub", "--topic", "/mix", "--type", "string", "--depth",
                "1000", "--count", str(MIXED), "--timeout", "60", trace=trace)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    pub = spawn(procs, env_pub, ns_pub, "mixed", "--topic", "/mix", "--count", str(MIXED),
                "--period-ms", "20", "--other", other, "--other-bytes", str(OTHER_MSG_BYTES))
    r = sub.join(90)
    p = pub.join(90)
    assert p.returncode == 0, p.describe()
    assert r.returncode == 0, r.describe()
    got = json_line(r.stdout, r.describe())
    assert got["received"] == [f"good {i}" for i in range(MIXED)], got["received"]
    if other == "qos":
        # The incompatible writer is reported as DDS reports it; only its data stays away.
        assert got["incompatible_qos"] >= 1, got
    return got


@pytest.mark.parametrize("other", ["type", "qos"])
def test_a_writer_the_subscription_does_not_match_sends_it_nothing(tracer_env, procs, tmp_path,
                                                                   other):
    # One process publishes /mix as std_msgs/String (reliable) and, beside it, 5 MB from a writer
    # of another type or a best-effort one; a reliable String subscription in another process
    # gets the matching writer's messages, and its link carries nothing of the other's (before:
    # every one crossed and was dropped at take).
    env = {**tracer_env, **NO_SHM}
    trace = tmp_path / "sub.strace"
    mixed_run(procs, env, None, env, None, other, trace)
    received = received_on_sockets(trace)
    assert received < OTHER_BYTES, f"the subscriber received {received} B"


@pytest.mark.parametrize("other", ["type", "qos"])
def test_a_writer_the_subscription_does_not_match_sends_nothing_across_hosts(
        tmp_path, hosts, procs, other):
    envs = tracer_envs(tmp_path)
    before = rx_bytes(hosts.ns["b"])
    mixed_run(procs, envs["b"], hosts.host("b"), envs["a"], hosts.host("a"), other)
    received = rx_bytes(hosts.ns["b"]) - before
    assert received < OTHER_BYTES, f"host b received {received} B"
