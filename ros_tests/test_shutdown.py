"""Ctrl-C and shutdown as rclpy expects (issue 9, "Shutdown and Ctrl-C"): real rclpy processes in
the ROS demos' pattern (shutdown_node.py) stopped by SIGINT at many moments after they spin,
publishers and subscribers, single- and multi-threaded executors, a launch-style process group,
twenty nodes at random moments; each must exit 0 with nothing on stderr. And the rmw API around rmw_shutdown, and for bad arguments, called from C
(c/lifecycle_oracle.c) on rmw_tracer and on Fast DDS, compared call by call."""

from __future__ import annotations

import random
import re
import signal
import tempfile
import time
from pathlib import Path

import pytest

import harness
from worker_output import oracle_cases

HERE = Path(__file__).resolve().parent
NODE = HERE / "shutdown_node.py"
SPIN_TIMEOUT = 60.0


def _start(env, args, netns=None) -> harness.Proc:
    # Each node runs in a directory of its own with core dumps on: a crash's description then
    # carries gdb's backtrace of every thread (harness.crash_backtraces), which is all a rare
    # crash in CI leaves to go on.
    cwd = Path(tempfile.mkdtemp(prefix=f"{args[-1]}.", dir=Path(env["ROS_HOME"]).parent))
    return harness.spawn([harness.venv_python(), NODE, *args], env, netns=netns, timeout=120,
                         cwd=cwd, core_dump=True)


def _sigint_at(procs: list[harness.Proc], delays: list[float]) -> list[harness.Result]:
    """Wait until every process spins, then SIGINT each at its delay after that moment."""
    for p in procs:
        assert p.wait_for_output("spinning", timeout=SPIN_TIMEOUT), \
            p.join(timeout=0).describe() if p.popen.poll() is not None else "never spun"
    t0 = time.monotonic()
    for delay, p in sorted(zip(delays, procs), key=lambda dp: dp[0]):
        time.sleep(max(0.0, t0 + delay - time.monotonic()))
        p.terminate()
    return harness.join_all(procs, timeout=90)


# Races inside rclpy itself, which no middleware can prevent and Fast DDS shows as well (3 in 100
# demo nodes of the twenty-node run on Fast DDS, 0 in 100 on rmw_tracer, measured on 2 cores):
# a SIGINT that lands while Python code of the executor runs. Each is named by its text; a
# process whose stderr has one of them and nothing of ours is excused, nothing else is.
RCLPY_RACES = {
    # rcl_publish's own context check, from a timer callback already running on a
    # MultiThreadedExecutor worker when the signal thread shut the context down (no rmw call).
    "Failed to publish: publisher's context is invalid",
    # KeyboardInterrupt raised inside pybind11's argument conversion of rclpy's take_message.
    "Unable to convert call argument",
    # rclpy's Task interrupted between creating its coroutine and storing its result.
    "'Task' object has no attribute '_exception'",
    # The same Task interrupted before its handler coroutine ever ran (seen once in tools/test).
    "coroutine 'Executor._make_handler.<locals>.handler' was never awaited",
    # The same for a subscription's callback coroutine: the SIGINT's KeyboardInterrupt raised
    # between its creation and its first step (seen in sub/single nodes on Kilted, session 35,
    # and once in session 33).
    "coroutine 'await_or_execute' was never awaited",
    # A MultiThreadedExecutor worker still in a callback when the main thread's destroy_node()
    # asked for the entity's destruction.
    "cannot use Destroyable because destruction was requested",
    # rclpy's signal thread walks its list of executors' SIGINT guard conditions with no lock
    # (signal_handler.cpp, trigger_guard_conditions) while the main thread, already out of
    # spin by the KeyboardInterrupt, finalizes its executor's guard condition: rcl then finds
    # the guard condition's impl gone and fails before any rmw call (guard_condition.c), and
    # rclpy logs it and goes on (exit 0). The same walk over freed memory was the SIGSEGV that
    # rmw_wait's settle (guard.rs) closes for executors waiting in rmw_wait; this one is out of
    # the middleware's reach (seen once in 1,500 nodes at load 5 to 10).
    "rcl_trigger_guard_condition() failed: guard condition implementation is invalid",
}
# What would be ours (or the race of rmw_shutdown against rclpy's try_shutdown, rclpy#1352):
# never excused.
# (Our log lines start "[rmw_tracer]", our error strings "rmw_tracer: "; the venv's path holds
# "rmw_tracer/", so the bare word cannot be the mark.)
OURS = ("[rmw_tracer]", "rmw_tracer: ", "rmw_create", "rmw_destroy", "rmw_wait", "rmw_shutdown",
        "rcl_shutdown already called", "error state is being overwritten", "has been shut down",
        "failed to initialize wait set")


