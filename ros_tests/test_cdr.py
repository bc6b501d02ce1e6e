"""CDR oracle (issue 3, item 5 and "How it is shown": for every test_msgs sample, the bytes from
rclpy.serialization.serialize_message under rmw_tracer equal those under Fast DDS, computed in
separate processes; deserializing under rmw_tracer gives the same message back, field for field;
malformed input is an error, not a crash).

What "equal" means, exactly: Fast DDS's rmw_serialize sets buffer_length to its size *estimate*
(rosidl_typesupport_fastrtps' get_serialized_size, which over-counts wstrings and rounds up)
and leaves the padding bytes and that slack unwritten (uninitialized heap). So the Fast DDS
process runs with a small preload (ZERO_SHIM) that makes rcutils_uint8_array_resize hand out
zeroed memory; then every byte Fast DDS writes must equal ours, our padding is zero like its
untouched padding, and its slack after our last byte is all zero (never written). Each side
also deserializes the other's bytes into the same message.

The C++ type support (rclcpp's layout: std::string, std::vector, std::vector<bool>) is driven
by a C program through the typesupport_cpp dispatcher: deserialize the C-serialized bytes into
a C++ message and serialize it again, under both middlewares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness

HERE = Path(__file__).resolve().parent
WORKER = HERE / "test_cdr_worker.py"

TYPES = ["Arrays", "BasicTypes", "BoundedPlainSequences", "BoundedSequences", "Builtins",
         "Constants", "Defaults", "Empty", "MultiNested", "Nested", "Strings",
         "UnboundedSequences", "WStrings"]

ZERO_SHIM = r"""
/* Preloaded into the Fast DDS process only: rcutils_uint8_array_resize returning zeroed new
 * memory, so that bytes Fast DDS's rmw_serialize never writes read as zero. Otherwise the
 * same contract as rcutils' own function. */
#include <string.h>
#include <rcutils/types/uint8_array.h>

