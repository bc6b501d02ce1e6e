"""Load check (issue 3, "How it is shown": dlopen librmw_tracer.so by name as rmw_implementation
does and dlsym every entry point): a C program with nothing of ROS linked in loads the library
from the cargo target directory through LD_LIBRARY_PATH."""

from __future__ import annotations

import subprocess
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent


def _load_env() -> dict[str, str]:
    env = harness.ros_env()
    # Found by name, the way rmw_implementation finds an implementation: the loader path.
    release = str(harness.tracer_library().parent)
    env["LD_LIBRARY_PATH"] = release + ":" + env["LD_LIBRARY_PATH"]
    return env


def _load_check(tmp_path: Path, names: list[str], library: str = "librmw_tracer.so") -> harness.Result:
    assert harness.tracer_library().is_file(), f"{harness.tracer_library()} missing: run tools/setup"
    exe = harness.compile_c(HERE / "c" / "load_check.c", tmp_path / "load_check", libs=(), link_python=False)
    return harness.run([exe, library], _load_env(), stdin="\n".join(names) + "\n", timeout=60)


def test_entry_point_list_is_the_jazzy_list():
    # 95 exported by librmw_fastrtps_cpp 8.4 plus the deprecated rmw_node_assert_liveliness.
    names = harness.entry_points()
    assert len(names) == 96
    assert len(set(names)) == len(names)
    assert all(n.startswith("rmw_") for n in names)


def test_every_entry_point_resolves_and_identifier_is_rmw_tracer(tmp_path):
    names = harness.entry_points()
    res = _load_check(tmp_path, names)
    missing = [line.split(": ", 1)[1] for line in res.stdout.splitlines() if line.startswith("missing: ")]
    assert missing == [], f"{len(missing)} entry points not exported:\n" + "\n".join(missing) + "\n" + res.describe()
    assert res.returncode == 0, res.describe()
    assert f"resolved {len(names)} of {len(names)}" in res.stdout
    assert "identifier: rmw_tracer\n" in res.stdout, res.describe()
    assert "serialization format: cdr\n" in res.stdout, res.describe()


def test_unknown_symbol_is_reported_missing(tmp_path):
    # The check itself must be able to fail: a name the library does not have.
    res = _load_check(tmp_path, ["rmw_get_implementation_identifier", "rmw_tracer_no_such_entry_point"])
    assert res.returncode == 1, res.describe()
    assert "missing: rmw_tracer_no_such_entry_point" in res.stdout


def test_exports_only_rmw_entry_points_beyond_the_list():
    # Everything the cdylib exports with an rmw_ prefix must be a Jazzy entry point: an extra
    # rmw_ symbol would shadow librmw's own helpers (rmw_validate_*, rmw_get_zero_initialized_*).
    out = subprocess.run(["nm", "-D", "--defined-only", str(harness.tracer_library())],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split() and line.split()[-1].startswith("rmw_")}
    assert exported - set(harness.entry_points()) == set()
