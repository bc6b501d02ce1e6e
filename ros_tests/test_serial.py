"""A microcontroller node over a serial line, with no agent (issue 27, docs/serial.md section 9):
the MCU library built for the host (mcu/host/loopback_main.c, node /mcu_host) speaks on a
pseudo-terminal; rclpy processes on rmw_tracer name the port in RMW_TRACER_SERIAL, one of them
holds it and the MCU's node appears to all of them through ordinary discovery."""

from __future__ import annotations

import re
import time

import pytest

import harness
import serial_mcu
from serial_mcu import Mcu, Relay, port_held, wait_until, worker


@pytest.fixture
def loopback(tmp_path):
    exe = serial_mcu.build_loopback(tmp_path)
    if exe is None:
        pytest.skip("no C compiler `cc` to build the MCU library for the host")
    return exe


@pytest.fixture
def closing():
    """MCUs and relays a test starts, closed when it ends."""
    things = []
    yield things
    for t in reversed(things):
        t.close()


def serial_env(tracer_env, port: str) -> dict[str, str]:
    return {**tracer_env, "RMW_TRACER_SERIAL": f"{port}:115200"}


def relayed(tracer_env, loopback, closing, nonce: int, loss: float):
    """An MCU (counter at 100 Hz) behind a relay whose pty is the port the processes name."""
    relay = Relay(loss=loss)
    closing.append(relay)
    mcu = Mcu(loopback, nonce, period_ms=10)
    closing.append(mcu)
    relay.attach(mcu.path)
    return relay, mcu, serial_env(tracer_env, relay.path)


def values(out: str) -> list[tuple[float, int]]:
    return [(float(t), int(v)) for t, v in re.findall(r"^(\S+) got (-?\d+)$", out, re.M)]


def assert_consecutive(vs: list[int], at_least: int, why: str) -> None:
    assert len(vs) >= at_least, why
    assert vs == list(range(vs[0], vs[0] + len(vs))), why


@pytest.mark.parametrize("reliable", [True, False], ids=["reliable", "best_effort"])
def test_counter_arrives_in_order_and_the_node_is_in_the_graph(tracer_env, loopback, closing, procs,
                                                                reliable):
    mcu = Mcu(loopback, 0x2701, period_ms=5, reliable=reliable)
    closing.append(mcu)
    env = serial_env(tracer_env, mcu.path)
    listener = worker("listen", "/mcu/counter", "4", *([] if reliable else ["best_effort"]), env=env)
    procs.append(listener)
    # The listener holds the port: a holder that exits mid-test hands it over, and a
    # best-effort counter loses what is sent meanwhile (test_holder_killed_...).
    assert wait_until(lambda: port_held(env, mcu.path), 15), listener.join(0).describe()
    graph = worker("graph", "mcu_host", "3", env=env)
    procs.append(graph)
    r = listener.join().check()
    g = graph.join().check()
    vs = [v for _, v in values(r.stdout)]
    # Values written before the listener's edge to the MCU's graph was made are not its (a
    # volatile subscription); from the first it gets, every one, in order (200 per second).
    assert_consecutive(vs, 300, r.describe())
    assert "present" in g.stdout, g.describe()
    assert re.search(r"topic /mcu/counter std_msgs/msg/Int32$", g.stdout, re.M), g.describe()
    assert re.search(r"topic /mcu/led std_msgs/msg/Int32$", g.stdout, re.M), g.describe()
    assert re.search(r"publisher /mcu/counter mcu_host / [0-9a-f]{32}$", g.stdout, re.M), g.describe()
    assert re.search(r"subscription /mcu/led mcu_host /$", g.stdout, re.M), g.describe()


def test_a_keep_all_subscriber_slower_than_the_mcu_holds_it_back_and_loses_nothing(
        tracer_env, loopback, closing, procs):
    # The MCU publishes 2000 reliable values, one a millisecond; a RELIABLE +
    # KEEP_ALL rclpy subscriber (which holds the port, so the MCU's proxy is in its process)
    # takes one every 3 ms and stalls for 400 ms every 500 (a slow callback, a pause of the
    # process). Its edge's window fills, the proxy keeps the message it cannot
    # write and the session refuses the MCU's next ones, which it sends again: every value
    # from the first the subscriber gets to the last, in order. (The proxy's writes used to
    # time out after 100 ms and drop the message.)
    n = 2000
    mcu = Mcu(loopback, 0x2708, count=n, period_ms=1)
    closing.append(mcu)
    env = serial_env(tracer_env, mcu.path)
    drain = worker("drain", "/mcu/counter", str(n), "50", "3", "400", env=env, timeout=90)
    procs.append(drain)
    r = drain.join(timeout=90).check()
    m = re.search(r"^\S+ count (\d+) \S+ (\w+)$", r.stdout, re.M)
    assert m and m.group(2) == "True", r.describe()
    assert re.search(rf"^\S+ last {n - 1}$", r.stdout, re.M), r.describe()
    # The subscription's edge is made within the first values (the MCU starts once the
    # subscriber's process holds the port); all the rest came.
    assert int(m.group(1)) >= n - 500, r.describe()


