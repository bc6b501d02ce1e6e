"""SROS2 conventions on links between hosts (docs/network.md section 5): with
ROS_SECURITY_ENABLE=true, ROS_SECURITY_STRATEGY=Enforce and ROS_SECURITY_KEYSTORE, each process
presents its enclave's certificate and refuses every peer whose certificate does not chain to
the keystore's identity CA. Keystores are made by ``tracer keystore`` (``ros2 security`` is not
in the wheels). Two hosts as in test_network.py (ros_tests/two_hosts.py).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

import harness
from two_hosts import _fixture, pubsub, started, tracer_envs
from worker_output import json_line

TRACER = harness.target_dir() / "release" / "tracer"


@pytest.fixture
def hosts():
    """Two hosts whose namespaces are named ``secure-...`` (removed when the test ends)."""
    yield from _fixture(None, "secure")


def keystore(path: Path, envs, *enclaves: str) -> Path:
    """A keystore whose governance and permissions are for the test's domain (sros2, too,
    writes them for ROS_DOMAIN_ID)."""
    env = {"PATH": "/usr/bin:/bin", "ROS_DOMAIN_ID": envs["a"]["ROS_DOMAIN_ID"]}
    subprocess.run([TRACER, "keystore", "create", path], check=True, capture_output=True,
                   timeout=30, env=env)
    for e in enclaves:
        subprocess.run([TRACER, "keystore", "enclave", path, e], check=True, capture_output=True,
                       timeout=30, env=env)
    return path


def secure(env: dict[str, str], ks: Path, enclave: str) -> dict[str, str]:
    env.update({"ROS_SECURITY_ENABLE": "true", "ROS_SECURITY_STRATEGY": "Enforce",
                "ROS_SECURITY_KEYSTORE": str(ks), "ROS_SECURITY_ENCLAVE_OVERRIDE": enclave})
    return env


def exchange(envs, hosts, count: int, listen_timeout: float, talk_timeout: float):
    listener = started(pubsub(envs["b"], hosts.host("b"), "listen", "--count", str(count),
                              "--timeout", str(listen_timeout)))
    talker = pubsub(envs["a"], hosts.host("a"), "talk", "--count", str(count), "--timeout",
                    str(talk_timeout), "--linger", "20")
    t = talker.join()
    r = listener.join()
    for line in (t.stderr + r.stderr).splitlines():
        if "security:" in line or "network:" in line:
            print(line)
    return t, r


def assert_talked(t: harness.Result, r: harness.Result) -> None:
    """The exchange's talker and listener both ended well, the listener got all 50 in order, and
    neither logged a security line."""
    assert t.returncode == 0, t.describe() + "\n" + r.describe()
    assert r.returncode == 0, r.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[f"hello {i}" for i in range(50)]]
    assert "security:" not in t.stderr + r.stderr, t.stderr + r.stderr


def test_authenticated_pair_talks(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    secure(envs["a"], ks, "/net/a")
    secure(envs["b"], ks, "/net/b")
    assert_talked(*exchange(envs, hosts, 50, 60, 60))


def test_a_peer_with_a_certificate_of_another_ca_is_refused(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    secure(envs["a"], keystore(tmp_path / "ks1", envs, "/net/a"), "/net/a")
    secure(envs["b"], keystore(tmp_path / "ks2", envs, "/net/b"), "/net/b")
    t, r = exchange(envs, hosts, 1, 8, 6)
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    # Each side says, once per address, whom it refused and why.
    both = t.stderr + r.stderr
    # Which side sees its certificate refused and which refuses depends on who asked first.
    assert "security: " in t.stderr and "peer at 192.0.2.2" in t.stderr, both
    assert "security: " in r.stderr and "peer at 192.0.2.1" in r.stderr, both
    assert "invalid peer certificate" in both, both


def test_an_unauthenticated_peer_is_refused_when_enforced(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    secure(envs["a"], keystore(tmp_path / "ks", envs, "/net/a"), "/net/a")
    # Host b has no keystore: its links are encrypted, not authenticated.
    t, r = exchange(envs, hosts, 1, 8, 6)
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    assert "security: refused the peer at 192.0.2.2" in t.stderr, t.stderr
    assert "peer sent no certificates" in t.stderr, t.stderr


def test_enforce_without_the_enclave_fails_init_with_a_clear_error(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a")
    secure(envs["a"], ks, "/net/a")
    (ks / "enclaves" / "net" / "a" / "key.pem").unlink()
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "1", "--timeout", "5").join(60)
    assert t.returncode != 0, t.describe()
    assert "key.pem" in t.stderr, t.stderr


def policy(path: Path, enclave: str, topics: str) -> Path:
    """An SROS2 policy for ``enclave``: what every rclpy node needs (rosout, parameter events,
    its parameter services), plus ``topics`` (``<topics ...>`` elements)."""
    path.write_text(f"""<policy version="0.2.0"><enclaves><enclave path="{enclave}"><profiles>
  <profile ns="/" node="*">
    <topics publish="ALLOW" subscribe="ALLOW"><topic>rosout</topic><topic>parameter_events</topic></topics>
    <services reply="ALLOW" request="ALLOW"><service>*</service></services>
    {topics}
  </profile></profiles></enclave></enclaves></policy>""")
    return path


def permission(ks: Path, envs, enclave: str, policy_file: Path,
               not_after: str | None = None) -> None:
    env = {"PATH": "/usr/bin:/bin", "ROS_DOMAIN_ID": envs["a"]["ROS_DOMAIN_ID"]}
    until = ["--not-after", not_after] if not_after else []
    subprocess.run([TRACER, "keystore", "permission", ks, enclave, policy_file, *until],
                   check=True, capture_output=True, timeout=30, env=env)


def test_a_topic_denied_by_permissions_fails_create_publisher(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a")
    permission(ks, envs, "/net/a", policy(tmp_path / "a.xml", "/net/a", """
    <topics publish="ALLOW"><topic>chatter</topic></topics>
    <topics publish="DENY"><topic>secret</topic></topics>"""))
    secure(envs["a"], ks, "/net/a")
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--topic", "/secret", "--count", "1",
               "--timeout", "5").join(60)
    # As with Fast DDS, rmw_create_publisher fails and rclpy raises with our error text.
    assert t.returncode != 0, t.describe()
    assert "Failed to create publisher" in t.stderr, t.stderr
    assert ("security: permission denied: enclave CN=/net/a may not publish rt/secret"
            in t.stderr), t.stderr
    # The allowed topic of the same enclave is fine (nobody listens: only the match times out).
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--topic", "/chatter", "--count", "1",
               "--timeout", "3").join(60)
    assert "only 0 of 1 subscriptions matched" in t.stdout, t.describe()


def test_a_link_closes_when_the_peers_grant_runs_out_and_comes_back_without_it(tmp_path, hosts):
    """b's permissions (which it sends) are valid for about 30 s more, its certificate for
    good. a checked the grant when the link was made and closes the link when it runs out
    (docs/network.md section 5, "When credentials end"): the stream to b stops there, and the
    link made next carries no grant, so a refuses b what access control covers."""
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    utc = lambda secs: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))  # noqa: E731
    last = int(time.time()) + 30  # the last second the grant is valid
    permission(ks, envs, "/net/b", policy(tmp_path / "b.xml", "/net/b", """
    <topics publish="ALLOW" subscribe="ALLOW"><topic>chatter</topic></topics>"""),
               not_after=utc(last))
    secure(envs["a"], ks, "/net/a")
    secure(envs["b"], ks, "/net/b")
    listener = started(pubsub(envs["b"], hosts.host("b"), "listen", "--count", "400",
                              "--timeout", "42"))
    # 400 at 10 a second: the stream would go on for 40 s; the grant stops it within 30.
    talker = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "400", "--period", "0.1",
                    "--timeout", "25", "--linger", "5")
    t = talker.join(120)
    r = listener.join(120)
    assert t.returncode == 0, t.describe() + "\n" + r.describe()
    got = json_line(r.stdout, r.describe())["received"][0]
    # What came, came in order and from the start; then nothing more.
    print(f"{len(got)} of 400 came before the grant ran out")
    assert 0 < len(got) < 400, r.describe()
    assert got == [f"hello {i}" for i in range(len(got))]
    ran_out = [l for l in t.stderr.splitlines()
               if "security: closed the link to " in l and "the grant it sent ran out at " in l]
    assert len(ran_out) == 1, t.stderr
    assert f"ran out at {utc(last + 1)}Z" in ran_out[0], ran_out[0]
    # The next link's handshake found the document expired: no grant for b, said once.
    lines = [l for l in t.stderr.splitlines()
             if "security: the peer CN=/net/b gets no grant here" in l]
    assert len(lines) == 1 and "not now" in lines[0], t.stderr


@pytest.fixture
def perms_hosts():
    """Two hosts whose namespaces are named ``perms-...`` (removed when the test ends)."""
    yield from _fixture(None, "perms")


def own_copy(ks: Path, dest: Path, keep: str) -> Path:
    """One host's keystore, as on a robot and a laptop: the CA and only that host's enclave
    (``/net/<keep>``), so each host lacks the other's permissions.p7s."""
    subprocess.run(["cp", "-a", ks, dest], check=True)
    for d in (dest / "enclaves" / "net").iterdir():
        if d.name != keep:
            shutil.rmtree(d)
    assert [d.name for d in (dest / "enclaves" / "net").iterdir()] == [keep]
    return dest


