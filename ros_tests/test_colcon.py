"""ament package (issue 3, item 7): `colcon build` of the repository in a temporary workspace, with
the venv's colcon and ament_cmake wheels, gives an install prefix with lib/librmw_tracer.so, the
ament index entries of an rmw implementation, and a CMake config a downstream package finds; and
that prefix is what RMW_IMPLEMENTATION=rmw_tracer loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import harness

HERE = Path(__file__).resolve().parent

CONSUMER_PACKAGE_XML = """<?xml version="1.0"?>
<package format="3">
  <name>rmw_tracer_consumer</name>
  <version>0.0.0</version>
  <description>Finds rmw_tracer through its exported CMake config.</description>
  <maintainer email="rmw_tracer@example.com">test</maintainer>
  <license>Apache License 2.0</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <depend>rmw_tracer</depend>
  <depend>rmw_implementation_cmake</depend>
  <export><build_type>ament_cmake</build_type></export>
</package>
"""

CONSUMER_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(rmw_tracer_consumer C)
find_package(ament_cmake REQUIRED)
find_package(rmw_tracer REQUIRED)
find_package(rmw_implementation_cmake REQUIRED)
get_available_rmw_implementations(impls)
if(NOT "rmw_tracer" IN_LIST impls)
  message(FATAL_ERROR "rmw_tracer is not among the available rmw implementations: ${impls}")
endif()
file(WRITE "${CMAKE_INSTALL_PREFIX}/found.txt"
  "libraries=${rmw_tracer_LIBRARIES}\\nimplementations=${impls}\\n")
ament_package()
"""


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    """One colcon build for the module: the repo (symlinked) and a consumer package."""
    colcon = harness.VENV / "bin" / "colcon"
    assert colcon.is_file(), f"{colcon} missing: run tools/setup"
    ws = tmp_path_factory.mktemp("colcon_ws")
    (ws / "src").mkdir()
    (ws / "src" / "rmw_tracer").symlink_to(harness.REPO, target_is_directory=True)
    consumer = ws / "src" / "rmw_tracer_consumer"
    consumer.mkdir()
    (consumer / "package.xml").write_text(CONSUMER_PACKAGE_XML)
    (consumer / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    env = harness.ros_env()
    # Only the venv underneath: no install prefix of another workspace may leak in.
    env["AMENT_PREFIX_PATH"] = str(harness.VENV)
    env.pop("CMAKE_PREFIX_PATH", None)
    env.pop("CARGO_TARGET_DIR", None)
    res = harness.run([colcon, "build", "--event-handlers", "console_direct+"], env, cwd=ws, timeout=1800)
    assert res.returncode == 0 and not res.timed_out, res.describe()[-20000:]
    return ws / "install"


def test_install_prefix_has_library_and_index_entries(colcon_install):
    prefix = colcon_install / "rmw_tracer"
    lib = prefix / "lib" / "librmw_tracer.so"
    assert lib.is_file() and os.access(lib, os.X_OK)
    index = prefix / "share" / "ament_index" / "resource_index"
    assert (index / "packages" / "rmw_tracer").is_file()
    typesupports = (index / "rmw_typesupport" / "rmw_tracer").read_text().split(";")
    assert "rosidl_typesupport_introspection_c" in typesupports
    assert "rosidl_typesupport_introspection_cpp" in typesupports
    assert (index / "rmw_typesupport_c" / "rmw_tracer").read_text().split(";") == [
        "rosidl_typesupport_c", "rosidl_typesupport_introspection_c"]
    assert (index / "rmw_typesupport_cpp" / "rmw_tracer").read_text().split(";") == [
        "rosidl_typesupport_cpp", "rosidl_typesupport_introspection_cpp"]
    assert (prefix / "share" / "rmw_tracer" / "package.xml").is_file()
    assert (prefix / "share" / "rmw_tracer" / "cmake" / "rmw_tracerConfig.cmake").is_file()


def test_downstream_package_finds_the_cmake_config(colcon_install):
    found = (colcon_install / "rmw_tracer_consumer" / "found.txt").read_text()
    libs = dict(line.split("=", 1) for line in found.splitlines())
    assert str(colcon_install / "rmw_tracer" / "lib" / "librmw_tracer.so") in libs["libraries"].split(";")
    implementations = libs["implementations"].split(";")
    assert "rmw_tracer" in implementations and "rmw_fastrtps_cpp" in implementations


def test_installed_library_loads_by_name_with_all_entry_points(colcon_install, tmp_path):
    env = harness.ros_env()
    env["LD_LIBRARY_PATH"] = f"{colcon_install / 'rmw_tracer' / 'lib'}:{env['LD_LIBRARY_PATH']}"
    exe = harness.compile_c(HERE / "c" / "load_check.c", tmp_path / "load_check", libs=(), link_python=False)
    names = harness.entry_points()
    res = harness.run([exe, "librmw_tracer.so"], env, stdin="\n".join(names) + "\n").check()
    assert f"resolved {len(names)} of {len(names)}" in res.stdout
    assert "identifier: rmw_tracer\n" in res.stdout


def test_rclpy_runs_on_the_installed_library(colcon_install, tmp_path):
    # The wheels' librcl is linked to librmw_fastrtps_cpp, so the installed library is preloaded,
    # as ros_tests do with the cargo build.
    env = harness.tracer_env(tmp_path)
    env["LD_PRELOAD"] = str(colcon_install / "rmw_tracer" / "lib" / "librmw_tracer.so")
    env["AMENT_PREFIX_PATH"] = f"{colcon_install / 'rmw_tracer'}:{harness.VENV}"
    script = (
        "from rclpy.utilities import get_rmw_implementation_identifier as ident\n"
        "from ament_index_python.packages import get_package_prefix\n"
        "print('identifier', ident())\n"
        "print('prefix', get_package_prefix('rmw_tracer'))\n"
    )
    res = harness.run([harness.venv_python(), "-c", script], env).check()
    assert "identifier rmw_tracer\n" in res.stdout
    assert f"prefix {colcon_install / 'rmw_tracer'}\n" in res.stdout
