# Sourced by tools/setup, tools/ros-env, tools/test and tools/demo: which ROS 2 distribution
# this run is for, and where its venv and its build live.
#
#   ROS_DISTRO        jazzy (the default, also when unset or empty) or kilted
#   RMW_TRACER_VENV   the venv; default ~/.cache/rmw_tracer/venv-<distro>. A venv whose wheels
#                     are another distribution's (left in the shell by an earlier
#                     `eval "$(tools/ros-env)"`) is not used: the distribution's default is.
#
# Sets rmw_distro, rmw_venv and rmw_target (cargo's target directory: CARGO_TARGET_DIR or
# <repo>/target for Jazzy, <repo>/target/kilted for Kilted, so that neither build invalidates
# the other). Needs $repo.

rmw_distro="${ROS_DISTRO:-jazzy}"
case "$rmw_distro" in
  jazzy | kilted) ;;
  *)
    printf 'rmw_tracer: ROS_DISTRO=%s is not supported (jazzy or kilted)\n' "$rmw_distro" >&2
    exit 2
    ;;
esac

# rmw_venv_distro DIR: the distribution of the venv at DIR by its wheels (ros_<distro>_*), or
# nothing when it has none (not made yet).
rmw_venv_distro() {
  local d
  for d in "$1"/lib/python3*/site-packages/ros_{jazzy,kilted}_*.dist-info; do
    [[ -d "$d" ]] || continue
    d="${d##*/ros_}"
    echo "${d%%_*}"
    return
  done
}

rmw_venv="$HOME/.cache/rmw_tracer/venv-$rmw_distro"
if [[ -n "${RMW_TRACER_VENV:-}" ]]; then
  rmw_other="$(rmw_venv_distro "$RMW_TRACER_VENV")"
  if [[ -z "$rmw_other" || "$rmw_other" == "$rmw_distro" ]]; then
    rmw_venv="$RMW_TRACER_VENV"
  fi
  unset rmw_other
fi

if [[ "$rmw_distro" == jazzy ]]; then
  rmw_target="${CARGO_TARGET_DIR:-$repo/target}"
  if [[ "$rmw_target" == "$repo/target/kilted" ]]; then rmw_target="$repo/target"; fi
else
  rmw_target="$repo/target/$rmw_distro"
fi
