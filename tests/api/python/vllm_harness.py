"""The prefill instance in another process, the request flows and the waits that the vLLM
connector tests share."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_process import EngineProcess  # noqa: E402
from fake_vllm import (BLOCK_SIZE, DEFAULT_LAYOUT, HEADS, LAYERS, Blocks, Engine,  # noqa: E402
                       Request, blocks_for)
from kvx.integrations import vllm_heads as heads  # noqa: E402

PREFILL_BLOCKS, DECODE_BLOCKS = 64, 48


class PrefillProcess(EngineProcess):
    """vllm_prefill_engine.py: `addresses` are its workers' kvx addresses by TP rank."""

    def __init__(self, data_path, lease=30.0, tp_size=1, mode="pull", layout=DEFAULT_LAYOUT,
                 total_heads=HEADS, prefix=(), env=None, hybrid=False, pp_size=1,
                 device="cpu"):
        super().__init__("vllm_prefill_engine.py", data_path, PREFILL_BLOCKS, lease, tp_size,
                         mode, layout, total_heads,
                         *([{True: "hybrid"}.get(hybrid, hybrid)] if hybrid else []),
                         prefix=prefix, env=dict(env or {}, KVX_TEST_PP_SIZE=str(pp_size),
                                                 KVX_TEST_DEVICE=device))
        self.addresses = json.loads(self.expect("READY").split(" ", 1)[1])

    def prefill(self, request_id, tokens, seed):
        self.command(f"prefill {request_id} {tokens} {seed}")
        return json.loads(self.expect("PARAMS ").split(" ", 1)[1])

    def push(self, request_id, tokens, seed, asynchronous=False):
        """Computes the request layer by layer (mode push; `asynchronous`: on a FakeStream),
        then finishes it: its kv_transfer_params (for a decode that comes after it)."""
        self.command(f"push {request_id} {tokens} {seed}" + (" async" if asynchronous else ""))
        return json.loads(self.expect(f"COMPUTED {request_id} ").split(" ", 2)[2])

    def chunked(self, request_id, tokens, seed, chunk):
        """push() with the prompt computed `chunk` tokens a step (chunked prefill)."""
        self.command(f"chunked {request_id} {tokens} {seed} {chunk}")
        return json.loads(self.expect(f"COMPUTED {request_id} ").split(" ", 2)[2])

    def abort(self, request_id, tokens, seed):
        """Computes the request (layer by layer in mode push), then aborts it: whether the
        connector kept its blocks."""
        self.command(f"abort {request_id} {tokens} {seed}")
        return self.expect(f"ABORTED {request_id} ").split()[2] == "True"


def run_until(engine, request_id, timeout=20):
    """Engine steps until `request_id` finished receiving: the failed blocks seen meanwhile."""
    failed = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, recving, errors = engine.step()
        failed |= errors
        if request_id in recving:
            return failed
        time.sleep(0.002)
    raise AssertionError(f"{request_id} did not finish receiving within {timeout} s")


def wait_for_room(engine, request, seconds):
    """A request the decode has no room for yet, for `seconds`: engine steps, vLLM asking
    the connector about it again on each (get_num_new_matched_tokens)."""
    engine.scheduler.get_num_new_matched_tokens(request, 0)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        engine.step()
        engine.scheduler.get_num_new_matched_tokens(request, 0)
        time.sleep(0.01)


def drop_before_allocation(engine, request, timeout=10):
    """vLLM finishing (aborting) a request whose blocks were never allocated, then stepping
    while the connector has work for it; returns when that began."""
    assert engine.scheduler.request_finished(request, []) == (False, None)
    started = time.monotonic()
    while time.monotonic() - started < timeout and engine.has_requests():
        engine.step()
        time.sleep(0.002)
    return started


