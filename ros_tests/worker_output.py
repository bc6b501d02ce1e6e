"""What the rmw tests read from their worker processes: each worker prints its result as one
JSON object on a line of its own (the last such line wins); every other line is progress."""

from __future__ import annotations

import json
import re


def json_line(out: str, describe: str | None = None) -> dict:
    """The last JSON object line of a worker's stdout; fails the test when there is none, saying
    ``describe`` (the process's description) or else the output."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, describe or out
    return json.loads(lines[-1])


def oracle_cases(out: str, describe: str) -> dict[str, str]:
    """The "case <name> rc=... err=..." lines of an oracle program (c/oracle.h) that ran to its
    "done" line, as {name: "rc=... err=..."}. How it exited is the caller's check."""
    assert out.rstrip().endswith("done"), describe
    return dict(re.findall(r"^case (.+?) (rc=\S+ err=\d)$", out, re.M))
