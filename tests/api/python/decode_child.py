"""A decode side for the Python tests, in a process of its own: registers a zeroed uint8
array of NBYTES (exposed as "kv"), prints "LISTENING <address>", then answers notifications:
"check SEED" -> prints "VERIFIED SEED ok" or "... bad" (the array against pattern(SEED)),
"fill SEED" -> fills the array with pattern(SEED) and prints "FILLED SEED", "quit" -> exits 0.
With MEMORY "cuda" the array is a torch tensor on the first CUDA device instead (a real GPU).
Usage: decode_child.py DATA_PATH NBYTES [MEMORY]"""
import sys

import numpy as np

import kvx


def pattern(seed, nbytes):
    return ((np.arange(nbytes, dtype=np.uint64) * 2654435761 + seed * 97) >> 7).astype(np.uint8)


class HostArray:
    def __init__(self, nbytes):
        self.memory = np.zeros(nbytes, dtype=np.uint8)

    def equals(self, expected):
        return np.array_equal(self.memory, expected)

    def fill(self, values):
        self.memory[:] = values


class CudaTensor:
    def __init__(self, nbytes):
        import torch
        self.torch = torch
        self.memory = torch.zeros(nbytes, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()

    def equals(self, expected):
        return np.array_equal(self.memory.cpu().numpy(), expected)

    def fill(self, values):
        self.memory.copy_(self.torch.from_numpy(values))
        self.torch.cuda.synchronize()  # kvx's copies do not run on torch's stream


def main():
    data_path, nbytes = sys.argv[1], int(sys.argv[2])
    kv = CudaTensor(nbytes) if sys.argv[3:] == ["cuda"] else HostArray(nbytes)
    with kvx.Agent("py-decode", data_path=data_path, peer_timeout=1.0,
                   heartbeat_interval=0.2) as agent:
        agent.register_memory(kv.memory, name="kv")
        print("LISTENING", agent.listen_address, flush=True)
        while True:
            _, payload = agent.wait_notification(timeout=60)
            word, _, seed = payload.decode().partition(" ")
            if word == "quit":
                return 0
            if word == "check":
                ok = kv.equals(pattern(int(seed), nbytes))
                print("VERIFIED", seed, "ok" if ok else "bad", flush=True)
            elif word == "fill":
                kv.fill(pattern(int(seed), nbytes))
                print("FILLED", seed, flush=True)


if __name__ == "__main__":
    sys.exit(main())
