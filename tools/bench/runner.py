"""Run bench_ping/bench_pong for rmw_tracer and Fast DDS and compare them.

Started by tools/bench/run (which picks the venv's python). For each payload size it runs one
ping/pong process pair per rmw, alternating the rmws size by size so that a change in machine
load hits both alike, then prints a table with tracer/fastdds ratios and writes the JSON.

Everything runs inside private network and mount namespaces (only loopback; an empty tmpfs on
/dev/shm, so Fast DDS's shared-memory files go with the run) when `unshare -n -m` is allowed;
otherwise Fast DDS is held to localhost with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST.
A process that fails, times out or reports a lost message fails the whole run (exit 1).
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "target", "bench")
NETNS_MARK = "RMW_TRACER_BENCH_IN_NETNS"

# rmw key -> (RMW_IMPLEMENTATION, identifier the node must report)
RMWS = {
    "fastdds": ("rmw_fastrtps_cpp", "rmw_fastrtps_cpp"),
    # Fast DDS with only its shared-memory transport, sized for large samples (fastdds_shm.xml).
    "fastdds_shm": ("rmw_fastrtps_cpp", "rmw_fastrtps_cpp"),
    "tracer": ("rmw_tracer", "rmw_tracer"),
    # Another build of rmw_tracer (--baseline-lib: main before a change), measured beside it.
    "baseline": ("rmw_tracer", "rmw_tracer"),
    # rmw_tracer with ping and pong in two containers of this network namespace (own mount,
    # UTS and pid namespaces, own /dev/shm and rendezvous directory: ros_tests/containers.py),
    # default settings: what `docker run --network host` gives (docs/host.md).
    "tracer_boxes": ("rmw_tracer", "rmw_tracer"),
}
# The keys that preload a librmw_tracer.so; the library of each.
TRACER_LIBS = {"tracer": "tracer_lib", "baseline": "baseline_lib", "tracer_boxes": "tracer_lib"}
FASTDDS_SHM_PROFILE = os.path.join(HERE, "fastdds_shm.xml")
# What the tracer is compared with, each in a ratio column: the Fast DDS variants and the
# baseline build.
RATIO_LABELS = {"fastdds": "tr/fdds", "fastdds_shm": "tr/shm", "baseline": "tr/base", "tracer_boxes": "tr/box"}
# The results JSON's name of a key whose identifier another key shares.
RESULT_NAMES = {"fastdds_shm": "rmw_fastrtps_cpp_shm", "baseline": "rmw_tracer_baseline",
                "tracer_boxes": "rmw_tracer_containers"}

# size -> (latency iterations, latency warm-up, burst size, measured burst rounds). Chosen so
# that both rmws together take a few minutes at most on 2 cores; each case also runs one
# unmeasured warm-up round.
DEFAULT_CASES = {
    64: (10000, 1000, 5000, 10),
    4096: (10000, 1000, 5000, 10),
    65536: (3000, 300, 2000, 10),
    1 << 20: (500, 50, 200, 10),
    4 << 20: (150, 15, 50, 10),
}


class BenchError(Exception):
    pass


class TeardownError(BenchError):
    """A pair whose measurements are complete but which failed while shutting down."""

    def __init__(self, message, doc):
        super().__init__(message)
        self.doc = doc


def describe_rc(rc):
    if isinstance(rc, int) and rc < 0:
        try:
            return f"killed by signal {-rc} ({signal.Signals(-rc).name})"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}" if isinstance(rc, int) else rc


def parse_size(text):
    t = text.strip().lower()
    mult = 1
    for suffix, m in (("kib", 1024), ("mib", 1 << 20), ("k", 1024), ("m", 1 << 20), ("b", 1)):
        if t.endswith(suffix):
            t, mult = t[: -len(suffix)], m
            break
    try:
        value = int(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size '{text}' (examples: 64, 4K, 1M)") from None
    if value < 64:
        raise argparse.ArgumentTypeError(f"size '{text}' is below 64 bytes")
    return value


def human_size(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def venv_dir():
    return os.environ.get("RMW_TRACER_VENV", os.path.expanduser("~/.cache/rmw_tracer/venv-jazzy"))


def library_path(venv):
    parts = [os.path.join(venv, "lib")]
    parts += sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "ros_*.libs")))
    parts.append(sysconfig.get_config_var("LIBDIR"))
    old = os.environ.get("LD_LIBRARY_PATH")
    if old:
        parts.append(old)
    return ":".join(parts)


def ensure_built(no_build):
    sources = [os.path.join(HERE, f) for f in ("ping.c", "pong.c", "intra.c", "bench_common.c", "bench_common.h",
                                               "refs.c", "udp.c", "discovery.c", "scale.c", "loans.c", "allocs.c", "build")]
    # bench_quic: its example and the QUIC adapter it is made of (probe.rs and what it uses).
    quic = os.path.join(ROOT, "libtracer-core", "src", "link", "quic")
    sources += [os.path.join(quic, f) for f in os.listdir(quic) if f.endswith(".rs")]
    sources.append(os.path.join(ROOT, "libtracer-core", "examples", "bench_quic.rs"))
    bins = [os.path.join(BIN, b) for b in ("bench_ping", "bench_pong", "bench_intra", "bench_refs", "bench_udp", "bench_discovery", "bench_scale",
                                           "bench_loans", "bench_quic")]
    newest_src = max(os.path.getmtime(s) for s in sources)
    stale = any(not os.path.exists(b) or os.path.getmtime(b) < newest_src for b in bins)
    if stale:
        if no_build:
            raise BenchError(f"{BIN}/bench_ping or bench_pong is missing or stale and --no-build was given")
        subprocess.run([os.path.join(HERE, "build")], check=True)


def enter_netns():
    """Re-run this script, once, inside new network and mount namespaces: loopback up and an empty
    tmpfs on /dev/shm (Fast DDS's shared-memory files live and die with the run)."""
    if os.environ.get(NETNS_MARK) or shutil.which("unshare") is None:
        return
    env = dict(os.environ, **{NETNS_MARK: "1"})
    cmd = ["unshare", "-n", "-m", "--propagation", "private", "--", "sh", "-c",
           'ip link set lo up && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"', "sh",
           sys.executable] + sys.argv
    probe = subprocess.run(["unshare", "-n", "-m", "--", "true"], capture_output=True)
    if probe.returncode != 0:
        print("bench: unshare -n -m is not allowed here; Fast DDS is held to localhost instead", file=sys.stderr)
        return
    os.execvpe(cmd[0], cmd, env)


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def rmw_env(key, args, base_env, workdir):
    """The environment of a benchmark process on rmw `key`, and its rendezvous dir (tracer)."""
    impl, _ = RMWS[key]
    env = dict(base_env)
    env["RMW_IMPLEMENTATION"] = impl
    env.pop("LD_PRELOAD", None)
    rendezvous = None
    if key in TRACER_LIBS:
        env["LD_PRELOAD"] = getattr(args, TRACER_LIBS[key])
        rendezvous = tempfile.mkdtemp(prefix="rendezvous-", dir=workdir)
        os.chmod(rendezvous, 0o700)
        env["RMW_TRACER_RENDEZVOUS_DIR"] = rendezvous
    else:
        if key == "fastdds_shm":
            env["FASTRTPS_DEFAULT_PROFILES_FILE"] = FASTDDS_SHM_PROFILE
        if not os.environ.get(NETNS_MARK):
            # Outside a private namespace Fast DDS must not look beyond this host; inside one it
            # keeps every default, as a ROS user would have it.
            env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env, rendezvous


class Boxes:
    """Two containers, ``ping`` and ``pong``, in this network namespace (ros_tests/containers.py),
    removed on exit; ``workdir`` (the run's logs and results) is bound into both."""

    def __init__(self, workdir):
        self.workdir = workdir

    def __enter__(self):
        sys.path.insert(0, os.path.join(ROOT, "ros_tests"))
        import containers
        self.default_rendezvous = containers.DEFAULT_RENDEZVOUS
        keep = [ROOT, BIN, self.workdir]
        self.ping, self.pong = containers.Box("ping", keep=keep), containers.Box("pong", keep=keep)
        try:
            self.ping.start()
            self.pong.start()
        except Exception:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        self.ping.stop()
        self.pong.stop()


def run_intra(key, size, iters, args, base_env, workdir):
    """bench_intra (one process: publisher and subscription of one context) on rmw `key`."""
    env, rendezvous = rmw_env(key, args, base_env, workdir)
    json_path = os.path.join(workdir, f"intra-{key}-{size}.json")
    cmd = [os.path.join(BIN, "bench_intra"), "--size", str(size), "--iters", str(iters), "--json", json_path]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.pair_timeout, cwd=workdir)
    if out.returncode != 0:
        raise BenchError(f"bench_intra {key} {human_size(size)}: {describe_rc(out.returncode)}\n{out.stdout}{out.stderr}")
    print("  " + out.stdout.strip(), file=sys.stderr)
    with open(json_path) as f:
        doc = json.load(f)
    if doc.get("rmw") != RMWS[key][1]:
        raise BenchError(f"bench_intra {key} reported rmw '{doc.get('rmw')}'")
    if rendezvous:
        shutil.rmtree(rendezvous, ignore_errors=True)
    return doc


