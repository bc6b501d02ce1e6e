"""Two hosts over a veth pair: rcl ping-pong and throughput, rmw_tracer (QUIC, ROS_STATIC_PEERS)
against Fast DDS (UDPv4), side by side in one run, as ratios (issue 7's benchmarks).

Started by tools/bench/net. Host A and host B are two network namespaces joined by a veth pair
(192.0.2.1/24, 192.0.2.2/24; ros_tests/two_hosts.py, names prefixed `nb-`), each program also
in a mount namespace of its own with an empty /dev/shm, as two machines would be. bench_ping
runs on A, bench_pong on B (tools/bench/ping.c, pong.c), once per rmw, alternating the rmws pair
by pair so that a change in machine load hits both alike, and every pair `--repeat` times.

- clean link: RTT p50/p99 at each size, then reliable keep_all bursts at each size;
- lossy link (`--lossy`, on by default): the two hosts joined through ros_tests/link_shaper.py
  in a third namespace (5% of the IPv4 frames dropped, every frame delayed 20 ms, each way: the
  `tc netem` this kernel lacks), reliable keep_all bursts of 1 MiB only.

rmw_tracer: LD_PRELOAD of a frozen copy of librmw_tracer.so, each host its own rendezvous
directory, the other host in ROS_STATIC_PEERS. Fast DDS: its defaults but for
FASTDDS_BUILTIN_TRANSPORTS=UDPv4 (both hosts have one machine id: Fast DDS would take them for
one host and use shared memory, which does not cross machines), ROS_STATIC_PEERS and
ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET; its multicast cannot leave the namespaces (the veth is
their only link). Namespaces, processes in them and the temporary directory are removed at the
end, also on failure. A benchmark, not a test: a pair that fails (a loss, a timeout) is
reported in `errors` and the run goes on; the exit status is 1 if any did.
"""

import argparse
import datetime
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

import runner

sys.path.insert(0, os.path.join(runner.ROOT, "ros_tests"))
from two_hosts import ADDR, TwoHosts  # noqa: E402  (after the path)

PREFIX = "nb"
LOSS, DELAY = 0.05, 0.020
# size -> (latency iterations, warm-up, burst, measured rounds): bounded so that a pair takes
# seconds, not minutes, on 2 shared cores.
CLEAN_CASES = {64: (5000, 500, 2000, 5), 4096: (3000, 300, 1000, 5), 65536: (1000, 100, 200, 5),
               1 << 20: (200, 20, 40, 5)}
# The lossy link: throughput only (LAT_ITERS 0), a few 1 MiB messages per round.
LOSSY_CASE = (0, 0, 8, 2)
PRIVATE_SHM = 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"'
# rmw_tracer and, with --baseline-lib, a second build of it (a before/after in one run).
TRACER_KEYS = ("tracer", "baseline")
# The wire's own round trips, beside the rmws on fresh hosts: key -> (program, last argument,
# description). bench_udp: UDP datagrams of one frame each, one sendmsg each; the same handed
# to the kernel 44 at a time (UDP GSO, and GRO on receipt, as quinn sends 10 at a time); and
# 64 KB datagrams (as Fast DDS sends a large sample, fragmented by IP). bench_quic: quinn with
# a link's settings and nothing of libtracer above it, its loop a task on the runtime (quinn's
# floor) or a plain thread waiting on the runtime per write and read (the hand-off the links
# had on quinn's tasks), or
# quinn-proto alone driven by the thread that uses it (no runtime: the inline design's floor), or
# quinn-proto on the runtime-free engine (sent inline, received by the engine loop and handed
# to the waiting thread: a link's shape on it, docs/network.md section 4a).
WIRE = {"udp": ("bench_udp", "1472", "raw UDP, datagrams: 1472"),
        "udpgso": ("bench_udp", "gso", "raw UDP, datagrams: gso"),
        "udp64k": ("bench_udp", "65507", "raw UDP, datagrams: 65507"),
        "quic": ("bench_quic", "task", "bare quinn, loop on the runtime"),
        "quicthr": ("bench_quic", "thread", "bare quinn, loop on a thread"),
        "quicinl": ("bench_quic", "inline", "bare quinn-proto, driven by the one thread that uses it"),
        "quiceng": ("bench_quic", "engine", "bare quinn-proto on the engine: sent inline, received by its loop")}
