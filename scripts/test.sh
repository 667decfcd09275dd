#!/usr/bin/env bash
# The test command: installs what it needs, builds, and runs every test except the long
# soaks (label slow). Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KVX_BUILD_DIR:-$root/build}

"$root/scripts/build.sh" "$build_dir"
cd "$build_dir"
ctest --output-on-failure --timeout 600 -LE slow "$@"