# rclpy#1352 itself, in one exact place: Context.try_shutdown checks ok() and then calls
# shutdown() under a lock that the signal thread's shutdown does not take. When the signal
# thread's whole rcl_shutdown lands between the two, rcl's own validity check (before any rmw
# call) raises "already called". Since rmw_shutdown became one atomic store the window is the
# few Python bytecodes between the two lines of try_shutdown, which no middleware can close
# (seen once in 20 nodes at load 8 on this machine, with five test runs beside it; never on
# a quiet machine). Only this traceback, ending the output, is excused: the same error raised
# from anywhere else, or with anything of ours beside it, is ours.
TRY_SHUTDOWN_RACE = re.compile(
    r'File "[^"]*/rclpy/context\.py", line \d+, in try_shutdown\n'
    r'\s+self\.__context\.shutdown\(\)\n'
    r'rclpy\._rclpy_pybind11\.RCLError: failed to shutdown: rcl_shutdown already called on the '
    r'given context, at [^\n]*\n?$')


# rcl's own refusal of a wait set once rclpy's signal handler has shut the context down
# (wait.c, before any rmw call): the last line of both shapes below that end on it.
WAIT_SET_INVALID = (
    r'rclpy\._rclpy_pybind11\.RCLError: failed to initialize wait set: the given context is '
    r'not valid, either rcl_init\(\) was not called or rcl_shutdown\(\) was called\., at '
    r'[^\n]*/rcl/wait\.c:\d+')

# A SIGINT swallowed by Python: the KeyboardInterrupt is raised while the interpreter runs a
# finalizer (rclpy's Future.__del__), where Python can only print "Exception ignored" and go
# on, so spin goes on too; rclpy's signal handler has meanwhile shut the context down, and the
# executor's next wait set fails rcl's own context check (wait.c, before any rmw call) and ends
# the process with exit 1. Fast DDS runs the same Python (seen once in 12 runs of the 25
# nodes of the twenty-node and sub-single tests at load 4 to 8). Only this shape is excused:
# the ignored KeyboardInterrupt first and this traceback ending the output; a wait-set failure
# of any other kind, or without the swallowed SIGINT before it, stays ours (OURS).
SWALLOWED_SIGINT = re.compile(
    r'^Exception ignored in: <function Future\.__del__ at 0x[0-9a-f]+>\n'
    r'(?:.*\n)*?KeyboardInterrupt: \n'
    r'Traceback \(most recent call last\):\n(?:  .*\n)+'
    + WAIT_SET_INVALID + r'\n?$')


# The same SIGINT seen from the other side: rclpy's signal handler has shut the context down
# and the executor's next wait set fails rcl's own context check (wait.c, no rmw call), so the
# process ends on that RCLError with exit 1; the KeyboardInterrupt of that SIGINT is raised
# while Python prints the RCLError's traceback, Python's printing fails, and all it can write
# is its fallback: a dump of the exception object and "lost sys.stderr" (pythonrun.c; the shape
# is Python's for any exception whose printing is interrupted, checked with a stderr whose
# write raises KeyboardInterrupt). Seen once, in a sub/single node of the twenty-node test at
# load 4 to 8. Only the whole output in exactly this shape is excused.
INTERRUPTED_PRINT = re.compile(
    r'^object address  : 0x[0-9a-f]+\n'
    r'object refcount : \d+\n'
    r'object type     : 0x[0-9a-f]+\n'
    r'object type name: (?:rclpy\._rclpy_pybind11\.)?RCLError\n'
    r"object repr     : RCLError\('failed to initialize wait set: the given context is not "
    r'valid, either rcl_init\(\) was not called or rcl_shutdown\(\) was called\., at '
    r"[^\n']*/rcl/wait\.c:\d+'\)\n"
    r'lost sys\.stderr\n?$')