@pytest.mark.parametrize("led_best_effort", [False, True], ids=["reliable", "best_effort"])
def test_published_values_come_back_on_echo(tracer_env, loopback, closing, procs, led_best_effort):
    mcu = Mcu(loopback, 0x2702, count=0, led_best_effort=led_best_effort)
    closing.append(mcu)
    env = serial_env(tracer_env, mcu.path)
    echo = worker("echo", "100", *(["best_effort"] if led_best_effort else []), env=env)
    procs.append(echo)
    r = echo.join().check()
    rtts = [int(us) for us in re.findall(r"^\S+ rtt \d+ (\d+)$", r.stdout, re.M)]
    assert "lost" not in r.stdout and len(rtts) == 100, r.describe()
    print("echo round trip us: median", sorted(rtts)[50], "max", max(rtts))


def test_mcu_reset_node_leaves_and_returns(tracer_env, loopback, closing, procs):
    relay, mcu, env = relayed(tracer_env, loopback, closing, 0x2703, loss=0.0)
    # The graph process holds the port and outlives the listener: a handover of the port to
    # the listener as the graph exits may lose what the holder had acknowledged and not passed
    # on (docs/serial.md, "The holder"), which is not what this test is about (a loaded CI run
    # lost 4 values there). Both processes name the port and the first to take its lock holds
    # it, so the listener starts once the graph process shows the node, which only a holder can
    # then: started together, the listener won now and then, and at its exit the graph process
    # took the port over and logged the MCU's data for the session it did not have yet.
    graph = worker("graph", "mcu_host", "17", env=env)
    procs.append(graph)
    assert wait_until(lambda: "present" in graph.output_so_far(), 15), graph.join(0).describe()
    listener = worker("listen", "/mcu/counter", "14", env=env)
    procs.append(listener)
    assert wait_until(lambda: len(values(listener.output_so_far())) > 20, 10)
    # Pulled cable: the MCU goes silent; its node leaves within 2 s.
    relay.attach(None)
    mcu.close()
    pulled = time.monotonic()
    assert wait_until(lambda: "absent" in graph.output_so_far(), 3), graph.join(0).describe()
    absent = float(re.search(r"^(\S+) absent$", graph.output_so_far(), re.M).group(1))
    print(f"node left {absent - pulled:.3f} s after the MCU went silent")
    assert absent - pulled < 2.0
    # A new boot behind the same port: the node comes back by itself, its counter from 0.
    mcu2 = Mcu(loopback, 0x2704, period_ms=10)
    closing.append(mcu2)
    relay.attach(mcu2.path)
    back = time.monotonic()
    assert wait_until(lambda: graph.output_so_far().count("present") == 2, 3)
    print(f"node back {time.monotonic() - back:.3f} s after the MCU spoke again")
    assert wait_until(lambda: any(t > back for t, _ in values(listener.output_so_far())), 3)
    # A reset with no silence (another boot at once): the session sees a new HELLO, the node's
    # endpoints leave and come back with new gids, and the counter starts again.
    seen = len(values(listener.output_so_far()))
    mcu3 = Mcu(loopback, 0x2705, period_ms=10)
    closing.append(mcu3)
    relay.attach(mcu3.path)
    mcu2.close()
    reset = time.monotonic()

    def restarted():
        later = [v for t, v in values(listener.output_so_far())[seen:] if t > reset]
        return len(later) > 10 and later[-1] < 150

    assert wait_until(restarted, 3), listener.join(0).describe()
    r = listener.join().check()
    g = graph.join().check()
    after = [v for t, v in values(r.stdout) if t > reset + 2]
    assert_consecutive(after, 50, r.describe())
    assert "rmw_tracer" not in g.stderr, g.describe()


