# kvx-test-labels: python unit
"""state_slices.py, checked byte for byte: a Mamba2 layer's states (fake_vllm_states.py: the
conv state's x, B and C, the SSM state's heads, groups replicated where they do not divide the
TP size) are sharded over a prefill's TP ranks, each decode rank's state is assembled from
the pieces slices() names, and it must equal that rank's own shard, for TP sizes up and down.
vllm_states.sharding reads the shards from the tensors as vLLM shapes them. Prints
kvx-test-skipped without torch."""
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fake_vllm_states as states  # noqa: E402
import kvx  # noqa: E402
from kvx.integrations import state_slices, vllm_states  # noqa: E402
from kvx.integrations.state_slices import Sharding  # noqa: E402


def rank_bytes(rank, tp_size, seed=3):
    """One block's state bytes on `rank` of `tp_size`, and its Sharding."""
    views = [torch.zeros((1, *shape), dtype=dtype) for shape, dtype in states.shapes(tp_size)]
    for view, values in zip(views, states._shard(seed, 5, 9, 0, rank, tp_size)):
        view[0].copy_(torch.from_numpy(values))
    raw = np.concatenate([v[0].numpy().view(np.uint8).reshape(-1) for v in views])
    # The two states one after the other, as in a page (vllm_states reads offsets from the
    # tensors; here the views are apart, so the offsets are the concatenation's).
    conv_bytes = views[0][0].numel() * views[0].element_size()
    sharding = vllm_states.sharding(views, "mamba2", False)
    sharding = tuple(Sharding(at, s.rows, s.unit, s.pieces)
                     for at, s in zip((0, conv_bytes), sharding))
    return raw, sharding


class StateSlices(unittest.TestCase):
    def test_every_decode_byte_from_its_prefill_shard(self):
        for prefill_tp, decode_tp in ((1, 2), (2, 1), (2, 4), (4, 2), (1, 4), (4, 1), (2, 2),
                                      (1, 8), (8, 2), (8, 4), (4, 8)):
            prefill = [rank_bytes(r, prefill_tp) for r in range(prefill_tp)]
            shardings = prefill[0][1]
            for d_rank in range(decode_tp):
                expected, decode_sharding = rank_bytes(d_rank, decode_tp)
                state_slices.check(shardings, prefill_tp, decode_sharding, decode_tp)
                assembled = np.full(expected.size, 255, dtype=np.uint8)
                written = np.zeros(expected.size, dtype=np.int64)
                for p_rank in state_slices.sources(d_rank, decode_tp, prefill_tp):
                    for p_at, d_at, n in state_slices.slices(shardings, p_rank, prefill_tp,
                                                             decode_sharding, d_rank,
                                                             decode_tp):
                        assembled[d_at:d_at + n] = prefill[p_rank][0][p_at:p_at + n]
                        written[d_at:d_at + n] += 1
                case = f"TP {prefill_tp} -> {decode_tp}, decode rank {d_rank}"
                self.assertTrue(np.array_equal(written, np.ones_like(written)), case)
                self.assertTrue(np.array_equal(assembled, expected), case)

    def test_sharding_of_the_conv_layouts(self):
        conv = torch.zeros(4, 3, 32, dtype=torch.float16)   # SD: [kernel - 1, channels]
        ssm = torch.zeros(4, 4, 4, 8, dtype=torch.float32)  # [heads, head_dim, d_state]
        found = vllm_states.sharding([conv, ssm], "mamba2", False)
        self.assertEqual([(s.rows, s.unit, s.pieces) for s in found],
                         [(3, 2, (16, 8, 8)), (1, 128, (4,))])
        ds = torch.zeros(4, 32, 3, dtype=torch.float16)     # DS: [channels, kernel - 1]
        self.assertEqual(vllm_states.sharding([ds, ssm], "mamba2", True)[0].pieces[0], 16)
        gdn = vllm_states.sharding([conv, torch.zeros(4, 2, 4, 4)], "gdn_attention", False)
        self.assertEqual(gdn[0].pieces, (12, 12, 8))  # [q | k | v], v = 2 heads x 4
        self.assertIsNone(vllm_states.sharding([conv, ssm], "short_conv", False))

    def test_states_that_do_not_pair(self):
        one = (Sharding(0, 3, 2, (16, 8, 8)),)
        with self.assertRaisesRegex(kvx.InvalidArgument, "neither a split of one axis"):
            state_slices.slices(one, 0, 1, (Sharding(0, 3, 2, (4, 8, 8)),), 0, 2)
        with self.assertRaisesRegex(kvx.InvalidArgument, "not the same model's state"):
            state_slices.slices(one, 0, 1, (Sharding(0, 2, 2, (8, 4, 4)),), 0, 2)
        with self.assertRaisesRegex(kvx.InvalidArgument, "divide one another"):
            state_slices.check(one, 2, one, 3)
        with self.assertRaisesRegex(kvx.InvalidArgument, "impossible state sharding"):
            Sharding.from_wire([0, 0, 2, [4]])
        with self.assertRaisesRegex(kvx.InvalidArgument, "malformed"):
            Sharding.from_wire("x")


if __name__ == "__main__":
    unittest.main()
