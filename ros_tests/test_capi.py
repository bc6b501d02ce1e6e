"""libtracer's own C API (issue 30, docs/capi.md): C programs built against
capi/include/tracer.h and libtracer.so, with no ROS library, beside rclpy nodes on rmw_tracer.

The C programs are examples/*.c and ros_tests/c/capi_*.c, compiled with plain compiler flags
(-I capi/include -L target/release -ltracer); they run with no LD_PRELOAD and no ROS library
path (``capi_env``), the rclpy side (test_capi_worker.py, test_pubsub_worker.py) on rmw_tracer
with the test's rendezvous directory and domain.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import harness
from worker_output import json_line

HERE = Path(__file__).resolve().parent
REPO = harness.REPO
INCLUDE = REPO / "capi" / "include"
WORKER = HERE / "test_capi_worker.py"
PUBSUB = HERE / "test_pubsub_worker.py"
STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"


def libdir() -> Path:
    d = harness.target_dir() / "release"
    if not (d / "libtracer.so").is_file():
        raise RuntimeError(f"{d}/libtracer.so is missing: cargo build --release -p tracer-capi")
    return d


def compile_capi(source: Path, out: Path, *, extra: tuple[str, ...] = ()) -> Path:
    """A C program against tracer.h and libtracer.so: nothing of ROS on the command line."""
    cc = os.environ.get("CC", "gcc")
    lib = libdir()
    argv = [cc, "-std=c99", "-O1", "-g", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
            str(source), "-o", str(out), f"-L{lib}", "-ltracer", f"-Wl,-rpath,{lib}", *extra]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"$ {' '.join(argv)}\n{r.stdout}\n{r.stderr}"
    return out


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("capi")
    srcs = {p: REPO / "examples" / f"{p}.c"
            for p in ("publisher", "subscriber", "namespace_subscriber", "image_publisher")}
    srcs["image_sub"] = HERE / "c" / "capi_image_sub.c"
    return {name: compile_capi(src, d / name) for name, src in srcs.items()}


def capi_env(tracer_env: dict) -> dict:
    """The test's domain and rendezvous directory, and nothing of ROS: no preload, no ROS
    library path (libtracer.so is found by its rpath)."""
    env = dict(tracer_env)
    for var in ("LD_PRELOAD", "RMW_IMPLEMENTATION", "LD_LIBRARY_PATH", "AMENT_PREFIX_PATH",
                "PYTHONPATH"):
        env.pop(var, None)
    return env


def lines(out: str, prefix: str) -> list[str]:
    return [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]


def test_libtracer_needs_no_ros_library():
    # "programs that are not ROS nodes": libtracer.so links libc and libgcc, nothing of ROS.
    r = subprocess.run(["ldd", str(libdir() / "libtracer.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for ros in ("librmw", "librcutils", "librcl", "rosidl", "libpython"):
        assert ros not in r.stdout, r.stdout
    assert (libdir() / "libtracer.a").is_file()


@pytest.mark.parametrize("std,cc", [("c99", "gcc"), ("c++17", "g++")])
def test_header_compiles_as_c99_and_cxx17(tmp_path, std, cc):
    src = tmp_path / ("h.c" if cc == "gcc" else "h.cpp")
    src.write_text('#include "tracer.h"\n'
                   "int main(void) { tracer_qos_t q = {0, 0, 0, 0}; (void)q;\n"
                   "  return tracer_result_str(TRACER_OK) == 0; }\n")
    extra = ["-pedantic"] if cc == "gcc" else []
    r = subprocess.run([cc, f"-std={std}", "-Wall", "-Wextra", "-Werror", *extra, f"-I{INCLUDE}",
                        "-c", str(src), "-o", str(tmp_path / "h.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_c_publisher_to_rclpy_subscriber(tracer_env, programs):
    listener = harness.spawn_python(PUBSUB, ["listen", "--topic", "/capi_chatter", "--count", "20"],
                                    env=tracer_env, timeout=60)
    assert listener.wait_for_output("ready", 30), listener.join(1).describe()
    pub = harness.spawn([programs["publisher"], "/capi_chatter", "20", "20", "1"], capi_env(tracer_env),
                        timeout=60)
    got = json_line(listener.join().check().stdout)
    pub.join().check()
    # Every message, in order (the C publisher waited for the subscription; it has left by
    # the time the listener reports, so its matched count is 0 then).
    assert got["received"] == [[f"hello {i}" for i in range(20)]]


def test_rclpy_publisher_to_c_subscriber(tracer_env, programs):
    sub = harness.spawn([programs["subscriber"], "/capi_in", "20", "30"], capi_env(tracer_env), timeout=60)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    talker = harness.spawn_python(PUBSUB, ["talk", "--topic", "/capi_in", "--count", "20",
                                           "--period", "0.02", "--linger", "5"], env=tracer_env, timeout=60)
    r = sub.join().check()
    talker.join().check()
    got = lines(r.stdout, "msg: ")
    assert [g.split(" seq=")[0] for g in got] == [f"hello {i}" for i in range(20)]
    assert [int(g.split(" seq=")[1]) for g in got] == list(range(1, 21))


def test_c_programs_record_what_they_publish_and_take(tracer_env, tmp_path, programs):
    """RMW_TRACER_RECORD in a C program (docs/capi.md, "Recording"): the publisher's file holds
    what it published, with the definition it gave (tracer_publisher_set_definition); the
    subscriber's holds what it took, from the C publisher and from an rclpy talker, each
    decoded with the definition the publisher's :schema carried."""
    from test_record import _decoded

    env = capi_env(tracer_env)
    sub_file, pub_file = tmp_path / "sub.mcap", tmp_path / "pub.mcap"
    sub = harness.spawn([programs["subscriber"], "/capi_rec", "40", "60"],
                        dict(env, RMW_TRACER_RECORD=str(sub_file)), timeout=90)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    pub = harness.spawn([programs["publisher"], "/capi_rec", "20", "20", "1"],
                        dict(env, RMW_TRACER_RECORD=str(pub_file)), timeout=60)
    pub.join().check()
    talker = harness.spawn_python(PUBSUB, ["talk", "--topic", "/capi_rec", "--count", "20",
                                           "--period", "0.02", "--linger", "5"],
                                  env=tracer_env, timeout=60)
    r = sub.join().check()
    talker.join().check()
    assert len(lines(r.stdout, "msg: ")) == 40, r.describe()
    hello = [f"hello {i}" for i in range(20)]
    assert [m.data for m in _decoded(pub_file)["/capi_rec"]] == hello
    assert [m.data for m in _decoded(sub_file)["/capi_rec"]] == hello + hello
    assert "[libtracer] recorded 40 messages to" in r.stderr, r.stderr


