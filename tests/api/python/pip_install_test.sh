#!/bin/bash
# kvx-test-labels: python install
# pip installs the kvx package from the source tree into a fresh virtual environment (with
# Debian's site packages visible, as the README says), then imports it there and runs
# agent_test.py with that environment's Python: the installed package, not the build tree's.
# Usage: pip_install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d /tmp/kvx-pip-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
KVX_BUILD_DIR=$build "$work/venv/bin/pip" install --no-build-isolation --no-index --quiet \
  "$source/api/python"
cd "$work"  # nothing of the source or build tree on the path
KVX_VENV=$work/venv "$work/venv/bin/python" - <<'PY'
import os, kvx
where = os.path.dirname(kvx.__file__)
assert where.startswith(os.environ["KVX_VENV"] + "/"), f"kvx imported from {where}, not the venv"
for name in ("libkvx.so.0", "kvx-ucx-probe"):
    assert os.path.exists(os.path.join(where, name)), name
assert os.environ["KVX_UCX_PROBE"] == os.path.join(where, "kvx-ucx-probe")
print("kvx imported from", where)
PY
PYTHONPATH= "$work/venv/bin/python" "$source/tests/api/python/agent_test.py"
echo "kvx pip install: OK"
