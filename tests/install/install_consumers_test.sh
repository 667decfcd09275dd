#!/bin/bash
# kvx-test-labels: install
# Installs the build into a temporary prefix (cmake --install) and builds three consumers
# against what was installed, as a user of the package would: C++ with find_package(kvx),
# C++ with pkg-config (kvx.pc), and a C11 program with pkg-config; runs each (two agents
# moving 1 MiB over shared memory, every byte compared), and the installed `kvx` command.
# Usage: install_consumers_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
here=$source/tests/install
work=$(mktemp -d /tmp/kvx-install-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
# Fails unless executable $1 loads the installed libkvx.so.0, not another one.
uses_installed_library() {
  local loaded
  loaded=$(ldd "$1" | awk '$1 == "libkvx.so.0" { print $3 }')
  if [ -z "$loaded" ] || [ "$(realpath "$loaded")" != "$(realpath "$prefix/lib/libkvx.so.0")" ]; then
    echo "$1 loads libkvx.so.0 from '${loaded}', not from $prefix/lib"
    exit 1
  fi
}

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in lib/libkvx.so lib/libkvx.so.0 include/kvx/kvx.h include/kvx/agent.h \
         lib/cmake/kvx/kvxConfig.cmake lib/pkgconfig/kvx.pc bin/kvx libexec/kvx/kvx-ucx-probe; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
"$prefix/bin/kvx" --help > /dev/null

# 1. find_package(kvx)
cmake -S "$here/consumers/cmake" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake-configure.log"
cmake --build "$work/cmake-build" > "$work/cmake-build.log"
"$work/cmake-build/kvx_cmake_consumer"
# The consumer runs on the installed library, not the build tree's.
uses_installed_library "$work/cmake-build/kvx_cmake_consumer"

# 2. pkg-config, C++
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
g++ -std=c++20 -O1 -o "$work/pc-cxx" "$here/consumers/agent_pair.cc" $(pkg-config --cflags --libs kvx)
"$work/pc-cxx"
uses_installed_library "$work/pc-cxx"

# 3. pkg-config, C11, warnings as errors
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/pc-c" "$here/consumers/c/agent_pair.c" \
  $(pkg-config --cflags --libs kvx)
"$work/pc-c"
uses_installed_library "$work/pc-c"
echo "kvx install consumers: OK"
