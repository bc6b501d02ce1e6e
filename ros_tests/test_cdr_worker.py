"""The process side of the CDR tests (test_cdr.py): run with the venv's python, under Fast DDS
or under rmw_tracer (LD_PRELOAD), and answer JSON on stdout.

    python test_cdr_worker.py serialize            -> {"<sample>": "<hex>", ...}
    python test_cdr_worker.py deserialize FILE.json -> {"<sample>": "ok" | "<what differs>", ...}
    python test_cdr_worker.py malformed            -> {"cases": N, "accepted": [...], ...}

Samples are test_msgs messages filled with non-default values in every field (non-empty
sequences, unicode strings and wstrings with a surrogate pair, minimum and maximum values),
plus each type default-constructed. Nothing here is collected by pytest: ROS is imported only
when run as a program.
"""

from __future__ import annotations

import json
import sys

# Every message type of test_msgs (issue 3, item 5), plus BoundedPlainSequences.
TYPES = ["Arrays", "BasicTypes", "BoundedPlainSequences", "BoundedSequences", "Builtins",
         "Constants", "Defaults", "Empty", "MultiNested", "Nested", "Strings",
         "UnboundedSequences", "WStrings"]

# Exactly representable in float32, so a round trip through the C struct compares equal.
FLOAT32 = [1.125, -2.5, 3.4028234663852886e38, -3.4028234663852886e38, 1.1754943508222875e-38, 0.0]
FLOAT64 = [3.141592653589793, -1.7976931348623157e308, 1.7976931348623157e308, 5e-324, -0.5]
INTS = {
    "int8": [-128, 127, -1], "uint8": [255, 0, 17], "int16": [-32768, 32767, -2],
    "uint16": [65535, 0, 513], "int32": [-2**31, 2**31 - 1, -3], "uint32": [2**32 - 1, 0, 65536],
    "int64": [-2**63, 2**63 - 1, -4], "uint64": [2**64 - 1, 0, 2**32 + 1],
}
STRINGS = ["", "a", "hello world", "ünïcødé ✓", "tab\tand \"quotes\"", "abcd"]
WSTRINGS = ["", "Hällo wörld", "ハローワールド", "emoji \U0001F600 pair", "x"]


def _basic(name: str, k: int):
    if name == "boolean":
        return k % 2 == 0
    if name == "octet":
        return bytes([(0xA5 + 37 * k) % 256])
    if name in ("char", "uint8"):
        return INTS["uint8"][k % 3]
    if name == "float":
        return FLOAT32[k % len(FLOAT32)]
    if name == "double":
        return FLOAT64[k % len(FLOAT64)]
    return INTS[name][k % len(INTS[name])]


def _value(t, k: int):
    from rosidl_parser import definition as d

    if isinstance(t, d.BasicType):
        return _basic(t.typename, k)
    if isinstance(t, d.AbstractWString):
        s = WSTRINGS[k % len(WSTRINGS)]
        bound = getattr(t, "maximum_size", None)
        return s[:bound] if bound else s
    if isinstance(t, d.AbstractString):
        s = STRINGS[k % len(STRINGS)] + "#" * (k % 3)
        bound = getattr(t, "maximum_size", None)
        return s[:bound] if bound else s
    if isinstance(t, d.Array):
        return [_value(t.value_type, k + i) for i in range(t.size)]
    if isinstance(t, d.BoundedSequence):
        n = min(t.maximum_size, 1 + k % 3)
        return [_value(t.value_type, k + i) for i in range(n)]
    if isinstance(t, d.UnboundedSequence):
        n = 2 + k % 3
        return [_value(t.value_type, k + i) for i in range(n)]
    if isinstance(t, d.NamespacedType):
        return sample(_msg_class(t.namespaces[0], t.name), k + 1)
    raise TypeError(f"no sample value for {t!r}")


def _msg_class(pkg: str, name: str):
    import importlib

    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def sample(cls, k: int):
    """A message of `cls` with every field set from `k` (different k, different lengths)."""
    m = cls()
    for field, t in zip(m.get_fields_and_field_types().keys(), cls.SLOT_TYPES):
        setattr(m, field, _value(t, k))
    return m


def samples() -> dict:
    out = {}
    for name in TYPES:
        cls = _msg_class("test_msgs", name)
        out[f"{name}/default"] = cls()
        for k in (0, 1, 2):
            out[f"{name}/{k}"] = sample(cls, k)
    return out


def _type_of(key: str):
    return _msg_class("test_msgs", key.split("/")[0])


def _differences(a, b, path="") -> list[str]:
    """Field-by-field comparison (message __eq__ says only yes or no)."""
    if hasattr(a, "get_fields_and_field_types") and type(a) is type(b):
        diffs = []
        for f in a.get_fields_and_field_types():
            diffs += _differences(getattr(a, f), getattr(b, f), f"{path}.{f}")
        return diffs
    if hasattr(a, "__len__") and not isinstance(a, (str, bytes)):
        la, lb = list(a), list(b)
        if len(la) != len(lb):
            return [f"{path}: length {len(la)} != {len(lb)}"]
        diffs = []
        for i, (x, y) in enumerate(zip(la, lb)):
            diffs += _differences(x, y, f"{path}[{i}]")
        return diffs
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def cmd_serialize() -> dict:
    from rclpy.serialization import serialize_message

    return {key: serialize_message(msg).hex() for key, msg in samples().items()}


