#!/usr/bin/env bash
# Installs the Debian 12 packages kvx builds, tests and runs with, plus any packages named as
# arguments (scripts/fuzz.sh and scripts/sanitize.sh add clang and its runtimes).
# Idempotent: packages already present are skipped, so a warm machine pays nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config lld
  libucx-dev ucx-utils
  libboost-dev
  nlohmann-json3-dev
  libspdlog-dev libfmt-dev
  catch2
  libibverbs-dev
  libcli11-dev
  libhwloc-dev
  libssl-dev
  pybind11-dev libdlpack-dev python3-dev python3-numpy python3-venv python3-pip python3-wheel python3-torch
  iproute2 nftables libnetfilter-queue-dev
  etcd-server
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "kvx: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
