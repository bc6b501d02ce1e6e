"""Scale on one host, rmw_tracer against Fast DDS: N processes sharing topics, all discovered and
each matched to its topics; then what each process costs.

Started by tools/bench/scale. For each N and rmw, N `bench_scale` processes (tools/bench/scale.c,
C on rcl: one node, one publisher on /scale/t<i % T>, one subscription on /scale/t<(i+1) % T>)
start together. Each polls its graph every 100 ms and says when it is complete (all N nodes
listed, its publisher matched with every subscription of its topic and its subscription with
every publisher). Measured:

- time to full graph: from the start of the first process to the last one's "complete" (and
  from the start of the last process, since starting N processes itself takes a while);
- once all are complete and `--settle` seconds later: threads, open descriptors, RSS and
  private RSS (RssAnon) per process, from /proc, as median and max;
- CPU while idle: utime + stime of every process over `--idle` seconds, as a percentage of
  one core per process (median, max) and summed over all N.

The rmws alternate N by N. `--baseline-lib` adds a second rmw_tracer library (e.g. a build of
an earlier commit) as the rmw `baseline`, for a before/after in one run. Every process of one
batch is in one process group, killed (SIGTERM, then SIGKILL) when the batch ends or fails.
A batch is bounded by `--timeout`: one not complete by then is reported (how many of the N
were) and the run goes on with the next rmw and N. The run stops early if a process fails or
the machine's available memory falls below `--min-free-mib`. A benchmark, not a test: it fails
(exit 1) when a process fails or a graph is not complete in time. Each row shows the 1-minute
load average when its batch started (also in the JSON, with the load after).

`--hosts H` spreads the processes over H "hosts" (process i on host i % H): network namespaces
scale-h<i> with 192.0.2.<i + 1>/24 on a veth to one bridge (namespace scale-br), all made inside
the run's own network namespace and removed at the end; rmw_tracer's processes get their host's
own rendezvous directory and the other hosts in ROS_STATIC_PEERS, Fast DDS its default (SUBNET)
discovery, multicast over the bridge.

Runs inside new network and mount namespaces (runner.enter_netns: loopback up, an empty tmpfs on
/dev/shm), so Fast DDS's discovery stays on this loopback and its shared-memory files go with the
namespace.
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import runner

BIN = os.path.join(runner.BIN, "bench_scale")
TICK = os.sysconf("SC_CLK_TCK")


def mem_available_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def proc_sample(pid):
    """Threads, descriptors, RSS and RssAnon (KiB), and utime + stime (ticks) of `pid`."""
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.strip()
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces: fields after its closing parenthesis.
        fields = f.read().rsplit(")", 1)[1].split()
    return {
        "threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "rss_kib": int(status["VmRSS"].split()[0]),
        "rss_anon_kib": int(status.get("RssAnon", "0 kB").split()[0]),
        "cpu_ticks": int(fields[11]) + int(fields[12]),
    }


class Incomplete(runner.BenchError):
    """A batch whose graphs were not all complete in time: `matched` of them were."""

    def __init__(self, message, matched):
        super().__init__(message)
        self.matched = matched


def summary(values):
    return {"median": statistics.median(values), "max": max(values), "min": min(values)}


def env_for(key, args, base_env, workdir, host=None):
    """The environment of a batch's processes (on `host` of `args.hosts`, when there are several)."""
    env = dict(base_env)
    env.pop("LD_PRELOAD", None)
    if key == "fastdds":
        env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
        if not os.environ.get(runner.NETNS_MARK):
            env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        # Several hosts: discovery range left at Fast DDS's default (SUBNET), multicast over the
        # hosts' bridge, which is inside this run's own network namespace.
        return env
    env["RMW_IMPLEMENTATION"] = "rmw_tracer"
    env["LD_PRELOAD"] = args.libs[key]
    rendezvous = tempfile.mkdtemp(prefix="rendezvous-", dir=workdir)
    os.chmod(rendezvous, 0o700)
    env["RMW_TRACER_RENDEZVOUS_DIR"] = rendezvous
    if host is not None:
        env["ROS_STATIC_PEERS"] = ";".join(host_addr(h) for h in range(args.hosts) if h != host)
    return env


HOST_NS = "scale-h{}"
BRIDGE_NS = "scale-br"


def host_addr(h):
    return f"192.0.2.{h + 1}"