def run_pair(key, size, case, args, base_env, workdir, sides=None, keep_all_only=False, tag=None):
    """One bench_pong + bench_ping pair for one rmw and one size; returns ping's JSON document.

    ``sides`` (tools/bench/net): {"ping": (command prefix, env), "pong": (...)} runs each program
    with its own environment behind its prefix (``ip netns exec ...``); by default both run here
    with ``rmw_env``. ``keep_all_only``: only the keep_all bursts are measured (the keep_last
    section of the document is then null)."""
    lat_iters, lat_warmup, burst, rounds = case
    ident = RMWS[key][1]
    rendezvous = None
    if sides is None and key == "tracer_boxes":
        with Boxes(workdir) as boxes:
            env, _ = rmw_env(key, args, base_env, workdir)
            for var in boxes.default_rendezvous:
                env.pop(var, None)
            sides = {"ping": (boxes.ping.prefix(), env), "pong": (boxes.pong.prefix(), env)}
            return run_pair(key, size, case, args, base_env, workdir, sides, keep_all_only, tag)
    if sides is None:
        env, rendezvous = rmw_env(key, args, base_env, workdir)
        sides = {"ping": ([], env), "pong": ([], env)}
    tag = tag or f"{key}-{size}"
    json_path = os.path.join(workdir, f"{tag}.json")
    pong_log = os.path.join(workdir, f"{tag}-pong.log")
    ping_log = os.path.join(workdir, f"{tag}-ping.log")
    depth = str(burst)
    pong_cmd = sides["pong"][0] + [os.path.join(BIN, "bench_pong"), "--burst-depth", depth,
                                   "--idle-timeout", str(args.timeout + 30)]
    ping_cmd = sides["ping"][0] + [
        os.path.join(BIN, "bench_ping"), "--json", json_path, "--burst-depth", depth,
        "--timeout", str(args.timeout), "--match-timeout", str(args.match_timeout),
        "--case", f"{size}:{lat_iters}:{lat_warmup}:{burst}:{rounds}",
    ] + (["--keep-all-only"] if keep_all_only else [])
    with open(pong_log, "w") as pl, open(ping_log, "w") as il:
        pong = subprocess.Popen(pong_cmd, env=sides["pong"][1], stdout=pl, stderr=subprocess.STDOUT, cwd=workdir)
        try:
            ping = subprocess.Popen(ping_cmd, env=sides["ping"][1], stdout=il, stderr=subprocess.STDOUT,
                                    cwd=workdir)
            try:
                ping_rc = ping.wait(timeout=args.pair_timeout)
            except subprocess.TimeoutExpired:
                ping.kill()
                ping.wait()
                ping_rc = "timeout"
            # After a failed ping, pong would only sit out its idle timeout: give it a moment.
            try:
                pong_rc = pong.wait(timeout=15 if ping_rc == 0 else 3)
            except subprocess.TimeoutExpired:
                pong.kill()
                pong.wait()
                pong_rc = "still running after ping ended, killed"
        finally:
            if pong.poll() is None:
                pong.kill()
                pong.wait()
    for line in open(ping_log, errors="replace"):
        if line.startswith("bench_ping:") and " B  rtt" in line:
            print("  " + line.rstrip(), file=sys.stderr)
    failure = None
    if ping_rc != 0 or pong_rc != 0:
        failure = (
            f"{key} at {human_size(size)}: bench_ping {describe_rc(ping_rc)}, bench_pong {describe_rc(pong_rc)}\n"
            f"--- bench_ping ---\n{tail(ping_log)}--- bench_pong ---\n{tail(pong_log)}"
        )
        written = "bench_ping: results written to" in open(ping_log, errors="replace").read()
        if not (written and os.path.exists(json_path)):
            raise BenchError(failure)
    with open(json_path) as f:
        doc = json.load(f)
    if doc.get("rmw") != ident:
        raise BenchError(
            f"{key} run reported rmw '{doc.get('rmw')}', expected '{ident}'"
            + (" (is LD_PRELOAD of the tracer library taking effect?)" if key in TRACER_LIBS else "")
        )
    for c in doc["cases"]:
        for section in ("throughput", "throughput_keep_all"):
            t = c[section]
            if t is None and section == "throughput" and keep_all_only:
                continue
            if t["lost"] != 0 or t["messages"] != burst * rounds:
                raise BenchError(f"{key} at {human_size(size)} ({section}): {t['lost']} messages lost")
            t["median_round_mb_per_s"] = burst * size / statistics.median(t["round_seconds"]) / 1e6
    if failure:
        raise TeardownError(failure, doc)
    if rendezvous:
        shutil.rmtree(rendezvous, ignore_errors=True)
    return doc


