#!/usr/bin/env bash
# The main job: builds kvx and moves data between two agent processes with pair_transfer,
# over shared memory and over tcp, both directions, every byte verified, GB/s reported.
#   scripts/pair_transfer.sh [--bytes 1G] [--segment 32K]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KVX_BUILD_DIR:-$root/build}

"$root/scripts/build.sh" "$build_dir" >/dev/null
bin="$build_dir/examples/pair_transfer/pair_transfer"
for transport in shm tcp; do
  for op in write read; do
    "$bin" --transport "$transport" --op "$op" --bytes 1G --segment 32K "$@"
  done
done