# Only the multi-datagram shapes differ from "udp" when a message fits one datagram.
WIRE_LARGE_ONLY = ("udpgso", "udp64k")
UDP_PORT = 24999


def pinned(args, host):
    """The prefix that keeps a program of `host` ("a" or "b") on its `--cpus`, if given."""
    if not args.cpus:
        return []
    a, _, b = args.cpus.partition(":")
    return ["taskset", "-c", a if host == "a" or not b else b]


def host_sides(key, hosts, base_env, workdir, tracer_lib, tag, args):
    """{"ping": (prefix, env) on host a, "pong": (prefix, env) on host b} for rmw `key`."""
    sides = {}
    for role, h, other in (("ping", "a", "b"), ("pong", "b", "a")):
        env = dict(base_env)
        env["RMW_IMPLEMENTATION"] = runner.RMWS[key][0]
        env["ROS_STATIC_PEERS"] = ADDR[other]
        home = os.path.join(workdir, f"{tag}-{h}")
        os.makedirs(home, mode=0o700)
        env["ROS_HOME"] = os.path.join(home, "ros_home")
        env["ROS_LOG_DIR"] = os.path.join(home, "ros_log")
        env.update(getattr(args, "env_for", {}).get(key, {}))
        if key in TRACER_KEYS:
            env["LD_PRELOAD"] = tracer_lib[key]
            rendezvous = os.path.join(home, "rendezvous")
            os.makedirs(rendezvous, mode=0o700)
            env["RMW_TRACER_RENDEZVOUS_DIR"] = rendezvous
        else:
            env["FASTDDS_BUILTIN_TRANSPORTS"] = "UDPv4"
            env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SUBNET"
        prefix = hosts.host(h).prefix() + ["unshare", "-m", "--propagation", "private", "--",
                                           "sh", "-c", PRIVATE_SHM, "sh"] + pinned(args, h)
        sides[role] = (prefix, env)
    return sides


def kill_namespace_processes(hosts):
    """SIGKILL whatever still runs in our namespaces (a pair interrupted mid-run)."""
    for ns in list(hosts.made):
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in out.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def lost_detail(err):
    m = re.search(r"pong has (\d+) of (\d+) messages", err)
    return {"received_in_round": int(m.group(1)), "round_size": int(m.group(2))} if m else None


def run_phase(phase, shape, sizes, cases, keys, repeat, args, base_env, workdir, tracer_lib, rows, errors):
    """Every pair of the phase on hosts of its own (a fresh shaper too: a backlog that one rmw
    left in the shaper's queue must not delay the next)."""
    for rep in range(repeat):
        for size in sizes:
            # Alternate which rmw goes first from one repetition to the next.
            order = keys if rep % 2 == 0 else list(reversed(keys))
            for key in order:
                tag = f"{phase}-{rep}-{key}-{size}"
                case = cases[size]
                print(f"net: {phase} #{rep + 1} {key} {runner.human_size(size)} {case}", file=sys.stderr)
                row = {"phase": phase, "repeat": rep + 1, "key": key, "rmw": runner.RMWS[key][1], "size": size,
                       "case": dict(zip(("lat_iters", "lat_warmup", "burst", "rounds"), case))}
                with TwoHosts(shape, room=PREFIX) as hosts:
                    try:
                        run_one(hosts, key, size, case, tag, args, base_env, workdir, tracer_lib, row, errors)
                        if shape:
                            row["shaper"] = hosts.shaper_report()
                    finally:
                        kill_namespace_processes(hosts)
                rows.append(row)
            if not shape and case[0] > 0:
                for wire in WIRE:
                    if wire in WIRE_LARGE_ONLY and size <= 1472:
                        continue
                    rows.append(run_wire(wire, size, case, rep, args, errors))