def uncontrolled(ks: Path, enclave: str, read: bool, write: bool) -> None:
    """Give ``enclave`` a governance (signed by the keystore's CA, with openssl as sros2 signs)
    whose first topic rule leaves rt/chatter's read or write access uncontrolled, so that its
    own create check passes whatever its grant says; only the peer's check of the grant it
    sent then stands between the two."""
    text = (ks / "enclaves" / "governance.xml").read_text()
    flag = lambda v: "false" if v else "true"  # noqa: E731
    rule = f"""<topic_rule><topic_expression>rt/chatter</topic_expression>
                    <enable_discovery_protection>true</enable_discovery_protection>
                    <enable_liveliness_protection>true</enable_liveliness_protection>
                    <enable_read_access_control>{flag(read)}</enable_read_access_control>
                    <enable_write_access_control>{flag(write)}</enable_write_access_control>
                    <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
                    <data_protection_kind>ENCRYPT</data_protection_kind></topic_rule>
                <topic_rule>"""
    assert text.count("<topic_rule>") == 1, text
    xml = ks / f"governance-{enclave.strip('/').replace('/', '-')}.xml"
    xml.write_text(text.replace("<topic_rule>", rule))
    out = ks / "enclaves" / enclave.strip("/") / "governance.p7s"
    subprocess.run(["openssl", "smime", "-sign", "-text", "-in", xml, "-out", out,
                    "-signer", ks / "public" / "permissions_ca.cert.pem",
                    "-inkey", ks / "private" / "permissions_ca.key.pem"],
                   check=True, capture_output=True, timeout=30)


