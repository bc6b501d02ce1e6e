"""What the rmw tests read from their worker processes: each worker prints its result as one
JSON object on a line of its own (the last such line wins); every other line is progress."""

from __future__ import annotations

import json


def json_line(out: str, describe: str | None = None) -> dict:
    """The last JSON object line of a worker's stdout; fails the test when there is none, saying
    ``describe`` (the process's description) or else the output."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, describe or out
    return json.loads(lines[-1])
