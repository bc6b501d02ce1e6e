"""A microcontroller node over a serial line (issue 27): messages per second, round trips and the
holder's CPU per message, through the MCU library built for the host on a pseudo-terminal and
through the firmware under qemu-system-arm (its UART on a pty).

Started by tools/bench/serial. Every run has its own rendezvous directory and domain; three
rclpy processes on rmw_tracer name the port in RMW_TRACER_SERIAL: a holder that only spins
(`serial_worker.py hold`, started first, so it holds the port), and the measuring node
(`count`, `echo`, `burst`), which reaches the MCU through ordinary discovery like any process.
The holder's CPU (utime + stime from /proc, 10 ms ticks) over the run, divided by the messages
that crossed the line, is the host's CPU per message: the session, the port, the proxy graph's
writes and the Unix-socket link to the measuring process. Neither a pty nor QEMU's PL011 has a
baud rate, so these measure the software, not a UART (docs/serial.md section 11 has the line
times at 115200). A benchmark: it fails (exit 1) only when a process errors or a reliable
message is lost.
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import runner

sys.path.insert(0, os.path.join(runner.ROOT, "ros_tests"))
import harness  # noqa: E402  (after the path)
import serial_mcu  # noqa: E402
from serial_mcu import Mcu, Qemu, Relay, port_held, wait_until, worker  # noqa: E402


def cpu_ticks(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def measure(env, port, mode, args, messages, start_mcu=None, timeout=90):
    """Run `serial_worker.py mode args` against the MCU on `port` with a separate holder;
    `start_mcu` (if given) is called once the worker is ready (a stream that starts before its
    listener would be counted from wherever it joined). Returns the worker's output and the
    holder's CPU seconds per message (`messages(out)`)."""
    holder = worker("hold", str(timeout), env=env, timeout=timeout + 30)
    try:
        if not wait_until(lambda: port_held(env, port), 20):
            raise runner.BenchError(f"nobody holds {port}\n{holder.join(1).describe()}")
        w = worker(mode, *args, env=env, timeout=timeout)
        if mode == "count":
            if not w.wait_for_output("ready", 30):
                raise runner.BenchError(f"{mode} did not start\n{w.join(1).describe()}")
            # The process's start (and the MCU's node joining it) is not the messages' cost.
            time.sleep(0.5)
        before = cpu_ticks(holder.popen.pid)
        if start_mcu is not None:
            start_mcu()
        r = w.join().check()
        ticks = cpu_ticks(holder.popen.pid) - before
        n = messages(r.stdout)
        return r.stdout, (ticks / os.sysconf("SC_CLK_TCK")) / max(n, 1)
    finally:
        holder.kill()
        holder.join(5)


def count_result(out):
    m = re.search(r"count (\d+) (\S+) (True|False)", out)
    n, span, in_order = int(m.group(1)), float(m.group(2)), m.group(3) == "True"
    return n, span, in_order


def rtts(out):
    return sorted(int(us) for us in re.findall(r"^\S+ rtt \d+ (\d+)$", out, re.M))


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else None


def stream(env, port, n, best_effort, errors, label, start_mcu=None):
    args = ["/mcu/counter", str(n), "60"] + (["best_effort"] if best_effort else [])
    # Every value crossed the line into the holder (a pty loses nothing), taken or not.
    out, cpu = measure(env, port, "count", args, lambda o: n, start_mcu)
    got, span, in_order = count_result(out)
    if not best_effort and not in_order:
        errors.append(f"{label}: reliable values missing or out of order")
    return {"messages": got, "rate": got / span if span else None,
            "consecutive": in_order, "holder_cpu_us_per_msg": cpu * 1e6}