def test_c_publisher_is_a_ros_node_with_type_and_qos(tracer_env, programs):
    # `ros2 node list` / `ros2 topic info -v` read this through rcl's graph API.
    pub = harness.spawn([programs["publisher"], "/capi_graph", "200", "50"], capi_env(tracer_env),
                        timeout=60)
    assert pub.wait_for_output("ready", 30), pub.join(1).describe()
    g = json_line(harness.spawn_python(WORKER, ["graph", "--node", "c_talker", "--topic", "/capi_graph"],
                                       env=tracer_env, timeout=60).join().check().stdout)
    pub.kill()
    assert g["found"], g
    assert ["c_talker", "/"] in g["nodes"]
    assert ["/capi_graph", ["std_msgs/msg/String"]] in g["topics"]
    [info] = g["publishers"]
    assert info["topic_type"] == "std_msgs/msg/String"
    assert info["type_hash"] == STRING_HASH
    # reliable (1), volatile (2), keep last (1), depth 10: the default the C side asked for.
    assert (info["reliability"], info["durability"], info["history"], info["depth"]) == (1, 2, 1, 10)


def test_namespace_subscriber_hears_the_subtree_with_paths(tracer_env, programs):
    ns = harness.spawn([programs["namespace_subscriber"], "/robot", "12", "30"], capi_env(tracer_env),
                       timeout=60)
    assert ns.wait_for_output("ready", 30), ns.join(1).describe()
    # A ROS subscriber of /robot/a beside it: it hears /robot/a only.
    ros_a = harness.spawn_python(PUBSUB, ["listen", "--topic", "/robot/a", "--count", "5", "--timeout", "20"],
                                 env=tracer_env, timeout=60)
    assert ros_a.wait_for_output("ready", 30), ros_a.join(1).describe()
    talker = harness.spawn_python(WORKER, ["ns-talk", "--topics", "/robot/a,/robot/b/c,/other",
                                           "--count", "60", "--period", "0.1"], env=tracer_env, timeout=60)
    r = ns.join().check()
    got_a = json_line(ros_a.join().check().stdout)
    talker.kill()
    got = lines(r.stdout, "msg: ")
    # Each sample names its topic, and its payload says the same topic.
    pairs = [g.split(" ", 1) for g in got]
    assert all(payload.startswith(topic + " ") for topic, payload in pairs), got
    topics = {t for t, _ in pairs}
    assert topics == {"/robot/a", "/robot/b/c"}, got
    assert int(lines(r.stdout, "callbacks: ")[0]) >= 12
    assert got_a["received"][0][:5] and all(m.startswith("/robot/a ") for m in got_a["received"][0])


