# kvx-test-labels: python ucx multiprocess
"""kvx's vLLM connector with a prefill instance of pipeline parallel size 2 (fake_vllm.Engine
pp_size: a worker per stage and TP rank, each registering its stage's layers only, their
handshakes given to the scheduler by (PP rank, TP rank) as vLLM's engine core gives them,
set_xfer_handshake_metadata_pp_aware @003df29) and a decode of PP 1: pulled (TP 2 to 2 and
2 to 1) and pushed (upstream's prefill-first flow, the request's kv_transfer_params naming
every stage) over shared memory, every byte of every layer compared, each layer from the
stage that holds it. A decode of PP 2 is refused at start-up. Prints kvx-test-skipped
without torch."""
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_vllm import BLOCK_SIZE, Engine, Request  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, PullRequests,  # noqa: E402
                          PushRequests, decode_engine, run_until)


class VllmPipeline(PullRequests, PushRequests, unittest.TestCase):
    def pull(self, prefill_tp, decode_tp):
        prefill = PrefillProcess("shm", tp_size=prefill_tp, pp_size=2)
        decode = Engine("kv_consumer", "pipeline-pull", DECODE_BLOCKS, tp_size=decode_tp,
                        data_path="shm")
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

    def test_pull_tp_2_to_2(self):
        self.pull(2, 2)

    def test_pull_tp_2_to_1(self):
        self.pull(2, 1)

    def test_push_prefill_first(self):
        prefill = PrefillProcess("shm", mode="push", pp_size=2)
        decode = decode_engine("pipeline-push", "shm")
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

    def test_a_decode_of_several_stages_is_refused(self):
        with self.assertRaisesRegex(ValueError, "pipeline parallel size 1 .* not 2"):
            Engine("kv_consumer", "pipeline-decode", DECODE_BLOCKS, data_path="shm",
                   pp_size=2)


if __name__ == "__main__":
    unittest.main()
