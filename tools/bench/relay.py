"""Direct links against a relay between hosts: what docs/network.md section 1 decided, measured.

Started by tools/bench/relay. Two network namespaces over a veth pair, as tools/bench/net sets
them up (net.py, ros_tests/two_hosts.py). rmw_tracer only, the same rcl C ping-pong and
reliable keep_all bursts, each size two ways, alternating pair by pair:

- direct: bench_ping on host A and bench_pong on host B, one domain, each host given the other in
  ROS_STATIC_PEERS: the processes link to each other over QUIC (rmw_tracer's design);
- relayed: bench_ping alone in domain L on A, bench_pong alone in domain L + 2 on B, no static
  peers; on each host a bench_relay (relay.c) bridges its host's domain and domain L + 1, which
  reaches the other host's relay over QUIC. So every message goes ping -> relay A (Unix link) ->
  relay B (QUIC) -> pong (Unix link): the path a per-host gateway gives, with a copy at each
  relay (messages stay serialized there; no (de)serialization).

The relay is an rcl program, so its hops cost what a middleware-level forwarder would plus rcl's
take and publish of a serialized message; the numbers bound a gateway's cost from above by that
much. Namespaces, processes and the temporary directory are removed at the end, also on failure.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import net
import runner
from two_hosts import ADDR, TwoHosts

PREFIX = "rl"
CASES = {64: (3000, 300, 1000, 3), 1 << 20: (200, 20, 40, 3)}


def start_relay(prefix, env, side, local_domain, net_domain, burst, log_path):
    cmd = prefix + [os.path.join(runner.BIN, "bench_relay"), "--local-domain", str(local_domain),
                    "--net-domain", str(net_domain), "--side", side, "--burst-depth", str(burst)]
    log = open(log_path, "w")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if "relaying" in open(log_path, errors="replace").read():
            return p
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise runner.BenchError(f"bench_relay {side} did not start:\n{runner.tail(log_path)}")


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def run_one(way, size, case, rep, args, base_env, workdir, tracer_lib, errors):
    tag = f"{way}-{rep}-{size}"
    row = {"way": way, "repeat": rep, "size": size,
           "case": dict(zip(("lat_iters", "lat_warmup", "burst", "rounds"), case)),
           "load_before": round(os.getloadavg()[0], 2)}
    relays = []
    with TwoHosts(None, room=PREFIX) as hosts:
        try:
            sides = net.host_sides("tracer", hosts, base_env, workdir, tracer_lib, tag)
            if way == "relayed":
                domain = int(base_env["ROS_DOMAIN_ID"])
                for role, side, local in (("ping", "a", domain), ("pong", "b", domain + 2)):
                    prefix, env = sides[role]
                    relay_env = dict(env)
                    # The programs stay on their host; only the relays reach the other one.
                    env.pop("ROS_STATIC_PEERS")
                    env["ROS_DOMAIN_ID"] = str(local)
                    relays.append(start_relay(prefix, relay_env, side, local, domain + 1, case[2],
                                              os.path.join(workdir, f"{tag}-relay-{side}.log")))
            t0 = time.monotonic()
            doc = runner.run_pair("tracer", size, case, args, base_env, workdir, sides=sides,
                                  keep_all_only=True, tag=tag)
            c = doc["cases"][0]
            row["latency_rtt_us"] = c["latency_rtt_us"]
            row["throughput"] = c["throughput_keep_all"]
            row["seconds"] = round(time.monotonic() - t0, 1)
        except runner.BenchError as e:
            row["error"] = str(e).splitlines()[0]
            errors.append(f"{tag}: {row['error']}")
            print(f"relay: FAILED {tag}: {e}", file=sys.stderr)
        finally:
            for p in relays:
                stop(p)
            net.kill_namespace_processes(hosts)
    row["load_after"] = round(os.getloadavg()[0], 2)
    return row


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/relay", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,1M")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("-o", "--output", default="relay-results.json")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--match-timeout", type=int, default=30)
    ap.add_argument("--pair-timeout", type=int, default=300)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    sizes = [runner.parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not TwoHosts.available():
        print("relay: needs root and iproute2 (ip netns)", file=sys.stderr)
        return 1
    args.output = os.path.abspath(args.output)
    runner.ensure_built(args.no_build)
    base_env, pair_args = net.run_setup(args)
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-relaybench-")
    frozen = os.path.join(workdir, "librmw_tracer.so")
    shutil.copy2(args.tracer_lib, frozen)
    rows, errors = [], []
    started = time.time()
    try:
        for rep in range(1, args.repeat + 1):
            for size in sizes:
                ways = ["direct", "relayed"] if rep % 2 else ["relayed", "direct"]
                for way in ways:
                    print(f"relay: #{rep} {way} {runner.human_size(size)}", file=sys.stderr)
                    rows.append(run_one(way, size, CASES[size] if size in CASES else CASES[64], rep,
                                        pair_args, base_env, workdir, frozen, errors))
    except KeyboardInterrupt as e:
        errors.append(f"interrupted ({e})")
    finally:
        if errors:
            print(f"relay: logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    def get(way, size, rep, section, field):
        r = next((r for r in rows if (r["way"], r["size"], r["repeat"]) == (way, size, rep)), None)
        return (r or {}).get(section, {}).get(field) if r and r.get(section) else None

    print("\nrmw_tracer between two hosts (veth): direct QUIC links against a relay on each host")
    print(f"{'payload':>8} {'#':>2} | {'direct p50 us':>13} {'p99':>9} | {'relayed p50':>11} {'p99':>9} | "
          f"{'relayed/direct':>14} | {'direct MB/s':>11} {'relayed MB/s':>12}")
    for size in sizes:
        for rep in range(1, args.repeat + 1):
            d50, d99 = get("direct", size, rep, "latency_rtt_us", "p50"), get("direct", size, rep, "latency_rtt_us", "p99")
            r50, r99 = get("relayed", size, rep, "latency_rtt_us", "p50"), get("relayed", size, rep, "latency_rtt_us", "p99")
            dmb, rmb = get("direct", size, rep, "throughput", "mb_per_s"), get("relayed", size, rep, "throughput", "mb_per_s")
            ratio = runner.ratio(r50, d50)
            print(f"{runner.human_size(size):>8} {rep:>2} | {net.cell(d50):>13} {net.cell(d99):>9} | {net.cell(r50):>11} "
                  f"{net.cell(r99):>9} | {net.cell(ratio, 2):>14} | {net.cell(dmb):>11} {net.cell(rmb):>12}")
    elapsed = time.time() - started
    print(f"({elapsed:.0f} s, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end)")
    commit = subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with open(args.output, "w") as f:
        json.dump({"generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "git_commit": commit or None, "hosts": ADDR, "elapsed_s": round(elapsed, 1),
                   "errors": errors, "rows": rows}, f, indent=2)
        f.write("\n")
    print(f"wrote {args.output}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
