# kvx-test-labels: python ucx multiprocess
"""torch tensors through kvx (Debian's python3-torch, CPU): KV caches of vLLM's shape
[2, num_blocks, block_size, kv_heads, head_dim] per layer registered as they are, blocks
pushed and pulled against a decode agent in another process and compared byte for byte; a
tensor that is not contiguous is refused; and GPU memory on kvx's fake GPU runtime
(KVX_GPU_RUNTIME=fake: device memory that the CPU may touch, moved as CUDA memory) pushed to
the same decode agent. Prints kvx-test-skipped (CTest: skipped) where torch is not installed."""
import ctypes
import os
import sys
import unittest

os.environ["KVX_GPU_RUNTIME"] = "fake"  # before the first agent: every agent here uses it

import require_torch  # noqa: F401 (skips the test without torch)
import torch  # noqa: E402
import numpy as np

import kvx
from kvx import _kvx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agent_test import DecodeChild  # noqa: E402
from decode_child import pattern  # noqa: E402

BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM = 16, 16, 2, 64
# One layer: K and V for every block; a block's K (or V) is BLOCK_SIZE * HEADS * HEAD_DIM
# halves.
SHAPE = (2, BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM)
HALF_BLOCK = BLOCK_SIZE * HEADS * HEAD_DIM * 2  # bytes of K (or V) of one block
LAYER_BYTES = 2 * BLOCKS * HALF_BLOCK


def as_bytes(tensor):
    return tensor.contiguous().view(-1).view(torch.uint8).numpy()


def block_ranges(region):
    """2 * BLOCKS rows: K of every block, then V of every block, as vLLM lays them out."""
    table = np.zeros((2 * BLOCKS, 3), dtype=np.uint64)
    table[:, 0] = region
    table[:, 1] = np.arange(2 * BLOCKS, dtype=np.uint64) * HALF_BLOCK
    table[:, 2] = HALF_BLOCK
    return table


class TorchTensors(unittest.TestCase):
    def test_describe_tensors(self):
        t = torch.zeros(SHAPE, dtype=torch.float16)
        m = kvx.describe_memory(t)
        self.assertEqual((m.address, m.nbytes, m.kind, m.device),
                         (t.data_ptr(), LAYER_BYTES, "host", -1))
        self.assertEqual(_kvx.dlpack_memory(t)[:2], (t.data_ptr(), LAYER_BYTES))
        with self.assertRaises(ValueError):
            kvx.describe_memory(t.transpose(1, 2))
        with self.assertRaises(ValueError):
            _kvx.dlpack_memory(t.transpose(1, 2))
        view = t[1]  # V of every block: contiguous, at an offset
        self.assertEqual(kvx.describe_memory(view).address, t.data_ptr() + LAYER_BYTES // 2)

    def exchange(self, data_path):
        child = DecodeChild(data_path, nbytes=LAYER_BYTES)
        try:
            with kvx.Agent("py-torch", data_path=data_path, peer_timeout=1.0,
                           heartbeat_interval=0.2) as agent:
                kv = torch.zeros(SHAPE, dtype=torch.float16)
                local = agent.register_memory(kv, name="layer0")
                peer = agent.connect(child.address, timeout=10)
                remote = agent.peer_regions(peer)["kv"]["id"]
                local_list = agent.prepare_local_list(block_ranges(local))
                remote_list = agent.prepare_remote_list(peer, block_ranges(remote))
                every = np.arange(2 * BLOCKS, dtype=np.uint32)

                kv.view(-1).view(torch.uint8).copy_(torch.from_numpy(pattern(5, LAYER_BYTES)))
                agent.transfer(kvx.WRITE, local_list, every, remote_list, every,
                               notification="check 5")
                child.expect("VERIFIED 5 ok")

                agent.send_notification(peer, "fill 6")
                child.expect("FILLED 6")
                kv.zero_()
                agent.transfer(kvx.READ, local_list, every, remote_list, every)
                self.assertTrue(np.array_equal(as_bytes(kv), pattern(6, LAYER_BYTES)))
                agent.send_notification(peer, "quit")
                self.assertEqual(child.process.wait(timeout=10), 0)  # before the agent closes
        finally:
            child.stop()

    def test_shm(self):
        self.exchange("shm")

    def test_socket(self):
        self.exchange("socket")

    def test_memory_of_another_device_or_kind_is_refused(self):
        with kvx.Agent("py-devices", data_path="socket", listen_address="") as agent:
            _, address = agent.allocate_memory("gpu.0", 1 << 20, kind="cuda", device=0)
            with self.assertRaises(kvx.FailedPrecondition) as raised:
                agent.register_memory((address, 4096, 1))  # it is device 0's
            self.assertIn("declare device 0", str(raised.exception))
            host = torch.zeros(64, dtype=torch.uint8)
            with self.assertRaises(kvx.FailedPrecondition) as raised:
                agent.register_memory((host.data_ptr(), 64, 0))  # host memory called CUDA
            self.assertIn("host memory", str(raised.exception))
            # Nothing was registered, and the agent goes on.
            agent.register_memory(host, name="host")
            agent.allocate_memory("gpu.0.more", 4096, kind="cuda", device=0)

    def test_fake_gpu_memory(self):
        for data_path in ("shm", "socket"):
            with self.subTest(data_path=data_path):
                child = DecodeChild(data_path, nbytes=LAYER_BYTES)
                try:
                    with kvx.Agent("py-gpu", data_path=data_path, peer_timeout=1.0,
                                   heartbeat_interval=0.2) as agent:
                        region, address = agent.allocate_memory("gpu.layer0", LAYER_BYTES,
                                                                kind="cuda", device=0)
                        source = pattern(7, LAYER_BYTES)
                        ctypes.memmove(address, source.ctypes.data, LAYER_BYTES)
                        peer = agent.connect(child.address, timeout=10)
                        remote = agent.peer_regions(peer)["kv"]["id"]
                        local_list = agent.prepare_local_list(block_ranges(region))
                        remote_list = agent.prepare_remote_list(peer, block_ranges(remote))
                        every = np.arange(2 * BLOCKS, dtype=np.uint32)
                        agent.transfer(kvx.WRITE, local_list, every, remote_list, every,
                                       notification="check 7")
                        child.expect("VERIFIED 7 ok")
                        agent.send_notification(peer, "quit")
                        self.assertEqual(child.process.wait(timeout=10), 0)
                finally:
                    child.stop()


if __name__ == "__main__":
    unittest.main()
