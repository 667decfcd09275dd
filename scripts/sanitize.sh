#!/usr/bin/env bash
# Builds kvx with sanitizers and runs the test suite (every test except label slow, as
# scripts/test.sh does) under them. Fails on any sanitizer report from any process: a test,
# or a child it started (the kvx CLI, pair_transfer, the bare UCP binaries: all from the same
# build, so all instrumented). Extra arguments go to ctest, e.g. scripts/sanitize.sh tsan -L ucx.
#   scripts/sanitize.sh asan|tsan [ctest args...]
#
# asan: AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, both stopping at
#   the first report. It reuses scripts/fuzz.sh's clang build (build-fuzz/, configured exactly
#   as fuzz.sh does: everything is already built with address,undefined there), so CI compiles
#   the libraries once for both; the tests then carry libFuzzer's coverage instrumentation too
#   (about 8% more compile time per file, less than rebuilding the libraries). Build dir: KVX_SANITIZE_BUILD_DIR, else KVX_FUZZ_BUILD_DIR, else
#   build-fuzz/.
# tsan: ThreadSanitizer (KVX_SANITIZE=thread), clang. Build dir: KVX_SANITIZE_BUILD_DIR, else
#   build-tsan/. Suppressions: scripts/tsan.supp (each with its evidence).
# Environment: KVX_SANITIZE_JOBS (build jobs, default nproc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
case "$kind" in
  asan | tsan) shift ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest args...]" >&2
    exit 2
    ;;
esac

# clang with its sanitizer runtimes (and libFuzzer, which the shared fuzz build needs);
# llvm for llvm-symbolizer, which turns sanitizer stacks into file:line.
"$root/scripts/install-deps.sh" clang libclang-rt-14-dev llvm

if [ "$kind" = asan ]; then
  build_dir=${KVX_SANITIZE_BUILD_DIR:-${KVX_FUZZ_BUILD_DIR:-$root/build-fuzz}}
  # Configured exactly as scripts/fuzz.sh does (scripts/configure-clang.sh), so neither run
  # recompiles what the other built.
  config=(-DKVX_FUZZ=ON)
else
  build_dir=${KVX_SANITIZE_BUILD_DIR:-$root/build-tsan}
  config=(-DKVX_SANITIZE=thread -DKVX_WERROR=ON)
fi
"$root/scripts/configure-clang.sh" "$build_dir" "${config[@]}"
cmake --build "$build_dir" -j "${KVX_SANITIZE_JOBS:-$(nproc)}"

# Every process writes its reports to $logs/KIND.PID instead of stderr: a child's report fails
# the run even where its parent ignores the child's exit status or output (a target process
# that a test kills afterwards), and no report mixes into output a test parses.
logs=$build_dir/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
# UCX replaces memory functions (malloc hooks, mmap relocation patching) to track memory
# events; under a sanitizer that fights the sanitizer's own interceptors. kvx needs no memory
# events (it registers memory explicitly and never relies on UCX's registration cache seeing
# frees), so they are switched off.
export UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no
export LLVM_SYMBOLIZER_PATH=${LLVM_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || true)}
if [ "$kind" = asan ]; then
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
else
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan:suppressions=$root/scripts/tsan.supp"
fi

# ASan runs every test (peer_kill_test skips its RSS bound under ASan itself: the quarantine
# grows RSS whatever the code does). The TSan build leaves out the tests labelled `serial`,
# which start no thread (a guard in the plain build stops one that does: tests/CMakeLists.txt).
# A test that fails is run up to twice more: the sanitizers slow everything 2-15x, and the
# multi-process tests (the demo, the benchmark smoke run) have deadlines sized for normal
# builds. A sanitizer report is never retried away: any report from any attempt, in the
# logs below, fails the run. Two tests at a time (KVX_SANITIZE_TEST_JOBS overrides), as
# scripts/test.sh: on 2 cores the TSan suite took 253 s against 392 s one at a time.
status=0
(cd "$build_dir" && ctest --output-on-failure --timeout 600 --repeat until-pass:3 \
  -j "${KVX_SANITIZE_TEST_JOBS:-2}" -LE slow "$@") || status=$?

reports=("$logs"/*)
if [ -e "${reports[0]}" ]; then
  for report in "${reports[@]}"; do
    echo "===== $report"
    cat "$report"
  done
  echo "sanitize $kind: ${#reports[@]} process(es) reported; the reports are above" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize $kind: ctest failed (exit $status) without a sanitizer report" >&2
  exit "$status"
fi
echo "sanitize $kind: no reports"
