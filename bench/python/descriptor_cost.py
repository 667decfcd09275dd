"""What making and posting one transfer of N descriptors costs from Python, against the same
from C++ (kvx-descriptor-cost) in the same run: two agents in one process over shared memory,
lists of N blocks prepared once, each round a transfer made from shuffled uint32 index arrays
and posted (timed, and the make alone), then waited for and released (not timed). The two
sides run alternately, five times each, since one side's run can land on a slow spell of a
shared machine (posting sometimes costs ~0.9 ms on both sides here, for whole runs); prints the
median of each side's medians and their ratio (the Python package's target: at most 2).
    PYTHONPATH=build/python python3 bench/python/descriptor_cost.py build/bench/kvx-descriptor-cost \
        [descriptors=16384] [rounds=40] [block=1024]"""
import statistics
import subprocess
import sys
import time

import numpy as np

import kvx


def python_median(descriptors, rounds, block):
    nbytes = descriptors * block
    source = np.ones(nbytes, dtype=np.uint8)
    target = np.zeros(nbytes, dtype=np.uint8)
    with kvx.Agent("cost-owner", data_path="shm", listen_address="") as owner, \
            kvx.Agent("cost-mover", data_path="shm", listen_address="") as mover:
        remote_region = owner.register_memory(target, name="target")
        local_region = mover.register_memory(source, name="source")
        peer = mover.load_peer_metadata(owner.export_metadata())
        offsets = np.arange(descriptors, dtype=np.uint64) * block
        local = np.stack([np.full(descriptors, local_region, np.uint64), offsets,
                          np.full(descriptors, block, np.uint64)], axis=1)
        remote = local.copy()
        remote[:, 0] = remote_region
        local_list = mover.prepare_local_list(local)
        remote_list = mover.prepare_remote_list(peer, remote)
        frm = np.arange(descriptors, dtype=np.uint32)
        to = np.random.default_rng(7).permutation(descriptors).astype(np.uint32)
        micros = []
        make_micros = []
        for _ in range(rounds):
            start = time.perf_counter()
            transfer = mover.make_transfer(kvx.WRITE, local_list, frm, remote_list, to)
            made = time.perf_counter()
            mover.post(transfer)
            posted = time.perf_counter()
            mover.wait(transfer, timeout=30)
            mover.release(transfer)
            micros.append((posted - start) * 1e6)
            make_micros.append((made - start) * 1e6)
        return statistics.median(make_micros), statistics.median(micros)


def main():
    binary = sys.argv[1]
    args = [int(a) for a in sys.argv[2:]]
    descriptors, rounds, block = (args + [16384, 40, 1024][len(args):])[:3]
    cxx_make, cxx_both, py_make, py_both = [], [], [], []
    for _ in range(5):
        line = subprocess.run([binary, str(descriptors), str(rounds), str(block)], check=True,
                              capture_output=True, text=True).stdout.strip()
        cxx_make.append(float(line.split("make median ")[1].split(" us")[0]))
        cxx_both.append(float(line.split("make+post median ")[1].split(" us")[0]))
        make, both = python_median(descriptors, rounds, block)
        py_make.append(make)
        py_both.append(both)
    m = statistics.median
    print(f"descriptor cost: {descriptors} descriptors of {block} B, medians of 5 alternating "
          f"runs of {rounds} rounds: make C++ {m(cxx_make):.1f} us, Python {m(py_make):.1f} us "
          f"(x{m(py_make) / m(cxx_make):.2f}); make+post C++ {m(cxx_both):.1f} us, Python "
          f"{m(py_both):.1f} us (x{m(py_both) / m(cxx_both):.2f})")


if __name__ == "__main__":
    main()
