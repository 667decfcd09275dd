# kvx-test-labels: python unit
"""The vLLM connector's KVConnectorStats (kvx.integrations.vllm_stats): a worker's tally of
its transfers, taken once per report, and vLLM's aggregation over the TP ranks (totals summed,
each rank's figures kept), as vllm/distributed/kv_transfer/kv_connector/v1/metrics.py
aggregates stats."""
import unittest

from kvx.integrations.vllm_stats import KvxConnectorStats, TransferTally


class VllmStats(unittest.TestCase):
    def test_a_tally_reports_what_ended_since_the_last_report(self):
        tally = TransferTally(1)
        self.assertIsNone(tally.take())
        tally.posted(7, 10, 40960)  # 10 descriptors, 40960 bytes
        tally.posted(8, 3, 300)
        self.assertIsNone(tally.take())  # nothing ended yet
        tally.ended(7, True)
        tally.ended(8, False)
        tally.ended(9, True)  # never posted: not counted
        tally.failed()
        stats = tally.take()
        self.assertEqual({k: stats.data[k] for k in ("bytes", "transfers", "failures",
                                                      "descriptors")},
                         {"bytes": 40960, "transfers": 1, "failures": 2, "descriptors": 10})
        self.assertEqual(list(stats.data["ranks"]), ["1"])
        self.assertIsNone(tally.take())

    def test_aggregated_over_ranks(self):
        first = KvxConnectorStats({"bytes": 100, "transfers": 2, "failures": 0,
                                   "descriptors": 4, "seconds": 0.5,
                                   "ranks": {"0": {"bytes": 100, "transfers": 2}}})
        second = KvxConnectorStats({"bytes": 50, "transfers": 1, "failures": 1,
                                    "descriptors": 2, "seconds": 1.0,
                                    "ranks": {"1": {"bytes": 50, "transfers": 1}}})
        total = first.aggregate(second)
        self.assertEqual((total.data["bytes"], total.data["transfers"],
                          total.data["failures"]), (150, 3, 1))
        self.assertEqual(sorted(total.data["ranks"]), ["0", "1"])
        reduced = total.reduce()
        self.assertEqual(reduced["kvx_bytes"], 150)
        self.assertAlmostEqual(reduced["kvx_mean_transfer_seconds"], 1.5 / 4)
        self.assertFalse(total.is_empty())
        total.reset()
        self.assertTrue(total.is_empty())


if __name__ == "__main__":
    unittest.main()
