# kvx-test-labels: python connector ucx multiprocess
"""kvx's vLLM connector with vLLM's hybrid allocator (SupportsHMA): two KV cache groups as
fake_vllm_groups.py lays them out (full attention on the even layers, a sliding window on the
odd ones, each odd layer on its even neighbour's tensor, block ids a list per group), pulled
and pushed across a prefill process and a decode here over shared memory, every byte of every
moved block compared: the full attention group moves whole, the sliding window group only
the blocks its window needs (the bytes a pull moved say so). Mamba groups:
vllm_mamba_test.py. Prints kvx-test-skipped without torch."""
import os
import sys
import types
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kvx.integrations import vllm_groups  # noqa: E402
from fake_vllm import BLOCK_SIZE, LAYERS, Engine, Request, blocks_for  # noqa: E402
from fake_vllm_groups import GroupBlocks, window_blocks  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, decode_engine, push_params,  # noqa: E402
                          run_until)

CASES = ((5 * BLOCK_SIZE + 7, 1), (2 * BLOCK_SIZE, 2), (9 * BLOCK_SIZE + 1, 3))


def moved_blocks(tokens):
    """(layer, block) pairs a request moves: every block of the full attention layers, the
    window's of the sliding window ones."""
    count = blocks_for(tokens)
    return LAYERS // 2 * count + LAYERS // 2 * min(count, window_blocks(BLOCK_SIZE))


class VllmHybrid(unittest.TestCase):
    def check_moved(self, decode, cases):
        data = decode.stats.data
        self.assertEqual(data["failures"], 0)
        self.assertEqual(data["bytes"], sum(moved_blocks(t) for t, _ in cases) * BLOCK_SIZE *
                         decode.total_heads * decode.bytes_per_head(0))

    def test_pull(self):
        prefill = PrefillProcess("shm", hybrid=True)
        decode = Engine("kv_consumer", "hybrid-pull", DECODE_BLOCKS, data_path="shm",
                        hybrid=True)
        try:
            for i, (tokens, seed) in enumerate(CASES):
                params = prefill.prefill(f"p-r{i}", tokens, seed)
                sent = params["remote_block_ids"]
                self.assertEqual([len(ids) for ids in sent],
                                 [blocks_for(tokens),
                                  min(blocks_for(tokens), window_blocks(BLOCK_SIZE))])
                request = Request(f"r{i}", tokens, params)
                count, load_async = decode.scheduler.get_num_new_matched_tokens(request, 0)
                self.assertEqual((count, load_async), (tokens, True))
                blocks = decode.allocate_request(blocks_for(tokens))
                decode.scheduler.update_state_after_alloc(request, GroupBlocks(blocks), count)
                self.assertEqual(run_until(decode, f"r{i}"), set())
                self.assertTrue(decode.matches(blocks, seed), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
            self.check_moved(decode, CASES)
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_push(self):
        prefill = PrefillProcess("shm", mode="push", hybrid=True)
        decode = decode_engine("hybrid-push", "shm", hybrid=True)
        try:
            for i, (tokens, seed) in enumerate(CASES):
                request = Request(f"r{i}", tokens, push_params(prefill, f"p-r{i}"))
                count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
                blocks = decode.allocate_request(blocks_for(tokens))
                decode.scheduler.update_state_after_alloc(request, GroupBlocks(blocks), count)
                for _ in range(5):
                    decode.step()  # the dest goes out
                prefill.push(f"p-r{i}", tokens, seed)
                self.assertEqual(run_until(decode, f"r{i}"), set())
                self.assertTrue(decode.matches(blocks, seed), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_groups(self):
        def group(kind, names, **spec):
            return types.SimpleNamespace(layer_names=names,
                                         kv_cache_spec=type(kind, (), spec)())
        full = group("FullAttentionSpec", ["a.0"], block_size=16)
        self.assertIsNone(vllm_groups.kv_cache_groups(
            types.SimpleNamespace(kv_cache_groups=[full]), 16))
        found = vllm_groups.kv_cache_groups(types.SimpleNamespace(kv_cache_groups=[
            full, group("SlidingWindowSpec", ["a.1"], block_size=16, sliding_window=100)]), 16)
        self.assertEqual([g.keep for g in found], [None, 8])
        # A Mamba group's block size is not the scheduler's (vllm_mamba_test.py).
        found = vllm_groups.kv_cache_groups(types.SimpleNamespace(kv_cache_groups=[
            full, group("MambaSpec", ["a.1"], block_size=4096)]), 16)
        self.assertEqual([(g.keep, g.state) for g in found], [(None, False), (1, True)])
        with self.assertRaisesRegex(ValueError, "32-token blocks, the scheduler 16"):
            vllm_groups.kv_cache_groups(types.SimpleNamespace(kv_cache_groups=[
                full, group("SlidingWindowSpec", ["a.1"], block_size=32, sliding_window=8)]),
                16)
        self.assertEqual(vllm_groups.as_groups((1, 2)), [[1, 2]])
        self.assertEqual(vllm_groups.as_groups(([1], [2, 3])), [[1], [2, 3]])
        self.assertEqual(vllm_groups.clip([[1, 2, 3], [4, 5, 6]], [None, 2]), [[1, 2, 3], [5, 6]])


if __name__ == "__main__":
    unittest.main()
