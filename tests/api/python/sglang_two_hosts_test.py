# kvx-test-labels: python connector ucx multiprocess netns
"""kvx as SGLang's transfer backend across two hosts (two_hosts.py: network namespaces joined
by a veth pair), with no host set anywhere: the prefill node's bootstrap server and its rank
listen where the backend chooses by default (the node's routable address), the decode asks
that server for the rank, and the token comes from KVX_AUTH_TOKEN. Requests over UCX's tcp and
the socket transport, every page and aux slot compared; a decode with another token sees its
receiver fail, not hang. Prints kvx-test-skipped without root or iproute2."""
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["KVX_TEST_ROUTABLE"] = "1"  # read by fake_sglang, here and in the prefill
import kvx  # noqa: E402
import two_hosts  # noqa: E402
from fake_sglang import manager  # noqa: E402
from kvx.integrations.sglang import KVPoll, KvxKVReceiver  # noqa: E402
from sglang_harness import DECODE_PAGES, PrefillProcess, SglangRequests, poll_until  # noqa: E402

TOKEN = "two-hosts-shared-secret"


def prefill_on_its_host(data_path, token=TOKEN):
    return PrefillProcess(data_path, prefix=two_hosts.prefill_prefix(),
                          env={"KVX_AUTH_TOKEN": token})


class SglangTwoHosts(SglangRequests, unittest.TestCase):
    def setUp(self):
        patch = mock.patch.dict(os.environ, {"KVX_AUTH_TOKEN": TOKEN})
        patch.start()
        self.addCleanup(patch.stop)

    def exchange(self, data_path):
        prefill = prefill_on_its_host(data_path)
        buffers, mgr = manager("decode", DECODE_PAGES, data_path)
        try:
            self.assertTrue(prefill.address.startswith(two_hosts.PREFILL_ADDRESS + ":"))
            self.assertTrue(mgr.agent.listen_address.startswith(two_hosts.DECODE_ADDRESS + ":"))
            for room, (pages, chunk) in enumerate([(40, 8), (130, 32)]):
                self.command_and_check(prefill, buffers, mgr, room, pages, chunk, seed=room + 3)
        finally:
            mgr.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_tcp(self):
        self.exchange("tcp")

    def test_socket(self):
        self.exchange("socket")

    def test_another_token_fails_the_receiver(self):
        prefill = prefill_on_its_host("socket", token="the-prefill-fleet-token")
        buffers, mgr = manager("decode", DECODE_PAGES, "socket")
        try:
            receiver = KvxKVReceiver(mgr, prefill.address, 4)
            receiver.init(0)  # the bootstrap server answers; the prefill rank refuses
            self.assertEqual(poll_until(receiver, (KVPoll.Success, KVPoll.Failed)),
                             KVPoll.Failed)
            with self.assertRaisesRegex(kvx.Unauthenticated, "tokens differ"):
                receiver.failure_exception()
        finally:
            mgr.close()
            prefill.stop()


if __name__ == "__main__":
    if not two_hosts.inside():
        two_hosts.run_inside_decode(os.path.abspath(__file__))
    unittest.main()