rcutils_ret_t rcutils_uint8_array_resize(rcutils_uint8_array_t * a, size_t new_size)
{
  if (a == NULL || new_size == 0) {
    return RCUTILS_RET_INVALID_ARGUMENT;
  }
  rcutils_allocator_t * al = &a->allocator;
  if (!rcutils_allocator_is_valid(al)) {
    return RCUTILS_RET_INVALID_ARGUMENT;
  }
  uint8_t * b = al->reallocate(a->buffer, new_size, al->state);
  if (b == NULL) {
    return RCUTILS_RET_BAD_ALLOC;
  }
  if (new_size > a->buffer_capacity) {
    memset(b + a->buffer_capacity, 0, new_size - a->buffer_capacity);
  }
  a->buffer = b;
  a->buffer_capacity = new_size;
  if (new_size < a->buffer_length) {
    a->buffer_length = new_size;
  }
  return RCUTILS_RET_OK;
}
"""

CPP_ROUNDTRIP = r"""
/* argv[1] (or stdin): lines "<key> <Type> <hex>". For each: a test_msgs C++ message (init through its
 * C++ introspection type support), rmw_deserialize(hex) into it and rmw_serialize it again,
 * both with the rosidl_typesupport_cpp dispatcher handle rclcpp would pass.
 * stdout: "<key> <deserialize rc> <serialize rc> <hex>". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcutils/allocator.h>
#include <rcutils/error_handling.h>
#include <rmw/rmw.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>

static int unhex(const char * h, uint8_t * out, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(h + 2 * i, "%2x", &v) != 1) { return -1; }
    out[i] = (uint8_t)v;
  }
  return 0;
}

int main(int argc, char ** argv)
{
  /* Input from a file: a pipe on both stdin and stdout of a child deadlocks once both fill. */
  FILE * input = argc > 1 ? fopen(argv[1], "r") : stdin;
  if (!input) { perror(argv[1]); return 2; }
  void * lib = dlopen("libtest_msgs__rosidl_typesupport_cpp.so", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  rcutils_allocator_t al = rcutils_get_default_allocator();
  char * line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, input) > 0) {
    char key[128], type[128];
    int off = 0;
    if (sscanf(line, "%127s %127s %n", key, type, &off) < 2) { continue; }
    const char * hex = line + off;
    size_t n = strcspn(hex, "\r\n") / 2;
    char sym[256];
    snprintf(sym, sizeof sym,
      "rosidl_typesupport_cpp__get_message_type_support_handle__test_msgs__msg__%s", type);
    const rosidl_message_type_support_t * (*get)(void) =
      (const rosidl_message_type_support_t * (*)(void))dlsym(lib, sym);
    if (!get) { printf("%s nosym\n", key); continue; }
    const rosidl_message_type_support_t * ts = get();
    const rosidl_message_type_support_t * intro =
      get_message_typesupport_handle(ts, "rosidl_typesupport_introspection_cpp");
    if (!intro) { printf("%s nointro\n", key); rcutils_reset_error(); continue; }
    /* The C++ MessageMembers has the C struct's layout; init takes the C++ enum of the same
     * values (ALL = 0). */
    const rosidl_typesupport_introspection_c__MessageMembers * mm = intro->data;
    void * msg = aligned_alloc(64, ((mm->size_of_ + 63) / 64) * 64);
    memset(msg, 0, mm->size_of_);
    mm->init_function(msg, ROSIDL_RUNTIME_C_MSG_INIT_ALL);

    rmw_serialized_message_t in = rmw_get_zero_initialized_serialized_message();
    rmw_serialized_message_t out = rmw_get_zero_initialized_serialized_message();
    if (rmw_serialized_message_init(&in, n ? n : 1, &al) != RMW_RET_OK ||
        rmw_serialized_message_init(&out, 0, &al) != RMW_RET_OK) { return 3; }
    if (unhex(hex, in.buffer, n)) { return 4; }
    in.buffer_length = n;
    rmw_ret_t rd = rmw_deserialize(&in, ts, msg);
    if (rd != RMW_RET_OK) { fprintf(stderr, "%s: %s\n", key, rcutils_get_error_string().str); rcutils_reset_error(); }
    rmw_ret_t rs = -1;
    if (rd == RMW_RET_OK) {
      rs = rmw_serialize(msg, ts, &out);
      if (rs != RMW_RET_OK) { fprintf(stderr, "%s: %s\n", key, rcutils_get_error_string().str); rcutils_reset_error(); }
    }
    printf("%s %d %d ", key, (int)rd, (int)rs);
    for (size_t i = 0; rs == RMW_RET_OK && i < out.buffer_length; i++) { printf("%02x", out.buffer[i]); }
    printf("\n");
    mm->fini_function(msg);
    free(msg);
    rmw_serialized_message_fini(&in);
    rmw_serialized_message_fini(&out);
  }
  free(line);
  return 0;
}
"""


def _python(env: dict, *args: str, data: dict | None = None, tmp: Path | None = None) -> dict:
    argv = [str(harness.venv_python()), str(WORKER), *args]
    if data is not None:
        # A file, not a pipe: the child's stdout could fill while we still write its stdin.
        inp = Path(tmp) / f"input-{len(list(Path(tmp).glob('input-*')))}.json"
        inp.write_text(json.dumps(data))
        argv.append(str(inp))
    res = harness.run(argv, env, timeout=300)
    res.check()
    return json.loads(res.stdout)


def _type(key: str) -> str:
    return key.split("/")[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict:
    """Both middlewares' bytes for every sample, each in its own process."""
    tmp = tmp_path_factory.mktemp("cdr")
    shim = harness.compile_c(ZERO_SHIM, tmp / "libzero_resize.so", libs=("rcutils",),
                             extra_flags=("-shared", "-fPIC"), link_python=False)
    tracer = harness.tracer_env(tmp)
    fast = harness.fastdds_env(tmp, extra={"LD_PRELOAD": str(shim)})
    ours = _python(tracer, "serialize")
    theirs = _python(fast, "serialize")
    return {"tmp": tmp, "tracer": tracer, "fast": fast, "ours": ours, "theirs": theirs}


