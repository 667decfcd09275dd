"""A prefill vLLM instance for vllm_connector_test.py, in a process of its own: kvx's
connector as kv_producer. Commands on stdin, one per line:
    prefill REQ TOKENS SEED   computes a prompt (fills its blocks), finishes the request and
                              prints "PARAMS <kv_transfer_params as JSON>"
    push REQ TOKENS SEED      (mode push) schedules a prompt, computes it layer by layer in one
                              engine step (each layer filled just before save_kv_layer),
                              finishes the request and prints "COMPUTED REQ"
    quit                      exits 0
It starts by printing "READY <its workers' kvx addresses as JSON>".
Between commands it runs engine steps every 2 ms and prints "FREED REQ" when the connector
says a request's blocks may go (read by the decode, or its lease ended).
Usage: vllm_prefill_engine.py DATA_PATH NUM_BLOCKS LEASE_SECONDS [TP_SIZE [MODE [LAYOUT
[TOTAL_HEADS]]]] (LAYOUT: one of vllm_caches.LAYOUTS; TOTAL_HEADS: the model's KV heads)"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_vllm import DEFAULT_LAYOUT, HEADS, Blocks, Engine, Request, blocks_for  # noqa: E402
from line_reader import LineReader  # noqa: E402


def main():
    data_path, num_blocks, lease = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    tp_size = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    mode = sys.argv[5] if len(sys.argv) > 5 else "pull"
    layout = sys.argv[6] if len(sys.argv) > 6 else DEFAULT_LAYOUT
    total_heads = int(sys.argv[7]) if len(sys.argv) > 7 else HEADS
    engine = Engine("kv_producer", "prefill-0", num_blocks, tp_size=tp_size,
                    data_path=data_path, lease_seconds=lease, mode=mode, layout=layout,
                    total_heads=total_heads)
    held = {}
    commands = LineReader(sys.stdin.fileno())
    print("READY", json.dumps(engine.addresses()), flush=True)
    while True:
        line = commands.line(0.002)
        if line is not None or commands.ended:
            words = (line or "").split()
            if commands.ended or words[:1] == ["quit"]:
                engine.close()
                return 0
            if words[:1] == ["prefill"]:
                request_id, tokens, seed = words[1], int(words[2]), int(words[3])
                blocks = engine.allocate(blocks_for(tokens))
                engine.fill(blocks, seed)
                request = Request(request_id, tokens, {"do_remote_decode": True})
                delay, params = engine.scheduler.request_finished(request, blocks)
                assert delay, "the connector should keep the blocks for the decode"
                held[request_id] = blocks
                print("PARAMS", json.dumps(params), flush=True)
            if words[:1] == ["push"]:
                request_id, tokens, seed = words[1], int(words[2]), int(words[3])
                blocks = engine.allocate(blocks_for(tokens))
                request = Request(request_id, tokens, {"do_remote_decode": True})
                engine.scheduler.update_state_after_alloc(request, Blocks(blocks), 0)
                sending, _, _ = engine.step(
                    compute=lambda rank, layer: engine.fill_layer(rank, layer, blocks, seed))
                delay, _ = engine.scheduler.request_finished(request, blocks)
                assert delay, "the connector should keep the blocks for the decode"
                held[request_id] = blocks
                print("COMPUTED", request_id, flush=True)
                report_freed(engine, sending, held)
        sending, _, _ = engine.step()
        report_freed(engine, sending, held)


def report_freed(engine, sending, held):
    for request_id in sorted(sending):
        engine.free.extend(held.pop(request_id))
        print("FREED", request_id, flush=True)


if __name__ == "__main__":
    sys.exit(main())