def cmd_deserialize(data: dict) -> dict:
    from rclpy.serialization import deserialize_message

    expected = samples()
    out = {}
    for key, hexbytes in data.items():
        try:
            got = deserialize_message(bytes.fromhex(hexbytes), _type_of(key))
        except Exception as e:  # noqa: BLE001 - reported to the test
            out[key] = f"raised {type(e).__name__}: {e}"
            continue
        diffs = _differences(expected[key], got)
        out[key] = "ok" if not diffs and expected[key] == got else "; ".join(diffs[:5]) or "__eq__ false"
    return out


def cmd_malformed() -> dict:
    """Truncations, garbled lengths and bad headers: each must raise, none may crash."""
    import random

    from rclpy.serialization import deserialize_message, serialize_message
    from test_msgs.msg import BasicTypes, BoundedSequences, MultiNested, Strings, UnboundedSequences, WStrings

    def rejected(data: bytes, cls) -> bool:
        try:
            deserialize_message(data, cls)
        except Exception:  # noqa: BLE001 - the rmw error surfaces as an rclpy exception
            return True
        return False

    accepted, cases, garbled_ok = [], 0, 0
    for cls in (BasicTypes, Strings, WStrings, BoundedSequences, UnboundedSequences, MultiNested):
        good = serialize_message(sample(cls, 1))
        # Every cut short of the full message (MultiNested: every 7th, it is large).
        step = 7 if len(good) > 2000 else 1
        for cut in range(0, len(good), step):
            cases += 1
            if not rejected(good[:cut], cls):
                accepted.append(f"{cls.__name__} cut at {cut} of {len(good)}")
        # Random garbling: may or may not parse, must never crash (the process would die).
        rng = random.Random(len(good))
        for _ in range(200):
            b = bytearray(good)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(4, len(b))] = rng.randrange(256)
            garbled_ok += 0 if rejected(bytes(b), cls) else 1
    # Specific malformations with a known verdict.
    base = bytes([0, 1, 0, 0])
    specific = {
        "empty input": (b"", BasicTypes),
        "header only": (base, BasicTypes),
        "XCDR2 encapsulation": (bytes([0, 7, 0, 0]) + serialize_message(BasicTypes())[4:], BasicTypes),
        "PL_CDR encapsulation": (bytes([0, 3, 0, 0]) + serialize_message(BasicTypes())[4:], BasicTypes),
        "bool byte 2": (base + bytes([2]) + serialize_message(BasicTypes())[5:], BasicTypes),
        "string length 0xffffffff": (base + b"\xff\xff\xff\xff" + b"abc", Strings),
        "sequence length 0x7fffffff": (base + b"\xff\xff\xff\x7f" + bytes(64), UnboundedSequences),
        "bounded sequence of 4 (bound 3)": (base + bytes([4, 0, 0, 0, 1, 0, 1, 0]) + bytes(400), BoundedSequences),
        "wstring unit above 0xffff": (base + bytes([1, 0, 0, 0, 0, 0, 1, 0]) + bytes(200), WStrings),
    }
    specific_accepted = [name for name, (data, cls) in specific.items() if not rejected(data, cls)]
    cases += len(specific)
    try:
        deserialize_message(specific["string length 0xffffffff"][0], Strings)
        error_text = ""
    except Exception as e:  # noqa: BLE001
        error_text = str(e)
    # Messages over their bounds (set past rclpy's own checks) must not be serialized.
    over = {}
    m = BoundedSequences()
    m._bool_values = [True] * 4
    over["bool[<=3] with 4"] = m
    m = BoundedSequences()
    m._basic_types_values = [BasicTypes()] * 5
    over["BasicTypes[<=3] with 5"] = m
    m = Strings()
    m._bounded_string_value = "x" * 23
    over["string<=22 with 23"] = m
    overbound_serialized = []
    for name, msg in over.items():
        try:
            serialize_message(msg)
            overbound_serialized.append(name)
        except Exception:  # noqa: BLE001
            pass
    return {"cases": cases, "accepted": accepted, "specific_accepted": specific_accepted,
            "garbled_parsed": garbled_ok, "error_text": error_text,
            "overbound_serialized": overbound_serialized}


def main() -> int:
    cmd = sys.argv[1]
    if cmd == "serialize":
        out = cmd_serialize()
    elif cmd == "deserialize":
        with open(sys.argv[2]) as f:
            out = cmd_deserialize(json.load(f))
    elif cmd == "malformed":
        out = cmd_malformed()
    else:
        raise SystemExit(f"unknown command {cmd}")
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
