"""Loaned-message round trips, rmw_tracer against Fast DDS, in one run (docs/loans.md).

Started by tools/bench/loans. For each size, `bench_loans pong` + `bench_loans ping` (loans.c):
one message in flight, each side borrows, stamps its sequence number, publishes the loan, the
other takes it loaned and answers with a loan of its own; the program never copies or fills the
payload. Types:

- rmw_tracer: `rmw_tracer_loans/msg/Blob<n>` (a plain struct of 64 B .. 4 MiB, hand-built
  introspection type support; Fast DDS's rmw_fastrtps_cpp cannot run it: it wants its own
  generated type support) and test_msgs/msg/BasicTypes (48 B);
- Fast DDS: test_msgs/msg/BasicTypes (48 B), its only plain type here, loaned when it offers
  loans (data sharing for a bounded plain type), and, as the large-size comparison, its copy
  path with `std_msgs/msg/UInt8MultiArray` (tools/bench/run's ping-pong, same sizes).

Prints p50/p99 per row, the tracer's 4 MiB / 64 B ratio (target <= 1.5) and the ratios to Fast
DDS, and writes the JSON. Runs in a private network namespace with its own /dev/shm (Fast DDS's
files go with it). A benchmark, not a test: it fails only when a process fails or an echo is
wrong or lost.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import types

import runner

BIN = os.path.join(runner.BIN, "bench_loans")
MARK = "RMW_TRACER_BENCH_LOANS_NS"


def enter_private_ns():
    """Re-run inside new network and mount namespaces: loopback up, an empty /dev/shm."""
    if os.environ.get(MARK) or shutil.which("unshare") is None:
        return
    probe = subprocess.run(["unshare", "-n", "-m", "--", "true"], capture_output=True)
    if probe.returncode != 0:
        print("loans: unshare -n -m is not allowed here; Fast DDS is held to localhost", file=sys.stderr)
        return
    env = dict(os.environ, **{MARK: "1", runner.NETNS_MARK: "1"})
    cmd = ["unshare", "-n", "-m", "--propagation", "private", "--", "sh", "-c",
           'ip link set lo up && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"', "sh",
           sys.executable] + sys.argv
    os.execvpe(cmd[0], cmd, env)


def loan_pair(key, ty, iters, warmup, env):
    pong = subprocess.Popen([BIN, "pong", ty, str(iters + warmup)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        if pong.stdout.readline().strip() != "ready":
            raise runner.BenchError(f"{key} {ty}: pong did not start: {pong.stderr.read()[-400:]}")
        ping = subprocess.run([BIN, "ping", ty, str(iters), str(warmup)], env=env, capture_output=True,
                              text=True, timeout=600)
        if ping.returncode != 0:
            raise runner.BenchError(f"{key} {ty}: ping exit {ping.returncode}: {ping.stderr[-400:]}")
        doc = json.loads([line for line in ping.stdout.splitlines() if line.startswith("{")][-1])
    finally:
        try:
            pong.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pong.kill()
            pong.wait()
    return doc


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/loans", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,4K,64K,1M,4M", help="struct sizes (default: 64,4K,64K,1M,4M)")
    ap.add_argument("--iters", type=int, default=2000, help="round trips per size (default: 2000)")
    ap.add_argument("--copy-iters", type=int, default=300,
                    help="round trips of Fast DDS's copy path per size (default: 300)")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("-o", "--output", default="loans-results.json")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    sizes = [runner.parse_size(s) for s in args.sizes.split(",")]
    args.output = os.path.abspath(args.output)
    args.tracer_lib = os.path.abspath(args.tracer_lib)
    runner.ensure_built(args.no_build)
    enter_private_ns()

    base_env = dict(os.environ)
    for k in (MARK, runner.NETNS_MARK, "ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE",
              "ROS_STATIC_PEERS", "FASTRTPS_DEFAULT_PROFILES_FILE", "RMW_TRACER_RENDEZVOUS_DIR"):
        base_env.pop(k, None)
    base_env["LD_LIBRARY_PATH"] = runner.library_path(runner.venv_dir())
    base_env["ROS_DOMAIN_ID"] = str(random.randint(100, 200))
    # rcl (Jazzy) takes loans only with this set, whatever the rmw.
    base_env["ROS_DISABLE_LOANED_MESSAGES"] = "0"
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-loans-")
    frozen = os.path.join(workdir, os.path.basename(args.tracer_lib))
    shutil.copy2(args.tracer_lib, frozen)
    args.tracer_lib = frozen
    in_ns = bool(os.environ.get(MARK))
    if not in_ns:
        base_env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    # What runner.run_pair reads of its arguments.
    pair_args = types.SimpleNamespace(tracer_lib=frozen, timeout=60, match_timeout=30, pair_timeout=600)
    envs = {k: runner.rmw_env(k, pair_args, base_env, workdir)[0] for k in ("fastdds", "tracer")}

    load_before = os.getloadavg()
    rows = []
    errors = []
    warmup = max(1, args.iters // 10)
    for size in sizes:
        n = max(0, size - 8)
        try:
            rows.append({"rmw": "tracer", "kind": "loan", **loan_pair("tracer", f"blob:{n}", args.iters, warmup,
                                                                      envs["tracer"])})
        except (runner.BenchError, subprocess.TimeoutExpired) as e:
            errors.append(str(e))
        for key in ("fastdds", "tracer"):
            try:
                case = (args.copy_iters, max(1, args.copy_iters // 10), 10, 1)
                doc = runner.run_pair(key, size, case, pair_args, base_env, workdir)
                lat = doc["cases"][0]["latency_rtt_us"]
                rows.append({"rmw": key, "kind": "copy", "type": "UInt8MultiArray", "size": size,
                             "iters": args.copy_iters, "loaned_pub": False, "loaned_sub": False,
                             "p50_us": lat["p50"], "p99_us": lat["p99"]})
            except (runner.BenchError, subprocess.TimeoutExpired, KeyError) as e:
                errors.append(f"{key} copy at {size}: {e}")
    for key in ("tracer", "fastdds"):
        try:
            rows.append({"rmw": key, "kind": "loan", **loan_pair(key, "basic", args.iters, warmup, envs[key])})
        except (runner.BenchError, subprocess.TimeoutExpired) as e:
            errors.append(str(e))

    print(f"\nLoaned round trip (p50 / p99 us, one message in flight; load {load_before[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    print(f"{'rmw':8} {'what':6} {'type':16} {'size':>8} {'loaned':>7} {'p50 us':>9} {'p99 us':>9}")
    for r in rows:
        loaned = "yes" if r["loaned_pub"] and r["loaned_sub"] else "no"
        print(f"{r['rmw']:8} {r['kind']:6} {r['type']:16} {runner.human_size(r['size']):>8} {loaned:>7} "
              f"{r['p50_us']:9.1f} {r['p99_us']:9.1f}")
    tracer = {r["size"]: r for r in rows if r["rmw"] == "tracer" and r["type"] == "blob"}
    copy = {r["size"]: r for r in rows if r["rmw"] == "fastdds" and r["type"] == "UInt8MultiArray"}
    tcopy = {r["size"]: r for r in rows if r["rmw"] == "tracer" and r["type"] == "UInt8MultiArray"}
    if tracer:
        small, big = min(tracer), max(tracer)
        print(f"tracer loans {runner.human_size(big)} / {runner.human_size(small)} p50: "
              f"{tracer[big]['p50_us'] / tracer[small]['p50_us']:.2f} (target <= 1.5)")
    for s in sorted(tracer):
        if s in copy:
            print(f"  {runner.human_size(s):>6}: tracer loan / Fast DDS copy p50 "
                  f"{tracer[s]['p50_us'] / copy[s]['p50_us']:.3f}, p99 {tracer[s]['p99_us'] / copy[s]['p99_us']:.3f}"
                  + (f"; tracer loan / tracer copy p50 {tracer[s]['p50_us'] / tcopy[s]['p50_us']:.3f}"
                     if s in tcopy else ""))
    basic = {r["rmw"]: r for r in rows if r["type"] == "basic"}
    if len(basic) == 2:
        t, f = basic["tracer"], basic["fastdds"]
        print(f"  BasicTypes: tracer / Fast DDS p50 {t['p50_us'] / f['p50_us']:.3f}, p99 "
              f"{t['p99_us'] / f['p99_us']:.3f} (Fast DDS loaned: {f['loaned_pub'] and f['loaned_sub']})")
    with open(args.output, "w") as out:
        json.dump({"kind": "loans", "load_before": load_before, "private_namespace": in_ns,
                   "rows": rows, "errors": errors, "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())},
                  out, indent=1)
    print(f"JSON: {args.output}")
    for e in errors:
        print(f"loans: FAILED: {e}", file=sys.stderr)
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
