#!/usr/bin/env bash
# The main job: builds kvx, then `kvx demo`: one prefill and two decode agent processes on
# 127.0.0.1 replay a synthetic workload (or --trace FILE), every destination block verified,
# and a KV migration latency report is printed. Extra arguments go to `kvx demo`.
#   scripts/demo.sh [--requests 200] [--transport shm|tcp] [--trace FILE] ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KVX_BUILD_DIR:-$root/build}

# Only what the demo runs (the kvx command, which is also every agent process, and the UCX
# probe the agents start), with the build's progress on stderr: stdout is the demo's report.
echo "scripts/demo.sh: building the kvx command in $build_dir (a first build takes a few minutes)" >&2
KVX_BUILD_TARGETS="kvx_cli kvx-ucx-probe" "$root/scripts/build.sh" "$build_dir" >&2
echo "scripts/demo.sh: running kvx demo $*" >&2
exec "$build_dir/cli/kvx" demo "$@"
