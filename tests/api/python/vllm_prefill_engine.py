"""A prefill vLLM instance for the vLLM connector tests, in a process of its own: kvx's
connector as kv_producer. Commands on stdin, one per line (REQ: the request's external id; vLLM
gives it an internal one with a random suffix, fake_vllm.assign_request_id):
    prefill REQ TOKENS SEED   computes a prompt (fills its blocks), finishes the request and
                              prints "PARAMS <kv_transfer_params as JSON>"
    push REQ TOKENS SEED [async]
                              (mode push) schedules a prompt, computes it layer by layer in one
                              engine step (each layer filled just before save_kv_layer, or
                              with async on a FakeStream: filled later, its CUDA event saying
                              when), finishes the request and prints "COMPUTED REQ
                              <kv_transfer_params as JSON>"
    chunked REQ TOKENS SEED CHUNK
                              (mode push) as push, the prompt computed CHUNK tokens a step
                              (vLLM's chunked prefill: blocks allocated as the chunks need
                              them, each step's SchedulerOutput saying what it schedules, each
                              layer of a step filling the blocks its chunk touches)
    abort REQ TOKENS SEED     as push (or prefill in mode pull), but the request is aborted:
                              prints "ABORTED REQ <whether the connector kept its blocks>"
    quit                      exits 0
It starts by printing "READY <its workers' kvx addresses as JSON>".
Between commands it runs engine steps every 2 ms while vLLM would (Engine.has_requests) and
prints "FREED REQ" when the connector says a request's blocks may go (read by the decode, or
its lease ended).
Usage: vllm_prefill_engine.py DATA_PATH NUM_BLOCKS LEASE_SECONDS [TP_SIZE [MODE [LAYOUT
[TOTAL_HEADS [HYBRID]]]]] (LAYOUT: one of vllm_caches.LAYOUTS; TOTAL_HEADS: the model's KV
heads; HYBRID: two KV cache groups, fake_vllm_groups.py, the connector called as vLLM calls
a SupportsHMA one: "hybrid" with a sliding window group, "mamba" or "mamba-align" with a
Mamba group).
Each new request goes through get_num_new_matched_tokens first, as vLLM's scheduler sends
every waiting request (vllm/v1/core/sched/scheduler.py @00024d3); with a Mamba group the
connector shortens the prompt there (vllm_state_tokens.py), and the engine computes what is
left of it. KVX_TEST_PP_SIZE: pipeline stages (a worker per stage and TP rank); KVX_TEST_DEVICE: where the
caches are ("cuda" on a GPU).
Its workers listen on 127.0.0.1, or with KVX_TEST_ROUTABLE=1 where the connector chooses by
default (KVX_VLLM_HOST, else the node's routable address)."""
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_vllm import (BLOCK_SIZE, DEFAULT_LAYOUT, HEADS, Blocks, Engine,  # noqa: E402
                       FakeStream, Request, RequestStatus, assign_request_id, blocks_for)
from fake_vllm_groups import GroupBlocks  # noqa: E402
from line_reader import LineReader  # noqa: E402