def run_json(cmd, what, timeout):
    """Run a reference program that prints one JSON document; its document, or BenchError."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise BenchError(f"{what}: {describe_rc(out.returncode)}\n{out.stderr}")
    return json.loads(out.stdout)


def run_refs(size, iters):
    """The machine's references for one size (bench_refs): raw Unix-socket round trip, memcpy."""
    return run_json([os.path.join(BIN, "bench_refs"), str(size), str(iters)], f"bench_refs {size}", 300)


def print_refs(sizes, results, refs, keys):
    print("references: raw Unix-socket ping-pong (two processes, no framing), a raw Unix-socket stream "
          "(one send and one read per message) and one memcpy, same run; each rmw's round trip over the "
          "socket's, and its keep_all messages/s over the stream's (how near the take path is to the kernel's limit)")
    head = f"{'payload':>9} | {'socket rtt p50':>14} {'p99':>9} | {'stream msg/s':>12} | {'memcpy p50':>10} |"
    for key in keys:
        head += f" {key + '/socket':>17}"
    for key in keys:
        head += f" {key + ' ka/stream':>17}"
    print(head)
    for size in sizes:
        r = refs.get(size)
        if r is None:
            continue
        s50 = r["socket_rtt_us"]["p50"]
        stream = r.get("socket_stream_msgs_per_s")
        line = (f"{human_size(size):>9} | {s50:>14.1f} {r['socket_rtt_us']['p99']:>9.1f} | {fmt(stream, 12, 0)} | "
                f"{r['memcpy_us']['p50']:>10.1f} |")
        for key in keys:
            case = results.get(key, {}).get(size)
            line += f" {fmt(ratio(case['latency_rtt_us']['p50'], s50) if case else None, 17, 2)}"
        for key in keys:
            case = results.get(key, {}).get(size)
            ka = case["throughput_keep_all"]["msgs_per_s"] if case else None
            line += f" {fmt(ratio(ka, stream), 17, 2)}"
        print(line)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def pair_ratio(results, size, section, field, base="fastdds"):
    return ratio(results["tracer"][size][section][field], results[base][size][section][field])


