"""kvx's layers and the edges allowed between them, checked on the sources: every
#include "..." of a file in one layer must name a header of the same layer or of a layer it
may use. docs/architecture.md ("Layers") draws the same table. An edge that is not allowed
fails the check, and so does a known debt (an edge allowed for now, to be removed) that is
gone, so that the list stays true.

Usage: layering_check.py SOURCE_DIR"""
import os
import re
import sys

# Layer of a path: the first prefix it starts with. kvx/... headers are the public API.
LAYERS = [
    ("api/include/", "public"), ("api/src/", "public"),
    ("api/c/", "c_api"), ("api/python/", "python"), ("api/shared_library/", "shared_library"),
    ("files/", "files"), ("json/", "json"), ("sync/", "sync"), ("crypto/", "crypto"),
    ("engine/gpu/", "gpu"), ("engine/", "engine"),
    ("registry/", "registry"),  # the cluster registry on etcd
    ("kv/", "kv"),  # the KV layer: pools, placement, hand-off, KvAgent, the peer reconnector
    ("agent/", "control"),  # the control channel, metadata and the Agent facade
    ("workload/", "workload"), ("doctor/", "doctor"), ("process/", "process"),
    ("examples/", "examples"),
    ("daemon/", "daemon"), ("demo/", "demo"), ("cli/", "cli"), ("bench/", "bench"), ("tests/", "tests"), ("fuzz/", "fuzz"),
]

ALLOWED = {
    "public": set(),
    "sync": set(),  # header-only, links nothing; never used by the public API
    "crypto": {"public"},  # HMAC, AES-GCM, the CSPRNG (OpenSSL)
    "files": {"public"},
    "json": {"public"},
    "gpu": {"public", "sync"},
    "engine": {"public", "gpu", "sync", "crypto"},
    "control": {"public", "engine", "gpu", "files", "json", "sync", "crypto"},
    "registry": {"public", "sync"},
    "kv": {"public", "json", "files", "sync"},
    "c_api": {"public"},
    "python": {"public", "sync"},
    "shared_library": {"public"},
    "examples": {"public"},
    "workload": {"public", "files", "json"},
    "doctor": {"public", "engine", "gpu", "files"},
    "process": {"public"},
    "daemon": {"public", "kv", "control", "gpu", "files", "workload", "process", "sync"},
    "demo": {"public", "daemon", "workload", "process"},
    "cli": {"public", "daemon", "demo", "bench", "doctor", "files", "json", "workload", "process"},
    "bench": {"public", "kv", "control", "engine", "gpu", "files", "json", "workload", "crypto",
              "doctor", "process", "sync"},
    "tests": None,  # tests and fuzz targets may reach anything they test
    "fuzz": None,
}

# Edges that exist and are not allowed: each to be removed, listed by file. None today.
DEBTS = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    if path.startswith("kvx/"):
        return "public"
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return layer
    return None


def edges(root):
    for top in sorted({prefix.split("/")[0] for prefix, _ in LAYERS}):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc", ".cu", ".c")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                with open(os.path.join(root, path), errors="replace") as source:
                    text = source.read()
                for target in INCLUDE.findall(text):
                    yield path, target


def main():
    root = sys.argv[1]
    problems, seen_debts, count = [], set(), 0
    for path, target in edges(root):
        source_layer, target_layer = layer_of(path), layer_of(target)
        if source_layer is None or target_layer is None or source_layer == target_layer:
            continue
        count += 1
        allowed = ALLOWED[source_layer]
        if allowed is None or target_layer in allowed:
            continue
        if (path, target) in DEBTS:
            seen_debts.add((path, target))
            continue
        problems.append(f"{path} includes {target}: layer '{source_layer}' may not use "
                        f"'{target_layer}' (allowed: {', '.join(sorted(allowed)) or 'none'})")
    for path, target in sorted(DEBTS - seen_debts):
        problems.append(f"known debt {path} -> {target} is gone: remove it from DEBTS in "
                        f"{os.path.relpath(__file__, root)}")
    for problem in problems:
        print(problem)
    print(f"{count} includes across layers checked, {len(seen_debts)} known debts, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
