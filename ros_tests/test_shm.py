"""Shared-memory payloads between ROS processes of one host (issue 8, step 1; docs/wire.md,
SHM_DELIVERY; docs/rmw-mapping.md, "Shared memory").

Large messages (from RMW_TRACER_SHM_THRESHOLD, 64 KiB by default) are serialized into the
publisher's pool and reach subscribers of other processes as references: each subscriber maps
the publisher's segments read-only ("r--s" in /proc/<pid>/maps), the publisher maps its own
read-write. Contents are checked by digest (test_pubsub_worker.py big-talk / big-listen).
"""

from __future__ import annotations

from pathlib import Path

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent
WORKER = HERE / "test_pubsub_worker.py"


def worker(cmd: str, env, *args: str) -> harness.Proc:
    return harness.spawn_python(WORKER, [cmd, *args], env=env, timeout=90)


def listen(env, size: int, count: int) -> harness.Proc:
    p = worker("big-listen", env, "--topic", "/shm", "--count", str(count), "--depth", str(count),
               "--size", str(size))
    assert p.wait_for_output("ready", timeout=30), p.join(1).describe()
    return p


def talk(env, size: int, count: int, subs: int) -> harness.Proc:
    return worker("big-talk", env, "--topic", "/shm", "--count", str(count), "--depth", str(count),
                  "--size", str(size), "--wait-subs", str(subs))


def finish(p: harness.Proc) -> dict:
    r = p.join()
    assert r.returncode == 0, r.describe()
    return json_line(r.stdout, r.describe())


def test_large_messages_reach_two_processes_through_shared_memory(tracer_env):
    listeners = [listen(tracer_env, 1 << 20, 20) for _ in range(2)]
    talker = talk(tracer_env, 1 << 20, 20, subs=2)
    for got in map(finish, listeners):
        assert got["received"] == got["expected"]
        assert got["shm_maps"] == ["r--s"], "the publisher's segments, mapped read-only"
    assert finish(talker)["shm_maps"] == ["rw-s"], "its own pool"


def test_a_subscriber_that_cannot_map_gets_copies(tracer_env):
    # TRACER_SHM=off stands for a process without memfd: it says so in HELLO and is sent the
    # bytes, while the subscriber beside it still gets references.
    no_shm = dict(tracer_env, TRACER_SHM="off")
    copies = listen(no_shm, 200_000, 10)
    refs = listen(tracer_env, 200_000, 10)
    talker = talk(tracer_env, 200_000, 10, subs=2)
    got_copies, got_refs = finish(copies), finish(refs)
    assert got_copies["received"] == got_copies["expected"]
    assert got_copies["shm_maps"] == []
    assert got_refs["received"] == got_refs["expected"]
    assert got_refs["shm_maps"] == ["r--s"]
    finish(talker)


def test_small_messages_and_a_disabled_pool_stay_off_shared_memory(tracer_env):
    # Below the threshold: ordinary frames. RMW_TRACER_SHM_THRESHOLD=0: the publisher has no pool.
    for env, size in ((tracer_env, 1000), (dict(tracer_env, RMW_TRACER_SHM_THRESHOLD="0"), 1 << 20)):
        listener = listen(env, size, 5)
        talker = talk(env, size, 5, subs=1)
        got = finish(listener)
        assert got["received"] == got["expected"]
        assert got["shm_maps"] == []
        assert finish(talker)["shm_maps"] == []


def _recorded_digests(path: Path) -> list[str]:
    """The UInt8MultiArray messages of an MCAP file, decoded by mcap-ros2-support, as the
    "<len>:<sha256>" digests big-listen reports."""
    import hashlib

    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
        return [f"{len(bytes(m.data))}:{hashlib.sha256(bytes(m.data)).hexdigest()}"
                for _s, _c, _m, m in r.iter_decoded_messages(topics=["/shm"])]


def test_shared_memory_samples_are_recorded_like_any_other(tracer_env, tmp_path):
    # RMW_TRACER_RECORD in both processes: the publisher records its pool slots, the subscriber
    # the views of them it was sent; both files hold the exact messages.
    pub_file, sub_file = tmp_path / "pub.mcap", tmp_path / "sub.mcap"
    listener = listen(dict(tracer_env, RMW_TRACER_RECORD=str(sub_file), RMW_TRACER_RECORD_TOPICS="/shm"),
                      300_000, 8)
    talker = talk(dict(tracer_env, RMW_TRACER_RECORD=str(pub_file), RMW_TRACER_RECORD_TOPICS="/shm"),
                  300_000, 8, subs=1)
    got = finish(listener)
    assert got["received"] == got["expected"]
    assert got["shm_maps"] == ["r--s"]
    finish(talker)
    assert _recorded_digests(sub_file) == got["expected"]
    assert _recorded_digests(pub_file) == got["expected"]
