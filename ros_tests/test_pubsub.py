"""Publishers and subscriptions over rmw_tracer between real ROS processes (issue 3, R1 and
item 6, "Many peers"; the mapping is docs/rmw-mapping.md).

Every process runs on rmw_tracer (LD_PRELOAD) with the test's private rendezvous directory and
domain id. The rclpy side is test_pubsub_worker.py, the rcl side ros_tests/c/pubsub_rcl.c.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent
WORKER = HERE / "test_pubsub_worker.py"


def worker(cmd: str, env, *args: str, timeout: float = 60) -> harness.Proc:
    return harness.spawn_python(WORKER, [cmd, *args], env=env, timeout=timeout)


def started(p: harness.Proc, text: str = "ready") -> harness.Proc:
    assert p.wait_for_output(text, timeout=30), p.join(1).describe()
    return p


def result(p: harness.Proc) -> dict:
    r = p.join()
    assert r.returncode == 0, r.describe()
    return json_line(r.stdout, r.describe())


def ok(p: harness.Proc) -> harness.Result:
    return p.join().check()


@pytest.fixture(scope="module")
def c_program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("c") / "pubsub_rcl"
    return harness.compile_c(HERE / "c" / "pubsub_rcl.c", out, msgs=("std_msgs",))


def test_rclpy_talker_listener_100_strings_in_order(tracer_env):
    # Issue 3: "rclpy talker and listener in two processes: 100 std_msgs/String messages, all
    # received, in order, with reliable QoS" (the talker waits for the match).
    listener = started(worker("listen", tracer_env, "--count", "100"))
    talker = worker("talk", tracer_env, "--count", "100")
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(100)]]
    assert got["matched"] == [1]


def test_rcl_c_talker_listener(tracer_env, c_program):
    # Issue 3: "the same with rcl from a small C program".
    sub = harness.spawn([c_program, "sub", "/c_chatter", "100"], tracer_env, timeout=60)
    assert sub.wait_for_output("ready", 30)
    pub = harness.spawn([c_program, "pub", "/c_chatter", "100"], tracer_env, timeout=60)
    rs = sub.join().check()
    pub.join().check()
    assert [line[5:] for line in rs.stdout.splitlines() if line.startswith("msg: ")] == [
        f"c {i}" for i in range(100)
    ]


def test_c_publisher_to_rclpy_subscriber(tracer_env, c_program):
    # Issue 3: "C publisher to rclpy subscriber".
    listener = started(worker("listen", tracer_env, "--topic", "/mixed", "--count", "100"))
    pub = harness.spawn([c_program, "pub", "/mixed", "100"], tracer_env, timeout=60)
    got = result(listener)
    pub.join().check()
    assert got["received"] == [[f"c {i}" for i in range(100)]]


def test_rcl_message_info_intra_process(tracer_env, c_program):
    # R1 take_with_info: publisher gid, publication sequence numbers 1..n, source and received
    # timestamps, from_intra_process, and a take on an empty ring (issue 3 item 4).
    r = harness.run([c_program, "intra", "/info", "50"], tracer_env, timeout=60).check()
    assert "intra ok 50" in r.stdout


def test_every_test_msgs_type_round_trips_field_for_field(tracer_env):
    # Issue 3: "Every test_msgs type round-trips between two processes, field for field".
    listener = started(worker("rt-listen", tracer_env))
    talker = worker("rt-talk", tracer_env)
    report = result(listener)["report"]
    ok(talker)
    assert len(report) == 13
    bad = {t: r for t, r in report.items() if r != ["ok"] * len(r) or not r}
    assert bad == {}


def test_many_peers_two_publishing_processes_three_subscribers(tracer_env):
    # Issue 3 item 6: several publishers on one topic in several processes, many subscriptions
    # (two in one process, one in another): each gets every message once, in order per publisher.
    l1 = started(worker("listen", tracer_env, "--topic", "/many", "--count", "100", "--subs", "2"))
    l2 = started(worker("listen", tracer_env, "--topic", "/many", "--count", "100"))
    talkers = [
        worker("talk", tracer_env, "--topic", "/many", "--count", "50", "--wait-subs", "3", "--tag", tag)
        for tag in ("a", "b")
    ]
    received = result(l1)["received"] + result(l2)["received"]
    for t in talkers:
        ok(t)
    assert len(received) == 3
    for got in received:
        assert len(got) == 100, got
        for tag in ("a", "b"):
            assert [m for m in got if m.startswith(tag + " ")] == [f"{tag} {i}" for i in range(50)]


def test_late_joiner_volatile_gets_only_new_messages(tracer_env):
    # Issue 3 item 6, late joiners: a volatile subscription that joins after 10 publications
    # receives what is published after it matched, and nothing of before.
    talker = worker("talk", tracer_env, "--topic", "/late", "--pre", "10", "--count", "10")
    started(talker, "pre-done")
    listener = started(worker("listen", tracer_env, "--topic", "/late", "--count", "10"))
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(10, 20)]]


def test_late_joiner_transient_local_gets_the_retained_history_first(tracer_env):
    # Durability TRANSIENT_LOCAL (docs/rmw-mapping.md): the publisher's topic stream retains its
    # last `depth` samples and a transient-local subscription is replayed them before live data.
    talker = worker("talk", tracer_env, "--topic", "/latched", "--pre", "10", "--count", "5",
                    "--transient", "--depth", "4")
    started(talker, "pre-done")
    listener = started(worker("listen", tracer_env, "--topic", "/latched", "--count", "9",
                              "--transient", "--depth", "100"))
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(6, 15)]]


def test_node_publishing_to_itself(tracer_env):
    # Issue 3 item 6: "a node publishing to itself".
    got = result(worker("selfpub", tracer_env, "--topic", "/self", "--count", "100"))
    assert got["matched"] == [1]
    assert got["received"] == [[f"self {i}" for i in range(100)]]


def test_intra_process_between_two_nodes_of_one_context(tracer_env):
    # Issue 3 item 6: "publisher and subscriber in one process (intra-process through the same
    # graph)".
    got = result(worker("intra", tracer_env, "--topic", "/intra", "--count", "100"))
    assert got["matched"] == [1, 1]
    assert got["received"] == [[f"intra {i}" for i in range(100)]]


def test_4_mib_messages_between_processes(tracer_env):
    # Issue 3 item 6: "Messages of 4 MiB work" (content checked by digest, 5 in a row).
    listener = started(worker("big-listen", tracer_env, "--topic", "/big", "--count", "5", "--depth", "5"))
    talker = worker("big-talk", tracer_env, "--topic", "/big", "--count", "5", "--depth", "5")
    got = result(listener)
    ok(talker)
    assert got["received"] == got["expected"]


def test_publisher_processes_come_and_go(tracer_env):
    # Issue 3 item 6 (late joiners, several publishing processes): a subscription outlives two
    # publisher processes in turn, each of which exits right after publishing; it gets every
    # message of both, and no publisher is matched once they are gone (their registry records
    # leave with their link).
    listener = started(worker("listen", tracer_env, "--topic", "/turns", "--count", "20", "--expect-matched", "0"))
    for tag in ("a", "b"):
        ok(worker("talk", tracer_env, "--topic", "/turns", "--count", "10", "--tag", tag, "--linger", "0"))
    got = result(listener)
    assert got["received"] == [[f"a {i}" for i in range(10)] + [f"b {i}" for i in range(10)]]
    assert got["matched"] == [0]


def test_a_subscription_takes_only_its_own_type(tracer_env):
    # Type matching (docs/rmw-mapping.md, "Subscriptions"): two types on one topic in one process
    # share the topic vertex, but each subscription takes only its type's messages, as DDS
    # matches by type, and a wrong-type sample is neither an error nor garbage.
    got = result(worker("mixed-types", tracer_env, "--topic", "/mixed_types", "--count", "20"))
    assert got["strings"] == [f"s {i}" for i in range(20)]
    assert got["arrays"] == [bytes([i] * 3).hex() for i in range(20)]
    # Each publisher is matched with the one subscription of its type only.
    assert got["matched"] == [1, 1]


def test_a_publisher_outlives_subscribers_that_leave_mid_stream(tracer_env, c_program, tmp_path):
    # Many peers, late joiners: subscriber processes join a C publisher that streams (one message
    # a millisecond) and leave while it writes. The publisher must neither fail nor die; a C
    # program has no SIGPIPE handler (CPython ignores SIGPIPE, a C or C++ node does not), so a
    # write into a link whose peer is gone must not raise it. The publisher streams until the
    # test has had its three listeners (a loaded machine starts rclpy slowly), at most 90 s.
    stop = tmp_path / "stop"
    pub = harness.spawn([c_program, "stream", "/stream", "90", stop], tracer_env, timeout=120)
    try:
        assert pub.wait_for_output("streaming", 30)
        for _ in range(3):
            listener = started(worker("listen", tracer_env, "--topic", "/stream", "--count", "50",
                                      "--best-effort", "--depth", "10"))
            got = result(listener)["received"][0]
            assert len(got) >= 50
            # In order: increasing numbers of one publisher.
            nums = [int(m.split()[1]) for m in got]
            assert nums == sorted(nums)
    finally:
        stop.touch()
    r = pub.join()
    assert r.returncode == 0, r.describe()
    assert "published" in r.stdout


def test_a_publisher_outlives_subscribers_killed_mid_stream(tracer_env, c_program):
    # As above, but the subscriber processes are killed (SIGKILL: no goodbye on the link), so the
    # publisher's next writes meet a dead socket. The C publisher keeps SIGPIPE at its default
    # action (rmw_tracer never changes it): links write with MSG_NOSIGNAL, so it gets an error,
    # not a signal.
    pub = harness.spawn([c_program, "stream", "/killed", "5"], tracer_env, timeout=60)
    assert pub.wait_for_output("streaming", 30)
    for _ in range(8):
        listener = started(worker("listen", tracer_env, "--topic", "/killed", "--count", "1000000",
                                  "--best-effort", "--depth", "10"))
        import time

        time.sleep(0.2)
        listener.kill()
        listener.join(10)
    r = pub.join()
    assert r.returncode == 0, r.describe()
    assert "published" in r.stdout


@pytest.fixture(scope="module")
def cpp_program(tmp_path_factory) -> Path:
    # rcl with the C++ type support, as rclcpp passes it (compiled with the C++ compiler).
    out = tmp_path_factory.mktemp("cpp") / "pubsub_rcl_cpp"
    mp = pytest.MonkeyPatch()
    mp.setenv("CC", "g++")
    try:
        return harness.compile_c(
            HERE / "c" / "pubsub_rcl_cpp.cpp", out,
            libs=("rcl", "rmw", "rmw_fastrtps_cpp", "rcutils", "rosidl_runtime_c",
                  "rosidl_typesupport_cpp", "std_msgs__rosidl_typesupport_cpp"),
            extra_flags=("-std=c++17",),
        )
    finally:
        mp.undo()


@pytest.mark.parametrize("pub_kind,sub_kind", [("cpp", "c"), ("c", "cpp"), ("cpp", "rclpy")])
def test_cpp_and_c_type_supports_talk(tracer_env, c_program, cpp_program, pub_kind, sub_kind):
    # Type support: rmw_tracer accepts the C and the C++ dispatchers (rclpy and C pass the C one,
    # rclcpp the C++ one); both resolve to the same type name, so the endpoints match and the
    # same CDR goes across.
    prog = {"c": c_program, "cpp": cpp_program}
    tag = "cpp" if pub_kind == "cpp" else "c"
    if sub_kind == "rclpy":
        sub = started(worker("listen", tracer_env, "--topic", "/lang", "--count", "30", "--depth", "30"))
    else:
        sub = harness.spawn([prog[sub_kind], "sub", "/lang", "30"], tracer_env, timeout=60)
        assert sub.wait_for_output("ready", 30)
    pub = harness.spawn([prog[pub_kind], "pub", "/lang", "30"], tracer_env, timeout=60)
    want = [f"{tag} {i}" for i in range(30)]
    if sub_kind == "rclpy":
        assert result(sub)["received"] == [want]
    else:
        rs = sub.join().check()
        assert [line[5:] for line in rs.stdout.splitlines() if line.startswith("msg: ")] == want
    pub.join().check()


def test_keep_all_reliable_burst_loses_nothing(tracer_env):
    # QoS KEEP_ALL (docs/rmw-mapping.md): the ring has no count bound (only a byte budget), so a
    # burst of 2000 published back to back while the listener spins arrives whole, in order.
    listener = started(worker("listen", tracer_env, "--topic", "/all", "--count", "2000", "--keep-all"))
    talker = worker("talk", tracer_env, "--topic", "/all", "--count", "2000", "--keep-all")
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(2000)]]


def test_a_destroyed_publisher_is_unmatched_while_its_process_lives(tracer_env):
    # Endpoint registry (docs/rmw-mapping.md): an entity that goes retracts its record, so a
    # remote subscription stops counting a publisher that was destroyed even though its process
    # (and the link to it) is still there.
    listener = started(worker("listen", tracer_env, "--topic", "/gone", "--count", "10", "--expect-matched", "0"))
    talker = worker("talk", tracer_env, "--topic", "/gone", "--count", "10", "--hold", "20", timeout=60)
    got = result(listener)
    assert got["received"] == [[f"hello {i}" for i in range(10)]]
    assert got["matched"] == [0]
    talker.kill()
    talker.join(10)


def test_discovery_range_off_keeps_a_process_to_itself(tracer_env):
    # Init options (docs/rmw-mapping.md, "Contexts"): automatic discovery range OFF is an
    # in-process graph (Discovery::Off). Two such processes never match; inside one, pub/sub
    # still works.
    off = {**tracer_env, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"}
    listener = started(worker("listen", off, "--topic", "/off", "--count", "1", "--timeout", "4"))
    talker = worker("talk", off, "--topic", "/off", "--count", "1", "--timeout", "3").join()
    assert talker.returncode == 2 and "only 0 of 1 subscriptions matched" in talker.stdout, talker.describe()
    assert result(listener)["received"] == [[]]
    got = result(worker("selfpub", off, "--topic", "/off_self", "--count", "10"))
    assert got["received"] == [[f"self {i}" for i in range(10)]]


def test_a_topic_named_net_is_escaped_and_still_talks(tracer_env):
    # Names (docs/rmw-mapping.md): libtracer reserves /net for peer mounts, so the ROS topic
    # /net/chatter lives at /.net/chatter; across processes it still matches and delivers.
    listener = started(worker("listen", tracer_env, "--topic", "/net/chatter", "--count", "20"))
    talker = worker("talk", tracer_env, "--topic", "/net/chatter", "--count", "20")
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(20)]]


def test_domains_stay_apart_under_one_rendezvous_override(tracer_env):
    # Contexts (docs/rmw-mapping.md, "rendezvous directory"): RMW_TRACER_RENDEZVOUS_DIR is a base
    # with one directory per domain under it (<base>/domain-<id>, the core's layout), so processes
    # of different ROS_DOMAIN_IDs given the same override never match; one of the same domain does.
    domain = tracer_env["ROS_DOMAIN_ID"]
    other_domain = str(harness.fresh_domain_id())
    assert other_domain != domain
    other = {**tracer_env, "ROS_DOMAIN_ID": other_domain}
    listener = started(worker("listen", tracer_env, "--topic", "/domains", "--count", "5", "--timeout", "30"))
    stranger = worker("talk", other, "--topic", "/domains", "--count", "5", "--tag", "other", "--timeout", "3").join()
    assert stranger.returncode == 2 and "only 0 of 1 subscriptions matched" in stranger.stdout, stranger.describe()
    talker = worker("talk", tracer_env, "--topic", "/domains", "--count", "5")
    got = result(listener)
    ok(talker)
    assert got["received"] == [[f"hello {i}" for i in range(5)]]
    assert got["matched"] == [1]
    base = Path(tracer_env["RMW_TRACER_RENDEZVOUS_DIR"])
    assert (base / f"domain-{domain}").is_dir() and (base / f"domain-{other_domain}").is_dir()
