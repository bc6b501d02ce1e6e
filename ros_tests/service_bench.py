"""Service round-trip latency, rmw_tracer against Fast DDS, through the rmw API from C
(ros_tests/c/service_bench.c): one process (server and client in one context) and two processes.
A benchmark, not a test: run `python ros_tests/service_bench.py [rounds]` with the venv's python
(PYTHONPATH=ros_tests). Fast DDS runs in a loopback-only network namespace.
"""
import harness, tempfile, sys
from pathlib import Path
tmp=Path(tempfile.mkdtemp())
exe=harness.compile_c(Path(__file__).resolve().parent / "c" / "service_bench.c", tmp/"sb", msgs=("test_msgs",))
def run(envf, two, netns=None):
    t=Path(tempfile.mkdtemp()); env=envf(t)
    if two:
        s=harness.spawn([exe,"server","5000"],env,netns=netns,timeout=120)
        s.wait_for_output("ready",30)
        c=harness.spawn([exe,"client","5000"],env,netns=netns,timeout=120).join()
        s.kill(); s.join(5)
    else:
        c=harness.spawn([exe,"both","5000"],env,netns=netns,timeout=120).join()
    return c.stdout.strip() or c.describe()[-800:]
for rnd in range(int(sys.argv[1]) if len(sys.argv)>1 else 2):
    print("tracer one process   ", run(harness.tracer_env, False))
    print("tracer two processes ", run(harness.tracer_env, True))
    with harness.NetNamespace() as ns:
        print("fastdds one process  ", run(harness.fastdds_env, False, ns))
        print("fastdds two processes", run(harness.fastdds_env, True, ns))