# The same race with nothing before it: rclpy's signal thread shut the context down while the
# executor, past its context check, was building its next wait set, and rcl_wait_set_init's
# own context check (wait.c, before any rmw call) ended the process with exit 1 before Python
# had raised the KeyboardInterrupt of that SIGINT. rcl_shutdown is the only thing that makes a
# context invalid and at that moment only rclpy's signal thread calls it, so this shape cannot
# be the middleware's. Measured with the SIGINT stress of session 34 (2 cores, three busy
# loops, nodes of every kind): Fast DDS 102 of 540 nodes (19 %), rmw_tracer 87 of 1,980 (4 %);
# under no extra load it ended 2 of 4 runs of the twenty-node test on Kilted (session 35).
# Only this traceback, whole, is excused: the innermost frame is rclpy's WaitSet construction
# in _wait_for_ready_callbacks and the error is rcl's context check.
WAIT_SET_RACE = re.compile(
    r'Traceback \(most recent call last\):\n(?:  .*\n)+?'
    r'  File "[^"]*/rclpy/executors\.py", line \d+, in _wait_for_ready_callbacks\n'
    r'    wait_set = _rclpy\.WaitSet\(\n(?: +\^+\n)?'
    + WAIT_SET_INVALID + r'\n')

SIGINT_IN_FINALLY = re.compile(
    r'\nDuring handling of the above exception, another exception occurred:\n\n'
    r'Traceback \(most recent call last\):\n(?:  .*\n)+KeyboardInterrupt\n')

# The SIGINT's KeyboardInterrupt raised by Python only after the program's own code has ended:
# spin returned, the demo's finally ran destroy_node() and try_shutdown() without an error, and
# the interpreter, joining the MultiThreadedExecutor's worker threads at exit (threading's
# _shutdown, concurrent.futures' _python_exit), raised it there and could only print "Exception
# ignored"; exit 0. No rmw call runs on the main thread at that point and the middleware runs
# no Python, so it cannot be the raiser; which of Python's paths delivered the interrupt that
# late is not known. Seen once (pub/multi, the CI run of 2026-12-06 on 2d54426); not again in
# 2,735 pub/multi nodes on rmw_tracer nor 2,480 on Fast DDS, run side by side (this test's
# moments, then random ones under three busy loops). Only the whole output in this shape is
# excused: every frame is threading's or concurrent.futures', and it ends on the bare
# KeyboardInterrupt.
INTERRUPTED_EXIT = re.compile(
    r"^Exception ignored in: <module 'threading' from '[^'\n]*/threading\.py'>\n"
    r'Traceback \(most recent call last\):\n'
    r'(?:  File "[^"\n]*/(?:threading|concurrent/futures/thread)\.py", line \d+, in \w+\n'
    r'(?:    .*\n)+)+'
    r'KeyboardInterrupt: ?\n?$')

# Races whose whole output is one exact shape, ending the process with exit 1: the wait-set
# failure is the only line of OURS they may hold (it is rcl's own check in them).
EXIT_1_SHAPES = (SWALLOWED_SIGINT, INTERRUPTED_PRINT)


# rclpy's list walk of the guard conditions above (RCLPY_RACES, "guard condition
# implementation is invalid") ending on memory that is no guard condition at all: the signal
# thread, a std::thread of rclpy's that never runs Python, reads the freed list or a freed
# guard condition and rcl_trigger_guard_condition (or the rmw it calls with what it read)
# faults. Excused only on the backtrace of the crashing thread (harness.crash_backtraces):
# rcl_trigger_guard_condition called from rclpy's extension, on a thread with no Python frame,
# faulting in rcl itself or in our reading of the handle rcl passed (rmw_trigger_guard_condition
# looking up what is no guard condition of ours). A fault deeper in our trigger stays ours.
def _signal_walk_crash(r: harness.Result) -> bool:
    if r.returncode != -signal.SIGSEGV:
        return False
    crashing = r.backtraces().partition("crashing thread:")[2].partition("all threads:")[0]
    below_handler = crashing.partition("<signal handler called>")[2] or crashing
    frames = re.findall(r"^#\d+ .*$", below_handler, re.M)
    trigger = [i for i, f in enumerate(frames) if " rcl_trigger_guard_condition " in f]
    if not trigger or any("_PyEval_EvalFrame" in f or "PyObject_" in f for f in frames):
        return False
    faulted_in = frames[0]
    return any("_rclpy_pybind11" in f for f in frames[trigger[0] + 1:]) and (
        "/librcl.so" in faulted_in or "rmw_tracer::boundary::handle::" in faulted_in)