def main():
    data_path, num_blocks, lease = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    tp_size = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    mode = sys.argv[5] if len(sys.argv) > 5 else "pull"
    layout = sys.argv[6] if len(sys.argv) > 6 else DEFAULT_LAYOUT
    total_heads = int(sys.argv[7]) if len(sys.argv) > 7 else HEADS
    hybrid = {"hybrid": True, "mamba": "mamba", "mamba-align": "mamba-align"}.get(
        (sys.argv[8:9] or [""])[0], False)
    engine = Engine("kv_producer", "prefill-0", num_blocks, tp_size=tp_size,
                    data_path=data_path, lease_seconds=lease, mode=mode, layout=layout,
                    total_heads=total_heads, hybrid=hybrid,
                    pp_size=int(os.environ.get("KVX_TEST_PP_SIZE", "1")),
                    device=os.environ.get("KVX_TEST_DEVICE", "cpu"),
                    host=None if os.environ.get("KVX_TEST_ROUTABLE") == "1" else "127.0.0.1")
    held = {}  # internal request id -> (external id, blocks)
    commands = LineReader(sys.stdin.fileno())
    print("READY", json.dumps(engine.addresses()), flush=True)
    while True:
        line = commands.line(0.002)
        if line is not None or commands.ended:
            words = (line or "").split()
            if commands.ended or words[:1] == ["quit"]:
                engine.close()
                return 0
            if words[:1] == ["chunked"]:
                external, tokens, seed, chunk = words[1], *map(int, words[2:5])
                request = Request(assign_request_id(external), tokens, {"do_remote_decode": True})
                blocks = compute_in_chunks(engine, request, tokens, seed, chunk, held)
                delay, params = engine.scheduler.request_finished(request, blocks)
                assert delay, "the connector should keep the blocks for the decode"
                held[request.request_id] = (external, blocks)
                print(f"COMPUTED {external}", json.dumps(params), flush=True)
                continue
            if words[:1] in (["prefill"], ["push"], ["abort"]):
                command, external = words[0], words[1]
                tokens, seed = int(words[2]), int(words[3])
                request = Request(assign_request_id(external), tokens, {"do_remote_decode": True})
                if command == "abort":
                    request.status = RequestStatus.FINISHED_ABORTED
                assert engine.scheduler.get_num_new_matched_tokens(request, 0) == (0, False)
                tokens = len(request.prompt_token_ids)  # what the connector left to compute
                blocks = engine.allocate_request(blocks_for(tokens))
                if command == "prefill" or command == "abort" and mode == "pull":
                    engine.fill(blocks, seed, tokens)
                else:
                    engine.scheduler.update_state_after_alloc(
                        request, GroupBlocks(blocks) if hybrid else Blocks(blocks), 0)
                    fill = engine.fill_layer
                    if words[4:5] == ["async"]:
                        stream = FakeStream()
                        for worker in engine.workers:
                            worker._layer_ready = lambda kv_layer: stream.event()

                        def fill(rank, layer, blocks, seed, tokens=None):
                            stream.launch(lambda: engine.fill_layer(rank, layer, blocks, seed,
                                                                    tokens=tokens))
                    sending, _, _ = engine.step(
                        compute=lambda rank, layer: fill(rank, layer, blocks, seed,
                                                         tokens=tokens))
                    report_freed(engine, sending, held)
                delay, params = (
                    engine.scheduler.request_finished_all_groups(request, tuple(blocks))
                    if hybrid else engine.scheduler.request_finished(request, blocks))
                if command == "abort":
                    assert params is None, "an aborted request hands no KV on"
                    if not delay:
                        engine.release(blocks)
                    print("ABORTED", external, delay, flush=True)
                    continue
                assert delay, "the connector should keep the blocks for the decode"
                held[request.request_id] = (external, blocks)
                print("PARAMS" if command == "prefill" else f"COMPUTED {external}",
                      json.dumps(params), flush=True)
        if engine.has_requests():
            sending, _, _ = engine.step()
            report_freed(engine, sending, held)


def compute_in_chunks(engine, request, tokens, seed, chunk, held):
    """A prompt computed `chunk` tokens a step, as vLLM's scheduler runs chunked prefill: its
    blocks, allocated as the chunks need them."""
    blocks, done = [], 0
    request.num_computed_tokens = 0
    while done < tokens:
        count = min(chunk, tokens - done)
        new = engine.allocate(blocks_for(done + count) - len(blocks))
        blocks += new
        if done == 0:
            engine.scheduler.update_state_after_alloc(request, Blocks(blocks), 0)
            cached = types.SimpleNamespace(req_ids=[], new_block_ids=[], resumed_req_ids=set())
        else:
            cached = types.SimpleNamespace(req_ids=[request.request_id], new_block_ids=[(new,)],
                                           resumed_req_ids=set())
        output = types.SimpleNamespace(num_scheduled_tokens={request.request_id: count},
                                       scheduled_cached_reqs=cached)
        touched = set(range(done // BLOCK_SIZE, blocks_for(done + count)))
        sending, _, _ = engine.step(
            compute=lambda rank, layer: engine.fill_layer(rank, layer, blocks, seed, touched),
            scheduler_output=output)
        report_freed(engine, sending, held)
        request.num_computed_tokens += count  # the scheduler's, after the connector's meta
        done += count
    return blocks


def report_freed(engine, sending, held):
    for request_id in sorted(sending):
        external, blocks = held.pop(request_id)
        engine.release(blocks)
        print("FREED", external, flush=True)


if __name__ == "__main__":
    sys.exit(main())
