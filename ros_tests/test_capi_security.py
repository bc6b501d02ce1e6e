"""SROS2 in libtracer's C API (issue 30, docs/capi.md "Security"): a C program reads
ROS_SECURITY_* with rcl's rules and enforces them with rmw_tracer's own code
(``tracer_recording::security``): its links are authenticated by its enclave's certificate, what
it creates is checked against its permissions, its vertices are guarded by the grants peers
send, and it takes no data from a peer whose grant does not allow publishing. The keystores and
helpers are test_network_security.py's (``tracer keystore``); the hosts two network namespaces.
"""

from __future__ import annotations

import pytest

import harness
from test_capi import capi_env, programs  # noqa: F401  (programs: fixture)
from test_capi_hosts import c_to_rclpy, rclpy_to_c
from test_network_security import a_may_not_publish_chatter, keystore, permission, policy, secure
from two_hosts import _fixture, pubsub, started, tracer_envs
from worker_output import json_line


@pytest.fixture
def hosts():
    """Two hosts whose namespaces are named ``capisec-...`` (removed when the test ends)."""
    yield from _fixture(None, "capisec")


def test_c_and_rclpy_authenticated_across_hosts_both_ways(tmp_path, hosts, procs, programs):
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", envs, "/net/a", "/net/b")
    secure(envs["a"], ks, "/net/a")
    secure(envs["b"], ks, "/net/b")
    c_to_rclpy(procs, envs, hosts, programs, "/chatter")
    rclpy_to_c(procs, envs, hosts, programs, "/chatter")


def test_a_c_peer_of_another_keystore_gets_nothing(tmp_path, hosts, procs, programs):
    """The C subscriber's certificate is of another CA: the rclpy publisher's host refuses its
    link, so nothing arrives, and the C side says why on stderr."""
    envs = tracer_envs(tmp_path)
    secure(envs["a"], keystore(tmp_path / "ks1", envs, "/net/a"), "/net/a")
    secure(envs["b"], keystore(tmp_path / "ks2", envs, "/net/b"), "/net/b")
    sub = harness.spawn([programs["subscriber"], "/chatter", "1", "6"], capi_env(envs["b"]),
                        netns=hosts.host("b"), timeout=60)
    procs.append(sub)
    started(sub)
    talker = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "1", "--timeout", "5")
    t = talker.join()
    r = sub.join()
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert r.returncode == 2 and "msg: " not in r.stdout, r.describe()
    assert "[libtracer] security: " in r.stderr, r.stderr


def test_enforced_with_a_missing_key_the_context_is_refused_naming_it(tmp_path, programs):
    env = capi_env(harness.tracer_env(tmp_path, None))
    ks = keystore(tmp_path / "ks", {"a": env}, "/net/a")
    secure(env, ks, "/net/a")
    (ks / "enclaves" / "net" / "a" / "key.pem").unlink()
    r = harness.spawn([programs["publisher"], "/chatter", "1", "1"], env, timeout=30).join()
    assert r.returncode != 0, r.describe()
    assert "context: " in r.stderr and "key.pem" in r.stderr, r.stderr
    assert "security is enforced and the enclave cannot be loaded" in r.stderr, r.stderr
    # No such enclave: refused under Enforce, naming it; run without security when permissive.
    secure(env, ks, "/net/none")
    r = harness.spawn([programs["publisher"], "/chatter", "1", "1"], env, timeout=30).join()
    assert r.returncode != 0 and "no enclave `/net/none`" in r.stderr, r.describe()
    env["ROS_SECURITY_STRATEGY"] = "Permissive"
    r = harness.spawn([programs["publisher"], "/chatter", "1", "1"], env, timeout=30).join()
    assert r.returncode == 0, r.describe()
    assert "no enclave `/net/none`" in r.stderr and "running without security" in r.stderr


def test_a_topic_its_permissions_deny_is_refused_at_create(tmp_path, programs):
    env = capi_env(harness.tracer_env(tmp_path, None))
    ks = keystore(tmp_path / "ks", {"a": env}, "/net/a")
    permission(ks, {"a": env}, "/net/a", policy(tmp_path / "a.xml", "/net/a", """
    <topics publish="ALLOW" subscribe="ALLOW"><topic>chatter</topic></topics>
    <topics publish="DENY" subscribe="DENY"><topic>secret</topic></topics>"""))
    secure(env, ks, "/net/a")
    r = harness.spawn([programs["publisher"], "/secret", "1", "1"], env, timeout=30).join()
    assert r.returncode != 0, r.describe()
    assert "TRACER_ERR_PERMISSION_DENIED" in r.stderr or "permission" in r.stderr, r.stderr
    assert "security: permission denied: enclave CN=/net/a may not publish rt/secret" \
        in r.stderr, r.stderr
    r = harness.spawn([programs["subscriber"], "/secret", "1", "1"], env, timeout=30).join()
    assert "may not subscribe rt/secret" in r.stderr, r.describe()
    # The allowed topic of the same enclave is made (nobody listens: one message, then done).
    r = harness.spawn([programs["publisher"], "/chatter", "1", "1"], env, timeout=30).join()
    assert r.returncode == 0, r.describe()
    # A namespace subscription takes topics no permission named: refused, saying why.
    r = harness.spawn([programs["namespace_subscriber"], "/", "1", "1"], env, timeout=30).join()
    assert r.returncode != 0, r.describe()
    assert "namespace subscription under SROS2" in r.stderr, r.stderr


def test_a_c_subscriber_takes_nothing_from_a_peer_that_may_not_publish(tmp_path, hosts, procs,
                                                                       programs):
    """a's grant (which it sends) denies publishing /chatter; a's governance leaves writing
    /chatter uncontrolled, so a's own check passes; the C subscriber on b (whose keystore has no
    /net/a) makes no edge to a's publisher, from the grant a sent, and says so once."""
    envs = a_may_not_publish_chatter(tmp_path)
    sub = harness.spawn([programs["subscriber"], "/chatter", "1", "8"], capi_env(envs["b"]),
                        netns=hosts.host("b"), timeout=60)
    procs.append(sub)
    started(sub)
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "1", "--timeout", "6").join()
    r = sub.join()
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert r.returncode == 2 and "msg: " not in r.stdout, r.describe()
    want = "security: not taking /chatter from "
    lines = [line for line in r.stderr.splitlines() if want in line]
    assert len(lines) == 1, r.stderr
    assert "its enclave CN=/net/a may not publish rt/chatter (the permissions it sent" \
        in lines[0], r.stderr
