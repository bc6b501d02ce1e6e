"""Bytes on the wire to a /camera/image subscriber on another host while the same node streams
/camera/image/compressed at 10 MB/s (issue 26: every subscription edge is exact, so a nested
topic no longer crosses the link to a subscriber of its parent).

Started by tools/bench/nested. Host A and host B are two network namespaces joined by a veth
pair (ros_tests/two_hosts.py, names prefixed `nx-`, made afresh for every rmw and removed after
it with every process in them), each program in a mount namespace of its own with an empty
/dev/shm (tools/bench/net.py's host_sides: rmw_tracer over QUIC with the other host in
ROS_STATIC_PEERS; Fast DDS on UDPv4 with ROS_STATIC_PEERS and SUBNET discovery). Host A runs
`nested_node.py cam` (/camera/image 100 B at 10 Hz, /camera/image/compressed 100 KB at 100 Hz),
host B `nested_node.py sub` (/camera/image only). From half a second after the stream starts,
for `--seconds`, the driver reads host B's received bytes (`ip -s -j link`) and the subscriber's
arrivals: rx bytes/s against the subscribed topic's own bytes/s (its images' CDR size times the
images that arrived in the window). A benchmark: it fails (exit 1) only when a process errors or
an image published is not received.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import runner
from callbacks import freeze
from net import host_sides, kill_namespace_processes, run_setup

sys.path.insert(0, os.path.join(runner.ROOT, "ros_tests"))
import harness  # noqa: E402  (after the path)
from test_exact_delivery import rx_bytes  # noqa: E402
from two_hosts import TwoHosts  # noqa: E402

NODE = os.path.join(runner.HERE, "nested_node.py")
LABELS = {"tracer": "rmw_tracer", "baseline": "rmw_tracer baseline", "fastdds": "Fast DDS"}
# The window starts this long after the first publish (the stream has settled).
SETTLE_S = 0.5


def run_one(key, hosts, args, base_env, workdir, libs, tag):
    sides = host_sides(key, hosts, base_env, workdir, libs, tag, args)
    python = sys.executable
    stop = os.path.join(workdir, f"{tag}.stop")
    procs = []
    try:
        # sub spins until the stop file exists (nested_node.py has no stdin to tell it).
        sub = harness.spawn(sides["pong"][0] + [python, NODE, "sub", "--stop-file", stop],
                            sides["pong"][1], timeout=args.seconds + 120)
        procs.append(sub)
        if not sub.wait_for_output("ready", 60):
            raise runner.BenchError(f"{tag}: the subscriber did not start\n{sub.join(1).describe()}")
        cam = harness.spawn(sides["ping"][0] + [python, NODE, "cam", "--seconds", str(args.seconds + 2 * SETTLE_S)],
                            sides["ping"][1], timeout=args.seconds + 120)
        procs.append(cam)
        if not cam.wait_for_output("start", 90):
            raise runner.BenchError(f"{tag}: the camera never matched the subscriber\n{cam.join(1).describe()}")
        start = float(cam.output_so_far().split("start ", 1)[1].split()[0])
        time.sleep(max(0.0, start + SETTLE_S - time.monotonic()))
        rx0, t0 = rx_bytes(hosts.ns["b"]), time.monotonic()
        time.sleep(args.seconds)
        rx1, t1 = rx_bytes(hosts.ns["b"]), time.monotonic()
        c = cam.join(args.seconds + 60)
        open(stop, "w").close()
        s = sub.join(30)
        for name, r in (("cam", c), ("sub", s)):
            if r.timed_out or r.returncode != 0:
                raise runner.BenchError(f"{tag}: {name} failed\n{r.describe()}")
        cam_doc, sub_doc = json.loads(c.stdout.splitlines()[-1]), json.loads(s.stdout.splitlines()[-1])
    finally:
        for p in procs:
            p.kill()
        kill_namespace_processes(hosts)
    for doc in (cam_doc, sub_doc):
        if doc["rmw"] != runner.RMWS["tracer" if key in libs else key][1]:
            raise runner.BenchError(f"{tag}: a node reports rmw '{doc['rmw']}' (did the preload take effect?)")
    span = t1 - t0
    images = [a for a in sub_doc["arrivals"] if a[1] == cam_doc["image_bytes"]]
    in_window = [a for a in images if t0 <= a[0] <= t1]
    return {
        "key": key, "rmw": cam_doc["rmw"], "window_s": round(span, 3),
        "rx_bytes": rx1 - rx0, "rx_bytes_per_s": (rx1 - rx0) / span,
        "own_bytes_per_s": len(in_window) * cam_doc["image_cdr_bytes"] / span,
        "own_payload_bytes_per_s": len(in_window) * cam_doc["image_bytes"] / span,
        "nested_published_bytes_per_s": cam_doc["nested"] * cam_doc["nested_cdr_bytes"] / cam_doc["elapsed_s"],
        "images_published": cam_doc["images"], "images_received": len(images),
        "images_in_window": len(in_window),
        "other_messages_received": len(sub_doc["arrivals"]) - len(images),
        "lost_events": sub_doc["lost_events"], "cam": cam_doc,
    }


def cell(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


def print_table(rows, seconds):
    print(f"host B's veth, {seconds:g} s while host A streams /camera/image/compressed; B subscribes to "
          "/camera/image only (bytes/s)")
    print(f"{'rmw':<20} | {'rx B/s':>12} | {'own B/s':>8} | {'rx/own':>8} | {'nested B/s':>12} | {'rx/nested':>9} | "
          f"{'images':>9} | {'other':>5}")
    for r in rows:
        print(f"{LABELS[r['key']]:<20} | {cell(r['rx_bytes_per_s']):>12} | {cell(r['own_bytes_per_s']):>8} | "
              f"{cell(runner.ratio(r['rx_bytes_per_s'], r['own_bytes_per_s']), 1):>8} | "
              f"{cell(r['nested_published_bytes_per_s']):>12} | "
              f"{cell(runner.ratio(r['rx_bytes_per_s'], r['nested_published_bytes_per_s']), 4):>9} | "
              f"{r['images_received']:>4}/{r['images_published']:<4} | {r['other_messages_received']:>5}")
    print("own = the subscribed topic's images that arrived in the window x their CDR size; nested = what A "
          "published on /camera/image/compressed (CDR); images = received / published over the whole run; "
          "other = messages of another size the subscriber was handed")


def main():
    ap = argparse.ArgumentParser(prog="tools/bench/nested", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10, help="measured seconds of the stream (default: 10)")
    ap.add_argument("--tracer-lib", default=os.path.join(runner.ROOT, "target", "release", "librmw_tracer.so"))
    ap.add_argument("--baseline-lib", help="a second librmw_tracer.so (the build before the change), "
                    "run as 'baseline': before/after in one run")
    ap.add_argument("--no-fastdds", dest="fastdds", action="store_false", help="leave Fast DDS out")
    ap.add_argument("-o", "--output", help="JSON output (default: tools/bench/results/<UTC time>-nested.json)")
    args = ap.parse_args()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%MZ")
    args.output = os.path.abspath(args.output or os.path.join(runner.HERE, "results", f"{stamp}-nested.json"))
    if not TwoHosts.available():
        print("nested: needs root and iproute2 (ip netns)", file=sys.stderr)
        return 1
    keys = ["tracer"] + (["baseline"] if args.baseline_lib else []) + (["fastdds"] if args.fastdds else [])
    runner.RMWS.setdefault("baseline", runner.RMWS["tracer"])
    # run_setup's pair settings are bench_ping's; nested_node.py has its own timeouts.
    args.timeout = args.match_timeout = args.pair_timeout = 60
    args.cpus = None
    base_env, _ = run_setup(args)
    workdir = tempfile.mkdtemp(prefix="rmw-tracer-nested-")
    libs, lib_info = {}, {}
    rows, errors = [], []
    started, load_before = time.time(), os.getloadavg()
    try:
        for key, path in (("tracer", args.tracer_lib), ("baseline", args.baseline_lib)):
            if key in keys:
                libs[key], lib_info[key] = freeze(path, workdir, key)
        for key in keys:
            print(f"nested: {LABELS[key]}", file=sys.stderr)
            with TwoHosts(None, room="nx") as hosts:
                try:
                    row = run_one(key, hosts, args, base_env, workdir, libs, f"nested-{key}")
                except runner.BenchError as e:
                    print(f"nested: FAILED {e}", file=sys.stderr)
                    errors.append(str(e).splitlines()[0])
                    continue
            if row["images_received"] != row["images_published"]:
                errors.append(f"{key}: {row['images_published'] - row['images_received']} of "
                              f"{row['images_published']} images lost")
            rows.append(row)
    except KeyboardInterrupt as e:
        errors.append(f"interrupted ({e})")
    finally:
        if errors:
            print(f"nested: logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    print_table(rows, args.seconds)
    print(f"({time.time() - started:.0f} s; load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after)")
    commit = subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit or None,
        "host": {"cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "setup": {"link": "veth pair between two network namespaces (192.0.2.1 A, 192.0.2.2 B)",
                  "stream": "A: /camera/image 100 B at 10 Hz and /camera/image/compressed 100 KB at 100 Hz, "
                            "std_msgs/msg/UInt8MultiArray, reliable keep_last 10; B subscribes /camera/image only",
                  "window": f"{args.seconds} s from {SETTLE_S} s after the first publish",
                  "fastdds": "FASTDDS_BUILTIN_TRANSPORTS=UDPv4, ROS_STATIC_PEERS, ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET",
                  "tracer": "QUIC, ROS_STATIC_PEERS"},
        "tracer_lib": lib_info.get("tracer"),
        "baseline_lib": lib_info.get("baseline"),
        "errors": errors,
        "rows": rows,
    }
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    return runner.write_results(out, args.output, errors, "nested: {} error(s):")


if __name__ == "__main__":
    sys.exit(main())