def _excused(r: harness.Result) -> bool:
    if r.timed_out:
        return False
    if r.returncode == 0 and INTERRUPTED_EXIT.match(r.stderr):
        return True
    if _signal_walk_crash(r):
        return not any(mark in r.stderr for mark in OURS)
    if r.returncode == 1 and any(shape.match(r.stderr) for shape in EXIT_1_SHAPES) and not any(
            mark in r.stderr for mark in OURS if mark != "failed to initialize wait set"):
        return True
    rest = r.stderr
    race = TRY_SHUTDOWN_RACE.search(rest)
    if race:
        rest = rest[:race.start()]
    wait_set = r.returncode in (1, -signal.SIGINT) and WAIT_SET_RACE.match(rest)
    if wait_set:
        rest = rest[wait_set.end():]
        # The SIGINT's own KeyboardInterrupt, raised at last in the demo's finally (destroy_node
        # or try_shutdown) while the RCLError unwinds: Python then dies by SIGINT (exit -2).
        chained = SIGINT_IN_FINALLY.match(rest)
        if chained:
            rest = rest[chained.end():]
        elif r.returncode != 1:
            return False
    named = race is not None or bool(wait_set) or any(known in rest for known in RCLPY_RACES)
    return named and not any(mark in rest for mark in OURS)


def _assert_clean(results: list[harness.Result], what: str) -> None:
    """Exit status 0, no traceback, nothing at all on stderr, for every process (but for the
    races of rclpy itself above, which are counted and printed)."""
    bad = [r for r in results if r.timed_out or r.returncode != 0 or r.stderr.strip()]
    excused = [r for r in bad if _excused(r)]
    for r in excused:
        print(f"{what}: excused rclpy race:\n{r.describe()}")
    bad = [r for r in bad if r not in excused]
    assert not bad, f"{what}: {len(bad)} of {len(results)} not clean:\n" + \
        "\n".join(r.describe() for r in bad)


KINDS = [("pub", "single"), ("pub", "multi"), ("sub", "single"), ("sub", "multi")]
MOMENTS = [0.0, 0.005, 0.02, 0.08, 0.3]


@pytest.mark.parametrize("role,executor", KINDS, ids=[f"{r}-{e}" for r, e in KINDS])
def test_sigint_at_many_moments(tracer_env, role, executor):
    # Five nodes of one kind, each stopped at another moment after it spins, while a partner
    # (publishing and subscribing) keeps data flowing to and from them; the partner goes last.
    nodes = [_start(tracer_env, [role, executor, f"{role}_{executor}_{i}"]) for i in range(len(MOMENTS))]
    partner = _start(tracer_env, ["both", "single", "partner"])
    results = _sigint_at(nodes + [partner], MOMENTS + [MOMENTS[-1] + 0.2])
    _assert_clean(results, f"{role}/{executor}")


def test_sigint_to_a_launch_style_process_group(tracer_env):
    # As Ctrl-C in the terminal of `ros2 launch`: one SIGINT to the group reaches the launcher
    # and its four children (publishers, subscriptions, both executors) at once.
    launcher = _start(tracer_env, ["launch", "4"])
    (res,) = _sigint_at([launcher], [0.1])
    _assert_clean([res], "launch group")
    codes = [int(n) for n in re.findall(r"^child \d+ exit (-?\d+)$", res.stdout, re.M)]
    assert len(codes) == 4, res.describe()
    assert codes == [0] * 4 or _excused(res), res.describe()


def _twenty_at_random(env) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kinds = [KINDS[i % len(KINDS)] if i < 8 else rng.choice(KINDS + [("both", "multi")]) for i in range(20)]
    procs = [_start(env, [role, ex, f"n{i}_{role}_{ex}"]) for i, (role, ex) in enumerate(kinds)]
    delays = [rng.uniform(0.0, 1.0) for _ in procs]
    _assert_clean(_sigint_at(procs, delays), f"20 nodes, seed {seed}")


def test_twenty_nodes_sigint_at_random_moments(tracer_env):
    # Fast DDS is no oracle here: run the same way it is not clean either (measured, 100 nodes
    # in 5 runs: 3 with one of the rclpy races above, and a multi-threaded node that hung past
    # 90 s in another run), so its run cannot be asserted on; the rmw calls around shutdown are
    # compared with it one by one below instead.
    _twenty_at_random(tracer_env)


# --- the rmw API around shutdown and for bad arguments, rmw_tracer against Fast DDS -----------