def test_zero_copy_4mib_loans_to_rclpy_and_to_a_c_view(tracer_env, programs):
    env = capi_env(tracer_env)
    c_sub = harness.spawn([programs["image_sub"], "/camera/image", "5"], env, timeout=90)
    assert c_sub.wait_for_output("ready", 30), c_sub.join(1).describe()
    py_sub = harness.spawn_python(WORKER, ["image-listen", "--topic", "/camera/image", "--count", "5"],
                                  env=tracer_env, timeout=90)
    assert py_sub.wait_for_output("ready", 30), py_sub.join(1).describe()
    pub = harness.spawn([programs["image_publisher"], "/camera/image", "5", "1024", "1024", "2"], env,
                        timeout=90)
    rc = c_sub.join().check()
    got = json_line(py_sub.join().check().stdout)
    rp = pub.join().check()
    frames = lines(rc.stdout, "frame ")
    assert len(frames) == 5, rc.describe()
    # Every frame right, and every view's bytes in the publisher's shared-memory slot as mapped
    # here: the C path copied nothing (the slot was written in place and sent as a reference).
    assert all(f.endswith("ok=1 shm=1") and "1024x1024 rgba8" in f for f in frames), frames
    assert [f[:2] for f in got["frames"]] == [[i, 1024] for i in range(5)]
    assert all(f[-1] for f in got["frames"]), got
    assert len(lines(rp.stdout, "frame ")) == 5


def test_rclpy_image_to_c_view(tracer_env, programs):
    c_sub = harness.spawn([programs["image_sub"], "/py_image", "3"], capi_env(tracer_env), timeout=60)
    assert c_sub.wait_for_output("ready", 30), c_sub.join(1).describe()
    talker = harness.spawn_python(WORKER, ["image-talk", "--topic", "/py_image", "--count", "3",
                                           "--width", "64", "--height", "48"], env=tracer_env, timeout=60)
    r = c_sub.join().check()
    talker.join().check()
    frames = lines(r.stdout, "frame ")
    assert [f.split(" ok=")[0] for f in frames] == [f"{i} 64x48 rgba8" for i in range(3)], frames
    assert all("ok=1" in f for f in frames)