def fmt(v, width, digits=1):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


def print_table(sizes, results, keys, title, cols):
    """One row per size; per column group the value of each rmw, then tracer / each Fast DDS."""

    def get(key, size, section, field):
        case = results.get(key, {}).get(size)
        return None if case is None or case[section] is None else case[section].get(field)

    bases = [k for k in RATIO_LABELS if k in keys] if "tracer" in keys else []
    names = list(keys) + [RATIO_LABELS[b] for b in bases]
    width = 11 * len(names) - 1
    head1 = f"{'payload':>9} |"
    head2 = f"{'':>9} |"
    for name, _, _ in cols:
        head1 += f" {name:^{width}} |"
        head2 += "".join(f" {n:>10}" for n in names) + " |"
    print(title)
    print(head1)
    print(head2)
    print("-" * len(head2))
    for size in sizes:
        line = f"{human_size(size):>9} |"
        for _, section, field in cols:
            digits = 0 if field in ("msgs_per_s", "ping_threads", "pong_threads") else 1
            for key in keys:
                line += f" {fmt(get(key, size, section, field), 10, digits)}"
            tr = get("tracer", size, section, field)
            for b in bases:
                line += f" {fmt(ratio(tr, get(b, size, section, field)), 10, 2)}"
            line += " |"
        print(line)