class PullRequests:
    """A unittest.TestCase mixin: requests read from a PrefillProcess in vLLM's call order."""

    def decode_request(self, decode, prefill, request_id, tokens, seed, computed_blocks=0):
        """A decode request for the prefill's KV, vLLM's calls in order; returns the blocks
        allocated for the read and the failed blocks."""
        params = prefill.prefill("p-" + request_id, tokens, seed)
        request = Request(request_id, tokens, params)
        computed = computed_blocks * BLOCK_SIZE
        count, load_async = decode.scheduler.get_num_new_matched_tokens(request, computed)
        # vLLM asks again before allocating: no side effects.
        self.assertEqual(decode.scheduler.get_num_new_matched_tokens(request, computed),
                         (count, load_async))
        self.assertEqual((count, load_async), (tokens - computed, True) if tokens > computed
                         else (0, False))
        prefix = decode.allocate(computed_blocks)
        new = decode.allocate(blocks_for(tokens) - computed_blocks) if count else []
        decode.scheduler.update_state_after_alloc(request, Blocks(prefix + new, new), count)
        if count:
            failed = run_until(decode, request_id)
        else:
            failed = set()
            for _ in range(3):
                decode.step()
        return new, failed

    def short_pull(self, layout, prefill_tp=1, decode_tp=1, total_heads=HEADS, device="cpu",
                   data_path="shm"):
        """Two requests (whole, and a prefix hit) between caches of `layout` on `device`."""
        prefill = PrefillProcess(data_path, tp_size=prefill_tp, layout=layout,
                                 total_heads=total_heads, device=device)
        decode = Engine("kv_consumer", "decode-" + layout, DECODE_BLOCKS, tp_size=decode_tp,
                        data_path=data_path, layout=layout, total_heads=total_heads,
                        device=device)
        try:
            blocks, failed = self.decode_request(decode, prefill, "whole", 5 * BLOCK_SIZE - 3,
                                                 seed=3)
            self.assertEqual((failed, len(blocks)), (set(), 5))
            self.assertTrue(decode.matches(blocks, seed=3), layout)
            prefill.expect("FREED p-whole")
            blocks, failed = self.decode_request(decode, prefill, "hit", 4 * BLOCK_SIZE, seed=5,
                                                 computed_blocks=1)
            self.assertEqual((failed, len(blocks)), (set(), 3))
            self.assertTrue(decode.matches(blocks, seed=5, first_position=1), layout)
            prefill.expect("FREED p-hit")
            # get_kv_connector_stats, aggregated over the decode workers: 8 blocks read, every
            # layer, each decode worker its heads.
            data = decode.stats.data
            heads_read = decode_tp * max(1, decode.total_heads // decode_tp)
            self.assertEqual(data["bytes"], 8 * LAYERS * BLOCK_SIZE * heads_read *
                             decode.bytes_per_head(0))
            self.assertEqual(data["failures"], 0)
            readers = sum(len(heads.sources(r, decode_tp, prefill_tp, decode.total_heads))
                          for r in range(decode_tp))
            self.assertEqual(data["transfers"], 2 * readers)
            self.assertEqual(sorted(data["ranks"]), [str(r) for r in range(decode_tp)])
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)


def push_params(prefill, request_id):
    """What a push proxy hands the decode with the request."""
    return {"do_remote_prefill": True, "remote_addresses": prefill.addresses,
            "remote_request_id": request_id}


def decode_engine(name, data_path, tp_size=1, **extra):
    return Engine("kv_consumer", name, DECODE_BLOCKS, tp_size=tp_size, data_path=data_path,
                  mode="push", **extra)


class PushRequests:
    """A unittest.TestCase mixin: requests pushed by a PrefillProcess in vLLM's call order."""

    def allocate(self, decode, request, tokens, computed_blocks=0):
        """vLLM's decode scheduler calls for a new request: its new blocks."""
        computed = computed_blocks * BLOCK_SIZE
        count, load_async = decode.scheduler.get_num_new_matched_tokens(request, computed)
        self.assertEqual((count, load_async), (tokens - computed, True) if tokens > computed
                         else (0, False))
        prefix = decode.allocate(computed_blocks)
        new = decode.allocate(blocks_for(tokens) - computed_blocks) if count else []
        decode.scheduler.update_state_after_alloc(request, Blocks(prefix + new, new), count)
        return new

    def push_request(self, decode, prefill, request_id, tokens, seed, computed_blocks=0,
                     decode_first=True):
        """One request pushed: the decode's new blocks and its failed blocks."""
        request = Request(request_id, tokens, push_params(prefill, "p-" + request_id))
        if not decode_first:
            prefill.push("p-" + request_id, tokens, seed)  # computed before any dest came
        blocks = self.allocate(decode, request, tokens, computed_blocks)
        if decode_first:
            for _ in range(5):
                decode.step()  # the dest goes out (the connect ran earlier)
            prefill.push("p-" + request_id, tokens, seed)
        failed = run_until(decode, request_id) if blocks else set()
        for _ in range(3 if not blocks else 0):
            decode.step()
        return blocks, failed

    def short_push(self, layout, prefill_tp=1, decode_tp=1, total_heads=HEADS, device="cpu",
                   data_path="shm"):
        """Two requests pushed between caches of `layout` on `device`: the decode's blocks
        known before the prefill computes, and after."""
        prefill = PrefillProcess(data_path, tp_size=prefill_tp, mode="push", layout=layout,
                                 total_heads=total_heads, device=device)
        decode = decode_engine("push-" + layout, data_path, tp_size=decode_tp, layout=layout,
                               total_heads=total_heads, device=device)
        try:
            for i, decode_first in enumerate((True, False)):
                blocks, failed = self.push_request(decode, prefill, f"r{i}", 3 * BLOCK_SIZE + i,
                                                   i + 1, decode_first=decode_first)
                self.assertEqual(failed, set())
                self.assertTrue(decode.matches(blocks, seed=i + 1), f"{layout} r{i}")
                prefill.expect(f"FREED p-r{i}")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)