def _bytes_differences(ours: bytes, theirs: bytes) -> list[str]:
    """Empty when `theirs` is `ours` followed only by never-written (zero) slack."""
    problems = []
    if len(theirs) < len(ours):
        problems.append(f"Fast DDS wrote {len(theirs)} bytes, we {len(ours)}")
    for i in range(min(len(ours), len(theirs))):
        if ours[i] != theirs[i]:
            problems.append(f"byte {i}: ours {ours[i]:#04x}, Fast DDS {theirs[i]:#04x}")
            if len(problems) > 5:
                break
    if any(theirs[len(ours):]):
        problems.append(f"Fast DDS has non-zero bytes after our {len(ours)} (data we lack)")
    return problems


@pytest.mark.parametrize("type_name", TYPES)
def test_oracle_bytes_equal_fast_dds(work, type_name):
    keys = [k for k in work["ours"] if _type(k) == type_name]
    assert len(keys) == 4, keys  # default-constructed + three filled samples
    for key in keys:
        ours, theirs = bytes.fromhex(work["ours"][key]), bytes.fromhex(work["theirs"][key])
        assert ours[:4] == bytes([0, 1, 0, 0]), key
        problems = _bytes_differences(ours, theirs)
        assert not problems, f"{key}:\n" + "\n".join(problems)


def test_oracle_is_not_vacuous(work):
    # The samples are non-trivial (MultiNested is tens of KiB) and the check sees a change.
    assert len(bytes.fromhex(work["ours"]["MultiNested/1"])) > 10000
    ours = bytearray.fromhex(work["ours"]["Strings/1"])
    ours[10] ^= 1
    assert _bytes_differences(bytes(ours), bytes.fromhex(work["theirs"]["Strings/1"]))


def test_tracer_deserializes_its_own_bytes_field_for_field(work):
    got = _python(work["tracer"], "deserialize", data=work["ours"], tmp=work["tmp"])
    bad = {k: v for k, v in got.items() if v != "ok"}
    assert not bad and len(got) == 4 * len(TYPES), bad


def test_tracer_deserializes_fast_dds_bytes_field_for_field(work):
    got = _python(work["tracer"], "deserialize", data=work["theirs"], tmp=work["tmp"])
    bad = {k: v for k, v in got.items() if v != "ok"}
    assert not bad and len(got) == 4 * len(TYPES), bad


def test_fast_dds_deserializes_tracer_bytes_field_for_field(work):
    got = _python(work["fast"], "deserialize", data=work["ours"], tmp=work["tmp"])
    bad = {k: v for k, v in got.items() if v != "ok"}
    assert not bad and len(got) == 4 * len(TYPES), bad


@pytest.fixture(scope="module")
def malformed(work) -> dict:
    """The malformed-input run under rmw_tracer (one process: a crash fails every test below)."""
    return _python(work["tracer"], "malformed")


def test_malformed_input_is_an_error_not_a_crash(malformed):
    got = malformed
    assert got["accepted"] == [], got["accepted"][:10]
    assert got["specific_accepted"] == [], got["specific_accepted"]
    assert got["cases"] > 1000
    # The rmw error string names the type, the field and the offset.
    assert "test_msgs/msg/Strings.string_value" in got["error_text"], got["error_text"]
    assert "offset 4" in got["error_text"], got["error_text"]


def test_messages_over_their_bounds_are_not_serialized(malformed):
    # Fast DDS serializes an over-long string<=22 silently; rmw_tracer refuses, naming the field.
    got = malformed
    assert got["overbound_serialized"] == [], got["overbound_serialized"]


def _cpp_roundtrip(work, env: dict) -> dict[str, tuple[int, int, str]]:
    exe = work["tmp"] / "cdr_cpp_roundtrip"
    if not exe.exists():
        harness.compile_c(CPP_ROUNDTRIP, exe,
                          libs=("rmw", "rcutils", "rosidl_runtime_c", "rmw_fastrtps_cpp"),
                          link_python=False)
    lines = "".join(f"{k} {_type(k)} {h}\n" for k, h in work["ours"].items())
    inp = work["tmp"] / "cpp_roundtrip_input.txt"
    inp.write_text(lines)
    res = harness.run([exe, inp], env, timeout=300)
    res.check()
    out = {}
    for line in res.stdout.splitlines():
        parts = line.split(" ")
        out[parts[0]] = (int(parts[1]), int(parts[2]), parts[3] if len(parts) > 3 else "")
    assert len(out) == 4 * len(TYPES), res.describe()
    return out


