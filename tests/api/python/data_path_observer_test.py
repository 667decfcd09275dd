# kvx-test-labels: python multiprocess netns
"""What an observer on the path between two hosts (two_hosts.py: network namespaces joined by
a veth pair) sees of kvx's socket transport, with the token fleets use: it captures every
frame on the veth (AF_PACKET) while a prefill agent on the other host reads the decode's
region "pool" and writes its region "inbox" (observed_prefill.py), then, knowing the region's
id, secret and address and the data port (what the old hello's answer gave away), it talks
to the data port itself (data_port_forger.py). Encrypted (the default with a token): neither
pattern, no region secret and no data key crosses in clear, and the forged get and put are
closed unanswered; with `data_protection="authenticated"` or `"headers"` the KV bytes cross
in clear (which shows the capture sees the data path), the keys still do not, and forging
still fails. Prints kvx-test-skipped without root or iproute2."""
import json
import os
import socket
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import two_hosts  # noqa: E402

TOKEN = "observer-test-shared-secret"
ETH_P_ALL = 0x0003


class Capture:
    """Every frame on `interface`, both ways, until stop()."""

    def __init__(self, interface):
        self._socket = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        # Room for everything the transfers send while the thread is not scheduled.
        self._socket.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE (root)
        self._socket.bind((interface, 0))
        self._socket.settimeout(0.1)
        self._bytes = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self._bytes += self._socket.recv(1 << 17)
            except socket.timeout:
                pass

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()
        return bytes(self._bytes)


def region_keys(blob):
    """(data port, instance, data key, {region: (id, secret, address)}) from an exported
    metadata blob: a 12-byte control frame header, then the JSON of
    agent/metadata/metadata_codec.h; the socket transport's address and keys as
    engine/transport/socket/socket_address.h and socket_memory.h pack them."""
    metadata = json.loads(bytes(blob)[12:])
    address = bytes.fromhex(metadata["dataAddress"])
    port = int.from_bytes(address[6:8], "little")
    instance = int.from_bytes(address[8:16], "little")
    data_key = address[17:49]
    regions = {}
    for region in metadata["regions"]:
        key = bytes.fromhex(region["packedKey"])
        regions[region["name"]] = tuple(int.from_bytes(key[i:i + 8], "little")
                                        for i in (8, 16, 24))
    return port, instance, data_key, regions


def run_prefill(script, *args):
    result = subprocess.run(two_hosts.prefill_prefix() + [sys.executable,
                                                          os.path.join(HERE, script), *args],
                            capture_output=True, text=True, timeout=90,
                            env=dict(os.environ, KVX_AUTH_TOKEN=TOKEN))
    return result.stdout + result.stderr


class DataPathObserver(unittest.TestCase):
    def observe(self, protection):
        import kvx
        from observed_prefill import INBOX_PATTERN, POOL_PATTERN, REGION_BYTES, filled, veth
        capture = Capture(veth())
        with kvx.Agent("observed-decode", data_path="socket", data_protection=protection,
                       listen_address=f"{two_hosts.DECODE_ADDRESS}:0", net_devices=veth(),
                       auth_token=TOKEN) as decode:
            pool = bytearray(filled(POOL_PATTERN, REGION_BYTES))
            inbox = bytearray(REGION_BYTES)
            decode.register_memory(pool, name="pool")
            decode.register_memory(inbox, name="inbox")
            moved = run_prefill("observed_prefill.py", decode.listen_address, protection)
            self.assertIn("MOVED ok", moved)
            self.assertEqual(bytes(inbox), filled(INBOX_PATTERN, REGION_BYTES))
            port, instance, data_key, regions = region_keys(decode.export_metadata())
            seen = capture.stop()
            forged = {}
            for op in ("get", "put"):
                region, secret, address = regions["pool"]
                forged[op] = run_prefill("data_port_forger.py", two_hosts.DECODE_ADDRESS,
                                         str(port), str(instance), str(region), str(secret),
                                         str(address), op)
            self.assertEqual(bytes(pool), filled(POOL_PATTERN, REGION_BYTES))
        secrets = [secret.to_bytes(8, "little") for _, secret, _ in regions.values()]
        # The capture saw both transfers (8 MiB) and the handshakes.
        self.assertGreater(len(seen), 2 * REGION_BYTES)
        return seen, secrets, data_key, forged

    def check_keys_and_forgeries(self, seen, secrets, data_key, forged):
        # (assertFalse, not assertNotIn: a failure must not print megabytes of capture)
        for secret in secrets:
            self.assertFalse(secret in seen, "a region secret crossed in clear")
        self.assertFalse(data_key in seen, "the data key crossed in clear")
        for op, answer in forged.items():
            self.assertIn("ANSWER 0 closed", answer, f"the forged {op}")

    def test_encrypted_by_default_with_a_token(self):
        from observed_prefill import INBOX_PATTERN, POOL_PATTERN
        seen, secrets, data_key, forged = self.observe("auto")
        self.assertFalse(POOL_PATTERN[:48] in seen, "the pool's bytes crossed in clear")
        self.assertFalse(INBOX_PATTERN[:48] in seen, "the inbox's bytes crossed in clear")
        self.check_keys_and_forgeries(seen, secrets, data_key, forged)

    def test_authenticated_or_headers_only_the_blocks_cross_in_clear(self):
        from observed_prefill import INBOX_PATTERN, POOL_PATTERN
        for protection in ("authenticated", "headers"):
            with self.subTest(protection=protection):
                seen, secrets, data_key, forged = self.observe(protection)
                self.assertTrue(POOL_PATTERN[:48] in seen, "the capture missed the pool's bytes")
                self.assertTrue(INBOX_PATTERN[:48] in seen,
                                "the capture missed the inbox's bytes")
                self.check_keys_and_forgeries(seen, secrets, data_key, forged)


if __name__ == "__main__":
    if not two_hosts.inside():
        two_hosts.run_inside_decode(os.path.abspath(__file__), timeout=200)
    unittest.main()
