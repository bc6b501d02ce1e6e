"""Containers sharing the host's network, and users of one host, find each other with no
configuration (issue 31, docs/host.md).

Containers (containers.py): each with its own mount, UTS and pid namespace, its own
``/dev/shm`` and rendezvous directory, all on one network namespace, as ``docker run --network
host`` makes them; every program with the default settings: no rendezvous directory, no static
peers, the default discovery range. Users: root and ``nobody`` (``setpriv``) in one network
namespace, with the documented default (every user's graphs link) and its opt-out
``RMW_TRACER_HOST_USERS=self``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import containers
import harness
from test_loans import BLOB, loans_exe, received  # noqa: F401  (fixture)
from test_network_security import keystore, secure
from test_record import _decoded, _tracer
from two_hosts import pubsub, started
from worker_output import json_line

HERE = Path(__file__).resolve().parent
HOSTS_WORKER = HERE / "hosts_worker.py"
SERVICE = HERE / "test_service_worker.py"

pytestmark = pytest.mark.skipif(not containers.available(), reason="needs root and namespaces")


@pytest.fixture
def boxes(tmp_path_factory):
    # pytest's directories (the test's tmp_path, the C programs built for the module) are bound
    # into the containers, whose /tmp is their own.
    with containers.Containers(("a", "b", "c"), keep=[tmp_path_factory.getbasetemp()]) as c:
        yield c


def box_envs(boxes, tmp_path, extra=None):
    domain = harness.fresh_domain_id()
    return {n: boxes.env(tmp_path / n, domain, extra) for n in boxes.boxes}


def listen(env, box, topic: str, count: int, *more: str, timeout: float = 60) -> harness.Proc:
    return pubsub(env, box, "listen", "--topic", topic, "--count", str(count),
                  "--timeout", str(timeout), *more)


def talk(env, box, topic: str, count: int, *more: str) -> harness.Proc:
    return pubsub(env, box, "talk", "--topic", topic, "--count", str(count), "--timeout", "60",
                  *more)


def strings(p: harness.Proc) -> list[list[str]]:
    r = p.join()
    assert r.returncode == 0, r.describe()
    return json_line(r.stdout, r.describe())["received"]


def service(env, box, role: str, count: int, timeout: float = 60) -> harness.Proc:
    return harness.spawn_python(SERVICE, [role, "--service", "/box_svc", "--count", str(count),
                                          "--timeout", str(timeout)],
                                env=env, netns=box, timeout=timeout + 30)


def test_pubsub_service_and_action_across_three_containers(tmp_path, boxes, procs):
    e = box_envs(boxes, tmp_path)
    listeners = {n: listen(e[n], boxes.box(n), "/box_chatter", 50) for n in ("b", "c")}
    procs.extend(listeners.values())
    for p in listeners.values():
        started(p)
    server = service(e["c"], boxes.box("c"), "server", 10)
    action_server = harness.spawn_python(HOSTS_WORKER, ["action-server", "--action", "/box_fib",
                                                        "--goals", "1", "--timeout", "60"],
                                         env=e["b"], netns=boxes.box("b"), timeout=90)
    procs += [server, action_server]
    started(server)
    started(action_server)
    talker = talk(e["a"], boxes.box("a"), "/box_chatter", 50, "--wait-subs", "2")
    client = service(e["a"], boxes.box("a"), "client", 10)
    action_client = harness.spawn_python(HOSTS_WORKER, ["action-client", "--action", "/box_fib",
                                                        "--order", "10", "--timeout", "60"],
                                         env=e["c"], netns=boxes.box("c"), timeout=90)
    procs += [talker, client, action_client]
    for n, p in listeners.items():
        assert strings(p) == [[f"hello {i}" for i in range(50)]], n
    c = client.join()
    assert c.returncode == 0, c.describe() + "\n" + server.join(5).describe()
    calls = json_line(c.stdout, c.describe())["results"]
    assert [r[0] for r in calls] == [2 * i for i in range(10)]
    ac = action_client.join()
    assert ac.returncode == 0, ac.describe() + "\n" + action_server.join(5).describe()
    act = json_line(ac.stdout, ac.describe())
    assert act["accepted"] and act["result"] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34], act
    assert talker.join().returncode == 0


def test_a_4mib_loan_reaches_another_container_as_a_view_of_the_publishers_memory(
        tmp_path, boxes, procs, loans_exe):
    # The segment travels as a memfd over the Unix socket: no shared /dev/shm is needed (each
    # container's is its own, empty tmpfs), and the reader's loan is the publisher's memory.
    e = box_envs(boxes, tmp_path, {"ROS_DISABLE_LOANED_MESSAGES": "0"})
    ty, count = "blob:4194000", 20
    sub = harness.spawn([loans_exe, "sub", ty, "/box_loans", str(count), "1"], e["b"],
                        netns=boxes.box("b"), timeout=120)
    procs.append(sub)
    assert sub.wait_for_output("ready", timeout=30), sub.join(1).describe()
    pub = harness.spawn([loans_exe, "pub", ty, "/box_loans", str(count), "1"], e["a"],
                        netns=boxes.box("a"), timeout=120)
    procs.append(pub)
    r = sub.join()
    assert r.returncode == 0, r.describe() + pub.join(5).describe()
    assert received(r.stdout) == {"received": count, "bad": 0, "mapped": count, "last": count}
    assert pub.join().returncode == 0


def test_recording_in_a_container_holds_what_another_published(tmp_path, boxes, procs):
    e = box_envs(boxes, tmp_path)
    rec = tmp_path / "listener.mcap"
    lp = listen({**e["b"], "RMW_TRACER_RECORD": str(rec)}, boxes.box("b"), "/box_rec", 30)
    procs.append(lp)
    started(lp)
    tp = talk(e["a"], boxes.box("a"), "/box_rec", 30)
    procs.append(tp)
    assert strings(lp) == [[f"hello {i}" for i in range(30)]]
    got = _decoded(rec)
    assert [m.data for m in got["/box_rec"]] == [f"hello {i}" for i in range(30)]


def test_a_container_that_exits_and_comes_back_links_again(tmp_path, boxes, procs):
    e = box_envs(boxes, tmp_path)
    server = service(e["a"], boxes.box("a"), "server", 20, timeout=90)
    procs.append(server)
    started(server)
    first = service(e["b"], boxes.box("b"), "client", 10)
    procs.append(first)
    r = first.join()
    assert r.returncode == 0, r.describe()
    # The container ends as Docker's does (its pid 1 killed: everything in it dies at once) and
    # starts again, empty: nothing stale of it is left to hold up the new one.
    boxes.stop("b")
    boxes.start("b")
    again = service(e["b"], boxes.box("b"), "client", 10)
    procs.append(again)
    r = again.join()
    assert r.returncode == 0, r.describe() + "\n" + server.join(5).describe()
    assert [x[0] for x in json_line(r.stdout, r.describe())["results"]] == [2 * i for i in range(10)]
    s = server.join()
    assert s.returncode == 0, s.describe()


# --- users ----------------------------------------------------------------------------------

NOBODY = 65534


def as_nobody(tmp: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The prefix and environment of a process of uid ``nobody``. It keeps one capability,
    reading and searching any file (the venv lives under root's 0700 home here); its uid, what
    the kernel reports to its peers, is nobody's."""
    home = tmp / "nobody"
    home.mkdir(mode=0o777, exist_ok=True)
    os.chmod(home, 0o777)
    env = {**env, "HOME": str(home), "ROS_HOME": str(home / "ros"), "ROS_LOG_DIR": str(home / "log")}
    env.pop("XDG_RUNTIME_DIR", None)
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
              "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    return prefix, env