def test_cpp_typesupport_round_trips_to_the_same_bytes(work):
    # rmw_tracer: C bytes -> C++ message -> bytes, identical (the C++ walker reads and writes
    # std::string, std::u16string, std::vector, std::vector<bool>, std::array).
    got = _cpp_roundtrip(work, work["tracer"])
    bad = {k: v[:2] for k, v in got.items() if v[:2] != (0, 0) or v[2] != work["ours"][k]}
    assert not bad, bad


def test_cpp_typesupport_matches_fast_dds_cpp(work):
    # The same program on Fast DDS (its rosidl_typesupport_fastrtps_cpp code) writes our bytes.
    got = _cpp_roundtrip(work, work["fast"])
    bad = {}
    for key, (rd, rs, hexbytes) in got.items():
        if (rd, rs) != (0, 0):
            bad[key] = (rd, rs)
            continue
        problems = _bytes_differences(bytes.fromhex(work["ours"][key]), bytes.fromhex(hexbytes))
        if problems:
            bad[key] = problems[:3]
    assert not bad, bad


def test_cpp_and_c_paths_are_clean_under_valgrind(work):
    # Style habit 10: a C program driving the cdylib under Valgrind. Valid samples plus
    # truncated and garbled copies through the C++ type support: no invalid read or write, no
    # use of uninitialized memory, no definite leak (the per-type plan cache stays reachable).
    import random
    import shutil

    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed")
    exe = work["tmp"] / "cdr_cpp_roundtrip"
    if not exe.exists():
        _cpp_roundtrip(work, work["tracer"])
    rng = random.Random(3)
    lines = []
    for key, h in work["ours"].items():
        if not key.endswith("/1") and not key.endswith("/default"):
            continue
        b = bytearray.fromhex(h)
        lines.append(f"{key} {_type(key)} {h}\n")
        for j in range(2):
            g = bytearray(b)
            for _ in range(4):
                g[rng.randrange(4, len(g))] = rng.randrange(256)
            lines.append(f"{key}#garbled{j} {_type(key)} {g.hex()}\n")
            lines.append(f"{key}#cut{j} {_type(key)} {b[:rng.randrange(len(b))].hex()}\n")
    argv = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full", "--show-possibly-lost=no",
            "--errors-for-leak-kinds=definite", str(exe)]
    inp = work["tmp"] / "valgrind_input.txt"
    inp.write_text("".join(lines))
    res = harness.run([*argv, inp], work["tracer"], timeout=600)
    assert res.returncode == 0, res.describe()[-4000:]
    results = [line.split(" ")[:3] for line in res.stdout.splitlines()]
    assert len(results) == len(lines)
    # Valid samples round-trip; every cut is refused.
    assert all(r[1:] == ["0", "0"] for r in results if "#" not in r[0]), results
    assert all(r[1] != "0" for r in results if "#cut" in r[0]), results