def test_holder_killed_another_takes_over_within_2s(tracer_env, loopback, closing, procs):
    mcu = Mcu(loopback, 0x2706, period_ms=10)
    closing.append(mcu)
    env = serial_env(tracer_env, mcu.path)
    first = worker("graph", "mcu_host", "30", env=env)
    procs.append(first)
    assert wait_until(lambda: port_held(env, mcu.path), 15), first.join(0).describe()
    assert wait_until(lambda: "present" in first.output_so_far(), 10), first.join(0).describe()
    second = worker("listen", "/mcu/counter", "30", env=env)
    procs.append(second)
    assert wait_until(lambda: len(values(second.output_so_far())) > 20, 15), second.join(0).describe()
    first.kill()
    killed = time.monotonic()
    first.join(5)
    assert wait_until(lambda: port_held(env, mcu.path), 2.0), "nobody took the port over"
    assert wait_until(lambda: any(t > killed + 2.5 for t, _ in values(second.output_so_far())), 5), \
        second.join(0).describe()
    got = values(second.output_so_far())
    # The counter stops while nobody holds the port and resumes once the second process does:
    # the longest silence around the kill is the takeover (election, SYNC, declarations, the
    # proxy graph joining, the listener's edge to it).
    around = [t for t, _ in got if killed - 0.5 < t < killed + 2.5]
    gap = max(b - a for a, b in zip(around, around[1:]))
    print(f"takeover: the counter paused {gap:.3f} s when the holder was killed")
    assert gap < 2.0
    # Reliable: the MCU keeps what no holder acknowledged and sends it again to the new one. What
    # the killed holder had acknowledged but not yet passed on dies with it (the line's ACK is
    # the holder's, not the subscriber's: docs/serial.md section 9), so the stream is in order
    # with at most one gap, at the handover, of at most the MCU's window and what a holder
    # holds for a moment (a CI run lost 5 values at 100 Hz).
    vs = [v for _, v in got]
    why = second.join(0).describe()
    assert len(vs) >= 200, why
    steps = [b - a for a, b in zip(vs, vs[1:])]
    assert all(s >= 1 for s in steps), why
    gaps = [s - 1 for s in steps if s > 1]
    assert len(gaps) <= 1 and sum(gaps) <= 10, (gaps, why)
    second.kill()


def test_one_percent_of_bytes_dropped_or_corrupted(tracer_env, loopback, closing, procs):
    relay, _, env = relayed(tracer_env, loopback, closing, 0x2707, loss=0.01)
    listener = worker("listen", "/mcu/counter", "8", env=env)
    procs.append(listener)
    # The listener holds the port for the whole test: a new holder has to get the MCU's
    # HELLO and every DECLARE (about 115 bytes each) through the noise again, which at 1% of
    # bytes takes a few seconds (docs/serial.md section 11).
    assert wait_until(lambda: port_held(env, relay.path), 15), listener.join(0).describe()
    echo = worker("echo", "20", env=env)
    procs.append(echo)
    e = echo.join().check()
    r = listener.join().check()
    # Reliable both ways: nothing missing, nothing twice, in order, through the noise.
    assert_consecutive([v for _, v in values(r.stdout)], 200, r.describe())
    assert len(re.findall(r"^\S+ rtt ", e.stdout, re.M)) == 20, e.describe()
    assert relay.mangled > 20


COUNT_PUBLISHERS = r"""
import time
import rclpy

rclpy.init()
node = rclpy.create_node("serial_two_ports")
end = time.monotonic() + 20
while node.count_publishers("/mcu/counter") < 2 and time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
gids = sorted(bytes(i.endpoint_gid).hex() for i in node.get_publishers_info_by_topic("/mcu/counter"))
nodes = [n for n, _ in node.get_node_names_and_namespaces() if n == "mcu_host"]
print("publishers", len(gids), "distinct", len(set(gids)), "nodes", len(nodes), flush=True)
"""


def test_two_ports_in_one_variable(tracer_env, loopback, closing, procs):
    a = Mcu(loopback, 0x2708, period_ms=10)
    closing.append(a)
    b = Mcu(loopback, 0x2709, period_ms=10)
    closing.append(b)
    env = {**tracer_env, "RMW_TRACER_SERIAL": f"{a.path}:115200,{b.path}"}
    p = harness.spawn_python(COUNT_PUBLISHERS, env=env, timeout=60)
    procs.append(p)
    r = p.join().check()
    # Two MCUs of the same node name on two ports: two nodes, two publishers with their own gids.
    assert "publishers 2 distinct 2 nodes 2" in r.stdout, r.describe()
    # The process has exited: both ports are free for the next holder.
    assert not port_held(env, a.path) and not port_held(env, b.path)
