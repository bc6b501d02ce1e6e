"""SROS2 conventions on links between hosts (docs/network.md section 5): with
ROS_SECURITY_ENABLE=true, ROS_SECURITY_STRATEGY=Enforce and ROS_SECURITY_KEYSTORE, each process
presents its enclave's certificate and refuses every peer whose certificate does not chain to
the keystore's identity CA. Keystores are made by ``tracer keystore`` (``ros2 security`` is not
in the wheels). Two hosts as in test_network.py (ros_tests/two_hosts.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import harness
from two_hosts import hosts, pubsub, started, tracer_envs  # noqa: F401  (hosts: fixture)
from worker_output import json_line

TRACER = harness.target_dir() / "release" / "tracer"


def keystore(path: Path, *enclaves: str) -> Path:
    subprocess.run([TRACER, "keystore", "create", path], check=True, capture_output=True,
                   timeout=30)
    for e in enclaves:
        subprocess.run([TRACER, "keystore", "enclave", path, e], check=True, capture_output=True,
                       timeout=30)
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


def test_authenticated_pair_talks(tmp_path, hosts):
    ks = keystore(tmp_path / "ks", "/net/a", "/net/b")
    envs = tracer_envs(tmp_path)
    secure(envs["a"], ks, "/net/a")
    secure(envs["b"], ks, "/net/b")
    t, r = exchange(envs, hosts, 50, 60, 60)
    assert t.returncode == 0, t.describe() + "\n" + r.describe()
    assert r.returncode == 0, r.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[f"hello {i}" for i in range(50)]]
    assert "security:" not in t.stderr + r.stderr, t.stderr + r.stderr


def test_a_peer_with_a_certificate_of_another_ca_is_refused(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    secure(envs["a"], keystore(tmp_path / "ks1", "/net/a"), "/net/a")
    secure(envs["b"], keystore(tmp_path / "ks2", "/net/b"), "/net/b")
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
    secure(envs["a"], keystore(tmp_path / "ks", "/net/a"), "/net/a")
    # Host b has no keystore: its links are encrypted, not authenticated.
    t, r = exchange(envs, hosts, 1, 8, 6)
    assert t.returncode == 2 and "only 0 of 1 subscriptions matched" in t.stdout, t.describe()
    assert json_line(r.stdout, r.describe())["received"] == [[]]
    assert "security: refused the peer at 192.0.2.2" in t.stderr, t.stderr
    assert "peer sent no certificates" in t.stderr, t.stderr


def test_enforce_without_the_enclave_fails_init_with_a_clear_error(tmp_path, hosts):
    envs = tracer_envs(tmp_path)
    ks = keystore(tmp_path / "ks", "/net/a")
    secure(envs["a"], ks, "/net/a")
    (ks / "enclaves" / "net" / "a" / "key.pem").unlink()
    t = pubsub(envs["a"], hosts.host("a"), "talk", "--count", "1", "--timeout", "5").join(60)
    assert t.returncode != 0, t.describe()
    assert "key.pem" in t.stderr, t.stderr