def print_tables(sizes, results, keys):
    print_table(sizes, results, keys, "latency: round trip ping -> pong -> ping, one message in flight",
                [("rtt p50 us", "latency_rtt_us", "p50"), ("rtt p99 us", "latency_rtt_us", "p99")])
    print()
    for section, what in (("throughput", "keep_last(burst)"), ("throughput_keep_all", "keep_all")):
        print_table(sizes, results, keys,
                    f"throughput, reliable {what}: bursts, first publish to last receipt (MB = 10^6 bytes)",
                    [("MB/s, all rounds", section, "mb_per_s"), ("msg/s, all rounds", section, "msgs_per_s"),
                     ("MB/s, median round", section, "median_round_mb_per_s")])
        print()
    print_table(sizes, results, keys,
                "cost, reliable keep_all: CPU time per message of each process (every thread, user + system) "
                "over the measured rounds, and its threads",
                [("CPU us/msg, publisher", "throughput_keep_all", "ping_cpu_us_per_msg"),
                 ("CPU us/msg, subscriber", "throughput_keep_all", "pong_cpu_us_per_msg"),
                 ("threads, subscriber", "throughput_keep_all", "pong_threads")])
    print()
    print("tr/fdds = tracer / Fast DDS default, tr/shm = tracer / Fast DDS SHM-only (fastdds_shm.xml): below 1 is")
    print("better for latency, above 1 for throughput; nothing was lost. 'all rounds' = total bytes / total time,")
    print("so a stall (e.g. a reliability repair waiting for a heartbeat) counts in full; 'median round' shows the")
    print("steady state.")


