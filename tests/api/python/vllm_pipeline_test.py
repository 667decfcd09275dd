# kvx-test-labels: python connector ucx multiprocess
"""kvx's vLLM connector with instances of several pipeline stages (fake_vllm.Engine pp_size: a
worker per stage and TP rank, each registering its stage's layers only, a consecutive share
as vLLM's get_pp_indices splits them, their handshakes given to the scheduler by (PP rank, TP
rank) as vLLM's engine core gives them, set_xfer_handshake_metadata_pp_aware @003df29):
a prefill of PP 2 and a decode of PP 1 pulled (TP 2 to 2 and 2 to 1) and pushed (upstream's
prefill-first flow, the request's kv_transfer_params naming every stage); decodes of PP 2
and 3 (stages that overlap the prefill's in part) pulled and pushed; a hybrid model (a
sliding window group, a Mamba group) whose prefill has 2 stages, each stage's layers in both
groups, pulled into a decode of one. Over shared memory, every byte of every layer compared,
each layer from the stage that holds it. Prints kvx-test-skipped without torch."""
import os
import sys
import types
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_vllm import BLOCK_SIZE, HEADS, Engine, Request, blocks_for  # noqa: E402
from fake_vllm_groups import GroupBlocks  # noqa: E402
from kvx.integrations import vllm_heads as heads, vllm_messages as messages  # noqa: E402
from kvx.integrations.vllm_pull import PullReader  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, PullRequests,  # noqa: E402
                          PushRequests, decode_engine, run_until)


class VllmPipeline(PullRequests, PushRequests, unittest.TestCase):
    def pull(self, prefill_tp, decode_tp, prefill_pp=2, decode_pp=1):
        prefill = PrefillProcess("shm", tp_size=prefill_tp, pp_size=prefill_pp)
        decode = Engine("kv_consumer", "pipeline-pull", DECODE_BLOCKS, tp_size=decode_tp,
                        data_path="shm", pp_size=decode_pp)
        try:
            for i, tokens in enumerate((3 * BLOCK_SIZE + 5, BLOCK_SIZE)):
                blocks, failed = self.decode_request(decode, prefill, f"r{i}", tokens, i + 4)
                self.assertEqual(failed, set())
                self.assertTrue(decode.matches(blocks, seed=i + 4), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def hybrid_pull(self, kind):
        """A prefill of 2 stages, each holding layers of both KV cache groups, pulled into a
        decode of one stage; a Mamba group's decode loads all but the last prompt token."""
        mamba = kind != "hybrid"
        # A Mamba layer's states sit in its attention neighbour's buffer: a layout of a
        # buffer a layer (vllm_mamba_test.py).
        layout = {"layout": "blocks-kv"} if mamba else {}
        prefill = PrefillProcess("shm", hybrid=kind, pp_size=2, **layout)
        decode = Engine("kv_consumer", f"pipeline-{kind}", DECODE_BLOCKS, data_path="shm",
                        hybrid=kind, **layout)
        try:
            for i, (tokens, seed) in enumerate(((3 * BLOCK_SIZE + 5, 4), (BLOCK_SIZE, 5))):
                request = Request(f"r{i}", tokens, prefill.prefill(f"p-r{i}", tokens, seed))
                count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
                self.assertEqual(count, tokens - 1 if mamba else tokens)
                blocks = decode.allocate_request(blocks_for(count))
                decode.scheduler.update_state_after_alloc(request, GroupBlocks(blocks), count)
                self.assertEqual(run_until(decode, f"r{i}"), set())
                self.assertTrue(decode.matches(blocks, seed, tokens=count if mamba else None),
                                f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
                decode.release(blocks)
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_pull_sliding_window_groups_from_2_stages(self):
        self.hybrid_pull("hybrid")

    def test_pull_mamba_groups_from_2_stages(self):
        self.hybrid_pull("mamba")

    def test_pull_tp_2_to_2(self):
        self.pull(2, 2)

    def test_pull_tp_2_to_1(self):
        self.pull(2, 1)

    def test_pull_to_a_decode_of_2_stages(self):
        self.pull(1, 2, prefill_pp=1, decode_pp=2)

    def test_pull_stages_that_overlap_in_part(self):
        """Prefill stages of layers 0-5 and 6-11, decode stages of 0-3, 4-7 and 8-11: the
        middle decode stage reads from both prefill stages."""
        self.pull(2, 1, prefill_pp=2, decode_pp=3)

    def test_a_prefill_worker_waits_for_the_reads_of_every_decode_stage(self):
        """The `read` note a decode worker sends counts every stage's decode workers."""
        reader = PullReader(None, None, types.SimpleNamespace(total_heads=HEADS, state=None), 0,
                            2, 3)
        spec = types.SimpleNamespace(remote_addresses=["a", "b"], remote_request_id="p")
        expected, _ = messages.parse(reader.note(spec, heads.Source(1, 0, 0, 2)))[1]
        self.assertEqual(expected, 3 * heads.contacted_by(1, 2, 2, HEADS))

    def test_push_prefill_first(self):
        self.push_prefill_first(decode_pp=1)

    def test_push_to_a_decode_of_3_stages(self):
        self.push_prefill_first(decode_pp=3)

    def push_prefill_first(self, decode_pp):
        prefill = PrefillProcess("shm", mode="push", pp_size=2)
        decode = decode_engine("pipeline-push", "shm", pp_size=decode_pp)
        try:
            params = prefill.push("first", 4 * BLOCK_SIZE, seed=5)
            self.assertEqual(len(params["remote_stages"]), 2)
            request = Request("after", 4 * BLOCK_SIZE, params)
            blocks = self.allocate(decode, request, 4 * BLOCK_SIZE)
            self.assertEqual(run_until(decode, "after"), set())
            self.assertTrue(decode.matches(blocks, seed=5))
            prefill.expect("FREED first")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)


if __name__ == "__main__":
    unittest.main()
