"""Round trips through the on-new-message callback against rcl_wait, rmw_tracer against Fast DDS
(issue 26: the callbacks now come from the ring's arrival hook instead of a thread per
subscription polling every 10 ms).

Started by tools/bench/callbacks. One bench_cb pong + bench_cb ping pair (tools/bench/cb_pingpong.c)
per rmw and wake-up mode: `cb` (each side woken by rcl_subscription_set_on_new_message_callback,
which writes an eventfd; the main thread takes and answers) and `wait` (each side blocked in
rcl_wait). 64 B std_msgs/UInt8MultiArray, one message in flight, round trip ping -> pong -> ping.
The rmws (rmw_tracer, with --baseline-lib the library before the change as `baseline`, Fast DDS)
alternate pair by pair, the order flipped every repetition, so a change in machine load hits all
alike. Same isolation as tools/bench/run (runner.py): private network and mount namespaces, a
random domain, each tracer pair its own rendezvous directory, frozen copies of the libraries.
A benchmark: it fails (exit 1) only when an echo is lost, corrupted or late, or a process errors.
"""

import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

import runner
from net import run_setup

PROG = os.path.join(runner.BIN, "bench_cb")
SOURCES = ("cb_pingpong.c", "bench_common.c", "bench_common.h", "build")
MODES = ("cb", "wait")
# key -> (runner.RMWS entry, label): baseline is rmw_tracer from another library.
LABELS = {"tracer": "rmw_tracer", "baseline": "rmw_tracer baseline", "fastdds": "Fast DDS"}


def ensure_built(no_build):
    """(Re)build bench_cb alone (`build cb`: no cargo) when its sources are newer."""
    newest = max(os.path.getmtime(os.path.join(runner.HERE, s)) for s in SOURCES)
    if os.path.exists(PROG) and os.path.getmtime(PROG) >= newest:
        return
    if no_build:
        raise runner.BenchError(f"{PROG} is missing or stale and --no-build was given")
    subprocess.run([os.path.join(runner.HERE, "build"), "cb"], check=True)


def freeze(path, workdir, key):
    """A private copy of a tracer library (a rebuild mid-run cannot mix versions) and its sha256."""
    frozen = os.path.join(workdir, f"{key}-{os.path.basename(path)}")
    shutil.copy2(path, frozen)
    with open(frozen, "rb") as f:
        return frozen, {"path": os.path.abspath(path), "sha256": hashlib.sha256(f.read()).hexdigest()}


def run_pair(key, mode, libs, args, base_env, workdir, tag):
    """One pong + ping of bench_cb; ping's JSON document."""
    rmw = "tracer" if key in libs else key
    env, rendezvous = runner.rmw_env(rmw, types.SimpleNamespace(tracer_lib=libs.get(key)), base_env, workdir)
    json_path = os.path.join(workdir, f"{tag}.json")
    logs = {r: os.path.join(workdir, f"{tag}-{r}.log") for r in ("ping", "pong")}
    common = ["--timeout", str(args.timeout)]
    with open(logs["pong"], "w") as pl, open(logs["ping"], "w") as il:
        pong = subprocess.Popen([PROG, "pong", mode, "--idle-timeout", str(args.timeout + 30)], env=env,
                                stdout=pl, stderr=subprocess.STDOUT, cwd=workdir)
        try:
            ping = subprocess.run([PROG, "ping", mode, "--json", json_path, "--size", str(args.size),
                                   "--iters", str(args.iters), "--warmup", str(args.warmup),
                                   "--match-timeout", str(args.match_timeout)] + common,
                                  env=env, stdout=il, stderr=subprocess.STDOUT, cwd=workdir,
                                  timeout=args.pair_timeout)
            ping_rc = ping.returncode
            pong_rc = pong.wait(timeout=15)
        except subprocess.TimeoutExpired:
            ping_rc = pong_rc = "timeout"
        finally:
            if pong.poll() is None:
                pong.kill()
                pong.wait()
    if ping_rc != 0 or pong_rc != 0:
        raise runner.BenchError(f"{tag}: ping {runner.describe_rc(ping_rc)}, pong {runner.describe_rc(pong_rc)}\n"
                                f"--- ping ---\n{runner.tail(logs['ping'])}--- pong ---\n{runner.tail(logs['pong'])}")
    with open(json_path) as f:
        doc = json.load(f)
    if doc["rmw"] != runner.RMWS[rmw][1]:
        raise runner.BenchError(f"{tag}: the node reports rmw '{doc['rmw']}' (did the preload take effect?)")
    if rendezvous:
        shutil.rmtree(rendezvous, ignore_errors=True)
    return doc


