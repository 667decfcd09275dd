# kvx-test-labels: python unit
"""kvx.integrations.node_address (the address a node's agents tell their peers) and
kvx.integrations.vllm_node (where each vLLM worker listens), on this machine's interfaces."""
import os
import socket
import unittest
from unittest import mock

from kvx.integrations import node_address, vllm_node


class NodeAddress(unittest.TestCase):
    def test_routable_host_is_an_address_of_this_node(self):
        host = node_address.routable_host()
        self.assertIsNotNone(node_address.interface_of(host), host)
        if any(node_address.interface_address(name) not in (None, "127.0.0.1")
               for _, name in socket.if_nameindex()):
            self.assertNotEqual(host, "127.0.0.1", "an interface off this node was skipped")

    def test_default_host_needs_a_token_to_leave_the_node(self):
        with mock.patch.dict(os.environ, {node_address.TOKEN_VARIABLE: ""}):
            self.assertEqual(node_address.default_host(), "127.0.0.1")
        with mock.patch.dict(os.environ, {node_address.TOKEN_VARIABLE: "secret"}):
            self.assertEqual(node_address.default_host(), node_address.routable_host())

    def test_interface_of(self):
        self.assertEqual(node_address.interface_of("127.0.0.1"), "lo")
        self.assertEqual(node_address.interface_of("127.0.0.9"), "lo")
        self.assertIsNone(node_address.interface_of("198.51.100.77"))  # TEST-NET-2: no one's
        self.assertIsNone(node_address.interface_of("decode.example"))

    def test_advertised(self):
        routable = node_address.routable_host()
        self.assertEqual(node_address.advertised("0.0.0.0:5600"), f"{routable}:5600")
        self.assertEqual(node_address.advertised("127.0.0.1:41"), "127.0.0.1:41")
        self.assertEqual(node_address.advertised("0.0.0.0:41", "10.1.2.3"), "10.1.2.3:41")
        with self.assertRaisesRegex(ValueError, "not host:port"):
            node_address.advertised("0.0.0.0")


@mock.patch.dict(os.environ, {})
class VllmWorkerAddress(unittest.TestCase):
    def setUp(self):
        for name in (vllm_node.HOST_VARIABLE, vllm_node.PORT_VARIABLE):
            os.environ.pop(name, None)
        os.environ[node_address.TOKEN_VARIABLE] = "a shared secret"

    def test_without_a_token_the_default_is_loopback(self):
        del os.environ[node_address.TOKEN_VARIABLE]
        address = vllm_node.worker_address({}, 0)
        self.assertEqual((address.bind, address.host, address.net_devices),
                         ("127.0.0.1:0", "127.0.0.1", None))

    def test_default_is_the_routable_address_on_a_free_port(self):
        address = vllm_node.worker_address({}, 3)
        routable = node_address.routable_host()
        self.assertEqual((address.bind, address.host), (f"{routable}:0", routable))
        interface = node_address.interface_of(routable)
        self.assertEqual(address.net_devices, None if interface == "lo" else interface)

    def test_node_variable_wins_over_the_shared_config(self):
        os.environ[vllm_node.HOST_VARIABLE] = "127.0.0.1"
        os.environ[vllm_node.PORT_VARIABLE] = "7000"
        address = vllm_node.worker_address({"host": "10.9.9.9", "port": 5000}, 5)
        self.assertEqual((address.bind, address.host, address.net_devices),
                         ("127.0.0.1:7005", "127.0.0.1", None))
        self.assertEqual(address.advertised("127.0.0.1:7005"), "127.0.0.1:7005")

    def test_a_host_not_on_this_node_binds_everywhere_and_is_told_as_given(self):
        address = vllm_node.worker_address({"host": "203.0.113.8", "port": 5600}, 1)
        self.assertEqual((address.bind, address.host), ("0.0.0.0:5601", "203.0.113.8"))
        self.assertEqual(address.advertised("0.0.0.0:5601"), "203.0.113.8:5601")

    def test_explicit_listen_address_and_devices(self):
        address = vllm_node.worker_address({"listen_address": "0.0.0.0:0",
                                            "net_devices": "eth7"}, 0)
        self.assertEqual((address.bind, address.net_devices), ("0.0.0.0:0", "eth7"))
        self.assertEqual(address.advertised("0.0.0.0:4242"),
                         f"{node_address.routable_host()}:4242")
        self.assertEqual(vllm_node.worker_address({"listen_address": "127.0.0.1:0"}, 0)
                         .advertised("127.0.0.1:99"), "127.0.0.1:99")

    def test_bad_ports_are_refused_with_the_value(self):
        with self.assertRaisesRegex(ValueError, "'fifty'"):
            vllm_node.worker_address({"port": "fifty"}, 0)
        with self.assertRaisesRegex(ValueError, "70000 is not a TCP port"):
            vllm_node.worker_address({"port": 70000}, 0)
        with self.assertRaisesRegex(ValueError, "65530 \\+ worker 9 is past 65535"):
            vllm_node.worker_address({"port": 65530}, 9)


if __name__ == "__main__":
    unittest.main()