def echo(env, port, n, errors, label):
    # The holder's CPU is left out here: a few hundred messages weigh little beside the
    # discovery of the measuring process; the streams measure it.
    out, _ = measure(env, port, "echo", [str(n)], lambda o: 2 * len(rtts(o)))
    r = rtts(out)
    if len(r) != n:
        errors.append(f"{label}: {len(r)} of {n} echoes came back")
    return {"round_trips": len(r), "p50_us": pct(r, 0.5), "p99_us": pct(r, 0.99),
            "mean_us": statistics.mean(r) if r else None}


def burst(env, port, n, errors, label):
    out, _ = measure(env, port, "burst", [str(n)], lambda o: 2 * n)
    m = re.search(r"rate (\d+) in_order (True|False)", out)
    if not m or m.group(2) != "True":
        errors.append(f"{label}: burst out of order or incomplete")
    return {"echoes_per_s": int(m.group(1)) if m else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000, help="counter values per stream run")
    ap.add_argument("--echoes", type=int, default=500, help="round trips per echo run")
    ap.add_argument("--no-qemu", action="store_true")
    ap.add_argument("-o", "--output", default="bench-serial.json")
    args = ap.parse_args()
    errors, results = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-serial-") as tmp:
        tmp = Path(tmp)
        exe = serial_mcu.build_loopback(tmp)
        if exe is None:
            raise SystemExit("tools/bench/serial: no C compiler `cc`")

        def on_pty(name, **mcu_args):
            mcu = Mcu(exe, 0x2760, **mcu_args)
            env = harness.tracer_env(tmp / name, extra={"RMW_TRACER_SERIAL": f"{mcu.path}:115200"})
            return mcu, env

        for best_effort in (False, True):
            # The host names a relay's pty; the MCU comes behind it once the listener is up.
            label = f"pty stream {'best effort' if best_effort else 'reliable'}"
            relay = Relay()
            env = harness.tracer_env(tmp / label.replace(" ", "_"),
                                     extra={"RMW_TRACER_SERIAL": f"{relay.path}:115200"})
            mcus = []

            def start_mcu(best_effort=best_effort, relay=relay, mcus=mcus):
                mcus.append(Mcu(exe, 0x2750 + len(mcus), count=args.messages, period_ms=0,
                                reliable=not best_effort))
                relay.attach(mcus[-1].path)

            try:
                results[label] = stream(env, relay.path, args.messages, best_effort, errors, label,
                                        start_mcu)
            finally:
                for m in mcus:
                    m.close()
                relay.close()
        for name, fn in (("pty echo", lambda e, p: echo(e, p, args.echoes, errors, "pty echo")),
                         ("pty echo burst", lambda e, p: burst(e, p, 4 * args.echoes, errors, "pty burst"))):
            mcu, env = on_pty(name.replace(" ", "_"), count=0)
            try:
                results[name] = fn(env, mcu.path)
            finally:
                mcu.close()
        if not args.no_qemu:
            elf, why = serial_mcu.build_firmware(tmp / "fw")
            if elf is None:
                print(f"qemu: skipped: {why}")
            else:
                for name, fn in (
                    ("qemu counter 100 Hz", lambda e, p: stream(e, p, 500, True, errors, "qemu counter")),
                    ("qemu echo", lambda e, p: echo(e, p, args.echoes, errors, "qemu echo")),
                    ("qemu echo burst", lambda e, p: burst(e, p, 4 * args.echoes, errors, "qemu burst")),
                ):
                    q = Qemu(elf, tmp / f"{name.replace(' ', '_')}.log")
                    env = harness.tracer_env(tmp / name.replace(" ", "_"),
                                             extra={"RMW_TRACER_SERIAL": f"{q.path}:115200"})
                    try:
                        results[name] = fn(env, q.path)
                    finally:
                        q.close()
    for name, r in results.items():
        print(f"{name:24} " + "  ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in r.items()))
    commit = subprocess.run(["git", "-C", runner.ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit, "load": os.getloadavg(), "messages": args.messages,
           "echoes": args.echoes, "results": results}
    return runner.write_results(out, args.output, errors, "{} problems:")


if __name__ == "__main__":
    sys.exit(main())