class User:
    """``spawn(..., netns=User(...))``: a program as another user in a network namespace."""

    def __init__(self, net: harness.NetNamespace | None, prefix: list[str]) -> None:
        self.net, self.pre = net, prefix

    def prefix(self) -> list[str]:
        return (self.net.prefix() if self.net else []) + self.pre


@pytest.fixture
def net():
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv")
    with harness.NetNamespace() as ns:
        yield ns


@pytest.fixture
def user_envs(tmp_path):
    """``user_envs()``: root's and nobody's environments, on a fresh domain and at the default
    rendezvous, what these tests are about (``/tmp/libtracer-<uid>/domain-<id>``: /tmp is
    the host's). Each user's directory of that domain is removed after the test, and its
    ``libtracer-<uid>`` parent if that is then empty (asked for before ``procs``, so that its
    processes are gone by then)."""
    domains = []

    def make():
        domain = harness.fresh_domain_id()
        domains.append(domain)
        root = harness.tracer_env(tmp_path / "root", domain)
        other = harness.tracer_env(tmp_path / "other", domain)
        for env in (root, other):
            for var in containers.DEFAULT_RENDEZVOUS:
                env.pop(var, None)
        prefix, other = as_nobody(tmp_path, other)
        return root, other, prefix

    yield make
    for uid in (os.geteuid(), NOBODY):
        base = Path(f"/tmp/libtracer-{uid}")
        for domain in domains:
            shutil.rmtree(base / f"domain-{domain}", ignore_errors=True)
        try:
            base.rmdir()
        except OSError:
            pass  # not empty (another domain in use), or never made


