"""A prefill/decode pair in Python: this process is the decode side and starts the prefill
side as a second process. The prefill side computes (here: fills) a KV cache of vLLM's shape
for one layer, connects to the decode side, pushes the request's blocks into the blocks the
decode side chose, and notifies it; the decode side checks every byte.

    PYTHONPATH=build/python python3 examples/python/prefill_decode.py [--data-path shm|tcp|socket]

(or with the package installed: see docs/integration.md, "Python").
"""
import argparse
import json
import subprocess
import sys

import numpy as np
import torch

import kvx

BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM = 32, 16, 8, 128  # one layer: 2 x 32 blocks of 32 KiB
REQUEST_BLOCKS = [3, 4, 5, 9, 10]  # where the decode side wants the request's KV


def layer_rows(region):
    """(region, offset, length) of every (K/V, block) of a [2, BLOCKS, ...] layer."""
    block_bytes = BLOCK_SIZE * HEADS * HEAD_DIM * 2
    rows = np.zeros((2 * BLOCKS, 3), dtype=np.uint64)
    rows[:, 0] = region
    rows[:, 1] = np.arange(2 * BLOCKS, dtype=np.uint64) * block_bytes
    rows[:, 2] = block_bytes
    return rows


def kv_indices(blocks):
    """List indices of `blocks`, K then V."""
    blocks = np.asarray(blocks, dtype=np.uint32)
    return np.concatenate([blocks, blocks + BLOCKS]).astype(np.uint32)


def prefill(address, data_path, dst_blocks):
    layer = torch.randn(2, BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM).to(torch.float16)  # "computed"
    src_blocks = list(range(len(dst_blocks)))
    with kvx.Agent("prefill-0", data_path=data_path, listen_address="") as agent:
        local = agent.prepare_local_list(layer_rows(agent.register_memory(layer, name="layer0")))
        peer = agent.connect(address, timeout=10)
        remote = agent.prepare_remote_list(peer, layer_rows(agent.peer_regions(peer)["layer0"]["id"]))
        sent = layer[:, src_blocks].contiguous()
        agent.transfer(kvx.WRITE, local, kv_indices(src_blocks), remote, kv_indices(dst_blocks),
                       notification=json.dumps({"request": "req-1", "checksum":
                                                float(sent.double().sum())}))
        print(f"prefill: pushed {len(dst_blocks)} blocks of every K and V to {peer}", flush=True)


def decode(data_path):
    layer = torch.zeros(2, BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM, dtype=torch.float16)
    with kvx.Agent("decode-0", data_path=data_path) as agent:
        agent.register_memory(layer, name="layer0")
        child = subprocess.Popen([sys.executable, __file__, "--prefill", agent.listen_address,
                                  "--data-path", data_path])
        peer, payload = agent.wait_notification(timeout=30)
        note = json.loads(payload)
        got = float(layer[:, REQUEST_BLOCKS].double().sum())
        untouched = [b for b in range(BLOCKS) if b not in REQUEST_BLOCKS]
        ok = got == note["checksum"] and not layer[:, untouched].any()
        print(f"decode: {note['request']} from {peer}: checksum {got:.3f}, expected "
              f"{note['checksum']:.3f}, other blocks untouched: {ok}")
        child.wait(timeout=30)
        return 0 if ok and child.returncode == 0 else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-path", default="shm", choices=["shm", "tcp", "socket"])
    parser.add_argument("--prefill", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prefill:
        prefill(args.prefill, args.data_path, REQUEST_BLOCKS)
        return 0
    return decode(args.data_path)


if __name__ == "__main__":
    sys.exit(main())