def run_wire(wire, size, case, rep, args, errors):
    """The round trip of `size` bytes by WIRE[wire] (bench_udp or bench_quic), on fresh hosts;
    bench_quic's throughput too, in the case's bursts and rounds (as bench_ping's keep_all)."""
    prog, last, rmw = WIRE[wire]
    iters, _, burst, rounds = case
    exe = os.path.join(runner.BIN, prog)
    row = {"phase": "clean", "repeat": rep + 1, "key": wire, "rmw": rmw, "size": size,
           "load_before": round(os.getloadavg()[0], 2)}
    with TwoHosts(None, room=PREFIX) as hosts:
        echo_args = [exe, "echo", str(UDP_PORT)] + ([last] if prog == "bench_quic" else [])
        echo = subprocess.Popen(hosts.host("b").prefix() + pinned(args, "b") + echo_args)
        try:
            time.sleep(0.2)
            on_a = hosts.host("a").prefix() + pinned(args, "a") + [exe]
            doc = runner.run_json(on_a + ["ping", ADDR["b"], str(UDP_PORT), str(size), str(iters), last], prog, 120)
            rtt = doc["udp_rtt_us" if prog == "bench_udp" else "quic_rtt_us"]
            row["latency_rtt_us"] = rtt
            row["lost_rounds"] = doc.get("lost_rounds", 0)
            print(f"  {prog}: {size} B, {last}: rtt p50 {rtt['p50']:.1f} us p99 {rtt['p99']:.1f} us "
                  f"({row['lost_rounds']} rounds lost)", file=sys.stderr)
            if prog == "bench_quic":
                doc = runner.run_json(on_a + ["burst", ADDR["b"], str(UDP_PORT), str(size), str(burst), str(rounds),
                                              last], f"{prog} burst", 120)
                row["throughput"] = {k: doc[k] for k in ("burst", "rounds", "mb_per_s", "median_round_mb_per_s")}
                print(f"  {prog}: {size} B, {last}: {doc['mb_per_s']:.1f} MB/s", file=sys.stderr)
        except (runner.BenchError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            row["error"] = str(e)
            errors.append(f"wire {wire} {size}: {e}")
        finally:
            echo.kill()
            echo.wait()
            kill_namespace_processes(hosts)
    row["load_after"] = round(os.getloadavg()[0], 2)
    return row


def run_one(hosts, key, size, case, tag, args, base_env, workdir, tracer_lib, row, errors):
    sides = host_sides(key, hosts, base_env, workdir, tracer_lib, tag, args)
    row["load_before"] = round(os.getloadavg()[0], 2)
    t0 = time.monotonic()
    try:
        doc = runner.run_pair(key, size, case, args, base_env, workdir, sides=sides, keep_all_only=True, tag=tag)
        c = doc["cases"][0]
        row["latency_rtt_us"] = c["latency_rtt_us"] if case[0] > 0 else None
        row["throughput"] = c["throughput_keep_all"]
    except runner.BenchError as e:
        text = str(e)
        detail = [line for line in text.splitlines() if line.startswith("bench_ping: size")]
        row["error"] = (detail or text.splitlines())[0]
        row["lost"] = lost_detail(text)
        if row["lost"]:
            # Not one more message within the timeout after the burst was published: the
            # rate was below this.
            row["mb_per_s_below"] = (row["lost"]["received_in_round"] + 1) * size / args.timeout / 1e6
        elif "not acknowledged within" in text:
            # How far pong got is unknown: the whole round did not arrive within the timeout.
            row["mb_per_s_below"] = case[2] * size / args.timeout / 1e6
        errors.append(f"{tag}: {row['error']}")
        print(f"net: FAILED {tag}: {text}", file=sys.stderr)
    row["seconds"] = round(time.monotonic() - t0, 1)
    row["load_after"] = round(os.getloadavg()[0], 2)


def pick(rows, phase, key, size):
    return [r for r in rows if r.get("phase") == phase and r.get("key") == key and r.get("size") == size]


def cell(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def val(row, section, field):
    d = row.get(section) if row else None
    return None if d is None else d.get(field)


def print_tables(rows, sizes, repeat, keys):
    summary = {"clean": {}, "lossy": {}}
    tracers = [k for k in TRACER_KEYS if k in keys]
    print("clean veth: round trip ping (host A) -> pong (host B) -> ping, one in flight; "
          "reliable keep_all bursts (MB = 10^6 B)")
    head = f"{'payload':>8} {'#':>2} | {'Fast DDS p50':>12} {'p99':>9} {'MB/s':>7}"
    for k in tracers:
        head += f" | {k + ' p50':>13} {'p99':>9} {'MB/s':>7} {'/fdds p50':>9} {'MB/s':>6}"
    print(head + f" | {'UDP p50':>9} {'GSO p50':>9} {'64K p50':>9} {'QUIC p50':>9} {'QUICthr':>9} {'QUICinl':>9} {'QUICeng':>9}")
    for size in sizes:
        for rep in range(1, repeat + 1):
            def at(key):
                return next((r for r in pick(rows, "clean", key, size) if r["repeat"] == rep), None)
            f = at("fastdds")
            fp50, fp99 = val(f, "latency_rtt_us", "p50"), val(f, "latency_rtt_us", "p99")
            fmb = val(f, "throughput", "mb_per_s")
            line = f"{runner.human_size(size):>8} {rep:>2} | {cell(fp50):>12} {cell(fp99):>9} {cell(fmb):>7}"
            for k in tracers:
                t = at(k)
                tp50, tp99 = val(t, "latency_rtt_us", "p50"), val(t, "latency_rtt_us", "p99")
                tmb = val(t, "throughput", "mb_per_s")
                r50, r99, rmb = ratio(tp50, fp50), ratio(tp99, fp99), ratio(tmb, fmb)
                if k == "tracer":
                    summary["clean"].setdefault(size, []).append({"rtt_p50": r50, "rtt_p99": r99, "mb_per_s": rmb})
                line += (f" | {cell(tp50):>13} {cell(tp99):>9} {cell(tmb):>7} {cell(r50, 3):>9} "
                         f"{cell(rmb, 2):>6}")
            line += " |" + "".join(f" {cell(val(at(w), 'latency_rtt_us', 'p50')):>9}" for w in WIRE)
            print(line)
    print("UDP = raw UDP ping-pong over the same veth (bench_udp), 1472 B datagrams (one frame each), one "
          "sendmsg each; GSO = the same 44 per sendmsg (UDP GSO/GRO); 64K = 64 KB datagrams (IP fragments);\n"
          "QUIC = bare quinn ping-pong with a link's settings (bench_quic), its loop a task on the QUIC runtime; "
          "QUICthr = the same loop on a thread waiting on the runtime per write and read (the rmw's hand-off); "
          "QUICinl = quinn-proto alone, driven by the thread that uses it (no runtime; "
          "45 packets per sendmsg with GSO, GRO on receipt); "
          "QUICeng = quinn-proto on the runtime-free engine: sent inline, received by its loop and handed over")
    print(f"{'payload':>8} {'#':>2} | bare quinn bursts as keep_all's, MB/s: {'QUIC':>8} {'QUICthr':>8} "
          f"{'QUICinl':>8} {'QUICeng':>8}")
    for size in sizes:
        for rep in range(1, repeat + 1):
            mbs = [val(next((r for r in pick(rows, "clean", w, size) if r["repeat"] == rep), None),
                       "throughput", "mb_per_s") for w in ("quic", "quicthr", "quicinl", "quiceng")]
            print(f"{runner.human_size(size):>8} {rep:>2} | {'':>38} " + " ".join(f"{cell(m):>8}" for m in mbs))
    print()
    print("cost of a reliable keep_all message on the clean veth: CPU time per message of the publisher "
          "(host A) and the subscriber (host B), every thread, user + system; threads of each process")
    rmws = ["fastdds"] + tracers
    print(f"{'payload':>8} {'#':>2} | " + " | ".join(f"{k + ' us/msg A':>18} {'B':>6} {'thr A':>5} {'B':>3}"
                                                     for k in rmws))
    for size in sizes:
        for rep in range(1, repeat + 1):
            cells = []
            for k in rmws:
                r = next((r for r in pick(rows, "clean", k, size) if r["repeat"] == rep), None)
                cells.append(f"{cell(val(r, 'throughput', 'ping_cpu_us_per_msg'), 2):>18} "
                             f"{cell(val(r, 'throughput', 'pong_cpu_us_per_msg'), 2):>6} "
                             f"{cell(val(r, 'throughput', 'ping_threads'), 0):>5} "
                             f"{cell(val(r, 'throughput', 'pong_threads'), 0):>3}")
            print(f"{runner.human_size(size):>8} {rep:>2} | " + " | ".join(cells))
    lossy = [r for r in rows if r.get("phase") == "lossy" and "rmw" in r]
    if lossy:
        print()
        print(f"lossy link ({LOSS:.0%} of frames dropped, {DELAY * 1e3:.0f} ms each way): reliable keep_all 1 MiB bursts")
        print(f"{'#':>2} | {'Fast DDS MB/s':>13} {'median round':>12} | {'rmw':>8} {'MB/s':>8} {'median round':>12} | "
              f"{'ratio':>6}")
        size = 1 << 20
        for rep in range(1, repeat + 1):
            f = next((r for r in pick(rows, "lossy", "fastdds", size) if r["repeat"] == rep), None)
            for k in tracers:
                t = next((r for r in pick(rows, "lossy", k, size) if r["repeat"] == rep), None)
                fmb, tmb = val(f, "throughput", "mb_per_s"), val(t, "throughput", "mb_per_s")
                rmb = ratio(tmb, fmb)
                fcell = cell(fmb, 3)
                bound = f.get("mb_per_s_below") if f else None
                if fmb is None and bound is not None:
                    # Fast DDS did not complete the round: its rate is below `bound`, the ratio above.
                    fcell, rmb = f"< {bound:.3f}", ratio(tmb, bound)
                if k == "tracer":
                    summary["lossy"].setdefault(size, []).append({"mb_per_s": rmb, "fastdds_bound": fmb is None})
                rcell = ("> " if fmb is None and rmb is not None else "") + cell(rmb, 1)
                print(f"{rep:>2} | {fcell:>13} {cell(val(f, 'throughput', 'median_round_mb_per_s'), 3):>12} | {k:>8} "
                      f"{cell(tmb, 2):>8} {cell(val(t, 'throughput', 'median_round_mb_per_s'), 2):>12} | {rcell:>6}"
                      + (f"  Fast DDS: {f['error']}" if f and "error" in f else "")
                      + (f"  {k}: {t['error']}" if t and "error" in t else ""))
    print("ratio = tracer / Fast DDS: below 1 is better for latency, above 1 for throughput; "
          "'-' = the pair failed (see errors)")
    return summary


def targets(summary):
    """Issue 7's targets, from the worst repetition of each figure."""
    def worst(phase, size, field, low_is_good):
        vals = [r[field] for r in summary[phase].get(size, [])]
        if not vals or any(v is None for v in vals):
            return None
        return max(vals) if low_is_good else min(vals)

    out = []
    for what, phase, size, field, bound, low in (
            ("RTT p50 at 64 B", "clean", 64, "rtt_p50", 0.5, True),
            ("RTT p50 at 1 MiB", "clean", 1 << 20, "rtt_p50", 0.2, True),
            ("keep_all throughput at 1 MiB", "clean", 1 << 20, "mb_per_s", 3.0, False),
            ("keep_all throughput at 1 MiB, 5% loss", "lossy", 1 << 20, "mb_per_s", 2.0, False)):
        v = worst(phase, size, field, low)
        met = None if v is None else (v <= bound if low else v >= bound)
        out.append({"figure": what, "worst_ratio": v, "target": f"{'<=' if low else '>='} {bound}", "met": met})
    return out


def run_setup(args):
    """The environment both hosts start from (inherited settings that would change either rmw's
    behaviour cleared, the venv's libraries, a random domain) and the pair timeouts; SIGTERM and
    SIGHUP then end the run through its finally blocks (namespaces and processes go). Shared
    with tools/bench/relay."""
    base_env = dict(os.environ)
    for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "FASTRTPS_DEFAULT_PROFILES_FILE",
              "RMW_FASTRTPS_PUBLICATION_MODE", "RMW_FASTRTPS_USE_QOS_FROM_XML", "FASTDDS_BUILTIN_TRANSPORTS",
              "RMW_TRACER_RENDEZVOUS_DIR", "LD_PRELOAD", runner.NETNS_MARK):
        base_env.pop(k, None)
    base_env["LD_LIBRARY_PATH"] = runner.library_path(runner.venv_dir())
    base_env["ROS_DOMAIN_ID"] = str(random.randint(100, 200))
    env_for = {}
    for spec in getattr(args, "env_for", None) or []:
        key, _, assign = spec.partition(":")
        var, eq, value = assign.partition("=")
        if not key or not var or not eq:
            raise SystemExit(f"--env-for {spec!r}: want KEY:VAR=VALUE")
        env_for.setdefault(key, {})[var] = value
    pair_args = types.SimpleNamespace(timeout=args.timeout, match_timeout=args.match_timeout,
                                      pair_timeout=args.pair_timeout, cpus=args.cpus, env_for=env_for)

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stop)
    return base_env, pair_args


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/net", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rmw", default="fastdds,tracer", help="comma-separated subset of: fastdds, tracer, baseline")
    ap.add_argument("--sizes", default="64,1M", help="clean-link payload sizes (default: 64,1M)")
    ap.add_argument("--repeat", type=int, default=2, help="repetitions of every pair (default: 2)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the iteration counts")
    ap.add_argument("--no-lossy", dest="lossy", action="store_false", help="skip the lossy link")
    ap.add_argument("--no-clean", dest="clean", action="store_false", help="skip the clean link")
    ap.add_argument("--lossy-burst", type=int, default=LOSSY_CASE[2], help="1 MiB messages per lossy round")
    ap.add_argument("--lossy-rounds", type=int, default=LOSSY_CASE[3], help="measured lossy rounds")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("--baseline-lib", help="a second librmw_tracer.so, run as the rmw 'baseline' beside 'tracer' "
                    "(added to --rmw): a before/after in one run")
    ap.add_argument("-o", "--output", default="net-results.json")
    ap.add_argument("--timeout", type=int, default=60, help="seconds to wait for any one reply (default: 60)")
    ap.add_argument("--match-timeout", type=int, default=30)
    ap.add_argument("--pair-timeout", type=int, default=300, help="seconds one pair may take (default: 300)")
    ap.add_argument("--cpus", help="run every program of the run (both rmws' and the wire's) under "
                    "`taskset -c CPUS`, or host A's under CPUS and host B's under CPUS_B with "
                    "CPUS:CPUS_B: 0 puts all on one CPU, 0:1 gives each host a CPU of its own "
                    "(a diagnostic: the default leaves placement to the kernel)")
    ap.add_argument("--env-for", action="append", metavar="KEY:VAR=VALUE",
                    help="set VAR=VALUE in both hosts' environment for rmw KEY only (repeatable), e.g. "
                    "baseline:RMW_TRACER_WAIT_LEADS=0 with --baseline-lib the same library: one "
                    "setting against another in one run")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    keys = [k.strip() for k in args.rmw.split(",") if k.strip()]
    runner.RMWS.setdefault("baseline", runner.RMWS["tracer"])
    if args.baseline_lib and "baseline" not in keys:
        keys.append("baseline")
    if "baseline" in keys and not args.baseline_lib:
        ap.error("--rmw baseline needs --baseline-lib")
    for k in keys:
        if k not in runner.RMWS:
            ap.error(f"unknown rmw '{k}'")
    sizes = [runner.parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not TwoHosts.available():
        print("net: needs root and iproute2 (ip netns)", file=sys.stderr)
        return 1
    args.output = os.path.abspath(args.output)
    args.tracer_lib = os.path.abspath(args.tracer_lib)
    runner.ensure_built(args.no_build)

    def cases_for(size):
        dl, dw, db, dr = CLEAN_CASES.get(size, CLEAN_CASES[min(CLEAN_CASES, key=lambda s: abs(s - size))])
        return (max(10, int(dl * args.scale)), max(1, int(dw * args.scale)), max(5, int(db * args.scale)), dr)

    cases = {s: cases_for(s) for s in sizes}
    base_env, pair_args = run_setup(args)
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-netbench-")
    rows, errors = [], []
    started = time.time()
    load_before = os.getloadavg()
    tracer_info = {}
    frozen = {}
    try:
        for k, path in (("tracer", args.tracer_lib), ("baseline", args.baseline_lib)):
            if k in keys:
                frozen[k] = os.path.join(workdir, f"{k}-{os.path.basename(path)}")
                shutil.copy2(path, frozen[k])
                with open(frozen[k], "rb") as f:
                    tracer_info[k] = {"path": os.path.abspath(path), "sha256": hashlib.sha256(f.read()).hexdigest()}
        if args.clean:
            run_phase("clean", None, sizes, cases, keys, args.repeat, pair_args, base_env, workdir, frozen,
                      rows, errors)
        if args.lossy:
            lossy = {1 << 20: (0, 0, args.lossy_burst, args.lossy_rounds)}
            run_phase("lossy", (LOSS, DELAY), [1 << 20], lossy, keys, args.repeat, pair_args, base_env, workdir,
                      frozen, rows, errors)
    except KeyboardInterrupt as e:
        errors.append(f"interrupted ({e})")
    finally:
        for path in frozen.values():
            if os.path.exists(path):
                os.remove(path)
        if errors:
            print(f"net: logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.time() - started

    print()
    summary = print_tables(rows, sizes if args.clean else [], args.repeat, keys)
    goals = targets(summary)
    print()
    for g in goals:
        state = "n/a" if g["met"] is None else ("met" if g["met"] else "NOT met")
        print(f"target {g['figure']}: worst ratio {cell(g['worst_ratio'], 3)} (target {g['target']}): {state}")
    print(f"({elapsed:.0f} s; load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after, "
          f"{os.cpu_count()} cores)")
    commit = subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit or None,
        "host": {"cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "setup": {"hosts": ADDR, "link": "veth pair between two network namespaces",
                  "lossy_link": {"loss": LOSS, "delay_s_each_way": DELAY, "shaper": "ros_tests/link_shaper.py"},
                  "fastdds": "FASTDDS_BUILTIN_TRANSPORTS=UDPv4, ROS_STATIC_PEERS, ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET",
                  "tracer": "QUIC, ROS_STATIC_PEERS", "cpus": args.cpus or "any",
                  "env_for": pair_args.env_for,
                  "message_type": "std_msgs/msg/UInt8MultiArray", "burst_qos": "reliable, volatile, keep_all"},
        "tracer_lib": tracer_info.get("tracer"),
        "baseline_lib": tracer_info.get("baseline"),
        "elapsed_s": round(elapsed, 1),
        "errors": errors,
        "rows": rows,
        "ratios_tracer_over_fastdds": {ph: {str(s): v for s, v in d.items()} for ph, d in summary.items()},
        "targets": goals,
    }
    return runner.write_results(out, args.output, errors, "net: {} pair(s) failed:")


if __name__ == "__main__":
    sys.exit(main())
