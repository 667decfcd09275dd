"""The prefill instance in another process and the waits vllm_connector_test.py and
vllm_push_test.py share."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_process import EngineProcess  # noqa: E402
from fake_vllm import DEFAULT_LAYOUT, HEADS  # noqa: E402

PREFILL_BLOCKS, DECODE_BLOCKS = 64, 48


class PrefillProcess(EngineProcess):
    """vllm_prefill_engine.py: `addresses` are its workers' kvx addresses by TP rank."""

    def __init__(self, data_path, lease=30.0, tp_size=1, mode="pull", layout=DEFAULT_LAYOUT,
                 total_heads=HEADS):
        super().__init__("vllm_prefill_engine.py", data_path, PREFILL_BLOCKS, lease, tp_size,
                         mode, layout, total_heads)
        self.addresses = json.loads(self.expect("READY").split(" ", 1)[1])

    def prefill(self, request_id, tokens, seed):
        self.command(f"prefill {request_id} {tokens} {seed}")
        return json.loads(self.expect("PARAMS ").split(" ", 1)[1])

    def push(self, request_id, tokens, seed, asynchronous=False):
        """Computes the request layer by layer (mode push; `asynchronous`: on a FakeStream),
        then finishes it: its kv_transfer_params (for a decode that comes after it)."""
        self.command(f"push {request_id} {tokens} {seed}" + (" async" if asynchronous else ""))
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