# Where rmw_tracer answers otherwise than Fast DDS, with the reason (docs/rmw-mapping.md,
# "Errors and threads"): the rmw header documents the code we return, or Fast DDS returns null
# without saying why.
DEVIATIONS = {
    # rmw.h: "RMW_RET_INVALID_ARGUMENT if guard_condition is null" (Fast DDS: RMW_RET_ERROR).
    "destroy guard condition null": "rc=11 err=1",
    "trigger guard condition null": "rc=11 err=1",  # Fast DDS crashes
    # rmw_destroy_wait_set(NULL) and rmw_service_server_is_available with a null argument are
    # RMW_RET_ERROR as with Fast DDS and test_rmw_implementation, although rmw.h says
    # INVALID_ARGUMENT (docs/entry-points.md, "Header and suite"; test_contract_upstream.py);
    # on Kilted all three say INVALID_ARGUMENT.
    # Fast DDS returns null / the code without an error string; we always say why.
    "create node null name": "rc=null err=1",
    "create node null namespace": "rc=null err=1",
    "publisher names by node unknown node": "rc=203 err=1",
    "init options bad allocator": "rc=11 err=1",
    # rmw.h: INVALID_ARGUMENT for null arguments of rmw_serialize / rmw_deserialize (Fast DDS
    # crashes on each).
    "serialize null message": "rc=11 err=1",
    "serialize null type support": "rc=11 err=1",
    "serialize null out": "rc=11 err=1",
    "deserialize null message": "rc=11 err=1",
}
if harness.DISTRO != "jazzy":
    # Kilted's Fast DDS (9.3) says why it refuses a null namespace.
    del DEVIATIONS["create node null namespace"]

# What the header says, whatever Fast DDS does: checked on rmw_tracer.
EXPECTED = {
    "shutdown null": "rc=11 err=1",
    "shutdown zero context": "rc=11 err=1",
    "context fini zero context": "rc=11 err=1",
    "create publisher bogus type support": "rc=null err=1",
    "create subscription bogus type support": "rc=null err=1",
    "create service bogus type support": "rc=null err=1",
    "create client bogus type support": "rc=null err=1",
    "publish foreign publisher": "rc=12 err=1",
    "shutdown": "rc=0 err=0",
    "shutdown again": "rc=0 err=0",
    "after shutdown: create node": "rc=null err=1",
    "after shutdown: create publisher": "rc=ptr err=0",
    "after shutdown: create wait set": "rc=ptr err=0",
    "after shutdown: wait": "rc=0 err=0",
    "after shutdown: publish": "rc=0 err=0",
    "context fini": "rc=0 err=0",
    "context fini again": "rc=11 err=1",
    "init zero options": "rc=11 err=1",
    "init initialized context": "rc=11 err=1",
    "init options init twice": "rc=11 err=1",
    "init options fini zero": "rc=11 err=1",
    "init options copy zero src": "rc=11 err=1",
    "context fini before shutdown": "rc=11 err=1",
    "create node invalid name": "rc=null err=1",
    "create publisher invalid topic": "rc=null err=1",
    "take with info null info": "rc=11 err=1",
    "wait null wait set": "rc=11 err=1",
    "wait foreign wait set": "rc=12 err=1",
    "wait empty": "rc=2 err=0",
    "node names non-zero array": "rc=11 err=1",
    "topic names non-zero out": "rc=11 err=1",
    "request taken": "rc=true err=0",
    "send response to a client that is gone": "rc=0 err=0",
}


def _cases(res: harness.Result) -> dict[str, str]:
    return oracle_cases(res.stdout, res.describe())


def test_rmw_lifecycle_and_arguments_match_fastdds(tmp_path, tracer_env, fastdds_env, netns):
    exe = harness.compile_c(HERE / "c" / "lifecycle_oracle.c", tmp_path / "lifecycle_oracle",
                            msgs=("std_msgs", "test_msgs"))
    ours = _cases(harness.run([exe], tracer_env, timeout=60).check())
    theirs = _cases(harness.run_oracle([exe], fastdds_env, "\ndone\n", netns=netns, timeout=60))
    assert ours.keys() == theirs.keys() and len(ours) >= 140, (sorted(ours), sorted(theirs))
    assert {k: ours[k] for k in EXPECTED} == EXPECTED
    differ = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
    undocumented = {k: v for k, v in differ.items() if DEVIATIONS.get(k) != v[0]}
    assert undocumented == {}, "rmw_tracer (left) differs from Fast DDS (right) without a reason"
    # A deviation that Fast DDS stopped having is stale: keep the table true.
    assert sorted(differ) == sorted(DEVIATIONS), sorted(set(DEVIATIONS) - set(differ))
