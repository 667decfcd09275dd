#!/usr/bin/env bash
# The UCX 1.22 leg: kvx against the CUDA-capable UCX 1.22.0 of ../shared/ucx/ (what GPU
# deployments run: NVIDIA's UCX, 1.16 to 1.22), beside Debian's 1.13.1.
#   1. extracts the tarball into BUILD_DIR/ucx-1.22;
#   2. compiles the code that calls UCX (kvx_engine, kvx_doctor, kvx-bare-ucp) against its
#      headers, warnings as errors, in BUILD_DIR-ucx122/;
#   3. runs the unit, ucx and multiprocess tests of BUILD_DIR (built against 1.13.1's headers,
#      as scripts/test.sh leaves it) on its libraries: the longest multi-process workloads at
#      their small size (KVX_TEST_SMALL_WORKLOADS=1, tests/support/sanitizer_build.h), and
#      without the vLLM and SGLang connector tests (label connector: Python over the same
#      binding that python_agent_test, python_kv_agent_test and the example check here).
# Without a GPU driver its CUDA modules do not load and UCX runs its host transports.
#   scripts/ucx122.sh [extra ctest args]    (KVX_BUILD_DIR, default build/;
#                                            KVX_UCX122_TARBALL, default ../shared/ucx/...)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KVX_BUILD_DIR:-$root/build}
tarball=${KVX_UCX122_TARBALL:-$root/../shared/ucx/ucx-1.22-cuda.tar.xz}
if [ ! -f "$tarball" ]; then
  echo "scripts/ucx122.sh: NOT RUN: no UCX 1.22 tarball at $tarball (set KVX_UCX122_TARBALL)"
  exit 0
fi
if [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  echo "scripts/ucx122.sh: $build_dir has no build; run scripts/test.sh first" >&2
  exit 1
fi
"$root/scripts/install-deps.sh" xz-utils  # tar -J
ucx=$build_dir/ucx-1.22
if [ ! -f "$ucx/lib/libucp.so" ]; then
  rm -rf "$ucx"
  tar -xJf "$tarball" -C "$build_dir"
fi
run122() { LD_LIBRARY_PATH="$ucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" UCX_MODULE_DIR="$ucx/lib/ucx" "$@"; }
# Proof that kvx's binaries load these libraries, not Debian's.
loaded=$(run122 "$build_dir/cli/kvx" doctor | grep -o "UCX 1\.[0-9.]*" | head -1)
echo "scripts/ucx122.sh: kvx doctor on these libraries says: $loaded"
if [ "$loaded" != "UCX 1.22.0" ]; then
  echo "scripts/ucx122.sh: kvx did not load UCX 1.22.0 from $ucx/lib" >&2
  exit 1
fi

echo "scripts/ucx122.sh: compiling against UCX 1.22's headers"
KVX_DEBUG_INFO=none cmake -S "$root" -B "$build_dir-ucx122" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKVX_WERROR=ON -DKVX_UNITY_BUILD=ON -DKVX_DEBUG_INFO=none -DCMAKE_PREFIX_PATH="$ucx" > /dev/null
cmake --build "$build_dir-ucx122" -j "$(nproc)" --target kvx_engine kvx_doctor kvx-bare-ucp

echo "scripts/ucx122.sh: the unit, ucx and multiprocess tests on UCX 1.22's libraries"
cd "$build_dir"
# Three tests at a time: every process that loads UCX 1.22 waits about 0.4 s in its start-up
# (libucm installing its memory hooks: sched_yield in ucm_bistro_apply_patch_atomic, a third
# of it on the CPU), and the suite starts hundreds of them; run one at a time, that wait alone
# doubled the suite's time against UCX 1.13.1. KVX_UCX122_JOBS overrides.
KVX_TEST_SMALL_WORKLOADS=1 run122 ctest --output-on-failure --timeout 600 \
  -j "${KVX_UCX122_JOBS:-3}" -L 'unit|ucx|multiprocess' -LE 'slow|connector' "$@"
