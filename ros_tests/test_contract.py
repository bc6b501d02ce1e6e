"""The rmw contract entry point by entry point (issue 9, "the rmw contract to the letter"):
c/contract_oracle.c makes about 200 calls with null arguments, another implementation's
handles, zero-initialized or already filled structures, unknown event types and nodes, and the
valid calls around them, on rmw_tracer and on Fast DDS. What the rmw headers document is checked
on rmw_tracer (rules below, each with the header's words); every answer that differs from Fast
DDS must be listed in DEVIATIONS with its reason (docs/rmw-mapping.md, "Errors and threads").
The shutdown-related and first-found cases are in c/lifecycle_oracle.c (test_shutdown.py).
"""

from __future__ import annotations

from pathlib import Path

import harness
from worker_output import oracle_cases

HERE = Path(__file__).resolve().parent

INVALID, INCORRECT, ERROR, UNSUPPORTED, NON_EXISTENT = (
    "rc=11 err=1", "rc=12 err=1", "rc=1 err=1", "rc=3 err=1", "rc=203 err=1")

# Where rmw_tracer answers otherwise than Fast DDS, and why: the header documents our code,
# or Fast DDS crashes, does not check the handle, or gives no error string.
DEVIATIONS = {
    # rmw.h: INVALID_ARGUMENT "if either argument is null" (Fast DDS crashes).
    "deserialize null buffer": INVALID,
    "deserialize null type support": INVALID,
    # event.h: INVALID_ARGUMENT "if invalid argument" (Fast DDS crashes on a null endpoint).
    "publisher event init null publisher": INVALID,
    "subscription event init null subscription": INVALID,
    # event.h: UNSUPPORTED "if event_type is not supported": the other end's event type is not
    # one this endpoint can raise (Fast DDS accepts it, and the event never fires).
    "publisher event init subscription type": UNSUPPORTED,
    "subscription event init publisher type": UNSUPPORTED,
    # Another implementation's handle is refused as everywhere else; Fast DDS does not check
    # (and would use the foreign handle's data as its own).
    "message callback foreign": INCORRECT,
    "graph guard condition foreign node": "rc=null err=1",
    "destroy guard condition foreign": ERROR,
    # rmw.h: NULL "if node is NULL" (Fast DDS crashes).
    "graph guard condition null node": "rc=null err=1",
    # The same code, and we say why in the error string (Fast DDS sets none).
    "subscriber names by node null name": INVALID,
    "subscriber names by node unknown node": NON_EXISTENT,
    "service names by node unknown node": NON_EXISTENT,
    "client names by node unknown node": NON_EXISTENT,
    # rmw.h: "otherwise an appropriate error code": an unknown severity is an invalid argument,
    # with the error string (Fast DDS: RMW_RET_ERROR, no error string).
    "set log severity invalid": INVALID,
    # Not built (docs/entry-points.md): UNSUPPORTED, as the header allows.
    "publisher network flow endpoints": UNSUPPORTED,
}

# Entry points whose header documents no INCORRECT_RMW_IMPLEMENTATION: another
# implementation's handle is an ERROR there (event.h rmw_take_event: OK, BAD_ALLOC, ERROR;
# rmw.h rmw_destroy_guard_condition: OK, INVALID_ARGUMENT, ERROR; rmw_trigger_guard_condition
# documents nothing and Fast DDS answers ERROR). rmw_event_fini is librmw's own (it clears the
# struct, whatever it holds).
FOREIGN_IS_ERROR = {"take event foreign", "destroy guard condition foreign", "trigger guard condition foreign"}
NOT_OURS = {"event fini foreign"}


def expected(name: str) -> str | None:
    """What the headers document for the case ``name``, or None where they leave it open."""
    pointer = name.startswith(("graph guard condition", "create "))
    if name in NOT_OURS:
        return None
    if name in FOREIGN_IS_ERROR:
        return ERROR
    if "foreign" in name:
        # "RMW_RET_INCORRECT_RMW_IMPLEMENTATION if the `x` implementation identifier does not
        # match this implementation" (a null handle for the pointer-returning ones).
        return "rc=null err=1" if pointer else INCORRECT
    if name == "serialized message size":
        return UNSUPPORTED  # "RMW_RET_UNSUPPORTED if it's unimplemented", as in Fast DDS
    if name == "event type supported: invalid":
        return "rc=false err=0"
    if name == "qos check null reason no size":
        return "rc=0 err=0"  # "reason may be NULL if reason_size is zero"
    if " null" in name or "zero context" in name:
        # "RMW_RET_INVALID_ARGUMENT if `x` is NULL"; a zero-initialized context is invalid.
        return "rc=null err=1" if pointer else INVALID
    if name.endswith("unknown node"):
        return NON_EXISTENT  # "RMW_RET_NODE_NAME_NON_EXISTENT if the node name wasn't found"
    if name.endswith(("bad name", "bad topic", "bad namespace", "invalid allocator", "non-zero out",
                      "count 0", "over capacity", "severity invalid")):
        return INVALID  # "if `x` is not valid" / "is not a zero-initialized array" / count
    if name.endswith(("unknown type", "subscription type", "publisher type")):
        return UNSUPPORTED  # "RMW_RET_UNSUPPORTED if event_type is not supported"
    return None


def test_rmw_contract_matches_headers_and_fastdds(tmp_path, tracer_env, oracle_netns):
    exe = harness.compile_c(HERE / "c" / "contract_oracle.c", tmp_path / "contract_oracle",
                            msgs=("std_msgs", "test_msgs"))
    r = harness.run([exe], tracer_env, timeout=60).check()
    ours = oracle_cases(r.stdout, r.describe())
    f = harness.run_oracle([exe], harness.fastdds_env(tmp_path), "\ndone\n", netns=oracle_netns,
                           timeout=60)
    theirs = oracle_cases(f.stdout, f.describe())
    assert ours.keys() == theirs.keys() and len(ours) >= 200, sorted(set(ours) ^ set(theirs))
    # The headers, on rmw_tracer.
    wrong = {k: (v, expected(k)) for k, v in ours.items() if expected(k) not in (None, v)}
    assert wrong == {}, "rmw_tracer (left) differs from the header (right)"
    assert sum(expected(k) is not None for k in ours) >= 120
    # Every valid call between them succeeds quietly.
    failed = {k: v for k, v in ours.items() if expected(k) is None and k not in DEVIATIONS
              and v not in ("rc=0 err=0", "rc=ptr err=0", "rc=true err=0")}
    assert failed == {}, failed
    # Fast DDS, with the reasons for each difference.
    differ = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
    undocumented = {k: v for k, v in differ.items() if DEVIATIONS.get(k) != v[0]}
    assert undocumented == {}, "rmw_tracer (left) differs from Fast DDS (right) without a reason"
    assert sorted(differ) == sorted(DEVIATIONS), sorted(set(DEVIATIONS) - set(differ))