def test_hosts_with_their_own_keystores_talk(tmp_path, perms_hosts):
    """Each host holds only its own enclave: the peer's grant comes in its HELLO."""
    hosts = perms_hosts
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    secure(envs["a"], own_copy(ks, tmp_path / "ks_a", "a"), "/net/a")
    secure(envs["b"], own_copy(ks, tmp_path / "ks_b", "b"), "/net/b")
    assert_talked(*exchange(envs, hosts, 50, 60, 60))


def test_a_peer_whose_permissions_deny_the_subscription_is_refused_data(tmp_path, perms_hosts):
    """b's grant (which it sends) denies subscribing /chatter; b's governance leaves reading
    /chatter uncontrolled, so b's own check passes and only a's ACL, from the grant b sent
    (a's keystore has no /net/b), stands between b and the data."""
    hosts = perms_hosts
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    permission(ks, envs, "/net/b", policy(tmp_path / "b.xml", "/net/b",
                                    '<topics subscribe="DENY"><topic>chatter</topic></topics>'))
    ks_b = own_copy(ks, tmp_path / "ks_b", "b")
    uncontrolled(ks_b, "/net/b", read=True, write=False)
    secure(envs["a"], own_copy(ks, tmp_path / "ks_a", "a"), "/net/a")
    secure(envs["b"], ks_b, "/net/b")
    t, r = exchange(envs, hosts, 1, 8, 6)
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    # What a's ACL saw is b's certificate subject, and b is told so, once.
    want = "refused the subscription to /chatter: refused by the peer: permission denied: " \
           "SUBSCRIBE on /chatter for peer CN=/net/b"
    assert want in r.stderr, r.stderr
    assert r.stderr.count("refused the subscription to /chatter") == 1, r.stderr


