# kvx-test-labels: python ucx multiprocess
"""Real CUDA tensors through kvx (needs torch with CUDA and a GPU; prints kvx-test-skipped,
CTest: skipped, anywhere else): a KV layer of vLLM's shape [2, num_blocks, block_size,
kv_heads, head_dim] allocated by torch on the GPU, registered as it is, its blocks pushed to
and pulled from a decode agent in another process whose KV array is a CUDA tensor too, or
host memory, over each data path; every byte compared on the host. Which path moves the GPU
memory (directly, or staged through host buffers) is the transport's to choose (gpu_path
'auto'): the agents log it."""
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)
import torch  # noqa: E402
if not torch.cuda.is_available():
    print("kvx-test-skipped: torch sees no CUDA device")
    sys.exit(0)
import numpy as np

import kvx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agent_test import DecodeChild, ranges  # noqa: E402
from decode_child import pattern  # noqa: E402

BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM = 32, 16, 8, 128
SHAPE = (2, BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM)
HALF_BLOCK = BLOCK_SIZE * HEADS * HEAD_DIM * 2  # bytes of K (or V) of one block, float16
LAYER_BYTES = 2 * BLOCKS * HALF_BLOCK


def block_ranges(region, rows):
    return ranges(region, rows, HALF_BLOCK)


class CudaTensors(unittest.TestCase):
    def exchange(self, data_path, remote_memory):
        child = DecodeChild(data_path, nbytes=LAYER_BYTES, memory=remote_memory)
        try:
            with kvx.Agent("py-cuda", data_path=data_path, peer_timeout=2.0,
                           heartbeat_interval=0.2) as agent:
                kv = torch.zeros(SHAPE, dtype=torch.float16, device="cuda")
                described = kvx.describe_memory(kv)
                self.assertEqual((described.kind, described.device),
                                 ("cuda", torch.cuda.current_device()))
                local = agent.register_memory(kv, name="layer0")
                peer = agent.connect(child.address, timeout=20)
                remote = agent.peer_regions(peer)["kv"]["id"]
                rows = 2 * BLOCKS
                local_list = agent.prepare_local_list(block_ranges(local, rows))
                remote_list = agent.prepare_remote_list(peer, block_ranges(remote, rows))
                every = np.arange(rows, dtype=np.uint32)
                # Blocks land in another order than they leave: a shuffled index pairing.
                shuffled = np.random.default_rng(3).permutation(rows).astype(np.uint32)

                source = pattern(11, LAYER_BYTES)
                kv.view(-1).view(torch.uint8).copy_(torch.from_numpy(source))
                torch.cuda.synchronize()  # kvx's copies do not run on torch's stream
                agent.transfer(kvx.WRITE, local_list, every, remote_list, every,
                               notification="check 11", timeout=60)
                child.expect("VERIFIED 11 ok")

                agent.send_notification(peer, "fill 12")
                child.expect("FILLED 12")
                kv.zero_()
                torch.cuda.synchronize()
                agent.transfer(kvx.READ, local_list, shuffled, remote_list, every, timeout=60)
                got = kv.view(-1).view(torch.uint8).cpu().numpy().reshape(rows, HALF_BLOCK)
                sent = pattern(12, LAYER_BYTES).reshape(rows, HALF_BLOCK)
                # Remote block i landed in local block shuffled[i].
                self.assertTrue(np.array_equal(got[shuffled], sent))

                agent.send_notification(peer, "quit")
                self.assertEqual(child.process.wait(timeout=20), 0)
        finally:
            child.stop()

    def test_every_data_path(self):
        for data_path in ("shm", "tcp", "socket"):
            for remote_memory in ("cuda", "host"):
                with self.subTest(data_path=data_path, remote_memory=remote_memory):
                    print(f"-- {data_path}, peer's KV in {remote_memory} memory", flush=True)
                    self.exchange(data_path, remote_memory)


if __name__ == "__main__":
    unittest.main()
