#!/usr/bin/env bash
# Configures a clang build of kvx the way scripts/fuzz.sh and scripts/sanitize.sh both do, so
# that the two share build-fuzz/ without either reconfiguring (and recompiling) the other's.
#   scripts/configure-clang.sh BUILD_DIR [cmake args...]
# A unity build, -O1 and line tables only (cmake/KvxBuildTime.cmake): these builds exist to
# run the suite and the fuzzers under sanitizers, which recommend -O1 (reports keep their
# frames, and it compiles about a fifth faster than -O2), and whose reports need file:line,
# not variables.
# KVX_DEBUG_INFO overrides the debug information (full, lines, none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$1
shift
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DKVX_UNITY_BUILD=ON \
  -DKVX_DEBUG_INFO="${KVX_DEBUG_INFO:-lines}" "$@" >/dev/null
