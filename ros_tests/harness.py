"""Helpers for tests that run ROS 2 programs over rmw_tracer (or Fast DDS) in separate processes.

Every ROS process of a test runs in its own OS process with an environment built here:

* ``tracer_env(tmp)``: ``LD_PRELOAD`` of ``<target>/release/librmw_tracer.so`` (librcl of the
  wheels is linked straight to librmw_fastrtps_cpp, so the preload is what makes rcl call us),
  ``RMW_IMPLEMENTATION=rmw_tracer``, a private ``RMW_TRACER_RENDEZVOUS_DIR`` and a private
  ``ROS_DOMAIN_ID``, so tests never see each other.
* ``fastdds_env(tmp)``: no preload, ``RMW_IMPLEMENTATION=rmw_fastrtps_cpp``, discovery limited
  to localhost; run its processes inside a :class:`NetNamespace` (loopback only) when the
  machine allows it, so no packet leaves the host.

:func:`spawn` starts a program with captured output in its own process group; :meth:`Proc.join`
waits with a timeout and kills the whole group when it expires; :func:`join_oracle` is that for a
Fast DDS process, which may hang in its teardown after its answer. :func:`compile_c` builds a C
program against the venv's headers and libraries with plain gcc flags.
"""

from __future__ import annotations

import itertools
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]
# The distribution as tools/distro.sh picks it (tools/ros-env exports all three variables).
DISTRO = os.environ.get("ROS_DISTRO") or "jazzy"
VENV = Path(os.environ.get("RMW_TRACER_VENV", str(Path.home() / f".cache/rmw_tracer/venv-{DISTRO}")))
ENTRY_POINTS_FILE = Path(__file__).resolve().parent / "entry_points.txt"

DEFAULT_TIMEOUT = 60.0


# --- locations -------------------------------------------------------------------------------

def target_dir() -> Path:
    """Cargo's target directory (``CARGO_TARGET_DIR``, or ``<repo>/target``, for Kilted
    ``<repo>/target/kilted``)."""
    default = REPO / "target" if DISTRO == "jazzy" else REPO / "target" / DISTRO
    return Path(os.environ.get("CARGO_TARGET_DIR", str(default)))


def tracer_library() -> Path:
    """The release build of ``librmw_tracer.so`` (tools/setup builds it)."""
    return target_dir() / "release" / "librmw_tracer.so"


def entry_points() -> list[str]:
    """The rmw entry point names librmw_tracer.so must export."""
    names = []
    for line in ENTRY_POINTS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.append(line)
    return names


def site_packages() -> Path:
    found = sorted(VENV.glob("lib/python3*/site-packages"))
    if not found:
        raise RuntimeError(f"no site-packages under {VENV}: run tools/setup")
    return found[0]


def venv_python() -> Path:
    return VENV / "bin" / "python"