@pytest.mark.parametrize("nobody_talks", [True, False], ids=["root-listens", "nobody-listens"])
def test_other_users_graphs_link_by_default(tmp_path, net, user_envs, procs, nobody_talks):
    root, other, prefix = user_envs()
    me, them = User(net, []), User(net, prefix)
    lenv, lbox, tenv, tbox = (root, me, other, them) if nobody_talks else (other, them, root, me)
    tp = talk(tenv, tbox, "/users", 50)
    procs.append(tp)
    started(tp, "pre-done")
    if nobody_talks:
        # `tracer graph` (root's) shows the talker's process as another user's, by its uid.
        g = harness.run([_tracer(), "graph", "--json", "--wait", "5"], root, netns=me, timeout=60)
        assert g.returncode == 0, g.describe()
        others = json_line(g.stdout, g.describe())["other_users"]
        assert list(others.values()) == [NOBODY], g.describe()
    lp = listen(lenv, lbox, "/users", 50)
    procs.append(lp)
    assert strings(lp) == [[f"hello {i}" for i in range(50)]]
    assert tp.join().returncode == 0


@pytest.mark.parametrize("who_opts_out", ["root", "nobody"])
def test_host_users_self_links_only_to_its_own_user(tmp_path, net, user_envs, procs,
                                                    who_opts_out):
    root, other, prefix = user_envs()
    (root if who_opts_out == "root" else other)["RMW_TRACER_HOST_USERS"] = "self"
    # The same user's talker is heard; the other user's is not, either way round.
    heard_only_own(procs, net, prefix, root, root, other)


def heard_only_own(procs, net, prefix, listener_env, own_env, other_env) -> None:
    """Root's listener hears 20 of root's talker (``own_env``) and nothing of ``nobody``'s
    (``other_env``), whose talker never sees its subscription matched."""
    me, them = User(net, []), User(net, prefix)
    lp = listen(listener_env, me, "/users", 20, "--timeout", "8")
    procs.append(lp)
    started(lp)
    own = talk(own_env, me, "/users", 20, "--tag", "own")
    foreign = talk(other_env, them, "/users", 20, "--tag", "foreign", "--timeout", "8")
    procs += [own, foreign]
    r = lp.join()
    got = json_line(r.stdout, r.describe())["received"][0]
    assert got == [f"own {i}" for i in range(20)], r.describe()
    f = foreign.join()
    assert "only 0 of 1 subscriptions matched" in f.stdout, f.describe()


# --- the network on, in containers ------------------------------------------------------------

def test_subnet_in_containers_shares_one_host_role_and_says_nothing(tmp_path, boxes, procs):
    # Before: each container took the role (its own directory's lock) and all but one failed
    # to bind the directory port, saying so ("host role: cannot bind ... retrying quietly").
    # Now the role is one per network namespace (its lock an abstract name): nothing to say.
    e = box_envs(boxes, tmp_path, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
    lp = listen(e["b"], boxes.box("b"), "/box_net", 50)
    lc = listen(e["c"], boxes.box("c"), "/box_net", 50)
    procs += [lp, lc]
    started(lp)
    started(lc)
    tp = talk(e["a"], boxes.box("a"), "/box_net", 50, "--wait-subs", "2")
    procs.append(tp)
    for p in (lp, lc):
        assert strings(p) == [[f"hello {i}" for i in range(50)]]
    t = tp.join()
    assert t.returncode == 0, t.describe()
    for r in (lp.join(), lc.join(), t):
        assert "host role" not in r.stderr and "port" not in r.stderr, r.describe()


def test_two_groups_with_their_own_directories_find_each_other_through_the_port(
        tmp_path, procs):
    # Two groups of processes that were given different rendezvous directories (so different
    # scopes) in one network namespace, with the network on: one group's process holds the
    # directory port; the other's say so once and link to its members through it.
    domain = harness.fresh_domain_id()
    extra = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    g1 = harness.tracer_env(tmp_path / "g1", domain, extra)
    g2 = harness.tracer_env(tmp_path / "g2", domain, extra)
    with harness.NetNamespace() as ns:
        lp = listen(g1, ns, "/groups", 50)
        procs.append(lp)
        started(lp)
        tp = talk(g2, ns, "/groups", 50)
        procs.append(tp)
        assert strings(lp) == [[f"hello {i}" for i in range(50)]]
        t = tp.join()
        assert t.returncode == 0, t.describe()
    said = [line for line in t.stderr.splitlines() if "is held by another group" in line]
    assert len(said) == 1, t.describe()


def test_sros2_gives_another_users_graph_nothing(tmp_path, net, user_envs, procs):
    # With SROS2 enforced on both sides, a graph of another user proves no enclave over a Unix
    # socket: it is linked (RMW_TRACER_HOST_USERS=all) but holds nothing, so its talker is
    # never matched by root's listener, while root's own talker of an enclave is heard.
    root, other, prefix = user_envs()
    ks = keystore(tmp_path / "ks", {"a": root}, "/listener", "/talker")
    for path in [ks, *ks.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    secure(root, ks, "/listener")
    secure(other, ks, "/talker")
    own_env = secure(dict(root), ks, "/talker")
    heard_only_own(procs, net, prefix, root, own_env, other)