def test_bad_use_under_asan(tmp_path, tracer_env):
    exe = compile_capi(HERE / "c" / "capi_bad_use.c", tmp_path / "bad_use",
                       extra=("-fsanitize=address", "-fno-omit-frame-pointer"))
    env = capi_env(tracer_env)
    env["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=0"
    r = harness.run([exe], env, timeout=60)
    assert r.returncode == 0 and "AddressSanitizer" not in r.stderr, r.describe()
    cases = dict((name, rest) for name, rest in
                 (line[5:].split(" ", 1) for line in r.stdout.splitlines() if line.startswith("case ")))
    assert r.stdout.rstrip().endswith("done"), r.describe()
    for name, rest in cases.items():
        rc = int(rest.split()[0][3:])
        fn = rest.split("fn=")[1]
        if name.endswith("_ok") or name.endswith("_again"):
            assert rc == 0, (name, rest)
            continue
        expected = {"take_empty": 5, "wait_timeout": 4, "server_wait_timeout": 4,
                    "take_too_small": 6}.get(name)
        if expected is None:
            if "null" in name:
                expected = 1
            elif any(k in name for k in ("destroyed", "twice", "returned", "wrong_type", "garbage")):
                expected = 2
            else:
                expected = 3
        assert rc == expected, (name, rest)
        if rc not in (4, 5):  # a timeout and an empty take are outcomes: no error string
            # The error string names the call that failed, not an earlier one.
            assert fn.startswith("tracer_"), (name, rest)
    assert cases["publish_destroyed"].endswith("fn=tracer_publish")
    assert cases["loan_return_twice"].endswith("fn=tracer_loan_return")


def test_plain_cmake_install_and_pkg_config(tmp_path, tracer_env):
    # capi/CMakeLists.txt with no ROS: cmake --install gives lib/libtracer.{so,a},
    # include/tracer.h and lib/pkgconfig/tracer.pc, which a program builds against. The build
    # reuses the target directory the tests use (already built, so cargo has nothing to do).
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    env = capi_env(tracer_env)
    for argv in (["cmake", "-S", str(REPO / "capi"), "-B", str(build),
                  f"-DLIBTRACER_CARGO_TARGET_DIR={harness.target_dir()}"],
                 ["cmake", "--build", str(build)],
                 ["cmake", "--install", str(build), "--prefix", str(prefix)]):
        harness.run(argv, env, timeout=600).check()
    for f in ("lib/libtracer.so", "lib/libtracer.a", "include/tracer.h", "lib/pkgconfig/tracer.pc"):
        assert (prefix / f).is_file(), f
    pc_env = dict(env, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "tracer"], env=pc_env,
                           capture_output=True, text=True, check=True).stdout.split()
    exe = tmp_path / "publisher"
    subprocess.run([os.environ.get("CC", "gcc"), "-std=c99", "-Wall", "-Werror",
                    str(REPO / "examples" / "publisher.c"), "-o", str(exe), *flags,
                    f"-Wl,-rpath,{prefix / 'lib'}"], check=True, env=pc_env)
    r = harness.run([exe, "/capi_installed", "3", "0"], env, timeout=60).check()
    assert "published 3" in r.stdout


@pytest.fixture(scope="module")
def service_program(tmp_path_factory) -> Path:
    return compile_capi(HERE / "c" / "capi_service.c", tmp_path_factory.mktemp("capi_srv") / "capi_service")


def test_c_server_answers_rclpy_client(tracer_env, service_program):
    srv = harness.spawn([service_program, "server", "/capi_srv", "5"], capi_env(tracer_env), timeout=60)
    assert srv.wait_for_output("ready", 30), srv.join(1).describe()
    got = json_line(harness.spawn_python(WORKER, ["srv-call", "--service", "/capi_srv", "--count", "5"],
                                         env=tracer_env, timeout=60).join().check().stdout)
    assert "served 5" in srv.join().check().stdout
    assert got["replies"] == [[i + 1000, f"py {i}", True] for i in range(5)]


