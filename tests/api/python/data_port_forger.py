"""A party on the path of data_path_observer_test.py, run inside the prefill host: it knows
what an observer of an unprotected control channel would have learnt (the decode's data
port, its instance, a region's id, 64-bit secret and address; argv in that order, then "get"
or "put") and talks to the data port as the socket transport's wire format says
(engine/transport/socket/socket_wire.h): a hello, then one request whose tag it cannot make.
Prints "ANSWER <bytes the target sent back after its welcome> <closed|open>"."""
import socket
import struct
import sys
import time

HEADER = struct.Struct("<IBBHIIQQQQQ")  # magic, version, type, 0, aux, 0, seq, region, key, address, length
MAGIC, VERSION = 0x5358564B, 2
HELLO, PUT, GET, WELCOME = 1, 2, 3, 8
PROTECT_ENCRYPTED = 3  # what every target accepts
NONCE, TAG = 32, 16


def frame(kind, aux=0, sequence=0, region=0, key=0, address=0, length=0):
    return HEADER.pack(MAGIC, VERSION, kind, 0, aux, 0, sequence, region, key, address, length)


def main():
    host, port, instance, region, secret, address, op = sys.argv[1:8]
    port, instance, region, secret, address = (int(v, 0) for v in (port, instance, region,
                                                                     secret, address))
    length = 64
    request = frame(HELLO, PROTECT_ENCRYPTED, 0, instance, 77, 0, NONCE) + b"\x5a" * NONCE
    kind = GET if op == "get" else PUT
    request += frame(kind, 0, 1, region, secret, address, length) + b"\0" * TAG
    if kind == PUT:
        request += b"FORGED!!" * (length // 8) + b"\0" * TAG
    with socket.create_connection((host, port), timeout=5) as connection:
        connection.sendall(request)
        received = b""
        closed = False
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                chunk = connection.recv(65536)
            except (ConnectionResetError, socket.timeout):
                closed = True
                break
            if not chunk:
                closed = True
                break
            received += chunk
    welcome = HEADER.size + NONCE
    print(f"ANSWER {max(len(received) - welcome, 0)} {'closed' if closed else 'open'}",
          flush=True)


if __name__ == "__main__":
    main()
