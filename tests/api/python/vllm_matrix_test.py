# kvx-test-labels: python connector ucx multiprocess slow
"""kvx's vLLM connector over the whole matrix, two processes, every byte compared: each cache
layout vLLM hands out (vllm_caches.LAYOUTS) x pull and push x prefill TP / decode TP 1 to 1,
2 to 4, 4 to 2, and 2 KV heads from TP 1 to TP 4 (replicated), over shared memory: two
requests each (a whole one and a prefix hit in pull; the decode's blocks known before and
after the prefill computes in push). The tests CI runs cover a cross-section of it
(vllm_connector_test.py, vllm_push_test.py) and vllm_layout_test.py pairs every cell's lists
in one process; this runs all of it (label slow, not in CI; docs/integration.md gives the
command). Prints kvx-test-skipped without torch."""
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_vllm import HEADS  # noqa: E402
from vllm_caches import LAYOUTS  # noqa: E402
from vllm_harness import PullRequests, PushRequests  # noqa: E402

PARALLEL = ((1, 1, HEADS), (2, 4, HEADS), (4, 2, HEADS), (1, 4, 2))


class VllmMatrix(PullRequests, PushRequests, unittest.TestCase):
    def test_pull(self):
        for layout in LAYOUTS:
            for prefill_tp, decode_tp, heads in PARALLEL:
                with self.subTest(layout=layout, tp=(prefill_tp, decode_tp), heads=heads):
                    self.short_pull(layout, prefill_tp, decode_tp, heads)

    def test_push(self):
        for layout in LAYOUTS:
            for prefill_tp, decode_tp, heads in PARALLEL:
                with self.subTest(layout=layout, tp=(prefill_tp, decode_tp), heads=heads):
                    self.short_push(layout, prefill_tp, decode_tp, heads)


if __name__ == "__main__":
    unittest.main()