def test_c_client_calls_rclpy_server(tracer_env, service_program):
    py = harness.spawn_python(WORKER, ["srv-serve", "--service", "/capi_srv2", "--count", "5"],
                              env=tracer_env, timeout=60)
    assert py.wait_for_output("ready", 30), py.join(1).describe()
    r = harness.spawn([service_program, "client", "/capi_srv2", "5"], capi_env(tracer_env), timeout=60).join().check()
    py.join().check()
    assert lines(r.stdout, "reply ") == [f"{i + 1} {i + 1} c {i}!" for i in range(5)]


def test_one_wait_over_two_subscriptions_and_a_server(tracer_env, service_program):
    # tracer_wait (rmw_wait's shape): each wake says which entity has something, in the order
    # things arrive: /w_b's talker, then a client's requests, then /w_a's talker.
    multi = harness.spawn([service_program, "multi", "/w_srv", "3", "/w_a", "/w_b", "5"],
                          capi_env(tracer_env), timeout=90)
    assert multi.wait_for_output("ready", 30), multi.join(1).describe()
    assert "api ok" in "".join(multi._out)

    def talk(topic):
        harness.spawn_python(PUBSUB, ["talk", "--topic", topic, "--count", "5", "--linger", "1"],
                             env=tracer_env, timeout=60).join().check()

    talk("/w_b")
    harness.spawn_python(WORKER, ["srv-call", "--service", "/w_srv", "--count", "3"], env=tracer_env,
                         timeout=60).join().check()
    talk("/w_a")
    r = multi.join().check()
    assert "multi 5 5 3" in r.stdout, r.describe()
    woke = lines(r.stdout, "woke ")
    assert woke[0] == "0 1 0", r.describe()
    assert "0 0 0" not in woke, r.describe()
    firsts = [woke.index(w) for w in ("0 1 0", "0 0 1", "1 0 0")]
    assert firsts == sorted(firsts), r.describe()


@pytest.fixture(scope="module")
def keep_all_program(tmp_path_factory) -> Path:
    return compile_capi(HERE / "c" / "capi_keep_all.c", tmp_path_factory.mktemp("capi_ka") / "capi_keep_all")


def received(out: str) -> tuple[int, int, int]:
    m = re.search(r"received (\d+) in_order (\d) last (-?\d+)", out)
    assert m, out
    return int(m[1]), int(m[2]), int(m[3])


# RELIABLE + KEEP_ALL through the C API, as through rcl (issue 33's contract): a native
# subscription slower than its publisher holds it back, and a native publisher waits; nothing is
# lost and no publish fails. 3000 messages of 200 KB outgrow the ring's KEEP_ALL byte budget
# (256 MiB) unless the publisher is held back: before, a C subscription's edges were not paced
# (the talker ran ahead and the oldest were dropped) and a C publisher never waited.
N = 3000
BIG = 200_000


def test_slow_c_keep_all_subscription_holds_back_an_rclpy_publisher(tracer_env, keep_all_program):
    sub = harness.spawn([keep_all_program, "sub", "/capi_ka", str(N), "1000"], capi_env(tracer_env),
                        timeout=120)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    talker = harness.spawn_python(PUBSUB, ["talk", "--topic", "/capi_ka", "--count", str(N),
                                           "--pad", str(BIG), "--keep-all", "--timeout", "60",
                                           "--linger", "60"],
                                  env=tracer_env, timeout=120)
    r = sub.join().check()
    assert received(r.stdout) == (N, 1, N - 1), r.describe()
    talker.join().check()


def test_c_keep_all_publisher_waits_for_a_slow_c_subscription(tracer_env, keep_all_program):
    sub = harness.spawn([keep_all_program, "sub", "/capi_ka_pub", str(N), "1000"], capi_env(tracer_env),
                        timeout=120)
    assert sub.wait_for_output("ready", 30), sub.join(1).describe()
    pub = harness.spawn([keep_all_program, "pub", "/capi_ka_pub", str(N), "1", str(BIG)],
                        capi_env(tracer_env), timeout=120)
    r = sub.join().check()
    assert received(r.stdout) == (N, 1, N - 1), r.describe()
    p = pub.join().check()
    assert f"published {N} failed 0" in p.stdout, p.describe()
