"""The README's first command (issue 3, item 8): `tools/demo` runs a talker and a listener in two
processes over rmw_tracer, and the listener prints every message, in order."""

from __future__ import annotations

import re

import harness


def _run_demo(*args: str, count: int = 10) -> harness.Result:
    env = harness.ros_env({"RMW_TRACER_SKIP_BUILD": "1", "DEMO_COUNT": str(count)})
    return harness.run([harness.REPO / "tools" / "demo", *args], env, cwd=harness.REPO, timeout=180)


def _heard(out: str) -> list[int]:
    return [int(n) for n in re.findall(r"^\[listener\] .*I heard: 'Hello World: (\d+)'$", out, re.M)]


def test_demo_over_rmw_tracer_delivers_every_message_in_order():
    res = _run_demo(count=10).check()
    assert "over rmw_tracer" in res.stdout
    assert re.search(r"^\[talker\] .*middleware: rmw_tracer$", res.stdout, re.M), res.describe()
    assert _heard(res.stdout) == list(range(1, 11)), res.describe()
    assert "tools/demo: ok, the listener received all 10 messages over rmw_tracer" in res.stdout


def test_demo_rejects_an_unknown_option():
    res = _run_demo("--no-such-option")
    assert res.returncode == 2
    assert "unknown option --no-such-option" in res.stderr