def make_hosts(count):
    """`count` network namespaces scale-h<i> ("hosts"), each with loopback and eth0 =
    192.0.2.<i + 1>/24 (multicast routed to it), joined by one bridge in namespace scale-br.
    Made inside the run's own network and mount namespaces, so nothing reaches the machine's
    network and the names are this run's alone."""
    def ip(*args):
        r = subprocess.run(["ip", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise runner.BenchError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    remove_hosts(count)
    ip("netns", "add", BRIDGE_NS)
    ip("-n", BRIDGE_NS, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
    ip("-n", BRIDGE_NS, "link", "set", "br0", "up")
    for h in range(count):
        ns = HOST_NS.format(h)
        ip("netns", "add", ns)
        ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{h}", "netns", BRIDGE_NS)
        ip("-n", BRIDGE_NS, "link", "set", f"p{h}", "master", "br0", "up")
        ip("-n", ns, "addr", "add", f"{host_addr(h)}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", "eth0")


def remove_hosts(count):
    for ns in [HOST_NS.format(h) for h in range(count)] + [BRIDGE_NS]:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def stop_group(pgid, procs, grace):
    """SIGTERM the batch's group, wait up to `grace` s, then SIGKILL what is left; reap all."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for p in procs:
        p.wait()
    return [p.returncode for p in procs]


def run_batch(key, n, args, base_env, workdir):
    if args.hosts > 1:
        envs = [env_for(key, args, base_env, workdir, h) for h in range(args.hosts)]
    else:
        envs = [env_for(key, args, base_env, workdir)]
    logs = tempfile.mkdtemp(prefix=f"{key}-{n}-", dir=workdir)
    procs = []
    pgid = None
    result = {"n": n, "rmw": key, "hosts": args.hosts}
    try:
        t0 = time.monotonic_ns()
        for i in range(n):
            out = open(os.path.join(logs, f"{i}.out"), "w")
            err = open(os.path.join(logs, f"{i}.err"), "w")
            # Process i on host i % hosts; `ip netns exec` and nice exec the program (same pid).
            host = i % args.hosts
            enter = ["ip", "netns", "exec", HOST_NS.format(host)] if args.hosts > 1 else []
            p = subprocess.Popen(enter + ["nice", "-n", str(args.nice), BIN, str(i), str(n), str(args.topics)],
                                 env=envs[host], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 process_group=0 if pgid is None else pgid)
            out.close()
            err.close()
            if pgid is None:
                pgid = p.pid
            procs.append(p)
        t_last = time.monotonic_ns()
        matched = {}
        deadline = time.monotonic() + args.timeout
        while len(matched) < n:
            for i, p in enumerate(procs):
                if i in matched:
                    continue
                with open(os.path.join(logs, f"{i}.out")) as f:
                    for line in f:
                        if line.startswith("matched "):
                            matched[i] = int(line.split()[1])
                if i not in matched and p.poll() is not None:
                    raise runner.BenchError(f"{key} N={n}: process {i} exited {runner.describe_rc(p.returncode)}: "
                                            f"{runner.tail(os.path.join(logs, f'{i}.err'), 10)}")
            if time.monotonic() > deadline:
                raise Incomplete(f"{key} N={n}: {n - len(matched)} of {n} graphs not complete "
                                 f"after {args.timeout} s", len(matched))
            if mem_available_mib() < args.min_free_mib:
                raise runner.BenchError(f"{key} N={n}: available memory below {args.min_free_mib} MiB, stopped")
            time.sleep(0.1)
        t_full = max(matched.values())
        result["launch_s"] = (t_last - t0) / 1e9
        result["full_graph_s"] = (t_full - t0) / 1e9
        result["full_graph_after_last_start_s"] = (t_full - t_last) / 1e9
        time.sleep(args.settle)
        before = {p.pid: proc_sample(p.pid) for p in procs}
        t_a = time.monotonic()
        time.sleep(args.idle)
        after = {p.pid: proc_sample(p.pid) for p in procs}
        span = time.monotonic() - t_a
        cpu = [100.0 * (after[pid]["cpu_ticks"] - before[pid]["cpu_ticks"]) / TICK / span for pid in after]
        for field in ("threads", "fds", "rss_kib", "rss_anon_kib"):
            result[field] = summary([after[pid][field] for pid in after])
        result["idle_cpu_pct_per_process"] = summary(cpu)
        result["idle_cpu_pct_total"] = sum(cpu)
        result["idle_window_s"] = span
        result["exit_codes"] = stop_group(pgid, procs, 20)
        pgid = None
        failed = [rc for rc in result["exit_codes"] if rc != 0]
        if failed:
            result["shutdown_failures"] = len(failed)
        return result
    finally:
        if pgid is not None:
            stop_group(pgid, procs, 5)
        shutil.rmtree(logs, ignore_errors=True)


def fmt_row(r):
    return (f"{r['rmw']:>9} {r['n']:>4} | {r['full_graph_s']:>7.2f} {r['full_graph_after_last_start_s']:>7.2f} | "
            f"{r['threads']['median']:>4.0f} {r['threads']['max']:>4} | {r['fds']['median']:>4.0f} {r['fds']['max']:>4} | "
            f"{r['rss_kib']['median'] / 1024:>6.1f} {r['rss_anon_kib']['median'] / 1024:>6.1f} | "
            f"{r['idle_cpu_pct_per_process']['median']:>6.2f} {r['idle_cpu_pct_total']:>7.1f}")


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/scale", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="20,50,100", help="process counts (default: 20,50,100)")
    ap.add_argument("--rmw", default="fastdds,tracer", help="comma-separated subset of: fastdds, tracer, baseline")
    ap.add_argument("--topics", type=int, default=10, help="topics shared by the processes (default: 10)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after the full graph before sampling")
    ap.add_argument("--idle", type=float, default=10.0, help="seconds over which idle CPU is measured")
    ap.add_argument("--hosts", type=int, default=1,
                    help="spread the processes over this many hosts (network namespaces joined by a "
                         "bridge, 192.0.2.0/24; rmw_tracer through ROS_STATIC_PEERS); default 1")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for one batch's full graph")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the benchmark processes (default: 10)")
    ap.add_argument("--min-free-mib", type=int, default=3072, help="stop when MemAvailable falls below this")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("--baseline-lib", help="a second librmw_tracer.so, run as the rmw 'baseline'")
    ap.add_argument("-o", "--output", default="scale-results.json")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    keys = [k.strip() for k in args.rmw.split(",") if k.strip()]
    for k in keys:
        if k not in ("fastdds", "tracer", "baseline"):
            ap.error(f"unknown rmw '{k}'")
    if "baseline" in keys and not args.baseline_lib:
        ap.error("--rmw baseline needs --baseline-lib")
    ns = [int(x) for x in args.n.split(",")]
    args.output = os.path.abspath(args.output)
    runner.ensure_built(args.no_build)
    runner.enter_netns()

    base_env = dict(os.environ)
    for k in (runner.NETNS_MARK, "ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE",
              "ROS_STATIC_PEERS", "FASTRTPS_DEFAULT_PROFILES_FILE", "RMW_TRACER_RENDEZVOUS_DIR"):
        base_env.pop(k, None)
    base_env["LD_LIBRARY_PATH"] = runner.library_path(runner.venv_dir())
    base_env["ROS_DOMAIN_ID"] = str(random.randint(100, 200))
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-scale-")
    args.libs = {}
    hashes = {}
    for key, path in (("tracer", args.tracer_lib), ("baseline", args.baseline_lib)):
        if key in keys:
            # Frozen copies: a build that replaces the library mid-run cannot mix versions.
            frozen = os.path.join(workdir, f"{key}-librmw_tracer.so")
            shutil.copy2(os.path.abspath(path), frozen)
            args.libs[key] = frozen
            with open(frozen, "rb") as f:
                hashes[key] = hashlib.sha256(f.read()).hexdigest()
    rows = []
    errors = []
    load_before = os.getloadavg()
    print(f"{'rmw':>9} {'N':>4} | {'full s':>7} {'after':>7} | {'thr':>4} {'max':>4} | {'fds':>4} {'max':>4} | "
          f"{'RSS MiB':>6} {'anon':>6} | {'cpu %':>6} {'all %':>7}")
    if args.hosts > 1:
        if not os.environ.get(runner.NETNS_MARK):
            print("scale: --hosts needs the run's own network namespace (unshare -n -m)", file=sys.stderr)
            return 1
        make_hosts(args.hosts)
    fatal = False
    try:
        for n in ns:
            for key in keys:
                load = os.getloadavg()
                try:
                    r = run_batch(key, n, args, base_env, workdir)
                except Incomplete as e:
                    # Reported, and the other rmw still runs: one that does not complete at
                    # this N is a result, not the end of the run.
                    errors.append(str(e))
                    print(f"scale: {e}", file=sys.stderr)
                    rows.append({"n": n, "rmw": key, "hosts": args.hosts, "complete": e.matched,
                                 "timeout_s": args.timeout, "load_before": load,
                                 "load_after": os.getloadavg()})
                    continue
                except runner.BenchError as e:
                    errors.append(str(e))
                    print(f"scale: {e}", file=sys.stderr)
                    fatal = True
                    break
                r["load_before"] = load
                r["load_after"] = os.getloadavg()
                rows.append(r)
                print(fmt_row(r) + f" | load {load[0]:.1f}", flush=True)
            if fatal:
                break
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if args.hosts > 1:
            remove_hosts(args.hosts)
    doc = {
        "benchmark": "scale",
        "topics": args.topics,
        "hosts": args.hosts,
        "settle_s": args.settle,
        "idle_s": args.idle,
        "nice": args.nice,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "commit": subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "tracer_lib_sha256": hashes,
        "results": rows,
        "errors": errors,
    }
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.output}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
