"""A decode side for the Python tests, in a process of its own: registers a zeroed uint8
array of NBYTES (exposed as "kv"), prints "LISTENING <address>", then answers notifications:
"check SEED" -> prints "VERIFIED SEED ok" or "... bad" (the array against pattern(SEED)),
"fill SEED" -> fills the array with pattern(SEED) and prints "FILLED SEED", "quit" -> exits 0.
Usage: decode_child.py DATA_PATH NBYTES"""
import sys

import numpy as np

import kvx


def pattern(seed, nbytes):
    return ((np.arange(nbytes, dtype=np.uint64) * 2654435761 + seed * 97) >> 7).astype(np.uint8)


def main():
    data_path, nbytes = sys.argv[1], int(sys.argv[2])
    kv = np.zeros(nbytes, dtype=np.uint8)
    with kvx.Agent("py-decode", data_path=data_path, peer_timeout=1.0,
                   heartbeat_interval=0.2) as agent:
        agent.register_memory(kv, name="kv")
        print("LISTENING", agent.listen_address, flush=True)
        while True:
            _, payload = agent.wait_notification(timeout=60)
            word, _, seed = payload.decode().partition(" ")
            if word == "quit":
                return 0
            if word == "check":
                ok = np.array_equal(kv, pattern(int(seed), nbytes))
                print("VERIFIED", seed, "ok" if ok else "bad", flush=True)
            elif word == "fill":
                kv[:] = pattern(int(seed), nbytes)
                print("FILLED", seed, flush=True)


if __name__ == "__main__":
    sys.exit(main())
