# kvx-test-labels: python connector ucx multiprocess gpu
"""kvx's vLLM connector with its caches on the GPU (needs torch with CUDA and a GPU; prints
kvx-test-skipped, CTest: skipped, anywhere else): the packed layout vLLM's FLASH_ATTN hands
out and the layers-first view of one shared buffer, pulled and pushed between a prefill
process and a decode here, at TP 1 and 2 to 1, over each data path in KVX_TEST_DATA_PATHS
(default "shm socket"), every byte compared on the host. In push the prefill writes each
layer once a CUDA event recorded after it on the compute stream says done. Which path moves
the GPU memory (directly, or staged through host buffers) is the transport's to choose: the
agents log it."""
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)
import torch  # noqa: E402
if not torch.cuda.is_available():
    print("kvx-test-skipped: torch sees no CUDA device")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vllm_harness import PullRequests, PushRequests  # noqa: E402

DATA_PATHS = os.environ.get("KVX_TEST_DATA_PATHS", "shm socket").split()
CASES = [(layout, prefill_tp) for layout in ("packed", "LBHNC") for prefill_tp in (1, 2)]


class VllmCuda(PullRequests, PushRequests, unittest.TestCase):
    def test_pull(self):
        for data_path in DATA_PATHS:
            for layout, prefill_tp in CASES:
                with self.subTest(data_path=data_path, layout=layout, prefill_tp=prefill_tp):
                    self.short_pull(layout, prefill_tp, 1, device="cuda", data_path=data_path)

    def test_push(self):
        for data_path in DATA_PATHS:
            for layout, prefill_tp in CASES:
                with self.subTest(data_path=data_path, layout=layout, prefill_tp=prefill_tp):
                    self.short_push(layout, prefill_tp, 1, device="cuda", data_path=data_path)


if __name__ == "__main__":
    unittest.main()
