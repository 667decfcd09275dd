#!/usr/bin/env bash
# The main job: builds kvx, then `kvx demo`: one prefill and two decode agent processes on
# 127.0.0.1 replay a synthetic workload (or --trace FILE), every destination block verified,
# and a KV migration latency report is printed. Extra arguments go to `kvx demo`.
#   scripts/demo.sh [--requests 200] [--transport shm|tcp] [--trace FILE] ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KVX_BUILD_DIR:-$root/build}

"$root/scripts/build.sh" "$build_dir" >/dev/null
exec "$build_dir/cli/kvx" demo "$@"
