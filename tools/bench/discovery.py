"""Discovery latency, rmw_tracer against Fast DDS: how long a new process's publisher takes to
be matched with a listener that is already running.

Started by tools/bench/discovery. One `bench_discovery listen` per rmw runs for the whole
benchmark; each try starts a new `bench_discovery publish` process, which times from before
rcl_publisher_init until rcl_publisher_get_subscription_count says 1 (process start-up, rcl_init
and the node are not timed). The rmws alternate try by try, so a change in machine load hits
both alike. Prints p50 / p99 / max and how many tries matched within 10 ms, per rmw, with the
tracer/fastdds ratio, and writes the JSON. A benchmark, not a test: it fails (exit 1) only when
a process fails or a try is never matched.

Runs inside a private network namespace like tools/bench/run (Fast DDS is otherwise held to
localhost).
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

import runner

BIN = os.path.join(runner.BIN, "bench_discovery")


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def env_for(key, base_env, tracer_lib, workdir):
    impl, _ = runner.RMWS[key]
    env = dict(base_env)
    env["RMW_IMPLEMENTATION"] = impl
    env.pop("LD_PRELOAD", None)
    if key == "tracer":
        env["LD_PRELOAD"] = tracer_lib
        rendezvous = tempfile.mkdtemp(prefix="rendezvous-", dir=workdir)
        os.chmod(rendezvous, 0o700)
        env["RMW_TRACER_RENDEZVOUS_DIR"] = rendezvous
    elif not os.environ.get(runner.NETNS_MARK):
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/discovery", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rmw", default="fastdds,tracer", help="comma-separated subset of: fastdds, tracer")
    ap.add_argument("--tries", type=int, default=100, help="new publisher processes per rmw (default: 100)")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("-o", "--output", default="discovery-results.json")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    keys = [k.strip() for k in args.rmw.split(",") if k.strip()]
    for k in keys:
        if k not in runner.RMWS:
            ap.error(f"unknown rmw '{k}'")
    args.output = os.path.abspath(args.output)
    args.tracer_lib = os.path.abspath(args.tracer_lib)
    try:
        runner.ensure_built(args.no_build)
    except (runner.BenchError, subprocess.CalledProcessError) as e:
        print(f"discovery: build failed: {e}", file=sys.stderr)
        return 1
    runner.enter_netns()

    base_env = dict(os.environ)
    base_env.pop(runner.NETNS_MARK, None)
    base_env["LD_LIBRARY_PATH"] = runner.library_path(runner.venv_dir())
    base_env["ROS_DOMAIN_ID"] = str(random.randint(100, 200))
    for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS",
              "FASTRTPS_DEFAULT_PROFILES_FILE", "RMW_TRACER_RENDEZVOUS_DIR"):
        base_env.pop(k, None)
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-discovery-")
    if "tracer" in keys:
        frozen = os.path.join(workdir, os.path.basename(args.tracer_lib))
        shutil.copy2(args.tracer_lib, frozen)
        args.tracer_lib = frozen

    envs = {k: env_for(k, base_env, args.tracer_lib, workdir) for k in keys}
    listeners = {}
    samples = {k: [] for k in keys}
    errors = []
    load_before = os.getloadavg()
    try:
        for k in keys:
            # Each rmw in a domain of its own: the two listeners never meet.
            envs[k]["ROS_DOMAIN_ID"] = str(100 + keys.index(k) * 50 + random.randint(0, 40))
            p = subprocess.Popen([BIN, "listen", "/bench/discovery"], env=envs[k], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            if p.stdout.readline().strip() != "ready":
                raise runner.BenchError(f"{k} listener did not start: {p.stderr.read()}")
            listeners[k] = p
        time.sleep(1.0)  # Fast DDS: let the listener's participant settle before the first try
        for i in range(args.tries):
            for k in keys:
                r = subprocess.run([BIN, "publish", "/bench/discovery"], env=envs[k], capture_output=True,
                                   text=True, timeout=60)
                line = [w for w in r.stdout.split("\n") if w.startswith("matched_us ")]
                if r.returncode != 0 or not line:
                    errors.append(f"{k} try {i}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
                    continue
                samples[k].append(float(line[0].split()[1]) / 1000.0)
    finally:
        for p in listeners.values():
            p.terminate()
        for k, p in listeners.items():
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "timeout"
            if rc != 0:
                errors.append(f"{k} listener: exit {rc}: {p.stderr.read().strip()[-400:]}")

    rows = {}
    for k in keys:
        v = sorted(samples[k])
        rows[k] = {
            "tries": len(v), "p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99),
            "max_ms": v[-1] if v else float("nan"), "within_10ms": sum(1 for x in v if x <= 10.0),
            "samples_ms": samples[k],
        }
    print(f"\nDiscovery latency: new process's publisher -> matched with a running listener "
          f"({args.tries} tries per rmw, load {load_before[0]:.1f})")
    print(f"{'rmw':10} {'tries':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'<=10 ms':>8}")
    for k in keys:
        r = rows[k]
        print(f"{k:10} {r['tries']:5d} {r['p50_ms']:9.3f} {r['p99_ms']:9.3f} {r['max_ms']:9.3f} "
              f"{r['within_10ms']:5d}/{r['tries']}")
    if "tracer" in rows and "fastdds" in rows:
        t, f = rows["tracer"], rows["fastdds"]
        print("tracer/fastdds: " + ", ".join(
            f"{c} {t[c] / f[c]:.3f}" if f[c] else f"{c} n/a" for c in ("p50_ms", "p99_ms", "max_ms")))
    with open(args.output, "w") as f:
        json.dump({"kind": "discovery", "tries": args.tries, "load_before": load_before, "rmws": rows,
                   "errors": errors}, f, indent=1)
    print(f"JSON: {args.output}")
    for e in errors:
        print(f"discovery: FAILED: {e}", file=sys.stderr)
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
