# kvx-test-labels: python connector ucx multiprocess
"""kvx's vLLM connector with a hybrid model's Mamba group, as vLLM lays it out and calls it
(fake_vllm_states.py): full attention on the even layers, Mamba on the odd ones, each Mamba
layer's conv and SSM states strided views of its attention neighbour's buffer, a request's
state blocks 1 + num_speculative_blocks (with nulls before them in "align" mode), no
connector hook from a Mamba layer. Across a prefill process and a decode here over shared
memory, pulled and pushed (decode first, prefill first, and on a stand-in CUDA stream), every
byte compared: the attention blocks of all but the prompt's last token, and the states the
prefill computed from those tokens only (vllm_state_tokens.py: the decode computes the last
token itself). Between TP sizes (2 to 1, 1 to 2, 4 to 2, pulled; 2 to 1 and 1 to 2, pushed)
each decode rank's states are assembled from the prefill ranks' shards (state_slices.py: the
conv state's x, B and C, the SSM state's heads, B and C replicated where the groups do not
divide the TP size). States whose shards are not known are refused between TP sizes, for the
request, and state views vLLM would not hand out are refused at start-up. Prints
kvx-test-skipped without torch."""
import os
import sys
import types
import unittest

import require_torch  # noqa: F401 (skips the test without torch)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fake_vllm_states as states  # noqa: E402
from kvx.integrations import vllm_groups, vllm_state_tokens  # noqa: E402
import kvx  # noqa: E402
from kvx.integrations.vllm_layout import KvLayout, check_compatible  # noqa: E402
from fake_vllm import BLOCK_SIZE, LAYERS, Engine, Request, blocks_for  # noqa: E402
from fake_vllm_groups import GroupBlocks  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, decode_engine, push_params,  # noqa: E402
                          run_until)

# vLLM gives a hybrid Mamba model one buffer per pair of an attention and a Mamba layer
# (blocks first): FlashInfer's layout, and the packed FLASH_ATTN one (vllm_caches.py).
LAYOUTS = ("blocks-kv", "packed")
CASES = ((5 * BLOCK_SIZE + 7, 1), (2 * BLOCK_SIZE + 1, 2), (9 * BLOCK_SIZE, 3))
STATE_BLOCKS = 1 + states.SPECULATIVE_BLOCKS


def moved_bytes(decode, prompts):
    """Bytes a decode of `decode.tp_size` ranks receives for prompts of these lengths: the
    attention layers' blocks of all but the last token, and every Mamba layer's states."""
    attention = sum(blocks_for(n - 1) for n in prompts) * LAYERS // 2 * BLOCK_SIZE * \
        decode.total_heads * decode.bytes_per_head(0)
    return attention + len(prompts) * LAYERS // 2 * STATE_BLOCKS * decode.tp_size * \
        states.state_bytes(decode.tp_size)


