"""A prefill SGLang instance for the SGLang connector tests, in a process of its own: its
node's bootstrap server (as SGLang starts one per prefill node) and TP ranks' managers
registered with it. Prints "BOOTSTRAP <the bootstrap server's address>", then per command on
stdin:
    send ROOM PAGES SEED CHUNK   a sender for ROOM on every rank: waits for the decode's
                                 metadata, fills PAGES pages of its own, its aux slot
                                 ROOM % AUX_SLOTS and (with state) its state items
                                 (Buffers.state_indices) with the pattern of SEED, sends
                                 them in chunks of CHUNK pages (the state with the last),
                                 and prints
                                 "SENT ROOM <final poll of each rank>"
    hold ROOM                    a sender on every rank that prints "WAITING ROOM" once the
                                 decode's metadata came, then waits for its end (20 s at most)
                                 and prints "SENT ROOM <final poll>"
    quit                         exits 0
Usage: sglang_prefill_engine.py DATA_PATH [TP [PAGE_SIZE [state|gdn]]]. With KVX_TEST_ROUTABLE=1
the bootstrap server listens on every interface and is named by the node's routable address,
and the managers listen where the connector chooses by default."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_sglang import AUX_SLOTS, manager  # noqa: E402
from kvx.integrations import node_address  # noqa: E402
from sglang_harness import poll_until  # noqa: E402
from kvx.integrations.sglang import KVPoll, KvxKVBootstrapServer, KvxKVSender  # noqa: E402

OWN_PAGES = 256


def main():
    data_path = sys.argv[1]
    tp_size = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    page_size = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    state = {"state": True, "gdn": "gdn"}.get(sys.argv[4] if len(sys.argv) > 4 else None, False)
    routable = os.environ.get("KVX_TEST_ROUTABLE") == "1"
    host = node_address.routable_host() if routable else "127.0.0.1"
    server = KvxKVBootstrapServer("0.0.0.0" if routable else host, 0)
    address = f"{host}:{server.port}"
    ranks = [manager("prefill", OWN_PAGES, data_path, tp_size=tp_size, rank=rank,
                     page_size=page_size, state=state, bootstrap_address=address)
             for rank in range(tp_size)]
    print("BOOTSTRAP", address, flush=True)
    next_page = 0
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        room = int(words[1])
        senders = [KvxKVSender(mgr=mgr, bootstrap_addr=address, bootstrap_room=room,
                               dest_tp_ranks=[0], pp_rank=0) for _, mgr in ranks]
        if words[0] == "hold":
            states = [poll_until(s, (KVPoll.WaitingForInput, KVPoll.Failed)) for s in senders]
            if all(state == KVPoll.WaitingForInput for state in states):
                print("WAITING", room, flush=True)
                states = [poll_until(s, (KVPoll.Failed,)) for s in senders]
            print("SENT", room, " ".join(map(str, states)), flush=True)
            continue
        pages, seed, chunk = int(words[2]), int(words[3]), int(words[4])
        own = list(range(next_page, next_page + pages))[::-1]  # not in order on purpose
        next_page = (next_page + pages) % (OWN_PAGES - 64)
        states = []
        for (buffers, _), sender in zip(ranks, senders):
            state = poll_until(sender, (KVPoll.WaitingForInput, KVPoll.Failed))
            if state == KVPoll.WaitingForInput:
                buffers.fill(own, seed)
                buffers.fill_aux(room % AUX_SLOTS, seed)
                if state_used(buffers):
                    buffers.fill_state(buffers.state_indices(room), seed)
                sender.init(pages, aux_index=room % AUX_SLOTS)
                for start in range(0, pages, chunk):
                    last = start + chunk >= pages
                    sender.send(own[start:start + chunk],
                                state_indices=buffers.state_indices(room)
                                if last and state_used(buffers) else None)
            states.append(state)
        states = [poll_until(s, (KVPoll.Success, KVPoll.Failed)) if state != KVPoll.Failed
                  else state for s, state in zip(senders, states)]
        for sender in senders:
            sender.clear()
        print("SENT", room, " ".join(map(str, states)), flush=True)
    for _, mgr in ranks:
        mgr.close()
    server.close()
    return 0


def state_used(buffers):
    return bool(buffers.state)


if __name__ == "__main__":
    sys.exit(main())