ENTRY_CHECKS = r"""
/* The three entry points' contracts beyond the bytes: argument checks, buffer growth through
 * the serialized message's allocator, rmw_get_serialized_message_size. */
#include <stdio.h>
#include <string.h>
#include <rcutils/allocator.h>
#include <rcutils/error_handling.h>
#include <rmw/rmw.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <test_msgs/msg/basic_types.h>
#include <test_msgs/msg/strings.h>

static void err(void) { printf("  error: %s\n", rcutils_get_error_string().str); rcutils_reset_error(); }

int main(int argc, char ** argv)
{
  /* "--no-null" skips the null-argument calls (Fast DDS crashes on some of them). */
  int nulls = !(argc > 1 && strcmp(argv[1], "--no-null") == 0);
  (void)argv;
  const rosidl_message_type_support_t * basic = ROSIDL_GET_MSG_TYPE_SUPPORT(test_msgs, msg, BasicTypes);
  const rosidl_message_type_support_t * strings = ROSIDL_GET_MSG_TYPE_SUPPORT(test_msgs, msg, Strings);
  rcutils_allocator_t al = rcutils_get_default_allocator();
  size_t n = 0;
  rmw_ret_t rc = rmw_get_serialized_message_size(basic, NULL, &n);
  printf("size BasicTypes rc=%d n=%zu\n", (int)rc, rc == RMW_RET_OK ? n : 0); rcutils_reset_error();
  rc = rmw_get_serialized_message_size(strings, NULL, &n);
  printf("size Strings rc=%d\n", (int)rc); rcutils_reset_error();
  if (nulls) { printf("size null-out rc=%d\n", (int)rmw_get_serialized_message_size(basic, NULL, NULL)); rcutils_reset_error(); }

  test_msgs__msg__BasicTypes msg;
  test_msgs__msg__BasicTypes__init(&msg);
  msg.int64_value = -5;
  rmw_serialized_message_t sm = rmw_get_zero_initialized_serialized_message();
  rmw_serialized_message_init(&sm, 1, &al);  /* too small: rmw_serialize must grow it */
  rc = rmw_serialize(&msg, basic, &sm);
  printf("serialize rc=%d length=%zu grown=%d\n", (int)rc, sm.buffer_length, sm.buffer_capacity >= sm.buffer_length);
  if (nulls) {
    printf("null message rc=%d\n", (int)rmw_serialize(NULL, basic, &sm)); err();
    printf("null type support rc=%d\n", (int)rmw_serialize(&msg, NULL, &sm)); err();
    printf("null output rc=%d\n", (int)rmw_serialize(&msg, basic, NULL)); err();
  }

  test_msgs__msg__BasicTypes back;
  test_msgs__msg__BasicTypes__init(&back);
  rc = rmw_deserialize(&sm, basic, &back);
  printf("deserialize rc=%d int64=%lld\n", (int)rc, (long long)back.int64_value);
  size_t full = sm.buffer_length;
  sm.buffer_length = 10;
  printf("truncated rc=%d\n", (int)rmw_deserialize(&sm, basic, &back)); err();
  sm.buffer_length = full;
  if (nulls) { printf("null input rc=%d\n", (int)rmw_deserialize(NULL, basic, &back)); err(); }

  /* A Strings message into a BasicTypes-sized buffer would be a caller bug; a BasicTypes
   * buffer read as Strings is refused by its bytes, not a crash. */
  test_msgs__msg__Strings s;
  test_msgs__msg__Strings__init(&s);
  printf("wrong type rc=%d\n", (int)rmw_deserialize(&sm, strings, &s)); err();
  test_msgs__msg__Strings__fini(&s);
  test_msgs__msg__BasicTypes__fini(&msg);
  test_msgs__msg__BasicTypes__fini(&back);
  rmw_serialized_message_fini(&sm);
  return 0;
}
"""


def _entry_checks(work, env: dict, *args: str) -> str:
    exe = work["tmp"] / "cdr_entry_checks"
    if not exe.exists():
        harness.compile_c(ENTRY_CHECKS, exe, msgs=("test_msgs",),
                          libs=("rmw", "rcutils", "rosidl_runtime_c", "rmw_fastrtps_cpp"),
                          link_python=False)
    return harness.run([exe, *args], env, timeout=120).check().stdout


def test_entry_point_contracts(work):
    out = _entry_checks(work, work["tracer"])
    # A fully bounded type has a maximum size; an unbounded one says why not (UNSUPPORTED = 3).
    assert "size BasicTypes rc=0 n=52\n" in out, out
    assert "size Strings rc=3\n" in out, out
    assert "size null-out rc=11\n" in out, out  # RMW_RET_INVALID_ARGUMENT
    # The output buffer is grown with its own allocator; the bytes read back.
    assert "serialize rc=0 length=52 grown=1\n" in out, out
    assert "deserialize rc=0 int64=-5\n" in out, out
    for case in ("null message", "null type support", "null output", "null input"):
        assert f"{case} rc=11\n" in out, out
    assert "truncated rc=1\n" in out and "truncated CDR data" in out, out
    assert "wrong type rc=1\n" in out, out


def test_fast_dds_has_no_serialized_message_size(work):
    # What docs/cdr.md says of Fast DDS: RMW_RET_UNSUPPORTED for every type. (Its rmw_serialize
    # crashes on a null argument, hence --no-null.)
    out = _entry_checks(work, work["fast"], "--no-null")
    assert "size BasicTypes rc=3 " in out and "size Strings rc=3\n" in out, out
    assert "serialize rc=0 length=52 grown=1\n" in out, out