def _venv_python_libdir() -> str:
    out = subprocess.run(
        [str(venv_python()), "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')"],
        env={**os.environ, "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1"},
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def _venv_python_version() -> str:
    out = subprocess.run(
        [str(venv_python()), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        env={**os.environ, "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1"},
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def ros_library_dirs() -> list[str]:
    """VENV/lib, every site-packages/ros_*.libs, and the directory of the venv's libpython."""
    dirs = [str(VENV / "lib")]
    dirs += [str(p) for p in sorted(site_packages().glob("ros_*.libs")) if p.is_dir()]
    pylib = _venv_python_libdir()
    if pylib:
        dirs.append(pylib)
    return dirs


# --- environments ----------------------------------------------------------------------------

_domain_ids = itertools.count(((os.getpid() * 7) % 100) + 1)


def fresh_domain_id() -> int:
    """A ROS domain id private to this test run (1..232, the valid range for DDS on Linux)."""
    return (next(_domain_ids) % 232) + 1


def _join_path(*parts: Iterable[str] | str | None) -> str:
    seen: list[str] = []
    for part in parts:
        if part is None:
            continue
        items = part.split(os.pathsep) if isinstance(part, str) else list(part)
        for item in items:
            if item and item not in seen:
                seen.append(item)
    return os.pathsep.join(seen)


def ros_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment any ROS program of the venv needs, without choosing the middleware."""
    env = dict(os.environ)
    # What a developer's shell may have set must not reach a test's processes: a stray
    # ROS_STATIC_PEERS turned the network (and its host port) on in a one-host test once.
    for var in ("LD_PRELOAD", "RMW_IMPLEMENTATION", "RMW_TRACER_RENDEZVOUS_DIR", "ROS_DOMAIN_ID",
                "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY", "RMW_TRACER_RECORD",
                "ROS_STATIC_PEERS", "ROS_SECURITY_ENABLE", "ROS_SECURITY_STRATEGY",
                "ROS_SECURITY_KEYSTORE", "ROS_SECURITY_ENCLAVE_OVERRIDE"):
        env.pop(var, None)
    env["LD_LIBRARY_PATH"] = _join_path(ros_library_dirs(), os.environ.get("LD_LIBRARY_PATH"))
    env["AMENT_PREFIX_PATH"] = _join_path([str(VENV)], os.environ.get("AMENT_PREFIX_PATH"))
    env["PATH"] = _join_path([str(VENV / "bin")], os.environ.get("PATH"))
    env["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    env["PYTHONPATH"] = _join_path([str(Path(__file__).resolve().parent)], os.environ.get("PYTHONPATH"))
    if extra:
        env.update(extra)
    return env


def tracer_env(tmp: Path, domain_id: int | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a process on rmw_tracer; processes given the same ``tmp`` see each other."""
    lib = tracer_library()
    if not lib.is_file():
        raise RuntimeError(f"{lib} is missing: run tools/setup (cargo build --release --workspace)")
    rendezvous = Path(tmp) / "rendezvous"
    rendezvous.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = ros_env()
    env["LD_PRELOAD"] = str(lib)
    env["RMW_IMPLEMENTATION"] = "rmw_tracer"
    env["RMW_TRACER_RENDEZVOUS_DIR"] = str(rendezvous)
    env["ROS_DOMAIN_ID"] = str(domain_id if domain_id is not None else fresh_domain_id())
    env["ROS_HOME"] = str(Path(tmp) / "ros_home")
    env["ROS_LOG_DIR"] = str(Path(tmp) / "ros_log")
    if extra:
        env.update(extra)
    return env


def fastdds_env(tmp: Path, domain_id: int | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a process on Fast DDS (the wheels' default), discovery on localhost only."""
    env = ros_env()
    env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_DOMAIN_ID"] = str(domain_id if domain_id is not None else fresh_domain_id())
    env["ROS_HOME"] = str(Path(tmp) / "ros_home")
    env["ROS_LOG_DIR"] = str(Path(tmp) / "ros_log")
    if extra:
        env.update(extra)
    return env


# --- network namespace for Fast DDS ----------------------------------------------------------

class NetNamespace:
    """A private network namespace with only ``lo`` (up), held open by a sleeping process.

    Processes started with ``spawn(..., netns=ns)`` join it through ``nsenter``, so several
    processes share one isolated loopback. Use as a context manager; :meth:`available` says
    whether this machine allows it (root, unshare and nsenter present).
    """

    _available: bool | None = None

    def __init__(self, private_shm: bool = False) -> None:
        """``private_shm``: the namespace's processes also share a mount namespace of their own
        with an empty tmpfs on /dev/shm, so Fast DDS's ``fastrtps_*`` files go with it."""
        self._holder: subprocess.Popen | None = None
        self._private_shm = private_shm

    @classmethod
    def available(cls) -> bool:
        if cls._available is None:
            ok = bool(shutil.which("unshare") and shutil.which("nsenter") and shutil.which("ip"))
            if ok:
                probe = subprocess.run(
                    ["unshare", "-n", "--", "ip", "link", "set", "lo", "up"],
                    capture_output=True, timeout=10,
                )
                ok = probe.returncode == 0
            cls._available = ok
        return cls._available

    def __enter__(self) -> "NetNamespace":
        if self._private_shm:
            argv = ["unshare", "-n", "-m", "--propagation", "private", "--", "sh", "-c",
                    "ip link set lo up && mount -t tmpfs -o mode=1777 tmpfs /dev/shm"
                    " && echo up && exec sleep 100000"]
        else:
            argv = ["unshare", "-n", "--", "sh", "-c", "ip link set lo up && echo up && exec sleep 100000"]
        self._holder = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        line = self._holder.stdout.readline().strip() if self._holder.stdout else ""
        if line != "up":
            err = self._holder.stderr.read() if self._holder.stderr else ""
            self.__exit__(None, None, None)
            raise RuntimeError(f"could not make a network namespace: {err.strip()}")
        return self

    def prefix(self) -> list[str]:
        assert self._holder is not None, "NetNamespace used outside its with-block"
        mount = ["-m"] if self._private_shm else []
        return ["nsenter", "-t", str(self._holder.pid), "-n", *mount, "--"]

    def __exit__(self, *exc) -> None:
        if self._holder is not None:
            self._holder.kill()
            self._holder.wait(timeout=10)
            self._holder = None


# --- processes -------------------------------------------------------------------------------

# The signals whose default action dumps core (signal(7)).
CORE_SIGNALS = {signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGQUIT,
                signal.SIGSEGV, signal.SIGSYS, signal.SIGTRAP}


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    # Where a program spawned with ``core_dump=True`` ran (its core file lands there).
    cwd: Path | None = None
    pid: int | None = None
    _backtraces: str | None = field(default=None, repr=False)

    def backtraces(self) -> str:
        """:func:`crash_backtraces`, read once (the core file goes with the reading)."""
        if self._backtraces is None:
            self._backtraces = crash_backtraces(self)
        return self._backtraces

    def describe(self) -> str:
        state = "timed out and was killed" if self.timed_out else f"exited with {self.returncode}"
        text = (f"$ {shlex.join(self.argv)}\n{state}\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")
        if -self.returncode in CORE_SIGNALS and self.cwd is not None:
            text += f"\n--- backtraces ---\n{self.backtraces()}"
        return text

    def check(self) -> "Result":
        """Raise with the whole output unless the program exited 0 in time."""
        if self.timed_out or self.returncode != 0:
            raise AssertionError(self.describe())
        return self


@dataclass
class Proc:
    """A running program with its output collected in the background."""

    argv: list[str]
    popen: subprocess.Popen
    timeout: float
    cwd: Path | None = None
    _out: list[str] = field(default_factory=list)
    _err: list[str] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)

    def _pump(self, stream, sink: list[str]) -> None:
        for line in iter(stream.readline, ""):
            sink.append(line)
        stream.close()

    def start_pumps(self) -> None:
        for stream, sink in ((self.popen.stdout, self._out), (self.popen.stderr, self._err)):
            t = threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
            t.start()
            self._threads.append(t)

    def output_so_far(self) -> str:
        return "".join(self._out)

    def wait_for_output(self, text: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """Wait until ``text`` appears on stdout (True) or the program ends or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output_so_far():
                return True
            if self.popen.poll() is not None:
                for t in self._threads:
                    t.join(timeout=5)
                return text in self.output_so_far()
            time.sleep(0.02)
        return False

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        """SIGINT to the group, as Ctrl-C would (rclpy shuts down cleanly on it)."""
        try:
            os.killpg(self.popen.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def join(self, timeout: float | None = None) -> Result:
        """Wait for the program; past the timeout the whole process group is killed."""
        remaining = self.timeout if timeout is None else timeout
        timed_out = False
        try:
            self.popen.wait(timeout=max(0.0, remaining))
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
            self.popen.wait(timeout=30)
        for t in self._threads:
            t.join(timeout=10)
        return Result(self.argv, self.popen.returncode, "".join(self._out), "".join(self._err), timed_out,
                      self.cwd, self.popen.pid)


def spawn(argv: Sequence[str | os.PathLike], env: Mapping[str, str], *, cwd: Path | None = None,
          timeout: float = DEFAULT_TIMEOUT, netns: NetNamespace | None = None,
          stdin: str | None = None, core_dump: bool = False) -> Proc:
    """Start ``argv`` in a new process group with stdout and stderr captured. With
    ``core_dump`` (and a ``cwd`` of its own) a crash leaves a core file, and the result's
    :meth:`Result.describe` carries gdb's backtrace of every thread (:func:`crash_backtraces`)."""
    args = [str(a) for a in argv]
    if netns is not None:
        args = netns.prefix() + args
    popen = subprocess.Popen(
        args, env=dict(env), cwd=str(cwd) if cwd else None, text=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    proc = Proc(args, popen, timeout, cwd if core_dump else None)
    if core_dump:
        # Set from here rather than in a preexec_fn (unsafe in a threaded parent); a crash
        # this early, before the program has even imported rclpy, is not what it is for.
        try:
            hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
            resource.prlimit(popen.pid, resource.RLIMIT_CORE, (hard, hard))
        except (OSError, ValueError):
            pass
    proc.start_pumps()
    if stdin is not None and popen.stdin is not None:
        # From a thread, after the pumps run: a child that writes a lot before it reads all of
        # its input must not deadlock against us, and one that exits early must not raise.
        def feed(pipe=popen.stdin, data=stdin):
            try:
                pipe.write(data)
                pipe.close()
            except (BrokenPipeError, OSError):
                pass
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        proc._threads.append(feeder)
    return proc


def _core_file(result: Result) -> Path | None:
    """The core file of a crashed program, as the kernel's ``core_pattern`` names it: a
    relative pattern is in the program's cwd, an absolute one in its directory with the pid in
    the name; a pattern piping to a program (systemd-coredump, apport) leaves none here."""
    try:
        pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError:
        return None
    if pattern.startswith("|") or result.cwd is None:
        return None
    if pattern.startswith("/"):
        found = [f for f in Path(pattern).parent.glob("*") if str(result.pid) in f.name]
    else:
        found = sorted(result.cwd.glob(Path(pattern).name.split("%")[0] + "*"))
    return found[0] if found else None


def crash_backtraces(result: Result) -> str:
    """gdb's backtrace from the core file of a program that died on a signal: the crashing
    thread's after a line ``crashing thread:``, then every thread's after ``all threads:`` (the
    core is removed after). A crash in CI is rare and cannot be rerun: this is its record."""
    core = _core_file(result)
    if core is None:
        return "(no core file: core_pattern pipes elsewhere, or RLIMIT_CORE stopped it)"
    if shutil.which("gdb") is None:
        return f"(core file {core}: gdb is not installed)"
    try:
        out = subprocess.run(
            ["gdb", "-batch", "-nx", "-ex", "echo crashing thread:\\n", "-ex", "bt 40",
             "-ex", "echo all threads:\\n", "-ex", "thread apply all bt 30",
             shutil.which(result.argv[0]) or result.argv[0], str(core)],
            capture_output=True, text=True, timeout=120)
        text = "\n".join(line for line in out.stdout.splitlines()
                         if not line.startswith(("[New LWP", "[Thread debugging", "Using host")))
    except subprocess.TimeoutExpired:
        text = "(gdb timed out)"
    finally:
        core.unlink(missing_ok=True)
    return text[:30000]


def run(argv: Sequence[str | os.PathLike], env: Mapping[str, str], **kw) -> Result:
    """Spawn and join: the finished program's :class:`Result` (not checked)."""
    timeout = kw.pop("timeout", DEFAULT_TIMEOUT)
    return spawn(argv, env, timeout=timeout, **kw).join()


def run_oracle(argv: Sequence[str | os.PathLike], env: Mapping[str, str], answered: str,
               **kw) -> Result:
    """``run`` for a Fast DDS program, joined with :func:`join_oracle` (checked)."""
    return join_oracle(spawn(argv, env, **kw), answered)


def spawn_python(script: str | Path, args: Sequence[str] = (), *, env: Mapping[str, str], **kw) -> Proc:
    """Run a Python script (a path, or source text) with the interpreter of the venv ``env``
    names in ``RMW_TRACER_VENV`` (another distribution's, for test_kilted_mixed.py), else
    this one's."""
    python = Path(env["RMW_TRACER_VENV"]) / "bin" / "python" if "RMW_TRACER_VENV" in env else venv_python()
    if isinstance(script, Path):
        argv = [str(python), str(script), *args]
    else:
        argv = [str(python), "-c", script, *args]
    return spawn(argv, env, **kw)


def join_all(procs: Iterable[Proc], timeout: float | None = None) -> list[Result]:
    """Join every process (each gets the same deadline); check the results yourself."""
    procs = list(procs)
    deadline = None if timeout is None else time.monotonic() + timeout
    results = []
    for p in procs:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        results.append(p.join(remaining))
    return results


def join_oracle(proc: Proc, answered: str, timeout: float | None = None) -> Result:
    """``join`` for a Fast DDS process (the oracle) that has given its whole answer once
    ``answered`` is on its stdout. Fast DDS now and then gives that answer and then hangs in its
    own teardown until it is killed: seen in clean CI runs of 2026-12-04, a QoS-pair
    subscription with its JSON line complete, and a content-filter publisher after its last
    batch. Such a run is taken as it is, with a line saying so; its exit is Fast DDS's business.
    A hang before the answer, or any other exit status, still fails."""
    r = proc.join(timeout)
    if r.timed_out and answered in r.stdout:
        print(f"oracle: Fast DDS hung after its answer and was killed: {shlex.join(r.argv[-6:])}")
        return r
    assert r.returncode == 0 and not r.timed_out, r.describe()
    return r


# --- C programs ------------------------------------------------------------------------------

def ros_include_dirs() -> list[str]:
    """Every ``VENV/include/<pkg>`` (the isolated layout) plus ``VENV/include``."""
    inc = VENV / "include"
    dirs = [str(d) for d in sorted(inc.iterdir()) if d.is_dir() and (d / d.name).is_dir()]
    dirs.append(str(inc))
    return dirs


# librmw_fastrtps_cpp is what the wheels' librcl is linked to, so a program that calls an rmw_*
# entry point itself links it too; under LD_PRELOAD the symbols resolve to librmw_tracer.so first.
CORE_LIBS = ("rcl", "rmw", "rmw_fastrtps_cpp", "rcutils", "rosidl_runtime_c", "rosidl_typesupport_c",
             "rosidl_typesupport_introspection_c")


def compile_c(source: str | Path, out: Path, *, msgs: Sequence[str] = (),
              libs: Sequence[str] = CORE_LIBS, extra_flags: Sequence[str] = (),
              link_python: bool = True) -> Path:
    """Compile a C program (a path, or source text) against the venv into ``out``.

    ``msgs`` are interface packages (``std_msgs``, ``test_msgs``) whose C generator and type
    support libraries are linked. librcl of the wheels needs libpython, hence ``link_python``.
    Plain gcc flags: ``-I`` every venv include dir, ``-L``/``-rpath-link`` every library dir.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(source, Path):
        src = source
    else:
        src = out.with_suffix(".c")
        src.write_text(source)
    cc = os.environ.get("CC", "gcc")
    argv = [cc, "-std=gnu11", "-O1", "-g", "-Wall", "-Werror=implicit-function-declaration",
            str(src), "-o", str(out)]
    argv += [f"-I{d}" for d in ros_include_dirs()]
    libdirs = ros_library_dirs()
    argv += [f"-L{d}" for d in libdirs]
    argv += [f"-Wl,-rpath-link,{d}" for d in libdirs]
    argv += list(extra_flags)
    for m in msgs:
        argv += [f"-l{m}__rosidl_generator_c", f"-l{m}__rosidl_typesupport_c"]
    argv += [f"-l{lib}" for lib in libs]
    if link_python:
        # The program never calls Python itself, so --as-needed would drop it; the wheels'
        # *__rosidl_generator_py libraries that librcl pulls in do need it.
        argv += ["-Wl,--no-as-needed", f"-lpython{_venv_python_version()}", "-Wl,--as-needed"]
    argv += ["-ldl", "-lpthread"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise AssertionError(f"C compile failed:\n$ {shlex.join(argv)}\n{res.stdout}\n{res.stderr}")
    return out


def mkdtemp(prefix: str = "rmw_tracer_") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


__all__ = [
    "REPO", "VENV", "DEFAULT_TIMEOUT", "NetNamespace", "Proc", "Result", "compile_c",
    "entry_points", "fastdds_env", "fresh_domain_id", "join_all", "join_oracle", "ros_env",
    "ros_include_dirs", "ros_library_dirs", "run", "run_oracle", "site_packages", "spawn",
    "spawn_python", "target_dir", "tracer_env", "tracer_library", "venv_python", "mkdtemp",
]

if __name__ == "__main__":  # a quick look at what the harness resolves
    print("venv:", VENV)
    print("tracer:", tracer_library(), tracer_library().is_file())
    print("libs:", *ros_library_dirs(), sep="\n  ")
    print("netns:", NetNamespace.available())
    sys.exit(0)
