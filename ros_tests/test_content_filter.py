"""Content-filtered subscriptions (docs/content-filter.md), in real processes over rcl: a
publisher process and a subscriber process with one subscription per case, each case a filter
given at creation and another set at runtime, run under rmw_tracer and under Fast DDS (the
oracle, in a private network namespace, UDP only so it leaves no /dev/shm files). Which ids
each subscription received, the return codes, `is_cft_enabled` and what
`rcl_subscription_get_content_filter` gives back must be the same under both, except for the
differences docs/content-filter.md lists (checked here as such).

rclpy of Jazzy has no content filter API, so the programs are C on rcl (what rclcpp uses).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import harness

HERE = Path(__file__).resolve().parent
N = 20
RCL_OK, RCL_ERROR, RCL_INVALID_ARGUMENT = 0, 1, 11

# (creation expression, its parameters, runtime expression, its parameters). Message i of
# `basic` (c/content_filter.c fill_basic): bool i%2, float32 i/2, float64 1.25i-10, int8 i-10,
# uint8 3i, int16 -100i, uint16 1000i, int32 i*i-50, uint32 i, int64 (i-10)e10, uint64 i*1e17.
BASIC = [
    ("uint32_value < 5", [], "uint32_value >= %0", ["15"]),
    ("int8_value > %0 AND int8_value <= %1", ["-3", "2"], "int8_value = -10", []),
    ("bool_value = TRUE", [], "bool_value = FALSE AND uint8_value > 40", []),
    ("float64_value BETWEEN %0 AND %1", ["-2.5", "5"], "float64_value NOT BETWEEN -5 AND 25", []),
    ("int16_value <> -300 AND uint16_value < 6000", [], "uint16_value > 25500", []),
    ("int32_value > 0 OR uint32_value = 1", [], "NOT (int32_value > 0 OR uint32_value = 1)", []),
    ("int64_value >= 0", [], "uint64_value > 1500000000000000000", []),
    ("float32_value = 3.5", [], "float32_value < %0", ["1.2e0"]),
    ("(uint32_value = 2 OR uint32_value = 4) AND NOT bool_value = TRUE", [],
     "uint32_value != 30 and uint32_value > 35", []),
    ("uint32_value > 100", [], "", []),            # matches nothing, then the filter is removed
    ("", [], "uint32_value < 25", []),             # no filter at creation, one at runtime
    ("int8_value >", [], "uint32_value = 22", []),  # a bad expression fails the creation
    ("uint32_value = %1", ["1"], "uint32_value = %0", ["7"]),  # a parameter missing
    ("uint32_value = 3", [], "uint32_value = 'x'", []),     # runtime: a type mismatch
    ("nope = 3", [], "uint32_value = 3", []),               # an unknown field
]

# std_msgs/Header i: stamp.sec i, stamp.nanosec 1000i, frame_id one of map, odom, base_link,
# camera_front, camera_rear (i % 5).
HEADER = [
    ("frame_id = 'map'", [], "frame_id = %0", ["'odom'"]),
    ("frame_id LIKE 'camera%'", [], "frame_id LIKE '%_link'", []),
    ("stamp.nanosec > 4000 AND frame_id <> 'odom'", [],
     "stamp.sec < %0 AND stamp.nanosec >= %1", ["30", "33000"]),
    ("stamp.sec BETWEEN 3 AND 6", [], "frame_id > 'c' AND frame_id < 'n'", []),
    ("stamp.sec + 1 > 3", [], "stamp.sec = 21", []),             # no arithmetic
    ("stamp = 3", [], "frame_id = 'odom' OR frame_id = 'map'", []),  # a whole message
]


def _write_cases(path: Path, cases) -> None:
    with open(path, "w") as f:
        for e0, p0, e1, p1 in cases:
            f.write(f"{e0}\t{'|'.join(p0)}\t{e1}\t{'|'.join(p1)}\n")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("cft") / "content_filter"
    return harness.compile_c(HERE / "c" / "content_filter.c", out,
                             msgs=("test_msgs", "std_msgs", "builtin_interfaces"))


def run_cases(program: Path, env, kind: str, cases, tmp: Path, netns=None,
              stderr: list[str] | None = None) -> list[str]:
    """The subscriber's output lines (create / got / set / get), after both batches; its
    stderr appended to ``stderr`` when given. ``netns`` is given for the Fast DDS (oracle) runs
    only, which always run in their private namespace."""
    tmp.mkdir(parents=True, exist_ok=True)
    cases_file = tmp / "cases.tsv"
    _write_cases(cases_file, cases)
    go = tmp / "go"
    topic = f"/cft_{kind}_{os.getpid()}"
    sub = harness.spawn([program, "sub", kind, topic, cases_file, str(N)], env, netns=netns,
                        timeout=120)
    pub = None
    try:
        assert sub.wait_for_output("ready\n", 60), sub.join(1).describe()
        pub = harness.spawn([program, "pub", kind, topic, str(len(cases) + 1), str(N), go], env,
                            netns=netns, timeout=120)
        assert sub.wait_for_output("ready2\n", 90), sub.join(1).describe()
        go.touch()
        r = sub.join(90)
        assert r.returncode == 0, r.describe()
        # The publisher's part is done once its last batch is out (the subscriber's lines,
        # compared below, say what arrived); Fast DDS may hang in its teardown after that.
        if netns is None:
            pub.join(60).check()
        else:
            harness.join_oracle(pub, "batch 1\n", 60)
        if stderr is not None:
            stderr.append(r.stderr)
        return [l for l in r.stdout.splitlines() if l.split(" ")[0] in ("create", "got", "set", "get")]
    finally:
        sub.kill()
        if pub is not None:
            pub.kill()


def fastdds(tmp: Path):
    return harness.fastdds_env(tmp)


@pytest.fixture
def sandbox():
    if not harness.NetNamespace.available():
        yield None
        return
    # A private /dev/shm too: Fast DDS leaves fastrtps_* files behind otherwise.
    with harness.NetNamespace(private_shm=True) as ns:
        yield ns


def _lines(out: list[str], prefix: str) -> dict[str, str]:
    """`{"<kind> <k>": rest}` for the lines of one kind."""
    return {" ".join(l.split(" ")[:2]): l for l in out if l.startswith(prefix)}


# Where rmw_tracer and Fast DDS differ, each written in docs/content-filter.md:
# - case 1 of BASIC: `int8_value > -3 AND int8_value <= 2` over int8 = i-10. Jazzy's Fast DDS
#   (2.14) compares int8 fields as unsigned, so -2 and -1 (ids 8, 9) fail there; rmw_tracer
#   follows the field's type, as Kilted's Fast DDS (3.2) does.
# - case 13 of BASIC: a runtime expression that does not type-check is RMW_RET_INVALID_ARGUMENT
#   (11) with the column under rmw_tracer, RMW_RET_ERROR (1) under Fast DDS; both keep the
#   filter that was in force.
DIFFERENCES = {
    "basic": {
        "got 1": ("got 1 8 9 10 11 12", "got 1 10 11 12"),
        "set 13": ("set 13 11 cft=1", "set 13 1 cft=1"),
    },
    "header": {},
}
if harness.DISTRO != "jazzy":
    del DIFFERENCES["basic"]["got 1"]


@pytest.mark.parametrize("kind", ["basic", "header"])
def test_filters_agree_with_fast_dds(program, tmp_path, sandbox, kind):
    netns = sandbox
    if netns is None:
        pytest.skip("no private network namespace for Fast DDS on this machine")
    cases = BASIC if kind == "basic" else HEADER
    ours = run_cases(program, harness.tracer_env(tmp_path), kind, cases, tmp_path / "tracer")
    theirs = run_cases(program, fastdds(tmp_path), kind, cases, tmp_path / "fastdds", netns)
    # Every case created, collected twice, set and read back, under both.
    assert len(ours) == len(cases) * 5, ours
    assert len(theirs) == len(ours), theirs
    known = DIFFERENCES[kind]
    for mine, other in zip(ours, theirs):
        key = " ".join(mine.split(" ")[:2])
        if key in known and (mine, other) == known[key]:
            continue
        assert mine == other, f"rmw_tracer: {mine!r}\nFast DDS:   {other!r}"
    # The differences are the documented ones, not by chance absent.
    for key, (mine, other) in known.items():
        assert mine in ours and other in theirs, (key, ours, theirs)


# Cases Fast DDS cannot be the oracle for: under Fast DDS a failed set on a subscription created
# without a filter leaves that subscription receiving nothing, and with two such subscriptions
# the process crashed at a later take (seen with these very cases).
ERRORS = [
    ("", [], "uint32_value = %0", []),
    ("uint32_value BETWEEN 2 AND 3 OR uint32_value = 23", [], "uint32_value >", []),
    ("uint32_value = 5", [], "", []),
    ("", [], "", []),
    ("uint32_value = %0", ["'x'"], "uint32_value = %0", ["hello"]),
    ("bool_value = %0", ["TRUE"], "uint32_value = 21 OR bool_value = %0", ["FALSE"]),
]


def test_errors_name_the_column_and_keep_the_filter(program, tmp_path):
    err: list[str] = []
    out = run_cases(program, harness.tracer_env(tmp_path), "basic", ERRORS, tmp_path / "t",
                    stderr=err)
    all_ids = " ".join(str(i) for i in range(N))
    batch2 = " ".join(str(i) for i in range(N, 2 * N))
    even2 = " ".join(str(i) for i in range(N, 2 * N, 2))
    assert out == [
        "create 0 0 cft=0",
        "create 1 0 cft=1",
        "create 2 0 cft=1",
        "create 3 0 cft=0",
        "create 4 1 cft=0",   # 'x' is a string, uint32_value a number: creation fails
        "create 5 0 cft=1",
        f"got 0 {all_ids}",
        "got 1 2 3",
        "got 2 5",
        f"got 3 {all_ids}",
        f"got 4 {all_ids}",   # replaced by a subscription without a filter
        "got 5 " + " ".join(str(i) for i in range(1, N, 2)),
        "set 0 11 cft=0",     # %0 without a parameter
        "get 0 1",
        "set 1 11 cft=1",     # a bad expression: the filter in force stays
        "get 1 0 uint32_value BETWEEN 2 AND 3 OR uint32_value = 23",
        "set 2 0 cft=0",      # removed
        "get 2 1",
        "set 3 1 cft=0",      # removing a filter that is not there: ERROR, as Fast DDS
        "get 3 1",
        "set 4 11 cft=0",     # hello is not a literal ('hello' is)
        "get 4 1",
        "set 5 0 cft=1",
        "get 5 0 uint32_value = 21 OR bool_value = %0 [FALSE]",
        f"got 0 {batch2}",
        "got 1 23",
        f"got 2 {batch2}",
        f"got 3 {batch2}",
        f"got 4 {batch2}",
        "got 5 " + " ".join(sorted({*even2.split(), "21"}, key=int)),
    ], "\n".join(out)
    # The error strings name the place: the column of a bad expression, the parameter.
    for k, text in [
        (0, "parameter %0 is used but 0 parameter(s) were given"),
        (1, 'content filter expression "uint32_value >" at column 15: expected a field name, '
            "a literal or a parameter, found the end"),
        (3, "this subscription has no content filter to remove"),
        (4, 'parameter %0 ("hello") is not one literal'),
    ]:
        assert any(l.startswith(f"set {k}: ") and text in l for l in err[0].splitlines()), (k, err[0])
    assert "`=` compares a number with a string" in err[0], err[0]