class VllmMamba(unittest.TestCase):
    def pull(self, kind, tp_size, layout, decode_tp=None):
        prefill = PrefillProcess("shm", tp_size=tp_size, hybrid=kind, layout=layout)
        decode = Engine("kv_consumer", "mamba-pull", DECODE_BLOCKS,
                        tp_size=decode_tp or tp_size, data_path="shm", hybrid=kind,
                        layout=layout)
        try:
            for i, (tokens, seed) in enumerate(CASES):
                params = prefill.prefill(f"p-r{i}", tokens, seed)
                # The prefill computed all but the last token: its blocks and states are those.
                self.assertEqual([len(ids) for ids in params["remote_block_ids"]],
                                 [blocks_for(tokens - 1), STATE_BLOCKS])
                request = Request(f"r{i}", tokens, params)
                count, load_async = decode.scheduler.get_num_new_matched_tokens(request, 0)
                self.assertEqual((count, load_async), (tokens - 1, True))
                self.assertEqual(len(request.prompt_token_ids), tokens)  # the decode's intact
                blocks = decode.allocate_request(blocks_for(count))
                decode.scheduler.update_state_after_alloc(request, GroupBlocks(blocks), count)
                self.assertEqual(run_until(decode, f"r{i}"), set())
                self.assertTrue(decode.matches(blocks, seed, tokens=tokens - 1), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
                decode.release(blocks)
            data = decode.stats.data
            self.assertEqual(data["failures"], 0)
            self.assertEqual(data["bytes"], moved_bytes(decode, [t for t, _ in CASES]))
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_pull(self):
        self.pull("mamba", 1, LAYOUTS[0])

    def test_pull_align_tp2(self):
        self.pull("mamba-align", 2, LAYOUTS[1])

    def test_pull_between_tp_sizes(self):
        for prefill_tp, decode_tp in ((2, 1), (1, 2), (4, 2)):
            with self.subTest(prefill_tp=prefill_tp, decode_tp=decode_tp):
                self.pull("mamba", prefill_tp, LAYOUTS[prefill_tp % 2], decode_tp)

    def test_push(self):
        """Decode first, prefill first, and on a stand-in CUDA stream: the states go once the
        event recorded after the forward (wait_for_save) says it ran, not before."""
        self.push(1, 1, ("decode first", "prefill first", "async"))

    def test_push_between_tp_sizes(self):
        for prefill_tp, decode_tp in ((2, 1), (1, 2)):
            with self.subTest(prefill_tp=prefill_tp, decode_tp=decode_tp):
                self.push(prefill_tp, decode_tp, ("decode first", "prefill first"))

    def push(self, prefill_tp, decode_tp, flows):
        prefill = PrefillProcess("shm", mode="push", hybrid="mamba", layout=LAYOUTS[1],
                                 tp_size=prefill_tp)
        decode = decode_engine("mamba-push", "shm", hybrid="mamba", layout=LAYOUTS[1],
                               tp_size=decode_tp)
        try:
            for i, flow in enumerate(flows):
                tokens, seed = CASES[i]
                request = Request(f"r{i}", tokens, push_params(prefill, f"p-r{i}"))
                if flow == "prefill first":
                    finished = prefill.push(f"p-r{i}", tokens, seed)
                    request.kv_transfer_params["remote_request_id"] = \
                        finished["remote_request_id"]
                count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
                self.assertEqual(count, tokens - 1)
                blocks = decode.allocate_request(blocks_for(count))
                decode.scheduler.update_state_after_alloc(request, GroupBlocks(blocks), count)
                if flow != "prefill first":
                    for _ in range(5):
                        decode.step()  # the dest goes out
                    prefill.push(f"p-r{i}", tokens, seed, asynchronous=flow == "async")
                self.assertEqual(run_until(decode, f"r{i}"), set(), flow)
                self.assertTrue(decode.matches(blocks, seed, tokens=tokens - 1), flow)
                prefill.expect(f"FREED p-r{i}")
                decode.release(blocks)
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_unknown_shards_refused_between_tp_sizes(self):
        """States whose shards are not known (a kind state_slices does not model) move between
        equal TP sizes only; between others the check names both sizes."""
        attention = torch.zeros(8, 2, 16, 4, 32, dtype=torch.float16)
        caches = {"model.layers.0.attn": attention,
                  "model.layers.1.mixer": states.state_views(attention, 1, 4)}
        groups = [vllm_groups.Group(frozenset(["model.layers.0.attn"])),
                  vllm_groups.Group(frozenset(["model.layers.1.mixer"]), 2, "MambaSpec", True,
                                    "short_conv")]
        mine = KvLayout(caches, 32, groups=groups).describe()
        self.assertIsNone(mine["state_sharding"])
        check_compatible(mine, dict(mine))
        theirs = dict(mine, tp_size=2, total_heads=mine["total_heads"])
        with self.assertRaisesRegex(kvx.InvalidArgument, r"Mamba state moves between TP sizes "
                                    r"\(1 here, 2 there\) only where both know"):
            check_compatible(mine, theirs)

    def test_prompt_tokens(self):
        """The prefill's request is shortened once, however often vLLM asks; the decode's is
        never changed."""
        request = Request("p", 5, {"do_remote_decode": True})
        for _ in range(2):  # asked again after a preemption
            vllm_state_tokens.shorten_for_prefill(request)
        self.assertEqual((request.prompt_token_ids, request._all_token_ids,
                          request.num_prompt_tokens, request.max_tokens),
                         ([0, 1, 2, 3], [0, 1, 2, 3], 4, 1))
        single = Request("q", 1, {"do_remote_decode": True})
        vllm_state_tokens.shorten_for_prefill(single)
        self.assertEqual(single.num_prompt_tokens, 1)
        self.assertEqual(vllm_state_tokens.prompt_tokens_to_load(Request("d", 9), True), 8)
        self.assertEqual(vllm_state_tokens.prompt_tokens_to_load(Request("d", 9), False), 9)

    def test_groups_and_views(self):
        def group(kind, names, **spec):
            return types.SimpleNamespace(layer_names=names,
                                         kv_cache_spec=type(kind, (), spec)())
        full = group("FullAttentionSpec", ["a.0"], block_size=16)
        mamba = group("MambaSpec", ["a.1"], block_size=4096, mamba_type="mamba2",
                      num_speculative_blocks=2)
        found = vllm_groups.kv_cache_groups(types.SimpleNamespace(kv_cache_groups=[
            full, mamba]), 16)
        self.assertEqual([(g.keep, g.state) for g in found], [(None, False), (3, True)])
        with self.assertRaisesRegex(ValueError, "every layer is a Mamba layer"):
            vllm_groups.kv_cache_groups(types.SimpleNamespace(kv_cache_groups=[mamba]), 16)
        # Views vLLM would not hand out: states in two buffers, a state wider than its page.
        attention = torch.zeros(8, 2, 16, 4, 32, dtype=torch.float16)
        good = states.state_views(attention, 1, 4)
        caches = {"model.layers.0.attn": attention, "model.layers.1.mixer": good}
        groups = [vllm_groups.Group(frozenset(["model.layers.0.attn"])),
                  vllm_groups.Group(frozenset(["model.layers.1.mixer"]), 2, "MambaSpec", True)]
        layout = KvLayout(caches, 32, groups=groups)
        self.assertEqual((layout.state, len(layout.buffers)),
                         ([attention.numel() * 2 // 4, states.state_bytes(1)], 1))
        self.assertEqual(layout.save_order, [0, 1])
        apart = [good[0], torch.zeros(4, 8, 16, 8)]
        with self.assertRaisesRegex(ValueError, "model.layers.1.mixer: its states .* one "
                                    "buffer"):
            KvLayout(dict(caches, **{"model.layers.1.mixer": apart}), 32, groups=groups)
        wide = torch.as_strided(attention.view(-1), (4, 9000), (8, 1))
        with self.assertRaisesRegex(ValueError, "span 18000 bytes, more than its block stride"):
            KvLayout(dict(caches, **{"model.layers.1.mixer": [wide]}), 32, groups=groups)


if __name__ == "__main__":
    unittest.main()