def a_may_not_publish_chatter(tmp_path) -> dict[str, dict[str, str]]:
    """Hosts a and b secured by their own keystores: a's grant (which it sends) denies
    publishing /chatter, and a's governance leaves writing /chatter uncontrolled, so a's own
    check passes and only b's check of the grant a sent stands between them."""
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    permission(ks, envs, "/net/a", policy(tmp_path / "a.xml", "/net/a",
                                    '<topics publish="DENY"><topic>chatter</topic></topics>'))
    ks_a = own_copy(ks, tmp_path / "ks_a", "a")
    uncontrolled(ks_a, "/net/a", read=False, write=True)
    secure(envs["a"], ks_a, "/net/a")
    secure(envs["b"], own_copy(ks, tmp_path / "ks_b", "b"), "/net/b")
    return envs


def test_a_peer_whose_permissions_deny_publishing_is_not_taken_from(tmp_path, perms_hosts):
    """The other direction: a's grant (which it sends) denies publishing /chatter; a's
    governance leaves writing /chatter uncontrolled, so a's own check passes, and b (whose
    keystore has no /net/a) makes no edge to a's publisher from the grant a sent, as a DDS
    DataReader ignores a remote DataWriter that may not publish the topic."""
    hosts = perms_hosts
    envs = a_may_not_publish_chatter(tmp_path)
    t, r = exchange(envs, hosts, 1, 8, 6)
    # No edge: the publisher sees no subscription, the subscription no data.
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    # b says why, once, naming a's certificate subject and the grant a sent.
    want = "its enclave CN=/net/a may not publish rt/chatter (the permissions it sent"
    lines = [l for l in r.stderr.splitlines() if "security: not taking /chatter from " in l]
    assert len(lines) == 1 and want in lines[0], r.stderr


@pytest.fixture
def unauth_hosts():
    """Two hosts whose namespaces are named ``unauth-...`` (removed when the test ends)."""
    yield from _fixture(None, "unauth")


def open_governance(path: Path, envs, allow: bool) -> Path:
    """A governance for the test's domain: unauthenticated participants allowed (``allow``), no
    join access control, ``rt/open`` without read or write access control, every other topic
    controlled both ways."""
    rule = lambda expr, ctl: (  # noqa: E731
        f"<topic_rule><topic_expression>{expr}</topic_expression>"
        f"<enable_discovery_protection>{ctl}</enable_discovery_protection>"
        f"<enable_liveliness_protection>{ctl}</enable_liveliness_protection>"
        f"<enable_read_access_control>{ctl}</enable_read_access_control>"
        f"<enable_write_access_control>{ctl}</enable_write_access_control>"
        "<metadata_protection_kind>ENCRYPT</metadata_protection_kind>"
        "<data_protection_kind>ENCRYPT</data_protection_kind></topic_rule>")
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<dds><domain_access_rules><domain_rule>
  <domains><id>{envs["a"]["ROS_DOMAIN_ID"]}</id></domains>
  <allow_unauthenticated_participants>{str(allow).lower()}</allow_unauthenticated_participants>
  <enable_join_access_control>false</enable_join_access_control>
  <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
  <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
  <rtps_protection_kind>ENCRYPT</rtps_protection_kind>
  <topic_access_rules>{rule("rt/open", "false")}{rule("*", "true")}</topic_access_rules>
