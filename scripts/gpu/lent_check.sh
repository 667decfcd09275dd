#!/usr/bin/env bash
# The checks a session runs on a lent GPU machine (docs/gpu.md, "Running on a lent GPU
# machine"), as one bounded script: the CUDA tests, `kvx doctor`, real CUDA tensors from
# Python with both UCX builds, the demo on GPU pools, and the direct path against the bare GPU
# loop (and, when gpu-run/bin/kvx-base exists, against that older build, interleaved).
# Prepare here (no GPU needed):
#   KVX_DEBUG_INFO=none scripts/build.sh build-gpu        (or any build with CUDA and Python)
#   ../shared/gpu/pack.sh build-gpu gpu-run cli/kvx bench/kvx-bare-ucp engine/kvx-ucx-probe \
#       tests/cuda_copy_engine_test tests/engine_cuda_transfer_test
#   cp -a build-gpu/python/kvx gpu-run/python/ ; cp -a /usr/include/dlpack /usr/include/pybind11 gpu-run/include/
#   strip --strip-debug gpu-run/bin/* gpu-run/python/kvx/*.so*   (the carry limit is 64 MiB)
# then call the device with carry ["gpu-run"] and `bash scripts/gpu/lent_check.sh [SECONDS]`.
# Every step has a timeout and the script stops starting steps SECONDS (default 420) after it
# began; logs and JSON go to $OUT, a summary to $OUT/summary.txt and stdout.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
run=$root/gpu-run
budget=${1:-420}
out=${OUT:-/tmp/kvx-lent-check}
mkdir -p "$out"
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
left() { echo $((budget - $(elapsed))); }
log() { echo "== [$(elapsed)s] $*"; }
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

cp -a "$run/ucx-1.22" /opt/ 2>/dev/null
new_ucx=(LD_LIBRARY_PATH=/opt/ucx-1.22/lib:$run/lib)
old_ucx=(LD_LIBRARY_PATH=$run/lib UCX_MODULE_DIR=$run/lib/ucx)

log "machine"
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"
python3 --version 2>&1 | tee -a "$summary"
timeout 60 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" 2>&1 | tee -a "$summary"

for t in cuda_copy_engine_test engine_cuda_transfer_test; do
  [ -x "$run/bin/$t" ] || continue
  env "${new_ucx[@]}" timeout 120 "$run/bin/$t" >"$out/$t.log" 2>&1
  note "$t: rc $? $(tail -1 "$out/$t.log")"
done
env "${new_ucx[@]}" timeout 60 "$run/bin/kvx" doctor >"$out/doctor.log" 2>&1
note "kvx doctor: rc $?"

# The Python module is built for Debian's Python 3.11; for another Python it is compiled
# here against that Python's headers (pybind11 from torch's bundle when it has one).
pkg=$run/python
if [ -d "$pkg/kvx" ]; then
  suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  if [ ! -e "$pkg/kvx/_kvx$suffix" ]; then
    log "compiling _kvx$suffix"
    pyinc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
    tinc=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))" 2>/dev/null)
    pb=$run/include
    [ -e "$tinc/pybind11/pybind11.h" ] && pb=$tinc
    objs=$(mktemp -d)
    pids=()
    for f in api/python/src/*.cc; do
      timeout 180 g++ -O2 -std=c++20 -fPIC -fvisibility=hidden -DNDEBUG -I"$root" -I"$root/api/include" \
        -isystem "$pyinc" -isystem "$pb" -isystem "$run/include" -c "$f" -o "$objs/$(basename "$f").o" &
      pids+=($!)
    done
    ok=1
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    if [ $ok = 1 ] && g++ -shared -o "$pkg/kvx/_kvx$suffix" "$objs"/*.o -L"$pkg/kvx" -l:libkvx.so.0 \
      -Wl,-rpath,'$ORIGIN'; then
      note "compiled _kvx$suffix"
    else
      note "compiling the Python module FAILED"
    fi
  fi
  for ucx in new old; do
    [ "$(left)" -gt 300 ] || break
    if [ $ucx = new ]; then env_set=("${new_ucx[@]}"); else env_set=("${old_ucx[@]}"); fi
    log "python CUDA tensors, UCX $ucx"
    env "${env_set[@]}" PYTHONPATH="$pkg" timeout 150 python3 tests/api/python/cuda_tensor_test.py -v \
      >"$out/py-$ucx.log" 2>&1
    note "cuda_tensor_test (UCX $ucx): rc $? $(tail -1 "$out/py-$ucx.log")"
  done
  if [ "$(left)" -gt 300 ]; then
    log "the vLLM connector on CUDA caches, UCX 1.22"
    env "${new_ucx[@]}" PYTHONPATH="$pkg" timeout 200 python3 tests/api/python/vllm_cuda_test.py \
      -v >"$out/py-vllm.log" 2>&1
    note "vllm_cuda_test (UCX new): rc $? $(tail -1 "$out/py-vllm.log")"
  fi
fi

if [ "$(left)" -gt 240 ]; then
  log "demo, direct, UCX 1.22, probe found beside kvx"
  env -u KVX_UCX_PROBE "${new_ucx[@]}" timeout 100 "$run/bin/kvx" demo --memory cuda --gpu-path direct \
    --requests 40 >"$out/demo-direct.log" 2>&1
  note "demo direct: rc $? $(grep -E '^RESULT|^latency' "$out/demo-direct.log" | tr -s ' ' | tr '\n' ' ')"
fi

sweep() { # $1: binary in gpu-run/bin, $2: round
  log "sweep $1 round $2"
  env "${new_ucx[@]}" KVX_UCX_PROBE="$run/bin/kvx-ucx-probe" timeout "$(left)" "$run/bin/$1" bench \
    --scenario sweep --segment-bytes 131072 --segments 512,4096 --window 1,4 \
    --sweep-mode push,pull --sweep-order contiguous --memory cuda --gpu-path direct --no-verify \
    --sweep-requests 100 --bare-binary "$run/bin/kvx-bare-ucp" --json "$out/sweep-$1-$2.json" \
    >"$out/sweep-$1-$2.log" 2>&1
  note "sweep $1 round $2: rc $?"
  grep -E "^128K" "$out/sweep-$1-$2.log" | tee -a "$summary"
}
builds=(kvx)
[ -x "$run/bin/kvx-base" ] && builds=(kvx-base kvx)
for round in 1 2; do
  for b in "${builds[@]}"; do
    [ "$(left)" -gt 90 ] && sweep "$b" "$round"
  done
done
log "done"
cat "$summary"
