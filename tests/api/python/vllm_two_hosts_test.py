# kvx-test-labels: python connector ucx multiprocess netns
"""kvx's vLLM connector across two hosts (two_hosts.py: network namespaces joined by a veth
pair), with the settings a fleet uses: one kv_connector_extra_config for both, no host set
(each node finds its routable address), a port base (KVX_VLLM_PORT: one port per TP rank)
and the token from KVX_AUTH_TOKEN. Pull over UCX's tcp (prefill TP 2, decode TP 1) and push
over the socket transport, every byte compared; a decode with another token is refused and
its blocks reported failed, within the connect deadline. Prints kvx-test-skipped without
torch, root or iproute2."""
import os
import sys
import unittest
from unittest import mock

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import two_hosts  # noqa: E402
from fake_vllm import BLOCK_SIZE, Engine, blocks_for  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, PullRequests,  # noqa: E402
                          PushRequests, decode_engine)

TOKEN = "two-hosts-shared-secret"


def prefill_on_its_host(data_path, token=TOKEN, **options):
    return PrefillProcess(data_path, prefix=two_hosts.prefill_prefix(), env={
        "KVX_TEST_ROUTABLE": "1", "KVX_AUTH_TOKEN": token, "KVX_VLLM_PORT": "5600"},
        **options)


class VllmTwoHosts(PullRequests, PushRequests, unittest.TestCase):
    def setUp(self):
        patch = mock.patch.dict(os.environ, {"KVX_AUTH_TOKEN": TOKEN})
        patch.start()
        self.addCleanup(patch.stop)

    def test_pull_over_tcp(self):
        prefill = prefill_on_its_host("tcp", tp_size=2)
        decode = Engine("kv_consumer", "two-hosts-pull", DECODE_BLOCKS, data_path="tcp",
                        host=None)
        try:
            self.assertEqual(prefill.addresses, [f"{two_hosts.PREFILL_ADDRESS}:5600",
                                                 f"{two_hosts.PREFILL_ADDRESS}:5601"])
            self.assertTrue(decode.addresses()[0].startswith(two_hosts.DECODE_ADDRESS + ":"))
            for i, tokens in enumerate((5 * BLOCK_SIZE + 3, 9)):
                blocks, failed = self.decode_request(decode, prefill, f"r{i}", tokens, i + 1)
                self.assertEqual((failed, len(blocks)), (set(), blocks_for(tokens)))
                self.assertTrue(decode.matches(blocks, seed=i + 1), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_push_over_the_socket_transport(self):
        prefill = prefill_on_its_host("socket", mode="push")
        decode = decode_engine("two-hosts-push", "socket", host=None)
        try:
            self.assertEqual(prefill.addresses, [f"{two_hosts.PREFILL_ADDRESS}:5600"])
            for i, decode_first in enumerate((True, False)):
                blocks, failed = self.push_request(decode, prefill, f"r{i}", 4 * BLOCK_SIZE,
                                                   i + 3, decode_first=decode_first)
                self.assertEqual((failed, len(blocks)), (set(), 4))
                self.assertTrue(decode.matches(blocks, seed=i + 3), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_another_token_is_refused_and_the_blocks_fail(self):
        prefill = prefill_on_its_host("socket", token="the-prefill-fleet-token")
        decode = Engine("kv_consumer", "two-hosts-stranger", DECODE_BLOCKS,
                        data_path="socket", host=None, connect_timeout=5)
        try:
            blocks, failed = self.decode_request(decode, prefill, "refused", 3 * BLOCK_SIZE, 2)
            self.assertEqual(failed, set(blocks))
            self.assertEqual(len(blocks), 3)
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)


if __name__ == "__main__":
    if not two_hosts.inside():
        two_hosts.run_inside_decode(os.path.abspath(__file__))
    unittest.main()
