"""This process's mappings of tracer-shm pool segments, read from ``/proc/self/maps`` (tracer-shm
names its memfds "tracer-shm"): what the shared-memory tests look at to tell whether a message
came as a reference. Imported by the workers (and by test scripts run with ``-c``, which put
this directory on ``sys.path``); needs nothing of ROS."""

from __future__ import annotations


def segments() -> list[tuple[str, int]]:
    """(permissions, size in bytes) of each mapping: "rw-s" for our own pool, "r--s" for a
    peer's."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            if "memfd:tracer-shm" in line:
                span, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                out.append((perms, hi - lo))
    return out


def permissions() -> list[str]:
    """The distinct permissions of those mappings, sorted."""
    return sorted({perms for perms, _ in segments()})
