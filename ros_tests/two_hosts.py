"""Hosts for the network tests (docs/network.md): two network namespaces joined by a veth
pair (192.0.2.1/24 and 192.0.2.2/24, nothing else in reach), or, shaped, by two veth pairs and
``link_shaper.py`` (delay and loss, the ``tc netem`` this kernel lacks) in a third namespace
between them; or (:class:`BridgedHosts`) two or more namespaces on one bridge, a switch in a
namespace of its own (192.0.2.1, .2, .3 ... /24; multicast stays on the bridge). Names are prefixed with a room name (``net-`` unless a test asks for its own)
and unique to the run; everything is removed on exit, also when a test fails. Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
from pathlib import Path

import pytest

import harness

ADDR = {"a": "192.0.2.1", "b": "192.0.2.2", "c": "192.0.2.3"}
# Unique local IPv6 addresses (RFC 4193) for ``TwoHosts(ipv6_only=True)``.
ADDR6 = {"a": "fd00:db8::1", "b": "fd00:db8::2"}
HERE = Path(__file__).resolve().parent
SHAPER = HERE / "link_shaper.py"
PUBSUB = HERE / "test_pubsub_worker.py"

_pairs = itertools.count()


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def _no_offload(ns: str, dev: str) -> None:
    # One frame per packet on the wire, so that the shaper's loss falls on packets (as netem's
    # does) and every frame it forwards fits the MTU; checksums filled in by the sender, since
    # a frame the shaper re-sends is not completed by the kernel.
    subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                    "gro", "off", "tx-udp-segmentation", "off"],
                   check=True, capture_output=True, timeout=20)


def _remove(made: list[str]) -> None:
    """Delete the namespaces in ``made``, last made first. Deleting a namespace deletes its ends
    of the veths, and with them the pairs."""
    for ns in reversed(made):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
    made.clear()


class Host:
    """One side of a :class:`TwoHosts`: ``spawn(..., netns=host)`` runs a program on it."""

    def __init__(self, ns: str) -> None:
        self.ns = ns

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]


class _Namespaces:
    """What both kinds of hosts share: ``_make`` builds them, recording each namespace in
    ``made``; a failure half way, or the end of the ``with``, removes what was made."""

    ns: dict[str, str]
    made: list[str]

    def _make(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self._make()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def host(self, h: str) -> Host:
        return Host(self.ns[h])

    def __exit__(self, *exc) -> None:
        _remove(self.made)


class TwoHosts(_Namespaces):
    """Hosts ``a`` and ``b``; ``shape=(loss, delay_s)`` puts the shaper between them (each
    way: a share ``loss`` of the IPv4 frames dropped, every frame delayed by ``delay_s``).
    ``ipv6_only``: the veth ends get ``ADDR6`` (/64, no duplicate address detection, so they
    are usable at once) instead of ``ADDR``; no IPv4 address but loopback's."""

    def __init__(self, shape: tuple[float, float] | None = None, room: str = "net",
                 ipv6_only: bool = False) -> None:
        assert not (shape and ipv6_only), "the shaper forwards IPv4 frames only"
        self.ipv6_only = ipv6_only
        n = f"{os.getpid() % 100000}-{next(_pairs)}"
        self.ns = {h: f"{room}-{n}-{h}" for h in ("a", "b", "m")}
        # Interface names are at most 15 bytes.
        self.dev = {"a": f"qa{n}"[:15], "b": f"qb{n}"[:15]}
        self.mdev = {"a": f"ma{n}"[:15], "b": f"mb{n}"[:15]}
        self.shape = shape
        self.shaper: harness.Proc | None = None
        self.made: list[str] = []

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0

    def _make(self) -> None:
        names = ("a", "b", "m") if self.shape else ("a", "b")
        for h in names:
            _ip("netns", "add", self.ns[h])
            self.made.append(self.ns[h])
        if self.shape:
            for h in ("a", "b"):
                _ip("link", "add", self.dev[h], "type", "veth", "peer", "name", self.mdev[h])
                _ip("link", "set", self.mdev[h], "netns", self.ns["m"])
                _ip("-n", self.ns["m"], "link", "set", self.mdev[h], "promisc", "on", "up")
        else:
            _ip("link", "add", self.dev["a"], "type", "veth", "peer", "name", self.dev["b"])
        for h in ("a", "b"):
            _ip("link", "set", self.dev[h], "netns", self.ns[h])
            if self.ipv6_only:
                _ip("-n", self.ns[h], "addr", "add", f"{ADDR6[h]}/64", "dev", self.dev[h], "nodad")
            else:
                _ip("-n", self.ns[h], "addr", "add", f"{ADDR[h]}/24", "dev", self.dev[h])
            _ip("-n", self.ns[h], "link", "set", self.dev[h], "up")
            _ip("-n", self.ns[h], "link", "set", "lo", "up")
        if self.shape:
            for h in ("a", "b"):
                _no_offload(self.ns[h], self.dev[h])
                _no_offload(self.ns["m"], self.mdev[h])
            loss, delay = self.shape
            self.shaper = harness.spawn(
                ["python3", SHAPER, self.mdev["a"], self.mdev["b"], "--loss", str(loss),
                 "--delay", str(delay), "--seconds", "600"],
                env=dict(os.environ), netns=Host(self.ns["m"]), timeout=700)
            if not self.shaper.wait_for_output("shaping", 20):
                raise RuntimeError(self.shaper.join(1).describe())

    def link(self, up: bool) -> None:
        """Cut (or heal) the cable: host a's end of the veth down (or up)."""
        _ip("-n", self.ns["a"], "link", "set", self.dev["a"], "up" if up else "down")

    def shaper_report(self) -> str:
        """Stop the shaper and return its last line (frames forwarded and dropped)."""
        if self.shaper is None:
            return ""
        try:
            os.killpg(self.shaper.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        r = self.shaper.join(10)
        self.shaper = None
        return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.describe()

    def __exit__(self, *exc) -> None:
        if self.shaper is not None:
            self.shaper.kill()
            self.shaper.join(10)
            self.shaper = None
        super().__exit__(*exc)


class BridgedHosts(_Namespaces):
    """Hosts ``names`` (``a``, ``b``, ``c`` ...), each a namespace ``<room>-<n>-<h>`` with one
    veth whose other end is on the bridge ``<room>-<n>`` in the switch namespace
    ``<room>-<n>-sw``; addresses from ``ADDR``. Multicast snooping is off on the bridge, so a
    group datagram reaches every host (as on a small switch without an IGMP querier). ``room``
    prefixes the names as in :class:`TwoHosts`."""

    def __init__(self, names: tuple[str, ...] = ("a", "b", "c"), room: str = "hosts") -> None:
        n = f"{os.getpid() % 100000}-{next(_pairs)}"
        self.names = names
        self.ns = {h: f"{room}-{n}-{h}" for h in names}
        self.switch = f"{room}-{n}-sw"
        self.bridge = f"{room}-{n}"[:15]
        self.dev = {h: f"hh{n}{h}"[:15] for h in names}
        self.port = {h: f"hs{n}{h}"[:15] for h in names}
        self.made: list[str] = []

    def _make(self) -> None:
        _ip("netns", "add", self.switch)
        self.made.append(self.switch)
        _ip("-n", self.switch, "link", "add", self.bridge, "type", "bridge", "mcast_snooping", "0")
        _ip("-n", self.switch, "link", "set", self.bridge, "up")
        for h in self.names:
            _ip("netns", "add", self.ns[h])
            self.made.append(self.ns[h])
            # Made inside the switch namespace, so no end ever sits in the root namespace.
            _ip("-n", self.switch, "link", "add", self.port[h], "type", "veth", "peer", "name",
                self.dev[h], "netns", self.ns[h])
            _ip("-n", self.switch, "link", "set", self.port[h], "master", self.bridge, "up")
            _ip("-n", self.ns[h], "addr", "add", f"{ADDR[h]}/24", "dev", self.dev[h])
            _ip("-n", self.ns[h], "link", "set", self.dev[h], "up")
            _ip("-n", self.ns[h], "link", "set", "lo", "up")


def _fixture(shape, room: str = "net"):
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with TwoHosts(shape, room) as h:
        yield h


@pytest.fixture
def hosts():
    yield from _fixture(None)


@pytest.fixture
def three_hosts():
    """Hosts a, b and c on one bridge (BridgedHosts)."""
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with BridgedHosts(("a", "b", "c")) as h:
        yield h


@pytest.fixture
def bridged_pair():
    """Hosts a and b on one bridge (BridgedHosts): multicast between them, as on a LAN."""
    if not TwoHosts.available():
        pytest.skip("network namespaces need root and iproute2")
    with BridgedHosts(("a", "b")) as h:
        yield h


@pytest.fixture
def shaped_hosts():
    """5% loss and 20 ms delay each way (issue 7's netem test)."""
    yield from _fixture((0.05, 0.020))


def tracer_envs(tmp_path: Path) -> dict[str, dict[str, str]]:
    """rmw_tracer on each host: own rendezvous directory (a host's processes meet there), one
    domain, the other host as the static peer."""
    domain = harness.fresh_domain_id()
    return {
        h: harness.tracer_env(tmp_path / h, domain,
                              {"ROS_STATIC_PEERS": ADDR["b" if h == "a" else "a"]})
        for h in ("a", "b")
    }


def pubsub(env, host, *args: str, timeout: float = 90) -> harness.Proc:
    return harness.spawn_python(PUBSUB, list(args), env=env, netns=host, timeout=timeout)


def stream(procs: list, envs, hosts, count: int = 200, talker: str = "a",
           listener: str = "b") -> tuple[harness.Result, harness.Result]:
    """A listener on host ``listener``, then a talker on host ``talker``: ``count`` reliable
    messages (depth 1000, nothing lost within it); both joined. Every process goes in ``procs``
    (the ``procs`` fixture kills them on failure)."""
    lp = pubsub(envs[listener], hosts.host(listener), "listen", "--count", str(count),
                "--timeout", "60", "--depth", "1000")
    procs.append(lp)
    started(lp)
    tp = pubsub(envs[talker], hosts.host(talker), "talk", "--count", str(count), "--timeout", "60",
                "--depth", "1000", "--linger", "20")
    procs.append(tp)
    return lp.join(), tp.join()


def sub_then_pub(script: str, args: list[str], envs, hosts, wait: str = "150"
                 ) -> tuple[harness.Result, harness.Result | None]:
    """``script sub *args wait`` on host b until it says "ready", then ``script pub *args wait``
    on host a; the subscriber joined (180 s), then both killed. Returns the subscriber's result
    and the publisher's (None if it never started)."""
    sub = harness.spawn_python(script, ["sub", *args, wait], env=envs["b"], netns=hosts.host("b"),
                               timeout=200)
    pub = p = None
    try:
        assert sub.wait_for_output("ready", 60), sub.join(1).describe()
        pub = harness.spawn_python(script, ["pub", *args, wait], env=envs["a"],
                                   netns=hosts.host("a"), timeout=200)
        r = sub.join(180)
    finally:
        sub.kill()
        sub.join(10)
        if pub is not None:
            pub.kill()
            p = pub.join(10)
    return r, p


def started(p: harness.Proc, text: str = "ready") -> harness.Proc:
    assert p.wait_for_output(text, timeout=60), p.join(1).describe()
    return p
