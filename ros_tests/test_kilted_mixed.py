"""A Jazzy node and a Kilted node on one graph (issue 29): the wire does not depend on the
distribution, so a talker of one (its venv, its build of librmw_tracer.so) reaches a listener
of the other, on one host and across two hosts (network namespaces joined by a veth pair,
ROS_STATIC_PEERS; two_hosts.py). std_msgs/msg/String has the same type hash in both.

Each side's environment is what ``tools/ros-env`` prints for its distribution (the venv, its
libraries first and the other venv's dropped, its target directory: target/ for Jazzy,
target/kilted for Kilted), on top of the harness's rmw_tracer environment. The test needs
both venvs and both builds (``tools/test`` runs it in its Kilted step) and is skipped, with
the reason, where one is missing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import harness
from test_network import talker_to_listener
from two_hosts import ADDR, hosts  # noqa: F401  (hosts: fixture)

COUNT = 200


def distro_env(distro: str, base: dict[str, str]) -> dict[str, str]:
    """``base`` (an rmw_tracer environment) for ``distro``: the lines of ``tools/ros-env``
    for it applied, and its own build preloaded."""
    env = {k: v for k, v in base.items() if k not in ("RMW_TRACER_VENV", "CARGO_TARGET_DIR")}
    env["ROS_DISTRO"] = distro
    out = subprocess.run(
        ["bash", "-c", 'eval "$(tools/ros-env)" && env -0'], cwd=harness.REPO, env=env,
        capture_output=True, timeout=60,
    )
    if out.returncode != 0:
        pytest.skip(f"no {distro} venv: {out.stderr.decode().strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.decode().split("\0") if "=" in line)
    venv = Path(env["RMW_TRACER_VENV"])
    assert list(venv.glob(f"lib/python3*/site-packages/ros_{distro}_*.dist-info")), \
        f"{venv} holds no ros-{distro} wheels"
    other = [d for d in env["LD_LIBRARY_PATH"].split(":") if "/venv-" in d and not d.startswith(str(venv))]
    assert other == [], f"another venv on the {distro} side's loader path: {other}"
    lib = Path(env.get("CARGO_TARGET_DIR") or harness.REPO / "target") / "release" / "librmw_tracer.so"
    if not lib.is_file():
        pytest.skip(f"no {distro} build at {lib} (ROS_DISTRO={distro} tools/setup builds it)")
    env["LD_PRELOAD"] = str(lib)
    return env


class OneHost:
    """Both ends on this host, for ``talker_to_listener`` (which asks for a host by name)."""

    def host(self, _name: str) -> None:
        return None


def _check(got: dict) -> None:
    """Every message of the talker (test_network's 200, reliable, depth 1000), in order."""
    assert got["received"] == [[f"hello {i}" for i in range(COUNT)]]
    assert got["matched"] == [1]


@pytest.mark.parametrize("talker,listener", [("jazzy", "kilted"), ("kilted", "jazzy")])
def test_talker_and_listener_of_two_distributions_on_one_host(tmp_path, talker, listener):
    base = harness.tracer_env(tmp_path)
    envs = {"a": distro_env(talker, base), "b": distro_env(listener, base)}
    _check(talker_to_listener(envs, OneHost(), COUNT))


def test_jazzy_talker_on_host_a_kilted_listener_on_host_b(tmp_path, hosts):
    domain = harness.fresh_domain_id()
    envs = {
        h: distro_env(distro, harness.tracer_env(tmp_path / h, domain,
                                                 {"ROS_STATIC_PEERS": ADDR[peer]}))
        for h, distro, peer in (("a", "jazzy", "b"), ("b", "kilted", "a"))
    }
    _check(talker_to_listener(envs, hosts, COUNT))


def test_std_msgs_string_has_one_type_hash_in_both_distributions(tmp_path):
    # What lets the two match at all: a subscription takes writers of its own type hash
    # (RIHS01, from the type description each venv installs beside the message).
    hashes = {}
    for distro in ("jazzy", "kilted"):
        venv = Path(distro_env(distro, harness.tracer_env(tmp_path / distro))["RMW_TRACER_VENV"])
        described = json.loads((venv / "share/std_msgs/msg/String.json").read_text())
        hashes[distro] = described["type_hashes"][0]["hash_string"]
    assert hashes["jazzy"] == hashes["kilted"], hashes
