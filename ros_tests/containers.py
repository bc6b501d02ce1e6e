"""Containers for the one-host tests of docs/host.md: what ``docker run --network host`` gives
each of several programs, made with the kernel's namespaces and removed on exit.

:class:`Containers` makes one private network namespace (only ``lo``, so nothing the tests do
reaches the machine's own graphs or its network) and, in it, containers that share it and
nothing of the filesystem the middleware could meet in: each has its own mount namespace with
an empty tmpfs on ``/tmp`` and on ``/dev/shm``, its own hostname (UTS namespace) and its own
pid namespace (so pids repeat across containers, each with its pid 1, as in Docker). What a
test needs of the host's ``/tmp`` (the repository and its build when they live there, as in a
CI clone; the test's own ``tmp_path`` for logs and recordings) is bound back at the same path,
as a volume would be; nothing of the middleware lives there. ``XDG_RUNTIME_DIR`` is unset in
:meth:`Containers.env`, so the default rendezvous directory is the per-container
``/tmp/libtracer-<uid>/domain-<id>``.

``spawn(..., netns=containers.box(name))`` runs a program in a container; :meth:`stop` ends one
(every process in it dies with its pid 1) and :meth:`start` brings it back, empty.
Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import harness

# The host's /tmp stays reachable under /mnt while the container's own is mounted over it, for
# the paths bound back; then /mnt is let go.
SETUP = """set -e
hostname "$1"; shift
mount --rbind /tmp /mnt
mount -t tmpfs -o mode=1777 tmpfs /tmp
for keep in "$@"; do
  mkdir -p "$keep"
  mount --rbind "/mnt/${keep#/tmp/}" "$keep"
done
umount -l /mnt
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
echo up
exec sleep 100000
"""


def available() -> bool:
    """Root, and the tools to make the namespaces."""
    return (os.geteuid() == 0 and harness.NetNamespace.available()
            and all(shutil.which(t) for t in ("unshare", "nsenter", "pgrep")))


class Box:
    """One container: ``spawn(..., netns=box)`` enters it. :meth:`start` makes it in the network
    namespace the command prefix ``net`` enters (``[]``: this process's), :meth:`stop` ends it
    (every process in it dies with its pid 1); it can be started again, empty."""

    def __init__(self, name: str, net: list[str] | None = None, keep=()) -> None:
        """``keep``: paths of the host's /tmp to bind back into the container's."""
        self.name = name
        self.net = net or []
        self.keep = [str(p) for p in keep]
        self.holder: subprocess.Popen | None = None
        self.pid1: int | None = None

    def prefix(self) -> list[str]:
        assert self.pid1 is not None, f"container {self.name} is not running"
        return ["nsenter", "-t", str(self.pid1), "-m", "-u", "-n", "-p", "--"]

    def start(self) -> "Box":
        keep = [os.path.realpath(p) for p in self.keep]
        keep = [p for p in keep if p.startswith("/tmp/") and os.path.isdir(p)]
        argv = [*self.net, "unshare", "-m", "-u", "-p", "-f", "--mount-proc",
                "--propagation", "private", "--", "sh", "-c", SETUP, "sh", self.name, *keep]
        self.holder = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, start_new_session=True)
        line = self.holder.stdout.readline().strip() if self.holder.stdout else ""
        if line != "up":
            err = self.holder.stderr.read() if self.holder.stderr else ""
            self.stop()
            raise RuntimeError(f"could not make container {self.name}: {err.strip()}")
        # The container's pid 1 is the shell `unshare -f` forked (by now `sleep`), below the
        # chain of nsenter and unshare.
        deadline = time.monotonic() + 10
        while self.pid1 is None and time.monotonic() < deadline:
            self.pid1 = _sleeper_below(self.holder.pid)
            if self.pid1 is None:
                time.sleep(0.05)
        if self.pid1 is None:
            self.stop()
            raise RuntimeError(f"container {self.name}: its pid 1 was not found")
        return self

    def stop(self) -> None:
        if self.holder is not None:
            for kill in (lambda: os.killpg(self.holder.pid, 9),
                         lambda: self.pid1 is not None and os.kill(self.pid1, 9)):
                try:
                    kill()
                except ProcessLookupError:
                    pass
            self.holder.wait(timeout=10)
        self.holder = None
        self.pid1 = None


class Containers:
    """Containers ``names`` on one private network namespace; a context manager."""

    def __init__(self, names, keep=()) -> None:
        """``keep``: paths under the host's /tmp a test's programs need (the repository and
        its build are added)."""
        self.net = harness.NetNamespace()
        keep = [harness.REPO, harness.target_dir(), *keep]
        self.boxes = {n: Box(n, keep=keep) for n in names}

    def __enter__(self) -> "Containers":
        self.net.__enter__()
        try:
            for box in self.boxes.values():
                box.net = self.net.prefix()
                box.start()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def box(self, name: str) -> Box:
        return self.boxes[name]

    def start(self, name: str) -> None:
        """Start the container ``name`` again, empty."""
        self.boxes[name].start()

    def stop(self, name: str) -> None:
        """End the container ``name``: its pid 1 dies, and with it every process inside."""
        self.boxes[name].stop()

    def env(self, tmp: Path, domain_id: int, extra=None) -> dict[str, str]:
        """rmw_tracer's environment with the default rendezvous (no directory set)."""
        env = harness.tracer_env(tmp, domain_id, extra)
        for var in DEFAULT_RENDEZVOUS:
            env.pop(var, None)
        return env

    def __exit__(self, *exc) -> None:
        for box in self.boxes.values():
            box.stop()
        self.net.__exit__(None, None, None)


# What moves the rendezvous directory away from its per-container default.
DEFAULT_RENDEZVOUS = ("RMW_TRACER_RENDEZVOUS_DIR", "XDG_RUNTIME_DIR")


def _sleeper_below(pid: int) -> int | None:
    """The `sleep` process among the descendants of ``pid`` (host pid)."""
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "sleep":
            return p
        kids = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout.split()
        todo.extend(int(k) for k in kids)
    return None