def cell(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


# (numerator, denominator) of the ratio rows, when both ran.
RATIOS = (("tracer", "fastdds"), ("baseline", "fastdds"), ("tracer", "baseline"))


def rtt(rows, key, mode, rep, q):
    r = next((r for r in rows if r["key"] == key and r["mode"] == mode and r["repeat"] == rep), None)
    return r["rtt_us"][q] if r else None


def ratios(rows, keys, repeat):
    """Per repetition, num/den of each RATIOS pair for each mode's p50 and p99."""
    return [{"repeat": rep, "of": f"{num}/{den}",
             **{f"{m}_{q}": runner.ratio(rtt(rows, num, m, rep, q), rtt(rows, den, m, rep, q))
                for m in MODES for q in ("p50", "p99")}}
            for rep in range(1, repeat + 1) for num, den in RATIOS if num in keys and den in keys]


def print_table(rows, keys, repeat, size):
    print(f"{runner.human_size(size)} round trip ping -> pong -> ping, one in flight, microseconds "
          "(cb = woken by the on-new-message callback, wait = by rcl_wait)")
    print(f"{'#':>2} {'rmw':<20} | {'cb p50':>8} {'cb p99':>8} | {'wait p50':>8} {'wait p99':>8} | {'cb/wait p50':>11}")
    ratio_rows = ratios(rows, keys, repeat)
    for rep in range(1, repeat + 1):
        for key in keys:
            c50, c99, w50, w99 = (rtt(rows, key, m, rep, q) for m in MODES for q in ("p50", "p99"))
            print(f"{rep:>2} {LABELS[key]:<20} | {cell(c50):>8} {cell(c99):>8} | {cell(w50):>8} {cell(w99):>8} | "
                  f"{cell(runner.ratio(c50, w50), 2):>11}")
        for r in (r for r in ratio_rows if r["repeat"] == rep):
            name = r["of"].replace("fastdds", "Fast DDS")
            print(f"{rep:>2} {name:<20} | {cell(r['cb_p50'], 2):>8} {cell(r['cb_p99'], 2):>8} | "
                  f"{cell(r['wait_p50'], 2):>8} {cell(r['wait_p99'], 2):>8} |")
    print("ratio rows: below 1 = a shorter round trip than the denominator's")
    return ratio_rows


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/callbacks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=runner.parse_size, default=64, help="payload bytes (default: 64)")
    ap.add_argument("--iters", type=int, default=20000, help="measured round trips per pair (default: 20000)")
    ap.add_argument("--warmup", type=int, default=2000, help="round trips not counted (default: 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="pairs per rmw and mode (default: 3)")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("--baseline-lib", help="a second librmw_tracer.so (the build before the change), "
                    "run as 'baseline' beside the tracer: before/after in one run")
    ap.add_argument("--no-fastdds", dest="fastdds", action="store_false", help="leave Fast DDS out")
    ap.add_argument("-o", "--output", help="JSON output (default: tools/bench/results/<UTC time>-callbacks.json)")
    ap.add_argument("--timeout", type=int, default=30, help="seconds to wait for one echo (default: 30)")
    ap.add_argument("--match-timeout", type=int, default=30)
    ap.add_argument("--pair-timeout", type=int, default=300)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%MZ")
    args.output = os.path.abspath(args.output or os.path.join(runner.HERE, "results", f"{stamp}-callbacks.json"))
    keys = ["tracer"] + (["baseline"] if args.baseline_lib else []) + (["fastdds"] if args.fastdds else [])
    for lib in (args.tracer_lib, args.baseline_lib):
        if lib and not os.path.exists(lib):
            ap.error(f"{lib} does not exist")
    ensure_built(args.no_build)
    # Re-executed in private network and mount namespaces, with the same argv: the output path
    # is already made absolute above only for this process, so pass it on explicitly.
    if "-o" not in sys.argv and "--output" not in sys.argv:
        sys.argv += ["-o", args.output]
    runner.enter_netns()
    in_netns = bool(os.environ.get(runner.NETNS_MARK))

    args.cpus = None
    base_env, _ = run_setup(args)
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-cbbench-")
    libs, lib_info = {}, {}
    for key, path in (("tracer", args.tracer_lib), ("baseline", args.baseline_lib)):
        if key in keys:
            libs[key], lib_info[key] = freeze(path, workdir, key)
    rows, errors = [], []
    started, load_before = time.time(), os.getloadavg()
    try:
        for rep in range(1, args.repeat + 1):
            for mode in MODES:
                for key in keys if rep % 2 else list(reversed(keys)):
                    tag = f"{key}-{mode}-{rep}"
                    print(f"callbacks: #{rep} {LABELS[key]} {mode}", file=sys.stderr)
                    try:
                        doc = run_pair(key, mode, libs, args, base_env, workdir, tag)
                    except (runner.BenchError, subprocess.TimeoutExpired) as e:
                        print(f"callbacks: FAILED {e}", file=sys.stderr)
                        errors.append(str(e).splitlines()[0])
                        continue
                    rows.append(dict(doc, key=key, repeat=rep, load=round(os.getloadavg()[0], 2)))
    except KeyboardInterrupt as e:
        errors.append(f"interrupted ({e})")
    if errors:
        print(f"callbacks: logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    ratio_rows = print_table(rows, keys, args.repeat, args.size)
    print(f"({time.time() - started:.0f} s; load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{'private network namespace' if in_netns else 'ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST'})")
    commit = subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit or None,
        "host": {"cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
                 "private_netns": in_netns},
        "what": "round trip ping -> pong -> ping in microseconds, std_msgs/msg/UInt8MultiArray, reliable keep_last 16; "
                "mode cb: both sides woken by the on-new-message callback (eventfd), wait: by rcl_wait",
        "tracer_lib": lib_info.get("tracer"),
        "baseline_lib": lib_info.get("baseline"),
        "errors": errors,
        "rows": rows,
        "ratios": ratio_rows,
    }
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    return runner.write_results(out, args.output, errors, None)


if __name__ == "__main__":
    sys.exit(main())
