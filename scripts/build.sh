#!/usr/bin/env bash
# Installs dependencies, configures and builds kvx.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_DIR defaults to build/. KVX_BUILD_TYPE picks the CMake build type (RelWithDebInfo),
# KVX_DEBUG_INFO its debug information (full, lines or none; default full) and KVX_UNITY_BUILD
# (ON by default) whether each target compiles in batches: cmake/KvxBuildTime.cmake.
# KVX_BUILD_TARGETS (space-separated) builds only those targets and what they need; default:
# everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}
shift || true

"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${KVX_BUILD_TYPE:-RelWithDebInfo}" -DKVX_WERROR=ON \
  -DKVX_UNITY_BUILD="${KVX_UNITY_BUILD:-ON}" -DKVX_DEBUG_INFO="${KVX_DEBUG_INFO:-full}" "$@"
targets=()
for target in ${KVX_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