def write_results(out, path, errors, heading):
    """Write a benchmark's results JSON to `path`, then list `errors` on stderr under `heading`
    (formatted with their number; None: not listed); the exit status: 1 when any, else 0."""
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"wrote {path}")
    if not errors:
        return 0
    if heading is not None:
        print(heading.format(len(errors)), file=sys.stderr)
        for e in errors:
            print(f"  {e}", file=sys.stderr)
    return 1


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rmw", default="fastdds,fastdds_shm,tracer",
                    help="comma-separated subset of: fastdds, fastdds_shm (Fast DDS with only its SHM transport, "
                         "fastdds_shm.xml), tracer, tracer_boxes (the tracer with ping and pong in two containers "
                         "of one network namespace; needs root), baseline (with --baseline-lib, which adds it "
                         "anyway) (default: fastdds,fastdds_shm,tracer)")
    ap.add_argument("--sizes", default="64,4K,64K,1M,4M", help="payload sizes (default: 64,4K,64K,1M,4M)")
    ap.add_argument("--lat-iters", type=int, help="latency iterations for every size (default: per size)")
    ap.add_argument("--warmup", type=int, help="latency warm-up iterations for every size (default: 10%%)")
    ap.add_argument("--burst", type=int, help="messages per throughput burst for every size (default: per size)")
    ap.add_argument("--rounds", type=int, help="measured burst rounds for every size (default: 10)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the default iteration counts (e.g. 0.1 for a quick look)")
    ap.add_argument("--tracer-lib", default=os.path.join(ROOT, "target", "release", "librmw_tracer.so"),
                    help="librmw_tracer.so to LD_PRELOAD (default: target/release/librmw_tracer.so)")
    ap.add_argument("--baseline-lib", help="another librmw_tracer.so (e.g. main before a change) measured beside the "
                                           "tracer in the same run: rows 'baseline' and a ratio tr/base")
    ap.add_argument("-o", "--output", default="bench-results.json", help="JSON output (default: ./bench-results.json)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds to wait for any one reply (default: 60)")
    ap.add_argument("--match-timeout", type=int, default=30, help="seconds to wait for matching (default: 30)")
    ap.add_argument("--pair-timeout", type=int, default=600, help="seconds one ping/pong pair may take (default: 600)")
    ap.add_argument("--no-build", action="store_true", help="do not (re)build bench_ping/bench_pong")
    ap.add_argument("--no-intra", dest="intra", action="store_false",
                    help="skip the intra-process 64 B round trip (bench_intra) measured after the sizes")
    ap.add_argument("--no-refs", dest="refs", action="store_false",
                    help="skip the raw references (Unix-socket ping-pong, memcpy) measured after each size")
    args = ap.parse_args()

    keys = [k.strip() for k in args.rmw.split(",") if k.strip()]
    for k in keys:
        if k not in RMWS:
            ap.error(f"unknown rmw '{k}' (choose from {', '.join(RMWS)})")
    # `baseline` may be named, as tools/bench/net takes it; it needs its library either way.
    if "baseline" in keys:
        if not args.baseline_lib:
            ap.error("--rmw baseline needs --baseline-lib")
        keys.remove("baseline")
    if args.baseline_lib:
        if "tracer" not in keys:
            ap.error("--baseline-lib is measured beside the tracer: --rmw must include tracer")
        # Right after the tracer, so that the two builds run back to back at each size.
        keys.insert(keys.index("tracer") + 1, "baseline")
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    for name in ("lat_iters", "warmup", "burst", "rounds"):
        v = getattr(args, name)
        if v is not None and (v < 0 or (v == 0 and name != "warmup")):
            ap.error(f"--{name.replace('_', '-')} must be positive")
    if args.scale <= 0:
        ap.error("--scale must be positive")
    args.output = os.path.abspath(args.output)
    args.tracer_lib = os.path.abspath(args.tracer_lib)
    if "tracer" in keys and not os.path.exists(args.tracer_lib):
        print(f"bench: {args.tracer_lib} does not exist; build it with `cargo build --release -p rmw_tracer` "
              "or run with --rmw fastdds", file=sys.stderr)
        return 1
    if args.baseline_lib:
        args.baseline_lib = os.path.abspath(args.baseline_lib)
        if not os.path.exists(args.baseline_lib):
            print(f"bench: --baseline-lib {args.baseline_lib} does not exist", file=sys.stderr)
            return 1

    venv = venv_dir()
    try:
        ensure_built(args.no_build)
    except (BenchError, subprocess.CalledProcessError) as e:
        print(f"bench: build failed: {e}", file=sys.stderr)
        return 1
    enter_netns()
    in_netns = bool(os.environ.get(NETNS_MARK))

    cases = {}
    for size in sizes:
        dl, dw, db, dr = DEFAULT_CASES.get(size, DEFAULT_CASES[min(DEFAULT_CASES, key=lambda s: abs(s - size))])
        lat = args.lat_iters if args.lat_iters is not None else max(10, int(dl * args.scale))
        warm = args.warmup if args.warmup is not None else max(1, int(dw * args.scale))
        burst = args.burst if args.burst is not None else max(5, int(db * args.scale))
        rounds = args.rounds if args.rounds is not None else dr
        cases[size] = (lat, warm, burst, rounds)

    base_env = dict(os.environ)
    base_env.pop(NETNS_MARK, None)
    base_env["LD_LIBRARY_PATH"] = library_path(venv)
    # A domain of our own, so that a Fast DDS run of someone else on this host never matches ours.
    base_env["ROS_DOMAIN_ID"] = str(random.randint(100, 200))
    for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "FASTRTPS_DEFAULT_PROFILES_FILE",
              "RMW_FASTRTPS_PUBLICATION_MODE", "RMW_FASTRTPS_USE_QOS_FROM_XML"):
        base_env.pop(k, None)

    results = {k: {} for k in keys}
    started = time.time()
    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-bench-")
    lib_info = {}
    for key in [k for k in keys if k in TRACER_LIBS]:
        # Other builds may replace target/release/librmw_tracer.so during the run: preload a copy.
        path = getattr(args, TRACER_LIBS[key])
        frozen = os.path.join(workdir, "lib", key, os.path.basename(path))
        os.makedirs(os.path.dirname(frozen))
        shutil.copy2(path, frozen)
        with open(frozen, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        mtime = datetime.datetime.fromtimestamp(os.path.getmtime(frozen), datetime.timezone.utc)
        lib_info[key] = {"path": path, "sha256": digest, "mtime_utc": mtime.isoformat(timespec="seconds")}
        setattr(args, TRACER_LIBS[key], frozen)
    refs = {}
    intra = {}
    errors = []  # every failure is reported and makes the exit status 1
    fatal = False
    try:
        for size in sizes:
            for key in keys:
                print(f"bench: {key} {human_size(size)} {cases[size]}", file=sys.stderr)
                try:
                    doc = run_pair(key, size, cases[size], args, base_env, workdir)
                except TeardownError as e:
                    # Measured in full, then crashed on the way out: keep the numbers, fail the run.
                    print(f"bench: FAILED after measuring: {e}", file=sys.stderr)
                    errors.append(f"after measuring: {str(e).splitlines()[0]}")
                    doc = e.doc
                results[key][size] = doc["cases"][0]
            if args.refs:
                refs[size] = run_refs(size, cases[size][0])
        if args.intra:
            # Intra-process delivery uses no transport: fastdds_shm would measure fastdds again.
            for key in [k for k in keys if k not in ("fastdds_shm", "tracer_boxes")]:
                print(f"bench: {key} intra-process 64 B", file=sys.stderr)
                intra[key] = run_intra(key, 64, max(100, int(10000 * args.scale)), args, base_env, workdir)
    except BenchError as e:
        print(f"bench: FAILED: {e}", file=sys.stderr)
        errors.append(str(e).splitlines()[0])
        fatal = True
    if errors:
        print(f"bench: logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.time() - started

    print()
    print_tables(sizes, results, keys)
    if refs:
        print()
        print_refs(sizes, results, refs, keys)
    if intra:
        print()
        print("intra-process: publisher and subscription of one context, two threads, 64 B round trip")
        for key in keys:
            if key in intra:
                r = intra[key]["rtt_us"]
                print(f"  {key:>8}: p50 {r['p50']:8.1f} us  p99 {r['p99']:8.1f} us  min {r['min']:6.1f} us")
        for base in [b for b in ("fastdds", "baseline") if "tracer" in intra and b in intra]:
            r = ratio(intra["tracer"]["rtt_us"]["p50"], intra[base]["rtt_us"]["p50"])
            print(f"  ratio tracer/{base} p50 {r:.2f}")
    if fatal:
        print("(stopped at the first failure: the table holds the pairs run before it)")
    print(f"({elapsed:.0f} s; load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{'private network namespace' if in_netns else 'ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST'})")

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit or None,
        "host": {"cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
                 "private_netns": in_netns},
        "message_type": "std_msgs/msg/UInt8MultiArray",
        "latency": "round trip ping -> pong -> ping, microseconds, one message in flight",
        "throughput": "burst of messages published back to back, first publish to last receipt; MB = 10^6 bytes; "
                      "throughput: reliable keep_last(burst), throughput_keep_all: reliable keep_all",
        "rmws": {k: {"implementation": RMWS[k][0],
                     "profile": os.path.basename(FASTDDS_SHM_PROFILE) if k == "fastdds_shm" else None} for k in keys},
        "tracer_lib": lib_info.get("tracer"),
        "baseline_lib": lib_info.get("baseline"),
        "elapsed_s": round(elapsed, 1),
        "errors": errors,
        "results": {RESULT_NAMES.get(k, RMWS[k][1]): [results[k][s] for s in sizes if s in results[k]] for k in keys},
        "references": [refs[s] for s in sizes if s in refs],
        "intra_process": {RESULT_NAMES.get(k, RMWS[k][1]): intra[k] for k in keys if k in intra},
        "ratios_tracer_over": {
            base: [
                {
                    "size": s,
                    "rtt_p50": pair_ratio(results, s, "latency_rtt_us", "p50", base),
                    "rtt_p99": pair_ratio(results, s, "latency_rtt_us", "p99", base),
                    "mb_per_s": pair_ratio(results, s, "throughput", "mb_per_s", base),
                    "keep_all_mb_per_s": pair_ratio(results, s, "throughput_keep_all", "mb_per_s", base),
                }
                for s in sizes if s in results.get("tracer", {}) and s in results.get(base, {})
            ]
            for base in RATIO_LABELS if "tracer" in keys and base in keys
        },
    }
    return write_results(out, args.output, errors, "bench: FAILED ({} error(s)):")


if __name__ == "__main__":
    sys.exit(main())