</domain_rule></domain_access_rules></dds>
""")
    return path


def governance(ks: Path, envs, file: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "ROS_DOMAIN_ID": envs["a"]["ROS_DOMAIN_ID"]}
    subprocess.run([TRACER, "keystore", "governance", ks, file], check=True,
                   capture_output=True, timeout=30, env=env)


def flows(envs, hosts, src: str, dst: str):
    """/open (20 messages) and /secret (1) at once from host ``src`` to host ``dst``; returns
    {topic: (talker, listener)} joined."""
    plan = {"/open": (20, 60, 60), "/secret": (1, 8, 6)}
    listeners = {t: started(pubsub(envs[dst], hosts.host(dst), "listen", "--topic", t,
                                   "--count", str(n), "--timeout", str(lt)))
                 for t, (n, lt, _) in plan.items()}
    talkers = {t: pubsub(envs[src], hosts.host(src), "talk", "--topic", t, "--count", str(n),
                         "--timeout", str(tt), "--linger", "20")
               for t, (n, _, tt) in plan.items()}
    out = {t: (talkers[t].join(), listeners[t].join()) for t in plan}
    for t, (tk, ls) in out.items():
        for line in (tk.stderr + ls.stderr).splitlines():
            if "security:" in line:
                print(t, line)
    return out


def test_an_unauthenticated_peer_uses_only_the_unprotected_topic_when_allowed(tmp_path,
                                                                             unauth_hosts):
    """Host a enforces a governance that allows unauthenticated participants and leaves
    ``rt/open`` without access control; host b runs without security. As a DDS participant
    would, a admits b anonymously: /open flows both ways, /secret neither way (a's ACL refuses
    b's subscription; a's subscription does not take b's publisher)."""
    hosts = unauth_hosts
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a")
    governance(ks, envs, open_governance(tmp_path / "governance.xml", envs, allow=True))
    secure(envs["a"], ks, "/net/a")
    # a to b.
    out = flows(envs, hosts, "a", "b")
    t, r = out["/open"]
    assert t.returncode == 0, t.describe() + "\n" + r.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[f"hello {i}" for i in range(20)]]
    t, r = out["/secret"]
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    assert ("refused the subscription to /secret: refused by the peer: permission denied: "
            "SUBSCRIBE on /secret for an unauthenticated peer") in r.stderr, r.stderr
    a_logs = "".join(p.stderr for pair in out.values() for p in pair[:1])
    assert "security: admitted the peer at 192.0.2.2:" in a_logs, a_logs
    # b to a.
    out = flows(envs, hosts, "b", "a")
    t, r = out["/open"]
    assert t.returncode == 0, t.describe() + "\n" + r.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[f"hello {i}" for i in range(20)]]
    t, r = out["/secret"]
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    lines = [l for l in r.stderr.splitlines() if "security: not taking /secret from " in l]
    assert len(lines) == 1 and "it is not authenticated and rt/secret is access controlled " \
        "for writing" in lines[0], r.stderr
    # Each process of a says once per address that it admitted b's process unauthenticated.
    for p in (r, out["/open"][1]):
        said = [l for l in p.stderr.splitlines() if "security: admitted the peer at" in l]
        assert len(said) == len(set(said)) >= 1, p.stderr


def test_an_unauthenticated_peer_is_refused_when_the_governance_does_not_allow_it(
        tmp_path, unauth_hosts):
    """The same governance with allow_unauthenticated_participants=false: refused in the TLS
    handshake, as with sros2's default governance."""
    hosts = unauth_hosts
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a")
    governance(ks, envs, open_governance(tmp_path / "governance.xml", envs, allow=False))
    secure(envs["a"], ks, "/net/a")
    listener = started(pubsub(envs["b"], hosts.host("b"), "listen", "--topic", "/open",
                              "--count", "1", "--timeout", "8"))
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--topic", "/open", "--count", "1",
               "--timeout", "6", "--linger", "20").join()
    r = listener.join()
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    assert "security: refused the peer at 192.0.2.2" in t.stderr, t.stderr
    assert "peer sent no certificates" in t.stderr, t.stderr
    assert "admitted" not in t.stderr, t.stderr
