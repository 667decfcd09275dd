"""A prefill SGLang instance for sglang_connector_test.py, in a process of its own: its node's
bootstrap server (as SGLang starts one per prefill node) and one rank's manager registered
with it. Prints "BOOTSTRAP <the bootstrap server's address>", then per command on stdin:
    send ROOM PAGES SEED CHUNK   a sender for ROOM: waits for the decode's metadata, fills
                                 PAGES pages of its own and its aux slot ROOM % AUX_SLOTS with
                                 the pattern of SEED, sends them in chunks of CHUNK pages, and
                                 prints "SENT ROOM <final poll>"
    hold ROOM                    a sender that prints "WAITING ROOM" once the decode's
                                 metadata came, then waits for its end (20 s at most) and
                                 prints "SENT ROOM <final poll>"
    quit                         exits 0
Usage: sglang_prefill_engine.py DATA_PATH"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_sglang import AUX_SLOTS, manager  # noqa: E402
from kvx.integrations.sglang import KVPoll, KvxKVBootstrapServer, KvxKVSender  # noqa: E402

OWN_PAGES = 256


def wait_for(sender, states, timeout=20):
    deadline = time.monotonic() + timeout
    state = sender.poll()
    while state not in states and time.monotonic() < deadline:
        time.sleep(0.002)
        state = sender.poll()
    return state


def main():
    server = KvxKVBootstrapServer("127.0.0.1", 0)
    address = f"127.0.0.1:{server.port}"
    buffers, mgr = manager("prefill", OWN_PAGES, sys.argv[1], bootstrap_address=address)
    print("BOOTSTRAP", address, flush=True)
    next_page = 0
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        room = int(words[1])
        sender = KvxKVSender(mgr=mgr, bootstrap_addr=address, bootstrap_room=room,
                             dest_tp_ranks=[0], pp_rank=0)
        if words[0] == "hold":
            state = wait_for(sender, (KVPoll.WaitingForInput, KVPoll.Failed))
            if state == KVPoll.WaitingForInput:
                print("WAITING", room, flush=True)
                state = wait_for(sender, (KVPoll.Failed,))
            print("SENT", room, state, flush=True)
            continue
        pages, seed, chunk = int(words[2]), int(words[3]), int(words[4])
        state = wait_for(sender, (KVPoll.WaitingForInput, KVPoll.Failed))
        if state == KVPoll.WaitingForInput:
            own = list(range(next_page, next_page + pages))[::-1]  # not in order on purpose
            next_page = (next_page + pages) % (OWN_PAGES - 64)
            buffers.fill(own, seed)
            buffers.fill_aux(room % AUX_SLOTS, seed)
            sender.init(pages, aux_index=room % AUX_SLOTS)
            for start in range(0, pages, chunk):
                sender.send(own[start:start + chunk])
            state = wait_for(sender, (KVPoll.Success, KVPoll.Failed))
            sender.clear()
        print("SENT", room, state, flush=True)
    mgr.close()
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
