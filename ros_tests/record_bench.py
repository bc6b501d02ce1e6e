"""Recording overhead on publish latency (issue 4, "How it is shown"): a benchmark, not a test.

Runs ros_tests/c/record_bench.c (one rcl publisher, no subscription, every rcl_publish timed)
under rmw_tracer with recording off, with RMW_TRACER_RECORD (zstd chunks, the default) and with
RMW_TRACER_RECORD_COMPRESSION=none, for 64 B and 1 MiB messages, alternating the variants over
several rounds, and prints the median of each statistic over the rounds and the on/off ratios.

    $VENV/bin/python ros_tests/record_bench.py [--rounds 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

CASES = [(64, 20000, 50), (1 << 20, 200, 2000)]  # size, iterations, gap (us) between publishes
VARIANTS = {
    "off": {},
    "record-zstd": {"RMW_TRACER_RECORD_COMPRESSION": "zstd"},
    "record-none": {"RMW_TRACER_RECORD_COMPRESSION": "none"},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="record_bench_"))
    exe = harness.compile_c(Path(__file__).resolve().parent / "c" / "record_bench.c", tmp / "record_bench",
                            msgs=["std_msgs"])
    results: dict[str, dict[str, list[dict]]] = {}
    for size, iters, gap in CASES:
        for r in range(a.rounds):
            for name, extra in VARIANTS.items():
                env = harness.tracer_env(tmp / f"{name}-{size}-{r}")
                if name != "off":
                    env.update(extra)
                    env["RMW_TRACER_RECORD"] = str(tmp / f"{name}-{size}-{r}.mcap")
                res = harness.run([exe, str(size), str(iters), str(gap)], env, timeout=300).check()
                line = [l for l in res.stdout.splitlines() if l.startswith("{")][-1]
                results.setdefault(str(size), {}).setdefault(name, []).append(json.loads(line))
                if "dropped" in res.stderr:
                    print(f"  note: {name} {size} B round {r}: {res.stderr.strip()}", file=sys.stderr)
    print(f"{'size':>8} {'variant':>12} {'p50 ns':>10} {'p99 ns':>10} {'mean ns':>10} {'p50 x':>7} {'mean x':>7}")
    summary = {}
    for size, variants in results.items():
        base = {k: statistics.median(x[k] for x in variants["off"]) for k in ("p50", "p99", "mean")}
        for name, runs in variants.items():
            med = {k: statistics.median(x[k] for x in runs) for k in ("p50", "p99", "mean")}
            summary.setdefault(size, {})[name] = {**med, "p50_ratio": med["p50"] / base["p50"],
                                                  "mean_ratio": med["mean"] / base["mean"]}
            print(f"{size:>8} {name:>12} {med['p50']:>10.0f} {med['p99']:>10.0f} {med['mean']:>10.0f} "
                  f"{med['p50'] / base['p50']:>7.2f} {med['mean'] / base['mean']:>7.2f}")
    if a.out:
        a.out.write_text(json.dumps({"runs": results, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
