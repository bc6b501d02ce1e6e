"""No message is too big (issue 33). A user's 80 MB UInt8MultiArray never arrived and nothing
said so: the wire's 64 MiB frame bound was taken for a bound on messages. A message larger than
one frame now goes in parts (DELIVERY_PART, docs/wire.md "Messages of any size") on every
link. rclpy, reliable, in separate processes: 100 MB and 300 MB messages arrive whole, their
content checked byte for byte, on one host and across two hosts (network namespaces, QUIC); a
KEEP_LAST(1) subscriber of a stream of them ends with the newest, and the link stays up for
the small messages that follow. On one host both go as references into the publisher's shared
memory: the 100 MB message in a slot of its pool (the largest slot is a quarter of the pool:
128 MiB), the 300 MB one in a segment made for it alone, which the listener unmaps once the
publisher retires it (RETIRE, docs/wire.md). The same through libtracer's C API (``ros_tests/c/capi_big.c``,
the C subscriber taking each as a view, no copy): C to rclpy and rclpy to C on one host, C to
C across two hosts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
from test_capi import HERE, capi_env, compile_capi
from two_hosts import hosts, tracer_envs  # noqa: F401  (hosts: fixture)

MB = 1_000_000

# Message `seed` of `n` bytes: byte k is (seed + k) % 251, so a chunk out of place, doubled or
# missing shows (251 is prime to every power of two a chunk size could be).
PATTERN = r"""
def pattern(seed, n):
    one = bytes((seed + k) % 251 for k in range(251))
    return (one * (n // 251 + 1))[:n]
"""

# HERE: where shm_maps.py is (the script runs with -c).
LISTENER = f"HERE = {str(HERE)!r}\n" + PATTERN + r"""
import sys
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt8MultiArray
sys.path.insert(0, HERE)  # for shm_maps
import shm_maps

depth, want, last = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
# How long the first big message's callback waits for the next one to be mapped here in a
# segment above the largest pool slot (128 MiB): the next one sits in the subscription, not yet
# taken, while this callback runs. 0: not looked for.
wait_alone = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
rclpy.init()
node = rclpy.create_node("big_listener")
qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
small = 0
newest = 0

def mapped():
    return [size for perms, size in shm_maps.segments() if perms == "r--s"]

def heard(m):
    global small, newest
    data = bytes(m.data)
    if len(data) == 1000:
        small += 1
        return
    seed = newest = data[0]
    if seed == 1 and wait_alone:
        end = time.monotonic() + wait_alone
        while time.monotonic() < end and not [s for s in mapped() if s > 128 << 20]:
            time.sleep(0.01)
        print(f"alone segment {max((s for s in mapped() if s > 128 << 20), default=0)}", flush=True)
    intact = data == pattern(seed, len(data))
    print(f"heard {len(data)} seed={seed} intact={intact}", flush=True)

node.create_subscription(UInt8MultiArray, "/big", heard, qos)
print("listening", flush=True)
end = time.monotonic() + 120
# Until `want` small messages came after the big ones, or (want 0) the last big one came.
while time.monotonic() < end and (small < want if want else newest != last):
    rclpy.spin_once(node, timeout_sec=0.2)
print(f"small {small}", flush=True)
# The largest of the publishers' shared-memory segments mapped here now (read-only, "r--s"):
# a pool slot stays mapped, a segment made for one message goes once it is retired.
print(f"largest segment {max(mapped(), default=0)}", flush=True)
"""

TALKER = PATTERN + r"""
import sys
import time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt8MultiArray

sizes = [int(s) for s in sys.argv[1].split(",")]
smalls = int(sys.argv[2])
rclpy.init()
node = rclpy.create_node("big_talker")
qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
pub = node.create_publisher(UInt8MultiArray, "/big", qos)
end = time.monotonic() + 30
while pub.get_subscription_count() < 1 and time.monotonic() < end:
    time.sleep(0.05)
print("matched", pub.get_subscription_count(), flush=True)
for seed, n in enumerate(sizes, start=1):
    msg = UInt8MultiArray()
    msg.data = pattern(seed, n)
    pub.publish(msg)
    print(f"published {n} seed={seed}", flush=True)
small = UInt8MultiArray()
small.data = bytes([0]) * 1000
for _ in range(smalls):
    pub.publish(small)
    time.sleep(0.05)
print("small published", flush=True)
# Alive until the test ends it: what the links still hold goes out.
time.sleep(120)
"""


def run(envs, nets, sizes: list[int], depth: int, procs, smalls: int,
        wait_alone: float = 0) -> tuple[list[tuple[int, int, bool]], int, str]:
    """Talker on nets[0] publishes `sizes` (seeds 1, 2, ...) then `smalls` small messages; the
    listener on nets[1] with KEEP_LAST(`depth`) returns what it heard, (size, seed, intact),
    once every small message came after the big ones (no small ones: once the last big one
    came), the size of the largest shared-memory segment of the talker it has mapped at the end
    (0: none), and its output."""
    listener = harness.spawn_python(LISTENER, [str(depth), str(smalls), str(len(sizes)),
                                               str(wait_alone)],
                                    env=envs[1], netns=nets[1],
                                    timeout=150)
    procs.append(listener)
    assert listener.wait_for_output("listening", timeout=30), listener.join(timeout=0).describe()
    talker = harness.spawn_python(TALKER, [",".join(map(str, sizes)), str(smalls)], env=envs[0], netns=nets[0],
                                  timeout=150)
    procs.append(talker)
    r = listener.join(150)
    talker.kill()
    t = talker.join(10)
    assert "matched 1" in t.stdout, t.describe()
    for seed, n in enumerate(sizes, start=1):
        assert f"published {n} seed={seed}" in t.stdout, t.describe()
    # The link stayed up: the small messages after the big ones arrived.
    assert f"small {smalls}" in r.stdout, (r.describe(), t.describe())
    heard = [(int(n), int(s), ok == "True")
             for n, s, ok in re.findall(r"^heard (\d+) seed=(\d+) intact=(\w+)$", r.stdout, re.M)]
    segment = re.search(r"^largest segment (\d+)$", r.stdout, re.M)
    assert segment, r.describe()
    return heard, int(segment.group(1)), r.stdout


def test_100_mb_and_300_mb_messages_arrive_whole_on_one_host(tmp_path, procs):
    env = harness.tracer_env(tmp_path)
    heard, segment, out = run([env, env], [None, None], [100 * MB, 300 * MB], 50, procs,
                              smalls=20, wait_alone=60)
    assert heard == [(100 * MB, 1, True), (300 * MB, 2, True)]
    # The 300 MB message, above the largest slot, came as a reference into a segment made for
    # it alone (whole pages), mapped while it waited to be taken...
    alone = re.search(r"^alone segment (\d+)$", out, re.M)
    assert alone and int(alone.group(1)) == -(-300 * MB // 4096) * 4096, out
    # ...and retired once taken: what is still mapped at the end is the 128 MiB slot of the
    # talker's pool that the 100 MB one came in (the largest slot: a quarter of its 512 MiB).
    assert segment == 128 << 20, f"largest shared-memory segment mapped: {segment}"


def test_a_keep_last_1_subscriber_of_a_stream_of_big_messages_ends_with_the_newest(tmp_path, procs):
    env = harness.tracer_env(tmp_path)
    sizes = [100 * MB] * 4
    # No small messages after them: the newest is the last big one, which must be the last heard
    # (the older ones may be replaced while the listener checks one).
    heard, _, _ = run([env, env], [None, None], sizes, 1, procs, smalls=0)
    assert heard and all(ok for _, _, ok in heard), heard
    assert heard[-1] == (100 * MB, 4, True), heard
    seeds = [s for _, s, _ in heard]
    assert seeds == sorted(set(seeds)), f"in order, none twice: {seeds}"


def test_100_mb_and_300_mb_messages_arrive_whole_across_hosts(tmp_path, hosts, procs):
    envs = tracer_envs(tmp_path)
    heard, segment, _ = run([envs["a"], envs["b"]], [hosts.host("a"), hosts.host("b")],
                            [100 * MB, 300 * MB], 50, procs, smalls=20)
    assert heard == [(100 * MB, 1, True), (300 * MB, 2, True)]
    assert segment == 0, "no shared memory across hosts"


@pytest.fixture(scope="module")
def big_program(tmp_path_factory) -> Path:
    return compile_capi(HERE / "c" / "capi_big.c", tmp_path_factory.mktemp("capi_big") / "capi_big")


def heard_in(out: str) -> list[tuple[int, int, bool]]:
    return [(int(n), int(s), ok == "True")
            for n, s, ok in re.findall(r"^heard (\d+) seed=(\d+) intact=(\w+)$", out, re.M)]


def c_to(listener: harness.Proc, program: Path, env, net, procs) -> harness.Result:
    """The C publisher on `net` sends 100 MB then 300 MB to `listener` (started, listening);
    the listener's result once it has them."""
    assert listener.wait_for_output("listening", timeout=30), listener.join(timeout=0).describe()
    pub = harness.spawn([program, "pub", "/big", f"{100 * MB},{300 * MB}"], capi_env(env),
                        netns=net, timeout=200)
    procs.append(pub)
    r = listener.join(150)
    p = pub.join(60)
    assert p.returncode == 0, p.describe()
    assert f"published {300 * MB} seed=2" in p.stdout, p.describe()
    return r


def test_100_mb_and_300_mb_messages_through_the_c_api_on_one_host(tmp_path, procs, big_program):
    env = harness.tracer_env(tmp_path)
    # C to rclpy: the listener checks every byte, until the second (last) big one.
    listener = harness.spawn_python(LISTENER, ["50", "0", "2"], env=env, timeout=150)
    procs.append(listener)
    r = c_to(listener, big_program, env, None, procs)
    assert heard_in(r.stdout) == [(100 * MB, 1, True), (300 * MB, 2, True)], r.describe()
    # rclpy to C: the C subscriber takes each as a view and checks every byte.
    sub = harness.spawn([big_program, "sub", "/big", "2", "120"], capi_env(env), timeout=150)
    procs.append(sub)
    assert sub.wait_for_output("listening", timeout=30), sub.join(timeout=0).describe()
    talker = harness.spawn_python(TALKER, [f"{100 * MB},{300 * MB}", "0"], env=env, timeout=150)
    procs.append(talker)
    r = sub.join(150)
    talker.kill()
    assert r.returncode == 0, r.describe()
    assert heard_in(r.stdout) == [(100 * MB, 1, True), (300 * MB, 2, True)], r.describe()


def test_100_mb_and_300_mb_messages_from_c_to_c_across_hosts(tmp_path, hosts, procs, big_program):
    envs = tracer_envs(tmp_path)
    sub = harness.spawn([big_program, "sub", "/big", "2", "120"], capi_env(envs["b"]),
                        netns=hosts.host("b"), timeout=150)
    procs.append(sub)
    r = c_to(sub, big_program, envs["a"], hosts.host("a"), procs)
    assert r.returncode == 0, r.describe()
    assert heard_in(r.stdout) == [(100 * MB, 1, True), (300 * MB, 2, True)], r.describe()
