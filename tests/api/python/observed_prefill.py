"""The prefill side of data_path_observer_test.py, run inside the prefill host: connects to
the decode agent (argv: decode address, protection), reads its region "pool" and checks the
bytes, writes INBOX_PATTERN into its region "inbox", prints "MOVED ok" (or what went wrong)
and exits. The token comes from KVX_AUTH_TOKEN."""
import os
import socket
import sys

import numpy as np

import kvx

POOL_PATTERN = b"KVX-OBSERVED-POOL-BYTES-" * 64          # 1536 bytes, repeated
INBOX_PATTERN = b"KVX-OBSERVED-INBOX-BYTES!" * 64
REGION_BYTES = 4 << 20


def veth():
    """This host's one interface off itself (two_hosts.py gives each host one veth)."""
    names = [name for _, name in socket.if_nameindex() if name != "lo"]
    assert len(names) == 1, names
    return names[0]


def filled(pattern, nbytes=REGION_BYTES):
    return (pattern * (nbytes // len(pattern) + 1))[:nbytes]


def main():
    address, protection = sys.argv[1], sys.argv[2]
    with kvx.Agent("observed-prefill", data_path="socket", data_protection=protection,
                   listen_address="0.0.0.0:0", net_devices=veth(),
                   auth_token=os.environ["KVX_AUTH_TOKEN"]) as agent:
        local = np.zeros(REGION_BYTES, dtype=np.uint8)
        region = agent.register_memory(local, name="local")
        peer = agent.connect(address, timeout=10)
        regions = agent.peer_regions(peer)
        table = np.array([[region, 0, REGION_BYTES]], dtype=np.uint64)
        local_list = agent.prepare_local_list(table)
        one = np.zeros(1, dtype=np.uint32)
        for name, op in (("pool", kvx.READ), ("inbox", kvx.WRITE)):
            remote = np.array([[regions[name]["id"], 0, REGION_BYTES]], dtype=np.uint64)
            remote_list = agent.prepare_remote_list(peer, remote)
            if op == kvx.WRITE:
                local[:] = np.frombuffer(filled(INBOX_PATTERN), dtype=np.uint8)
            agent.transfer(op, local_list, one, remote_list, one, timeout=30)
            if op == kvx.READ and local.tobytes() != filled(POOL_PATTERN):
                print("MOVED wrong pool bytes", flush=True)
                return 1
        print("MOVED ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
