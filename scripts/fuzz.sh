#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (address and undefined sanitizers) and runs
# each for SECONDS (default 30) on a copy of its seed corpus: the committed corpus is never
# changed. Fails when any target crashes, leaks, hits undefined behaviour or violates one of
# its properties, after printing the input that did it and the command that reproduces it.
#   scripts/fuzz.sh [SECONDS]
# Environment: KVX_FUZZ_BUILD_DIR (default build-fuzz/), KVX_FUZZ_TARGETS (names to run, e.g.
# "frame kv_message"; default all), KVX_FUZZ_JOBS (build jobs) and KVX_FUZZ_PARALLEL (targets
# run at once), both nproc by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
build_dir=${KVX_FUZZ_BUILD_DIR:-$root/build-fuzz}
runs_dir=$build_dir/runs

# clang and libFuzzer (in Debian 12's compiler-rt package); llvm for llvm-symbolizer, which
# turns sanitizer stacks into file:line.
"$root/scripts/install-deps.sh" clang libclang-rt-14-dev llvm

"$root/scripts/configure-clang.sh" "$build_dir" -DKVX_FUZZ=ON
cmake --build "$build_dir" --target kvx_fuzz_targets -j "${KVX_FUZZ_JOBS:-$(nproc)}"

targets=(${KVX_FUZZ_TARGETS:-$(cd "$root/fuzz/corpus" && ls -d -- */ | tr -d /)})
parallel=${KVX_FUZZ_PARALLEL:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# Runs one target on a fresh copy of its seeds; its exit status goes to $work/status.
run_target() {
  local name=$1 work=$runs_dir/$1 status=0
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$root/fuzz/corpus/$name/"* "$work/corpus/"
  # -max_len: past every limit the codecs check by size (error messages: 4 KiB).
  "$build_dir/fuzz/${name}_fuzz" -max_total_time="$seconds" -max_len=8192 -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" >"$work/log" 2>&1 || status=$?
  echo "$status" >"$work/status"
}

report_target() {
  local name=$1 work=$runs_dir/$1 status execs rate cov
  status=$(cat "$work/status" 2>/dev/null || echo "none: the run did not start")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" 2>/dev/null || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" 2>/dev/null || true)
  cov=$(grep -o 'cov: [0-9]*' "$work/log" 2>/dev/null | tail -1 || true)
  if [ "$status" = 0 ]; then
    printf 'fuzz %-20s ok      %ss, %s runs, %s/s, %s\n' "$name" "$seconds" "${execs:-?}" \
      "${rate:-?}" "${cov:-cov: ?}"
    return
  fi
  failed+=("$name")
  printf 'fuzz %-20s FAILED  (exit %s); log %s\n' "$name" "$status" "$work/log"
  tail -n 40 "$work/log" 2>/dev/null || true
  for input in "$work/artifacts/"*; do
    [ -e "$input" ] || continue
    echo "crashing input: $input"
    echo "reproduce with: $build_dir/fuzz/${name}_fuzz $input"
  done
}

# One target per core at a time: each libFuzzer process is single-threaded.
failed=()
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  batch=("${targets[@]:i:parallel}")
  for name in "${batch[@]}"; do run_target "$name" & done
  wait
  for name in "${batch[@]}"; do report_target "$name"; done
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: every target ran ${seconds}s without a failure"
