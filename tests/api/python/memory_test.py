# kvx-test-labels: python unit
"""kvx.describe_memory (api/python/kvx/memory.py): the address, size, kind and device of what
servers hold, taken from the object; memory kvx cannot register as it is is refused."""
import array
import ctypes
import unittest

import numpy as np

import kvx
from kvx import _kvx


class DescribeMemory(unittest.TestCase):
    def test_numpy_array(self):
        a = np.zeros((4, 8), dtype=np.float32)
        m = kvx.describe_memory(a)
        self.assertEqual((m.address, m.nbytes, m.kind, m.device),
                         (a.__array_interface__["data"][0], 128, "host", -1))

    def test_numpy_not_contiguous_or_read_only(self):
        with self.assertRaises(ValueError):
            kvx.describe_memory(np.zeros((4, 8), dtype=np.float32)[:, ::2])
        frozen = np.zeros(8)
        frozen.flags.writeable = False
        with self.assertRaises(ValueError):
            kvx.describe_memory(frozen)

    def test_buffers(self):
        b = bytearray(100)
        m = kvx.describe_memory(b)
        self.assertEqual(m.address, ctypes.addressof(ctypes.c_char.from_buffer(b)))
        self.assertEqual((m.nbytes, m.kind), (100, "host"))
        self.assertEqual(kvx.describe_memory(array.array("I", [0] * 10)).nbytes, 40)
        with self.assertRaises(ValueError):
            kvx.describe_memory(b"read-only bytes")
        with self.assertRaises(TypeError):
            kvx.describe_memory("a string")

    def test_tuples(self):
        self.assertEqual(kvx.describe_memory((0x1000, 64, -1)), kvx.Memory(0x1000, 64, "host", -1))
        self.assertEqual(kvx.describe_memory((0x1000, 64, None)).kind, "host")
        self.assertEqual(kvx.describe_memory((0x2000, 64, 1)), kvx.Memory(0x2000, 64, "cuda", 1))
        with self.assertRaises(TypeError):
            kvx.describe_memory((1, 2))

    def test_dlpack(self):
        a = np.arange(32, dtype=np.uint16)
        address, nbytes, kind, device = _kvx.dlpack_memory(a)
        self.assertEqual((address, nbytes, kind, device),
                         (a.__array_interface__["data"][0], 64, "host", -1))
        with self.assertRaises(ValueError):
            _kvx.dlpack_memory(np.arange(32, dtype=np.uint16)[::2])
        with self.assertRaises(TypeError):
            _kvx.dlpack_memory(object())

    def test_cuda_array_interface_needs_a_device(self):
        class FakeDeviceArray:
            def __init__(self, device):
                self.__cuda_array_interface__ = {"data": (0xdead0000, False), "shape": (16,),
                                                 "typestr": "<f4", "strides": None,
                                                 "version": 3}
                if device is not None:
                    self.device = device
        m = kvx.describe_memory(FakeDeviceArray(2))
        self.assertEqual(m, kvx.Memory(0xdead0000, 64, "cuda", 2))
        with self.assertRaises(ValueError):
            kvx.describe_memory(FakeDeviceArray(None))

    def test_registering_what_is_refused_registers_nothing(self):
        with kvx.Agent("py-memory", data_path="tcp", listen_address="") as agent:
            with self.assertRaises(ValueError):
                agent.register_memory(np.zeros((4, 8), dtype=np.uint8)[:, ::2])
            with self.assertRaises(kvx.InvalidArgument):
                agent.register_memory((0, 0, -1))  # an empty region
            region = agent.register_memory(np.zeros(64, dtype=np.uint8), name="ok")
            with self.assertRaises(kvx.AlreadyExists):
                agent.register_memory(np.zeros(64, dtype=np.uint8), name="ok")
            agent.deregister_memory(region)
            with self.assertRaises(kvx.NotFound):
                agent.deregister_memory(region)

    def test_names_a_peer_would_refuse_are_refused(self):
        with kvx.Agent("py-names", data_path="tcp", listen_address="") as agent:
            for name in ("line\nbreak", "nul\0byte", "x" * 100000):
                with self.assertRaisesRegex(kvx.InvalidArgument, "region name"):
                    agent.register_memory(np.zeros(64, dtype=np.uint8), name=name)
            agent.register_memory(np.zeros(64, dtype=np.uint8), name="fine")

    def test_a_registered_buffer_cannot_move(self):
        """A bytearray moves its bytes when it grows: while registered it refuses to (the
        agent holds an export of it), so a peer's write cannot land in memory it no longer
        owns; deregistered (or with the agent closed), it may grow again."""
        buffer = bytearray(4096)
        array = np.zeros(4096, dtype=np.uint8)
        with kvx.Agent("py-pinned", data_path="tcp", listen_address="") as agent:
            region = agent.register_memory(buffer, name="pinned")
            agent.register_memory(array, name="array")
            with self.assertRaises(BufferError):
                buffer.extend(b"x" * 4096)
            with self.assertRaises(ValueError):
                array.resize(8192)
            agent.deregister_memory(region)
            buffer.extend(b"x" * 4096)
        array.resize(8192, refcheck=False)  # the agent let it go when it closed


    def test_a_resized_torch_tensor_is_reported(self):
        """A torch tensor cannot be held by an export: a resize_() that moves its storage is
        caught by check_registered_memory() (FailedPrecondition naming the region) and by
        deregister_memory() (a RuntimeWarning)."""
        try:
            import torch
        except ImportError:
            self.skipTest("python3-torch is not installed")
        tensor = torch.zeros(4096, dtype=torch.uint8)
        with kvx.Agent("py-torch-moved", data_path="tcp", listen_address="") as agent:
            region = agent.register_memory(tensor, name="t")
            self.assertEqual(agent.check_registered_memory(), 1)
            tensor.resize_(1 << 24)  # a new, larger storage: the old bytes are freed
            with self.assertRaisesRegex(kvx.FailedPrecondition, f"region {region}: .*resized"):
                agent.check_registered_memory()
            with self.assertWarnsRegex(RuntimeWarning, "resized or given other storage"):
                agent.deregister_memory(region)
            self.assertEqual(agent.check_registered_memory(), 0)

if __name__ == "__main__":
    unittest.main()
